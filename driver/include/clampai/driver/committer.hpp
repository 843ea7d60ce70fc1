// The thing that decides and commits, whatever it commits to: the local `SafetyKernel`, a
// `SharedKernel` on a ledger (PostgreSQL or file), an escrow lease; and the step, the one unit
// of work over it (decide, commit, record, result). Every run loop (`run`, the agent's
// orchestrator) commits through `step`, and every one-step front end (the server's execute,
// MCP's tool call, Python's execute) calls `step` once per request.
//
// Room for what comes next, without changing callers (they switch on `StepOutcome` and read
// `StepResult::outcome`):
// - approvals (a step waits for a human): a `pending` outcome, the result carrying a ticket to
//   resume it with; a committer that holds such steps decides when to commit them;
// - shadow decisions (decided but not enforced): a `shadowed` outcome whose decision is reported
//   and whose action is let through, chosen by the committer (`ShadowCommitter`);
// - budget pools: a rejection's reason subject names the pool level that refused it (the
//   decision's reasons already carry a subject; nothing to add to the result);
// - a gateway forwarding to a real tool: an `unknown` outcome when the tool may have acted
//   (commit, forward, then the tool's answer lost), undone by rollback or compensation;
// - async callers: a committer whose commit completes later returns `pending` the same way.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "clampai/kernel/ledger.hpp"
#include "clampai/kernel/safety_kernel.hpp"

