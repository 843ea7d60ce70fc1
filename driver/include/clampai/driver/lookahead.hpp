// k-step lookahead (the seed's active HJB barrier), explicit engine: a breadth-first search over
// the situations the kernel would approve, with memoisation. Exact within the model as long as
// every parameter domain it must try is small (`LookaheadOptions::max_param_values`); it says
// when it is not.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "clampai/kernel/model.hpp"
#include "clampai/kernel/safety_kernel.hpp"

namespace clampai::driver {

using kernel::Amount;
using kernel::Decision;
using kernel::Proposal;
using kernel::Reason;
using kernel::Situation;
using kernel::State;
using kernel::TaskModel;
using kernel::Value;

/// One step of a plan: an action with its parameters, and what the kernel charges for it.
struct PlannedStep {
  std::size_t action = 0;
  std::vector<Value> params{};
  Amount cost = 0;
};
using Plan = std::vector<PlannedStep>;

struct LookaheadOptions {
  /// Steps searched after the proposed action (or from the situation, for `plan_to_goal`).
  unsigned depth = 3;
  /// An action whose parameters span more vectors than this (or an unbounded parameter) is not
  /// enumerated; the answer is then marked incomplete.
  std::size_t max_param_values = 64;
  /// Stop, marked incomplete (search budget exhausted), after this many distinct situations:
  /// the bound on the search's memory (each situation shares its unchanged state with its
  /// parent, so it costs about one node plus the changed variables).
  std::size_t max_situations = 1000000;
  /// Stop, marked incomplete (search budget exhausted), once this much wall time has passed
  /// since the search started (0: no limit). Checked between decisions, so a search overruns
  /// it by at most one kernel decision.
  std::uint32_t timeout_ms = 0;
  /// Stop, marked incomplete, at this instant if it comes first (the time limit of a caller
  /// that runs several searches); the default is no deadline.
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  /// Called from the searching thread with the number of situations explored so far, every
  /// 1,024 situations (a progress display); may be empty. Must not throw.
  std::function<void(std::size_t)> progress{};
};

/// What lies ahead of a proposal. Searches stop at the goal (a task ends there) and count
/// emergency actions as steps but never as progress (see `dead_end`).
struct LookaheadResult {
  Decision decision{};  // the kernel's decision on the proposal itself
  /// (1) The capture basins the state after the proposal lies in (an evaluation error counts
  /// as inside: a trap check fails closed), unless that state satisfies the goal: the task ends
  /// there, so a goal state is never a trap (the searches below treat it the same way).
  std::vector<std::string> entered{};
  /// (2) A basin reachable within `depth` further approvable steps, with the shortest witness.
  std::optional<std::string> reachable_basin{};
  Plan basin_witness{};
  /// (3) A reachable state (within `depth` further steps), not the goal, where no non-emergency
  /// action is approvable, with the shortest witness.
  bool dead_end = false;
  Plan dead_end_witness{};
  /// (4) Whether the goal can be reached within `depth` further steps and the budget left,
  /// with the cheapest plan (after the proposal) and its cost.
  bool goal_reachable = false;
  Plan cheapest_plan{};
  Amount cheapest_cost = 0;
  /// False when some parameter domain was too large to enumerate or the situation limit was
  /// hit: then "not found" means "not found among what was searched".
  bool complete = true;
  std::string incomplete_reason{};
  /// What would complete an incomplete search, for a caller that can lift its limits: the
  /// `max_param_values` that enumerates every parameter domain the search skipped (0: none was
  /// skipped; the largest size_t: a parameter has no bounds, no value would do) ...
  std::size_t param_values_needed = 0;
  /// ... whether the time limit or deadline stopped it (or a solver query timed out) ...
  bool timed_out = false;
  /// ... and whether the search met what its engine does not model (the symbolic engine).
  bool unsupported = false;
  std::size_t situations = 0;  // distinct situations explored

  /// True iff the proposal enters a basin or a basin is reachable after it.
  [[nodiscard]] bool trap() const noexcept { return !entered.empty() || reachable_basin; }
};

/// Looks ahead of `proposal` in `situation`. If the kernel rejects the proposal, only
/// `decision` is filled. A search keeps its working storage per thread and the next search on
/// that thread reuses it (its capacity, and the states of up to 4,096 situations of at most 32
/// variables, rewritten in place by the next search; after a search of more than about 16,000
/// situations it is released), so repeated searches allocate almost nothing.
LookaheadResult lookahead(const TaskModel& model,
                          const Situation& situation,
                          const Proposal& proposal,
                          const LookaheadOptions& options = {});

/// The capture basins `state` lies in (an evaluation error counts as inside), or none if it
/// satisfies the model's goal: `LookaheadResult::entered`.
std::vector<std::string> basins_entered(const TaskModel& model, const State& state);

/// "a, b x=2, c": a plan's steps as people read them ("(no step)" for an empty plan).
std::string describe_plan(const TaskModel& model, const Plan& plan);

/// A kernel guard (`KernelOptions::guard`) that vetoes every approved non-emergency proposal
/// whose post-state is a trap: it enters a capture basin, or a basin is reachable within
/// `options.depth` further approvable steps. The reason is `lookahead_trap`, its subject the
/// basin and its message the witness (``capture basin `overflow` is reachable within 3 steps
/// after `open_valve`: fill, fill, fill``). An incomplete search vetoes nothing it did not
/// find. Requires `model` to be the kernel's model.
std::function<std::optional<Reason>(const Situation&, const Proposal&, const Decision&)>
lookahead_guard(std::shared_ptr<const TaskModel> model, LookaheadOptions options = {});

/// The goal part alone, from `situation` itself: the cheapest plan of at most `options.depth`
/// approvable steps that reaches the goal (`goal_reachable`, `cheapest_plan`, `cheapest_cost`,
/// `complete`, `situations`; `decision` is left empty). A model without a goal never reaches it.
LookaheadResult plan_to_goal(const TaskModel& model,
                             const Situation& situation,
                             const LookaheadOptions& options = {});

}  // namespace clampai::driver
