// The valuation of the reasoning engine (seed layer 1): the seed's five dimensions of each
// offered action (expected progress, information gain, cost ratio, risk, opportunity cost), its
// weights, and its dominant-action rule that skips the LLM when one action clearly wins.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "clampai/agent/beliefs.hpp"
#include "clampai/agent/causal_graph.hpp"
#include "clampai/agent/distance.hpp"
#include "clampai/kernel/safety_kernel.hpp"

namespace clampai::agent {

/// The seed's weights: value = 2·progress + 0.5·information - 1·cost - risk_aversion·risk
/// - 0.5·opportunity.
struct ValuationWeights {
  double progress = 2.0;
  double information = 0.5;
  double cost = 1.0;
  double risk = 1.0;  ///< the risk aversion
  double opportunity = 0.5;
};

/// The seed's dominant-action rule: the best action is taken without asking the LLM when its
/// value is at least `min_value` and beats the runner-up by at least `margin`; a lone offered
/// action the kernel approves is taken the same way.
struct DominanceRule {
  double margin = 0.15;
  double min_value = 0.05;
};

/// An action offered to the LLM, as the kernel judges its default proposal now.
struct Candidate {
  std::size_t action = 0;
  kernel::Proposal proposal{};  ///< parameters at their default, else minimum, else 0
  kernel::Decision decision{};  ///< `kernel::decide` on `proposal` in the current situation
};

/// The five dimensions of one action and its value.
struct ActionValue {
  std::size_t action = 0;
  /// P(success) x the share of the goal distance its default proposal closes (negative when it
  /// widens it, at least -1), or, for an action that has not completed yet and unlocks one
  /// that writes the goal's variables, 0.5^k (k its distance in the causal graph to that
  /// action), whichever is larger.
  double expected_progress = 0.0;
  double information_gain = 0.0;  ///< 4 x the belief's variance, in [0, 1]
  double cost_ratio = 0.0;        ///< cost / the budget left
  /// (0.05, + 0.1 if irreversible, + 0.3 x how close its post-state comes to a blocking
  /// invariant's boundary; at least 0.6 if the kernel rejects its default proposal) x (2 -
  /// the belief's confidence).
  double risk = 0.0;
  double opportunity_cost = 0.0;  ///< cost_ratio x (1 - the progress made so far)
  double value = 0.0;             ///< the weighted sum
  double closure = 0.0;           ///< the share of the goal distance closed (may be negative)
  double proximity = 0.0;  ///< how close its post-state comes to a blocking invariant's boundary
  std::optional<std::size_t> unlocks{};  ///< the goal writer whose unlocking is its progress
  bool approvable = false;               ///< the kernel approves the default proposal now
  std::optional<kernel::ReasonCode> rejected_by{};  ///< the first reason, when not approvable
  std::string hint{};  ///< a short reading of the numbers for the prompt (`Valuator::hint`)
};

/// Computes values. Built once per model; `value` is called every step.
class Valuator {
 public:
  explicit Valuator(std::shared_ptr<const kernel::TaskModel> model, ValuationWeights weights = {});

  /// The distance of `state` to the goal (0 when reached; `Distance`).
  [[nodiscard]] double goal_distance(const kernel::State& state) const;
  /// The progress made toward the goal, in [0, 1]: 1 - distance / the initial distance (1 when
  /// the goal holds).
  [[nodiscard]] double goal_progress(const kernel::State& state) const;
  /// How far `state` is from violating blocking invariant `invariant` (its negation's
  /// distance, 1 where the task started): 0 means violated. Infinity for a native predicate.
  [[nodiscard]] double slack(std::size_t invariant, const kernel::State& state) const;
  /// The same, in `state` patched by `changes` (the state after a decision).
  [[nodiscard]] double slack(std::size_t invariant,
                             const kernel::State& state,
                             kernel::ChangeSpan changes) const;

  /// The values of `candidates` in `situation`, in the same order; with `with_hints`, each
  /// with its `hint` (otherwise empty: `hint` computes it for the few the prompt describes).
  [[nodiscard]] std::vector<ActionValue> value(const kernel::Situation& situation,
                                               std::span<const Candidate> candidates,
                                               const BeliefState& beliefs,
                                               bool with_hints = true) const;
  /// A short reading of `v`'s numbers for the prompt: what it unlocks, how much of the goal
  /// distance it closes, whether it is uncertain, expensive, near a boundary or rejected.
  [[nodiscard]] std::string hint(const ActionValue& v) const;

  [[nodiscard]] const CausalGraph& graph() const noexcept { return graph_; }
  /// The blocking invariants (with an expression) that read a variable `action` writes.
  [[nodiscard]] const std::vector<std::size_t>& guards(std::size_t action) const {
    return guards_.at(action);
  }
  [[nodiscard]] const ValuationWeights& weights() const noexcept { return weights_; }

 private:
  std::shared_ptr<const kernel::TaskModel> model_;
  ValuationWeights weights_;
  CausalGraph graph_;
  Distance goal_;
  double goal_initial_ = 0.0;
  std::vector<std::optional<Distance>> slack_;    // per invariant (blocking, with an expression)
  std::vector<std::vector<std::size_t>> guards_;  // per action: invariants reading what it writes
  std::vector<int> unlock_distance_;  // per action: graph distance to a goal writer (-1: none)
  std::vector<std::size_t> unlocks_;  // per action: that goal writer
};

/// The weighted sum of `v`'s five dimensions.
double weighted_value(const ActionValue& v, const ValuationWeights& weights);

/// The index (in `values`) of the dominant action by `rule`, or nullopt when the LLM should
/// choose. Only approvable actions can dominate.
std::optional<std::size_t> dominant(std::span<const ActionValue> values,
                                    const DominanceRule& rule = {});

}  // namespace clampai::agent