namespace clampai::driver {

struct Choice;

/// Why a run stopped: one list for every loop. Each report emits the subset it always did:
/// `clampai run` the first eight, the agent `goal_reached`, `budget_exhausted`, `step_limit`,
/// `llm_stop`, `stuck`, `max_failures` and `error`.
enum class Termination : std::uint8_t {
  goal_reached,
  no_approvable_action,
  budget_exhausted,
  step_limit,
  max_steps,       // the run's own cap (RunOptions::max_steps)
  emergency_stop,  // recovery found nothing to roll back and took an emergency action
  // Set by a caller with a reference monitor (clampai run), never by `run` itself:
  goal_not_attested,  // the goal holds but an attestation it requires failed
  environment_drift,  // the monitor found the world drifted from the model and halted
  // Set by a chooser that stops the run (the agent's orchestrator):
  llm_stop,      // the LLM answered {"stop": true}
  stuck,         // nothing is ready, or too many steps made no progress
  max_failures,  // too many steps in a row committed nothing
  error,         // the committer could not go on (RunOptions::errors_end_run)
};
/// The value's name, as reports spell it (`goal_reached`, ...).
std::string_view to_string(Termination t) noexcept;

/// Decides and commits proposals. `view()` is the kernel a chooser reads and evaluates on (for a
/// shared kernel, its replica at the latest head this process knows); `commit` decides the
/// proposal afresh on the latest head and commits it if approved (T5: a rejection changes
/// nothing). Callers go through `step`.
class Committer {
 public:
  virtual ~Committer() = default;
  [[nodiscard]] virtual const kernel::SafetyKernel& view() const = 0;
  [[nodiscard]] const kernel::TaskModel& model() const { return view().model(); }
  virtual kernel::Outcome commit(const kernel::Proposal& proposal) = 0;
  /// Commits a decision made on `view()` (`SafetyKernel::decide`): without deciding again while
  /// the head it was made on is the latest, decided afresh otherwise. The default decides
  /// afresh (`commit` of its proposal).
  virtual kernel::Outcome commit_decided(kernel::Decided&& decided);
  /// Commits action `action_id` with named parameters, as a front end receives them: an id or
  /// a parameter that does not resolve is a rejection (T5), recorded with the id and parameters
  /// as given when the committer records rejections. The default resolves on `view()` and
  /// records nothing for what does not resolve.
  virtual kernel::Outcome commit_named(std::string_view action_id, const kernel::ParamMap& params);
  /// Decides `proposal` and, if it is rejected and the committer records rejections, commits the
  /// rejected entry to the trace.
  virtual kernel::Decision record_rejection(const kernel::Proposal& proposal) = 0;
  [[nodiscard]] virtual bool records_rejections() const = 0;
  /// Undoes `receipt`'s action (T7). None when it can no longer be undone because another
  /// process committed on top of it. @throws InvalidArgument as SafetyKernel::rollback does.
  virtual std::optional<kernel::Outcome> rollback(const kernel::Receipt& receipt) = 0;
  /// Undoes `receipt`'s action by its exact inverse on the current state, whatever was
  /// committed after it (SafetyKernel::compensate). @throws InvalidArgument saying why when it
  /// cannot be compensated; the default (a committer that cannot compensate) always throws.
  virtual kernel::Outcome compensate(const kernel::Receipt& receipt);
  /// Catches up with what other processes committed; the number of entries that were new.
  virtual std::uint64_t refresh() { return 0; }
  /// A count that grows when commits of other processes arrive (a shared ledger's length at the
  /// head this committer knows); 0 for the local kernel, whose other threads' commits are not
  /// told apart: a run refused on a newer head counts its refusals afresh.
  [[nodiscard]] virtual std::uint64_t head() const;
  /// When the chooser found nothing approvable on `view()`: a proposal to commit all the same
  /// (escrow: one refused only by its lease's budget, so that committing it leases anew), or
  /// none (the default).
  virtual std::optional<kernel::Proposal> when_stuck(const Choice& choice);
  /// When `commit` refused a proposal: the termination that ends the run at once (escrow), or
  /// none (the default: the loop chooses again, RunOptions::refusals_before_stop).
  virtual std::optional<Termination> on_refusal(const kernel::Decision& decision);
  /// Appends `entry`, a note (`approval_*`: a ticket's step, driver::Approvals), to the trace
  /// (`SafetyKernel::record_note`; on a shared ledger `SharedKernel::record_note`, a
  /// compare-and-set that answers a ticket only while it is open). Returns it as recorded.
  /// The default throws InvalidArgument: this committer keeps no approval tickets.
  virtual kernel::TraceEntry record_note(kernel::TraceEntry entry);
  /// The trace's entries from sequence `from` on that other processes may have recorded (a
  /// shared ledger's), in order; empty when only this process writes the trace (the default).
  /// @throws LedgerUnavailable as `refresh`.
  virtual std::vector<kernel::TraceEntry> trace_since(std::uint64_t from);
  /// False for a committer in shadow mode (`ShadowCommitter`): `step` then follows each
  /// proposal whatever its decision (`follow`), and nothing waits for an approval. The default:
  /// true.
  [[nodiscard]] virtual bool enforces() const { return true; }
  /// Shadow mode's step: `proposal` decided as `commit` would decide it and followed whatever
  /// the decision (`SafetyKernel::execute_unenforced`). The default (an enforcing committer)
  /// throws InvalidArgument.
  virtual kernel::ShadowStep follow(const kernel::Proposal& proposal);
  /// The same by action id and named parameters, resolved without their bounds.
  virtual kernel::ShadowStep follow(std::string_view action_id, const kernel::ParamMap& params);
};

/// What became of a step. Callers switch on it; values will be added (see the file's comment:
/// `pending`, `unknown`), so a `switch` should have a default.
enum class StepOutcome : std::uint8_t {
  committed,  // approved and committed: the outcome has a receipt
  rejected,   // refused (T5: nothing changed; traced when the committer records rejections)
  shadowed,   // shadow mode: followed whatever the decision (`would_be`); the outcome has a
              // receipt unless what the step does could not be computed (nothing changed)
};
/// The value's name (`committed`, `rejected`, `shadowed`).
std::string_view to_string(StepOutcome o) noexcept;

/// The result of one step: what became of it and the kernel's outcome (the decision, the
/// receipt of a commit, the state afterwards).
struct StepResult {
  StepOutcome kind = StepOutcome::rejected;
  /// What was done. Shadowed: an approved decision with its receipt when the step was followed
  /// (`kernel::ShadowStep::outcome`), else `would_be`'s rejection.
  kernel::Outcome outcome;
  /// Shadowed: what the enforcing kernel would have decided on the same call and state.
  std::optional<kernel::Decision> would_be{};
  /// True iff the step changed the state (committed, or shadowed and followed).
  [[nodiscard]] bool committed() const noexcept { return outcome.receipt.has_value(); }
  /// Shadowed, and the enforcing kernel would have rejected it.
  [[nodiscard]] bool would_be_rejected() const noexcept { return would_be && !would_be->approved; }
};

/// One step, the unit every loop and front end shares: decides `proposal` on the committer's
/// latest head, commits it if approved, records a rejection when the committer records them,
/// and says what became of it.
/// @throws what the committer's commit throws (TraceError, LedgerUnavailable, InvalidArgument
/// on a sealed kernel).
StepResult step(Committer& committer, const kernel::Proposal& proposal);
/// The same for a chooser's decision made on `committer.view()`: not decided again unless the
/// head moved since it was made (an approved step is decided once).
StepResult step(Committer& committer, kernel::Decided&& decided);
/// The same by action id and named parameters (`Committer::commit_named`): what a
/// front end (HTTP, MCP, Python) receives.
StepResult step(Committer& committer,
                std::string_view action_id,
                const kernel::ParamMap& params = {});

/// The local kernel (one process; thread-safe: other threads may commit on it too).
class LocalCommitter final : public Committer {
 public:
  explicit LocalCommitter(kernel::SafetyKernel& kernel) noexcept : kernel_(kernel) {}
  [[nodiscard]] const kernel::SafetyKernel& view() const override { return kernel_; }
  kernel::Outcome commit(const kernel::Proposal& proposal) override;
  kernel::Outcome commit_decided(kernel::Decided&& decided) override;
  kernel::Outcome commit_named(std::string_view action_id, const kernel::ParamMap& params) override;
  kernel::Decision record_rejection(const kernel::Proposal& proposal) override;
  [[nodiscard]] bool records_rejections() const override;
  /// @throws InvalidArgument if another thread committed since `receipt` (as the kernel does).
  std::optional<kernel::Outcome> rollback(const kernel::Receipt& receipt) override;
  kernel::Outcome compensate(const kernel::Receipt& receipt) override;
  kernel::TraceEntry record_note(kernel::TraceEntry entry) override;

