// One served task: its model, its kernel, where its trace goes, the receipts of what can still
// be rolled back, and its counters. Building a task's kernel happens in `open_task` only: the
// one place a shared ledger (`--ledger`, docs/LEDGER.md) plugs in.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <stdexcept>
#include <string>
#include <string_view>

#include "clampai/driver/approvals.hpp"
#include "clampai/driver/committer.hpp"
#include "clampai/kernel/decision.hpp"
#include "clampai/kernel/ledger.hpp"
#include "clampai/kernel/model.hpp"
#include "clampai/kernel/mutex.hpp"
#include "clampai/kernel/safety_kernel.hpp"
#include "clampai/kernel/sign.hpp"
#include "clampai/kernel/trace.hpp"

namespace clampai::server {

/// A task's name: letters, digits, `_` and `-`, at most 64 (the spec's `name`).
bool is_task_name(std::string_view name);

/// What a served kernel keeps in memory, whatever its age (the values of `clampai run`).
inline constexpr std::size_t kTraceWindow = 4096;
inline constexpr std::size_t kUndoDepth = 1024;

/// Where a task's trace is kept. Empty `data_dir` and `ledger`: in memory only. At most one
/// of them is set.
struct TaskStorage {
  std::string data_dir{};
  /// A shared ledger's URL (`clampai::ledger::open_ledger`: postgresql://..., file:PATH,
  /// memory:): the task's kernel is a `SharedKernel` on the task's ledger (named by the
  /// spec's `name`), which keeps its trace, state and budget, shared with other processes.
  std::string ledger{};
  /// The task's clock: microseconds since the epoch, the time of its trace entries and of its
  /// approvals' deadlines (tests inject one); empty: the system clock.
  std::function<std::int64_t()> clock{};
  /// Signs each seal and checkpoint (KernelOptions::signer, on a ledger SharedOptions::signer;
  /// `--signing-key`).
  std::function<std::string(std::string_view)> signer{};
  /// A checkpoint entry every this many entries (`--checkpoint-every`); 0: none.
  std::uint64_t checkpoint_every = 0;
  /// The budget pools (ServiceOptions::pools); may be null.
  std::shared_ptr<kernel::PoolTree> pools{};
};

/// The counters of one task, for /metrics.
struct TaskCounters {
  static constexpr std::size_t kReasons = static_cast<std::size_t>(kernel::kLastReasonCode) + 1;
  // [endpoint: 0 evaluate, 1 execute][0 approved, 1 rejected]
  std::array<std::array<std::atomic<std::uint64_t>, 2>, 2> decisions{};
  std::array<std::atomic<std::uint64_t>, kReasons> rejections{};
  std::atomic<std::uint64_t> rollbacks{0};
  // Shadow mode: the reasons of would-be rejections (clampai_shadow_rejections_total).
  std::array<std::atomic<std::uint64_t>, kReasons> shadow_rejections{};
};

/// Approvals (docs/SERVE.md, "Approvals"): the driver's ticket book, one per task.
using driver::kMaxPendingTickets;
using driver::Ticket;
using driver::TicketLog;
using driver::TicketRefused;

class Task {
 public:
  Task(std::shared_ptr<const kernel::TaskModel> model,
       std::string trace_path,
       std::shared_ptr<kernel::TraceWriter> writer,
       std::unique_ptr<kernel::SafetyKernel> kernel,
       std::deque<kernel::Receipt> receipts,
       TicketLog tickets = {},
       std::function<std::int64_t()> clock = {},
       std::uint64_t checkpoint_every = 0);
  /// A task on a shared ledger (its approvals' tickets in the shared chain).
  Task(std::shared_ptr<const kernel::TaskModel> model,
       std::unique_ptr<kernel::SharedKernel> shared,
       std::function<std::int64_t()> clock = {});

  [[nodiscard]] const kernel::TaskModel& model() const { return *model_; }
  [[nodiscard]] const std::shared_ptr<const kernel::TaskModel>& model_ptr() const { return model_; }
  /// The kernel to read (evaluate, state, budget): on a shared ledger, its replica, first
  /// brought to the latest head the processes committed (a read of the ledger).
  /// @throws LedgerUnavailable if the ledger cannot be reached.
  [[nodiscard]] const kernel::SafetyKernel& kernel() {
    if (shared_) (void)shared_->refresh();
    return *view_;
  }
  /// The shared kernel, or null when the task has its own.
  [[nodiscard]] kernel::SharedKernel* shared() { return shared_.get(); }
  /// The trace file, or empty when the trace lives in memory only (or in a shared ledger).
  [[nodiscard]] const std::string& trace_path() const { return trace_path_; }

