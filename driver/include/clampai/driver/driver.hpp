// Drivers (choosers) choose the next action to propose; `run` is the one run loop: it drives a
// committer (committer.hpp) with a chooser until it stops. The deterministic driver here, a
// scripted plan and the agent's orchestrator (an LLM) are choosers.
// Orchestration over the kernel, not part of it: the kernel never depends on this library.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "clampai/driver/approvals.hpp"
#include "clampai/driver/committer.hpp"
#include "clampai/kernel/safety_kernel.hpp"

namespace clampai::driver {

using kernel::Decision;
using kernel::Proposal;
using kernel::Reason;
using kernel::SafetyKernel;
using kernel::State;
using kernel::TaskModel;

/// What a driver proposes next, and the proposals it considered and found rejected.
struct Choice {
  std::optional<Proposal> proposal{};  // none: the driver has nothing to propose
  /// `proposal`'s decision, when the chooser made it with `SafetyKernel::decide` on the view
  /// it was given: `run` commits it without deciding again unless the head moved meanwhile.
  /// Ignored unless it is a decision of `proposal`.
  std::optional<kernel::Decided> decided{};
  std::vector<Decision> rejected{};  // rejected evaluations made while choosing
  /// The proposals of `rejected`, when the driver keeps them: `run` records them in the trace
  /// when the kernel records rejections (SafetyKernel::record_rejection).
  std::vector<Proposal> rejected_proposals{};
  /// Set by a chooser that ends the run (the agent's orchestrator: the LLM stopped, nothing is
  /// ready, too many failures): `run` stops with it and `stop_message`, proposing nothing.
  std::optional<Termination> stop{};
  std::string stop_message{};
};

/// Chooses actions. Implementations must not change the kernel (only evaluate).
class Driver {
 public:
  virtual ~Driver() = default;
  /// The next proposal for `kernel` in its current state.
  virtual Choice next(const SafetyKernel& kernel) = 0;
  /// Told by `run` (with `RunOptions::recover`) that `undone` was rolled back and the kernel is
  /// back in `state`: the driver should not propose it there again. The default does nothing.
  virtual void rolled_back(const State& state, const Proposal& undone);
  /// Told by `run` what became of the proposal it chose (approved and committed, or refused).
  /// The default does nothing.
  virtual void committed(const Proposal& proposal, const kernel::Outcome& outcome);
  /// Told by `run` that `proposal` waits for a person's approval (`ticket`), which the run did
  /// not wait for (ApprovalAnswer::Kind::wait): it is not taken now; proposing it again while
  /// it waits asks nothing anew and counts as a refusal. The default does nothing.
  virtual void waiting(const Proposal& proposal, const Ticket& ticket);
  /// Shadow mode: told by `run`, before `committed`, what the enforcing kernel would have
  /// decided on `proposal` (the step is followed whatever it is). The default does nothing.
  virtual void shadowed(const Proposal& proposal, const kernel::Decision& would_be);
};

/// A proposal of action `index` with each parameter at its default, else its minimum, else 0:
/// what the deterministic driver and `clampai bench` propose. Requires `index` < the number of
/// actions.
Proposal default_proposal(const TaskModel& model, std::size_t index);

/// Proposes the first non-emergency action, in spec order, whose dependencies are met and that
/// the kernel approves now, except what was rolled back in the same state. Parameters take their
/// default, else their minimum, else 0.
class FirstApprovableDriver final : public Driver {
 public:
  Choice next(const SafetyKernel& kernel) override;
  void rolled_back(const State& state, const Proposal& undone) override;
  /// A denied or expired approval: not proposed again in the same state.
  void committed(const Proposal& proposal, const kernel::Outcome& outcome) override;
  /// Not proposed again in this run.
  void waiting(const Proposal& proposal, const Ticket& ticket) override;

