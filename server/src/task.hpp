// One served task: its model, its kernel, where its trace goes, the receipts of what can still
// be rolled back, and its counters. Building a task's kernel happens in `open_task` only: the
// one place a shared ledger (`--ledger`, docs/LEDGER.md) plugs in.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "clampai/driver/committer.hpp"
#include "clampai/kernel/decision.hpp"
#include "clampai/kernel/ledger.hpp"
#include "clampai/kernel/model.hpp"
#include "clampai/kernel/mutex.hpp"
#include "clampai/kernel/safety_kernel.hpp"
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
  /// The budget pools (ServiceOptions::pools); may be null.
  std::shared_ptr<kernel::PoolTree> pools{};
};

/// The counters of one task, for /metrics.
struct TaskCounters {
  static constexpr std::size_t kReasons =
      static_cast<std::size_t>(kernel::ReasonCode::lookahead_trap) + 1;
  // [endpoint: 0 evaluate, 1 execute][0 approved, 1 rejected]
  std::array<std::array<std::atomic<std::uint64_t>, 2>, 2> decisions{};
  std::array<std::atomic<std::uint64_t>, kReasons> rejections{};
  std::atomic<std::uint64_t> rollbacks{0};
};

class Task {
 public:
  Task(std::shared_ptr<const kernel::TaskModel> model,
       std::string trace_path,
       std::shared_ptr<kernel::TraceWriter> writer,
       std::unique_ptr<kernel::SafetyKernel> kernel,
       std::deque<kernel::Receipt> receipts);
  /// A task on a shared ledger.
  Task(std::shared_ptr<const kernel::TaskModel> model,
       std::unique_ptr<kernel::SharedKernel> shared);

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
  /// the receipt of a commit.
  driver::StepResult execute(std::string_view action, const kernel::ParamMap& params);
  /// Rolls back the committed action of trace entry `sequence`, or the most recent one.
  /// @throws InvalidArgument if there is nothing to roll back, or the kernel refuses.
  kernel::Outcome rollback(std::optional<std::uint64_t> sequence);
  /// Seals the trace and closes its file (once). Returns false if it was sealed already, or
  /// lives in a shared ledger (which the other processes go on writing: never sealed here).
  bool seal();

  /// The cached verify report (JSON) of the model, computed at first use by `compute`.
  const std::string& verify_json(const std::function<std::string()>& compute);

  TaskCounters counters;

 private:
  std::shared_ptr<const kernel::TaskModel> model_;
  std::string trace_path_;
  std::shared_ptr<kernel::TraceWriter> writer_;
  std::unique_ptr<kernel::SafetyKernel> kernel_;  // null on a shared ledger
  std::unique_ptr<kernel::SharedKernel> shared_;  // null unless on a shared ledger
  const kernel::SafetyKernel* view_;              // kernel_, or shared_'s replica
  std::unique_ptr<driver::Committer> committer_;  // on kernel_ or shared_
  kernel::Mutex mutex_;  // the kernel's kind: spins briefly (an execute holds it for an insert)
  // INVARIANT (receipts): sorted by sequence; the last is the most recent commit still in
  // effect (what `rollback` undoes first); at most kUndoDepth.
  std::deque<kernel::Receipt> receipts_;
  std::once_flag verify_once_;
  std::string verify_json_;
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