  /// The trace: the kernel's last entries in memory, or the whole trace of the shared ledger.
  /// @throws LedgerUnavailable if the ledger cannot be reached.
  std::vector<kernel::TraceEntry> trace();
  /// One step by id (`driver::step`, what HTTP's execute and MCP's tool call do); remembers
  /// the receipt of a commit. `principal` (who asks) is recorded in the entries it causes. In
  /// shadow mode the step is followed whatever its decision (`driver::StepOutcome::shadowed`,
  /// the would-be decision in `StepResult::would_be`), its parameters resolved without their
  /// bounds (a would-be rejection says so).
  /// @throws InvalidArgument if the trace is sealed.
  driver::StepResult execute(std::string_view action,
                             const kernel::ParamMap& params,
                             std::string_view principal = {});
  /// The same for a resolved proposal (which names its principal).
  driver::StepResult execute(const kernel::Proposal& proposal);
  /// Puts the task in shadow mode (ServiceOptions::shadow), before it serves a request: its
  /// committer becomes a `driver::ShadowCommitter`.
  /// @throws InvalidArgument if it is on a shared ledger (its steps are every process's) or its
  /// budget is in a pool (shared with other tasks, which it would overdraw).
  void enter_shadow_mode();
  /// True iff the task runs in shadow mode.
  [[nodiscard]] bool shadow() const noexcept { return shadow_; }

  // ---- Approvals (approvals.cpp) ----
  /// The task's clock (microseconds since the epoch).
  [[nodiscard]] std::int64_t now() const;
  /// What `ask` did (driver::Approvals::ask).
  using Asked = driver::Approvals::Asked;
  /// Asks for the approval of `proposal` (an action with an `approval`): decided on the state
  /// of now, and if approved, an `approval_requested` entry (the proposal's principal) and a
  /// pending ticket; nothing is committed.
  /// On a shared ledger, the tickets are every process's (driver::Approvals).
  /// @throws TicketRefused (too_many) past kMaxPendingTickets; InvalidArgument if the trace is
  /// sealed; LedgerUnavailable on a shared ledger that cannot be reached.
  Asked ask(const kernel::Proposal& proposal);
  /// The pending tickets, oldest first; those whose time ran out expire first (an
  /// `approval_expired` entry each, recorded once across the processes of a shared ledger).
  std::vector<Ticket> pending();
  /// What became of an answered ticket (driver::Approvals::answer).
  using Answered = driver::Approvals::Answered;
  /// Answers ticket `id` for `principal`. `check` is called with the ticket before anything
  /// is recorded (the caller's right, and self-approval: it throws to refuse). Exactly one
  /// answer wins a ticket, in any process of a shared ledger; the others get TicketRefused
  /// (unknown, naming what became of it).
  /// @throws TicketRefused (unknown, expired: its `approval_expired` entry recorded then);
  /// what `check` throws; InvalidArgument if the trace is sealed.
  Answered answer(std::string_view id,
                  bool approve,
                  const std::string& principal,
                  const std::function<void(const Ticket&)>& check);
  /// Rolls back the committed action of trace entry `sequence`, or the most recent one;
  /// `principal` is recorded in its entry.
  /// @throws InvalidArgument if there is nothing to roll back, or the kernel refuses.
  kernel::Outcome rollback(std::optional<std::uint64_t> sequence, std::string_view principal = {});
  /// Appends a checkpoint if one is due (`TaskStorage::checkpoint_every`).
  void checkpoint();
  /// The trace's length: the position of the next entry (what the decision log records).
  [[nodiscard]] std::uint64_t trace_length();
  /// Seals the trace and closes its file (once). Returns false if it was sealed already, or
  /// lives in a shared ledger (which the other processes go on writing: never sealed here; a
  /// checkpoint is committed instead, `SharedKernel::checkpoint(true)`).
  bool seal();