 private:
  // (state, action) pairs rolled back, or whose approval was denied or expired there
  std::vector<std::pair<State, std::size_t>> avoid_{};
  std::vector<std::size_t> waiting_{};  // actions whose ticket waits
};

/// A person's answer to an approval request (RunOptions::approve).
struct ApprovalAnswer {
  enum class Kind : std::uint8_t {
    grant,  // approved: decided afresh on the state of now, committed if approved
    deny,   // denied: an `approval_denied` entry, nothing committed
    wait,   // not answered now: the ticket stays pending and the run moves on without it
  };
  Kind kind = Kind::wait;
  std::string principal{};  // who answered, recorded in the entry
};

struct RunOptions {
  /// Stop after this many executed actions (a driver-level cap besides the kernel's T2 bound).
  std::optional<std::uint64_t> max_steps{};
  /// When the driver has nothing to propose and the goal is not reached, recover as the seed
  /// does: roll back the most recent action of this run if it is reversible, else take the
  /// first approvable emergency action and stop. Terminates: rollbacks never decrease the step
  /// count (T2), each undoes one of this run's commits, and at most one emergency action is
  /// taken.
  bool recover = false;
  /// Proposals refused at commit in a row (on one head) before the run stops as
  /// `no_approvable_action`; 0: never (the chooser decides when to stop).
  unsigned refusals_before_stop = 2;
  /// Catch up with other processes' commits before every choice (a shared committer), not only
  /// when nothing is approvable on the head this process knows.
  bool refresh_each_step = false;
  /// An exception of the committer (its trace file, its ledger) ends the run with
  /// `Termination::error` and its message, instead of propagating.
  bool errors_end_run = false;
  /// Called before each step: what the caller appends between steps (`--checkpoint-every`'s
  /// checkpoints).
  std::function<void()> between_steps{};
  /// Asked when the chooser's choice is an action whose spec asks for an approval, once its
  /// ticket is recorded (`approval_requested`, naming `principal`): the kernel's decision of
  /// now and the ticket. A grant is decided afresh (an answer that comes after the ticket's
  /// `ttl_s` records `approval_expired` instead); empty: every such choice waits
  /// (`ApprovalAnswer::Kind::wait`), nothing that needs an approval is taken without one.
  /// The tickets are the committer's (Committer::record_note; on a shared ledger, the shared
  /// chain's); a committer that keeps none (escrow, an upstream) throws InvalidArgument.
  std::function<ApprovalAnswer(const Ticket&, const kernel::Decision&)> approve{};
  /// Who asks for approvals (`run`, `agent`), recorded in `approval_requested` entries.
  std::string principal{};
  /// The approvals' clock, microseconds since the epoch (their deadlines); empty: the system
  /// clock.
  std::function<std::int64_t()> clock{};
};

/// Shadow mode: a step followed that the enforcing kernel would have rejected.
struct ShadowRejection {
  std::string action{};                     // its id
  std::optional<std::uint64_t> sequence{};  // its trace entry; none when not followed
  std::vector<Reason> reasons{};            // why the enforcing kernel would reject it
};

/// A run's summary, like the seed's result summary.
struct RunResult {
  Termination termination = Termination::no_approvable_action;
  bool goal_reached = false;
  std::uint64_t executed = 0;   // actions committed
  std::uint64_t attempted = 0;  // evaluations made (approved or not)
  std::uint64_t rejected = 0;   // rejected evaluations
  std::map<std::string, std::uint64_t> rejections_by_reason;
  std::uint64_t rollbacks = 0;          // recoveries by rollback
  std::uint64_t emergencies = 0;        // emergency actions taken by recovery
  std::vector<std::string> actions{};   // ids of the committed actions, in order (rolled back too)
  std::vector<std::string> recovery{};  // what recovery did, in order: "rolled back `a`", ...
  std::vector<Reason> last_reasons{};   // why nothing was approvable, when that ended the run
  std::string message{};  // the chooser's stop message, or the error that ended the run
  std::uint64_t approvals_granted = 0;  // tickets approved (committed or not: decided afresh)
  std::uint64_t approvals_denied = 0;
  std::uint64_t approvals_expired = 0;  // answered after their ttl_s
  std::vector<Ticket> waiting{};        // tickets the run moved on from, still pending
  /// Shadow mode (the committer does not enforce, `Committer::enforces`): the run's steps the
  /// enforcing kernel would have rejected, in order (each followed unless what it does could
  /// not be computed).
  bool shadow = false;
  std::vector<ShadowRejection> shadow_rejections{};
};

/// The run loop. Each step: stop if the goal holds or the run's cap is reached; let the chooser
/// choose on `committer.view()` (its screened rejections recorded when the committer records
/// rejections); with nothing to propose, catch up with other processes, recover (a rollback of
/// this run's last commit, else one emergency action) or stop; else commit the choice (decided
/// afresh on the latest head only if it moved since the chooser decided: `step`) and tell the
/// chooser. In shadow mode (a committer that does not enforce) every step is followed whatever
/// its decision, nothing waits for an approval, each would-be rejection is listed
/// (`RunResult::shadow_rejections`), and the run stops (`step_limit`) when the kernel's step
/// bound is reached, which its kernel does not enforce. Ends when the goal is reached, the chooser
/// stops it or has nothing to propose (and recovery, if asked for, cannot help), or the run's
/// cap is reached. Terminates: every committed non-emergency action counts against the
/// kernel's step limit (T2), refusals in a row are bounded (`refusals_before_stop`, else by the
/// chooser), and recovery is bounded (see `RunOptions::recover`).
/// @throws InvalidArgument if another thread commits while a recovering run rolls back.
RunResult run(Committer& committer, Driver& driver, const RunOptions& options = {});
/// `run` on a `LocalCommitter`.
RunResult run(SafetyKernel& kernel, Driver& driver, const RunOptions& options = {});

}  // namespace clampai::driver