 private:
  kernel::SafetyKernel& kernel_;
};

/// A kernel on a shared ledger (docs/LEDGER.md): chooses on the replica, commits by
/// compare-and-set on the ledger's latest head.
class SharedCommitter final : public Committer {
 public:
  explicit SharedCommitter(kernel::SharedKernel& kernel) noexcept : kernel_(kernel) {}
  [[nodiscard]] const kernel::SafetyKernel& view() const override { return kernel_.local(); }
  kernel::Outcome commit(const kernel::Proposal& proposal) override;
  kernel::Outcome commit_decided(kernel::Decided&& decided) override;
  kernel::Outcome commit_named(std::string_view action_id, const kernel::ParamMap& params) override;
  kernel::Decision record_rejection(const kernel::Proposal& proposal) override;
  [[nodiscard]] bool records_rejections() const override;
  /// None when another process committed on top of `receipt`.
  std::optional<kernel::Outcome> rollback(const kernel::Receipt& receipt) override;
  kernel::Outcome compensate(const kernel::Receipt& receipt) override;
  std::uint64_t refresh() override;
  [[nodiscard]] std::uint64_t head() const override;
  kernel::TraceEntry record_note(kernel::TraceEntry entry) override;
  std::vector<kernel::TraceEntry> trace_since(std::uint64_t from) override;

 private:
  kernel::SharedKernel& kernel_;
};

/// Shadow mode (docs/CLI.md, `run --shadow`; docs/SERVE.md, "Shadow mode"): the local kernel,
/// each step followed whatever its decision (`SafetyKernel::execute_unenforced`: its trace
/// entry `enforced: false`), `step` saying `shadowed` with the decision an enforcing commit
/// would have made. Records no screened rejections (a chooser's evaluations are not steps;
/// every step it takes is traced, its would-be rejection included). When the chooser found
/// nothing approvable, it follows the first proposal the chooser screened and found rejected
/// (`when_stuck`: what the enforcing run stopped), while the kernel's step bound (T2) is not
/// reached.
class ShadowCommitter final : public Committer {
 public:
  /// @throws InvalidArgument if the task's budget is in a pool (`refuse_shadow_in_pool`).
  explicit ShadowCommitter(kernel::SafetyKernel& kernel);
  [[nodiscard]] const kernel::SafetyKernel& view() const override { return kernel_; }
  /// `follow(proposal).outcome`.
  kernel::Outcome commit(const kernel::Proposal& proposal) override;
  kernel::Outcome commit_named(std::string_view action_id, const kernel::ParamMap& params) override;
  /// Decides `proposal` (a rejection is not recorded: see the class).
  kernel::Decision record_rejection(const kernel::Proposal& proposal) override;
  [[nodiscard]] bool records_rejections() const override { return false; }
  std::optional<kernel::Outcome> rollback(const kernel::Receipt& receipt) override;
  std::optional<kernel::Proposal> when_stuck(const Choice& choice) override;
  [[nodiscard]] bool enforces() const override { return false; }
  kernel::ShadowStep follow(const kernel::Proposal& proposal) override;
  kernel::ShadowStep follow(std::string_view action_id, const kernel::ParamMap& params) override;

 private:
  kernel::SafetyKernel& kernel_;
};

/// Shadow mode's refusals, one message each for every front end (`serve`, `run`, `agent`,
/// `mcp`); `flags` names how shadow mode was asked for (`--shadow`, `shadow mode (--mode
/// shadow, --shadow)`).
/// @throws InvalidArgument: on a shared ledger, whose steps every process on it relies on.
[[noreturn]] void refuse_shadow_on_ledger(std::string_view flags);
/// @throws InvalidArgument if `model`'s budget is in a pool, shared with other tasks that a
/// step not enforced would overdraw.
void refuse_shadow_in_pool(const kernel::TaskModel& model);

/// True iff `view` may still commit a non-emergency step: its T2 bound is not reached.
[[nodiscard]] bool steps_left(const kernel::SafetyKernel& view);

}  // namespace clampai::driver