  /// The cached verify report (JSON) of the model, computed at first use by `compute`.
  const std::string& verify_json(const std::function<std::string()>& compute);

  TaskCounters counters;

  // ---- Reloads (reload.cpp) ----
  /// Held shared by every request on the task, exclusively while its kernel is replaced by a
  /// reload: so no request ever sees a kernel or model being replaced (nor holds one after).
  std::shared_mutex reload_mutex;
  /// The writer of the task's trace file (null in memory only or on a shared ledger).
  [[nodiscard]] const std::shared_ptr<kernel::TraceWriter>& writer() const { return writer_; }
  /// Replaces the task's kernel with `next`, which continues its chain on another spec (its
  /// first entry `spec_changed`): the receipts (nothing before a reload can be rolled back),
  /// the checkpoints and the cached verify report start over; in memory, the trace keeps the
  /// last entries of the kernel replaced. Requires `reload_mutex` held exclusively.
  /// @throws InvalidArgument on a shared ledger.
  void replace_kernel(std::unique_ptr<kernel::SafetyKernel> next);

 private:
  std::shared_ptr<const kernel::TaskModel> model_;
  std::string trace_path_;
  std::shared_ptr<kernel::TraceWriter> writer_;
  std::unique_ptr<kernel::SafetyKernel> kernel_;  // null on a shared ledger
  std::unique_ptr<kernel::SharedKernel> shared_;  // null unless on a shared ledger
  const kernel::SafetyKernel* view_;              // kernel_, or shared_'s replica
  std::unique_ptr<driver::Committer> committer_;  // on kernel_ or shared_
  kernel::Mutex mutex_;  // the kernel's kind: spins briefly (an execute holds it for an insert)
  kernel::Outcome rollback_locked(std::optional<std::uint64_t> sequence,
                                  std::string_view principal);
  // INVARIANT (receipts): sorted by sequence; the last is the most recent commit still in
  // effect (what `rollback` undoes first); at most kUndoDepth.
  std::deque<kernel::Receipt> receipts_;
  std::unique_ptr<kernel::Checkpoints> checkpoints_;  // null: none (on a ledger: shared_'s own)
  std::mutex verify_mutex_;
  std::optional<std::string> verify_json_;  // GUARDED_BY verify_mutex_; reset by a reload
  std::uint64_t checkpoint_every_ = 0;
  std::vector<kernel::TraceEntry> earlier_;       // in memory: the entries of the kernels replaced
  std::function<std::int64_t()> clock_;           // empty: the system clock
  std::unique_ptr<driver::Approvals> approvals_;  // the tickets (on committer_)
  bool shadow_ = false;                           // enter_shadow_mode
  // The committer on the task's own kernel: shadow mode's, or the enforcing one (shadow.cpp).
  // @throws InvalidArgument as ShadowCommitter's constructor.
  static std::unique_ptr<driver::Committer> committer_for(kernel::SafetyKernel& kernel,
                                                          bool shadow);
  // Keeps the receipt of a commit (for rollback); returns `step`.
  driver::StepResult remember(driver::StepResult step);
  // Counts each expiry of the ticket book in `counters`.
  void watch_expiries();
};

/// Why a task whose spec declares what the reference monitor enforces is not served
/// (kernel::needs_reference_monitor): `open_task` and `POST /v1/tasks` refuse it.
std::string monitor_refusal(const std::string& task);

/// Builds a task's kernel: with a data directory, on the trace `DIR/NAME.jsonl`, continued when
/// it exists (the chain verified, a tail cut short by a crash dropped, a seal archived and
/// continued from the entry before it, every entry replayed by the kernel), else created.
/// With a ledger: a `SharedKernel` on the task's ledger, which replays what is committed
/// there (or commits the genesis entry). `log` gets a line for each thing done to a file or a
/// ledger.
/// @throws TraceError naming the file if the trace cannot be continued; InvalidArgument if
/// both a data directory and a ledger are given, the ledger's URL is not one, names another
/// task, or its trace is another spec's; LedgerUnavailable if it cannot be reached.
std::unique_ptr<Task> open_task(std::shared_ptr<const kernel::TaskModel> model,
                                const TaskStorage& storage,
                                const std::function<void(const std::string&)>& log);

}  // namespace clampai::server
