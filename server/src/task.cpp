// Served tasks: where the kernel of each is built (with its trace continued after a restart).
#include "task.hpp"

#include <algorithm>
#include <deque>
#include <filesystem>
#include <system_error>
#include <utility>

#include "clampai/kernel/error.hpp"
#include "clampai/kernel/file.hpp"
#include "clampai/kernel/number.hpp"
#include "clampai/kernel/security.hpp"
#include "clampai/kernel/trace_reader.hpp"
#include "clampai/ledger/ledger.hpp"
#include "reload.hpp"

namespace clampai::server {

bool is_task_name(std::string_view name) {
  return !name.empty() && name.size() <= 64 && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
  });
}

namespace ck = clampai::kernel;
namespace fs = std::filesystem;

Task::Task(std::shared_ptr<const ck::TaskModel> model,
           std::string trace_path,
           std::shared_ptr<ck::TraceWriter> writer,
           std::unique_ptr<ck::SafetyKernel> kernel,
           std::deque<ck::Receipt> receipts,
           TicketLog tickets,
           std::function<std::int64_t()> clock,
           std::uint64_t checkpoint_every)
    : model_(std::move(model)),
      trace_path_(std::move(trace_path)),
      writer_(std::move(writer)),
      kernel_(std::move(kernel)),
      view_(kernel_.get()),
      committer_(committer_for(*kernel_, false)),
      receipts_(std::move(receipts)),
      checkpoint_every_(checkpoint_every),
      clock_(clock),
      approvals_(
          std::make_unique<driver::Approvals>(*committer_, std::move(clock), std::move(tickets))) {
  watch_expiries();
  if (checkpoint_every > 0)
    checkpoints_ = std::make_unique<ck::Checkpoints>(checkpoint_every, kernel_->trace_length());
}

void Task::watch_expiries() {
  approvals_->on_expiry = [this](const Ticket&) {
    counters.rejections[static_cast<std::size_t>(ck::ReasonCode::approval_expired)].fetch_add(
        1, std::memory_order_relaxed);
  };
}

Task::Task(std::shared_ptr<const ck::TaskModel> model,
           std::unique_ptr<ck::SharedKernel> shared,
           std::function<std::int64_t()> clock)
    : model_(std::move(model)),
      shared_(std::move(shared)),
      view_(&shared_->local()),
      committer_(std::make_unique<driver::SharedCommitter>(*shared_)),
      clock_(clock),
      // The tickets live in the shared chain: the book reads every process's.
      approvals_(std::make_unique<driver::Approvals>(*committer_, std::move(clock))) {
  watch_expiries();
}

driver::StepResult Task::execute(std::string_view action,
                                 const ck::ParamMap& params,
                                 std::string_view principal) {
  // Resolved here so that the proposal carries who asks; what does not resolve is a rejection
  // decided (and, when recorded, traced) by the committer.
  // In shadow mode without the parameters' bounds: a step out of them is followed.
  std::variant<ck::Proposal, ck::Reason> resolved =
      shadow_ ? ck::resolve(*model_, action, params, ck::ParamCheck::fitted)
              : view_->resolve(action, params);
  if (ck::Proposal* proposal = std::get_if<ck::Proposal>(&resolved)) {
    proposal->principal = std::string(principal);
    return execute(*proposal);
  }
  return remember(driver::step(*committer_, action, params));
}

driver::StepResult Task::execute(const ck::Proposal& proposal) {
  return remember(driver::step(*committer_, proposal));
}

driver::StepResult Task::remember(driver::StepResult step) {
  const ck::Outcome& out = step.outcome;
  if (out.receipt) {
    // INVARIANT (receipts): kept sorted although concurrent executes may arrive out of order.
    std::lock_guard lock(mutex_);
    const auto at = std::upper_bound(
        receipts_.begin(), receipts_.end(), *out.receipt, [](const auto& a, const auto& b) {
          return a.sequence < b.sequence;
        });
    receipts_.insert(at, *out.receipt);
    if (receipts_.size() > kUndoDepth) receipts_.pop_front();
  }
  checkpoint();
  return step;
}

void Task::checkpoint() {
  if (shared_) {
    // After a committed request: a ledger lost now must not fail it. The checkpoint stays due
    // (the count is the shared trace's), so the next request of any server commits it.
    try {
      (void)shared_->checkpoint();
    } catch (const LedgerUnavailable&) {
    }
  }
  if (checkpoints_) (void)checkpoints_->after(*kernel_);
}

std::uint64_t Task::trace_length() { return shared_ ? shared_->length() : kernel_->trace_length(); }

std::vector<ck::TraceEntry> Task::trace() {
  if (!shared_ && !earlier_.empty()) {  // a reload replaced the kernel: its entries first
    std::vector<ck::TraceEntry> all = earlier_;
    std::vector<ck::TraceEntry> now = kernel_->trace();
    all.insert(all.end(), std::make_move_iterator(now.begin()), std::make_move_iterator(now.end()));
    if (all.size() > kTraceWindow)
      all.erase(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(all.size() - kTraceWindow));
    return all;
  }
  if (!shared_) return kernel_->trace();
  return ck::parse_trace_lines(shared_->read(0), shared_->ledger().describe());
}

ck::Outcome Task::rollback(std::optional<std::uint64_t> sequence, std::string_view principal) {
  ck::Outcome out = rollback_locked(sequence, principal);
  checkpoint();
  return out;
}

ck::Outcome Task::rollback_locked(std::optional<std::uint64_t> sequence,
                                  std::string_view principal) {
  std::lock_guard lock(mutex_);
  if (receipts_.empty()) throw InvalidArgument("nothing to roll back: no committed action is kept");
  auto it = std::prev(receipts_.end());
  if (sequence) {
    it = std::find_if(receipts_.begin(), receipts_.end(), [&](const ck::Receipt& r) {
      return r.sequence == *sequence;
    });
    if (it == receipts_.end())
      throw InvalidArgument("trace entry " + std::to_string(*sequence) +
                            " is not a committed action that can still be rolled back");
  }
  // The kernel checks it is the most recent (on a shared ledger: of every process's commits).
  ck::Outcome out = shared_ ? shared_->rollback(*it, principal) : kernel_->rollback(*it, principal);
  // INVARIANT (receipts): only the last one can have been rolled back.
  receipts_.erase(it);
  return out;
}

bool Task::seal() {
  if (shared_) {
    // The other processes go on: a checkpoint covers what is there (if this server signs or
    // checkpoints), never a seal.
    (void)shared_->checkpoint(/*final=*/true);
    return false;
  }
  std::lock_guard lock(mutex_);
  if (kernel_->is_sealed()) return false;
  kernel_->seal();
  if (writer_) writer_->close();
  return true;
}

const std::string& Task::verify_json(const std::function<std::string()>& compute) {
  std::lock_guard lock(verify_mutex_);
  if (!verify_json_) verify_json_ = compute();
  return *verify_json_;
}

void Task::replace_kernel(std::unique_ptr<ck::SafetyKernel> next) {
  if (shared_) throw InvalidArgument("a task on a shared ledger cannot change its spec");
  std::unique_ptr<driver::Committer> committer = committer_for(*next, shadow_);
  std::lock_guard lock(mutex_);
  if (trace_path_.empty()) {
    earlier_ = trace();  // the last kTraceWindow entries so far
  }
  model_ = next->model_ptr();
  kernel_ = std::move(next);
  view_ = kernel_.get();
  committer_ = std::move(committer);
  receipts_.clear();  // INVARIANT (receipts): the new kernel has no undo record
  // The ticket book decides on the kernel in force: a new one (a reload needs none pending).
  approvals_ = std::make_unique<driver::Approvals>(*committer_, clock_, TicketLog{});
  watch_expiries();
  if (checkpoints_)
    checkpoints_ = std::make_unique<ck::Checkpoints>(checkpoint_every_, kernel_->trace_length());
  std::lock_guard verify(verify_mutex_);
  verify_json_.reset();
}

namespace {

// Keeps `receipts` the receipts of the committed actions still in effect after `e` (the last
// kUndoDepth of them), the entries of a trace given one at a time.
void note_receipt(const ck::TaskModel& model,
                  const ck::TraceEntry& e,
                  std::deque<ck::Receipt>& receipts) {
  if (e.kind == ck::EntryKind::rolled_back) {
    if (!receipts.empty()) receipts.pop_back();
    return;
  }
  // Nothing before a spec change or a compensation can be rolled back after it.
  if (e.kind == ck::EntryKind::spec_changed || e.kind == ck::EntryKind::compensated) {
    receipts.clear();
    return;
  }
  if (e.kind != ck::EntryKind::executed) return;
  const auto action = model.find_action(e.action);
  const auto cost = ck::Decimal::parse(e.cost);
  if (!action || !cost) return;  // the kernel's replay refuses such a trace
  receipts.push_back({e.sequence, *action, ck::to_amount(*cost, model.budget.scale, "cost")});
  if (receipts.size() > kUndoDepth) receipts.pop_front();
}

}  // namespace

std::string monitor_refusal(const std::string& task) {
  return "task `" + task +
         "` declares what the reference monitor enforces (attestations, probes, readiness or a "
         "downward information flow), which the service does not run: a bare kernel would "
         "approve what the spec forbids; run it with `clampai run` or `clampai agent`";
}

std::unique_ptr<Task> open_task(std::shared_ptr<const ck::TaskModel> model,
                                const TaskStorage& storage,
                                const std::function<void(const std::string&)>& log) {
  const auto say = [&](const std::string& line) {
    if (log) log(line);
  };
  if (ck::needs_reference_monitor(*model)) throw InvalidArgument(monitor_refusal(model->name));
  // On a ledger, the pools are the ledger's rows (the SharedKernel finds its pool there).
  if (!model->budget.pool.empty() && !storage.pools && storage.ledger.empty())
    throw SpecError("budget.pool",
                    "task `" + model->name + "`: its budget is in pool `" + model->budget.pool +
                        "`, and the server has no pools: start it with --pools FILE");
  if (!storage.ledger.empty()) {
    if (!storage.data_dir.empty())
      throw InvalidArgument(
          "a data directory and a ledger cannot both keep task `" + model->name +
          "`: with a ledger its trace, state and budget live in the ledger (and are resumed from "
          "it); give one of them");
    ck::SharedOptions options;
    options.undo_depth = kUndoDepth;
    // A request waits for a lost database at most ~10 s (then 503 ledger_unavailable).
    options.reconnect_attempts = 8;
    // Checkpoints are committed to the shared trace like any entry, signed with this server's
    // key (SharedKernel::checkpoint); at shutdown a checkpoint, never a seal.
    options.signer = storage.signer;
    options.checkpoint_every = storage.checkpoint_every;
    if (storage.clock) options.clock = storage.clock;
    auto shared = std::make_unique<ck::SharedKernel>(
        model, ledger::open_ledger(storage.ledger, model->name), std::move(options));
    say("task `" + model->name + "`: on the ledger " + shared->ledger().describe() + " (" +
        std::to_string(shared->length()) + " entries replayed)");
    return std::make_unique<Task>(model, std::move(shared), storage.clock);
  }
  ck::KernelOptions options;
  options.signer = storage.signer;
  options.pools = storage.pools;
  options.trace_window = kTraceWindow;
  options.undo_depth = kUndoDepth;
  if (storage.clock) options.clock = storage.clock;
  std::string path;
  std::deque<ck::Receipt> receipts;
  if (!storage.data_dir.empty()) {
    path = (fs::path(storage.data_dir) / (model->name + ".jsonl")).string();
    if (fs::exists(path)) {
      // Locked first (O_APPEND: writes go to the end, wherever the repairs below leave it), so
      // a second server on this directory fails before touching the file.
      auto writer =
          std::make_shared<ck::TraceWriter>(path, ck::FlushPolicy::flush, ck::TraceOpen::append);
      // The trace is read streaming, at any length, in bounded memory (trace_reader.hpp): once
      // to check its chain, then again as the kernel replays it.
      ck::TraceReadOptions read;
      read.allow_unsealed = true;
      ck::TraceCheck check = ck::TraceReader(path, read).finish();
      if (!check.ok && check.truncated_tail) {
        // The process died while writing this entry: it was never answered, so it is dropped.
        fs::resize_file(path, check.verified_bytes);
        say("task `" + model->name + "`: dropped the last line of `" + path +
            "`, cut short by a crash (" + std::to_string(check.entries) + " entries kept)");
        check = ck::TraceReader(path, read).finish();
      }
      if (!check.ok) throw TraceError("cannot continue the trace `" + path + "`: " + check.message);
      std::size_t n = check.entries;
      if (check.sealed) {
        // A seal ends a trace; the service goes on. The sealed trace is kept whole, and the
        // live one continues the same chain from the entry before the seal.
        const std::string archive =
            (fs::path(storage.data_dir) / (model->name + "." + std::to_string(n) + ".sealed.jsonl"))
                .string();
        // Written whole or not at all (a crash mid-copy leaves no torn archive that a restart
        // would take for the kept copy), and never over another file.
        if (std::error_code ec; fs::symlink_status(archive, ec).type() == fs::file_type::not_found)
          ck::copy_file_atomically(path, archive, /*replace=*/false, "archived trace");
        fs::resize_file(path, ck::TraceReader(path, read).last_line_start());
        --n;
        say("task `" + model->name + "`: the sealed trace is kept as `" + archive +
            "`; continuing `" + path + "` from entry " + std::to_string(n - 1));
      }
      writer->continue_from(n);
      auto reader = std::make_shared<ck::TraceReader>(path, read);
      auto kept = std::make_shared<std::deque<ck::Receipt>>();
      auto tickets = std::make_shared<TicketLog>();  // a restart rebuilds the pending tickets
      options.resume_from = [reader, path](ck::TraceEntry& e) {
        if (reader->next(e)) return true;
        const ck::TraceCheck again = reader->finish();  // changed since it was checked
        if (!again.ok)
          throw TraceError("cannot continue the trace `" + path + "`: " + again.message);
        return false;
      };
      options.writer = writer;
      try {
        // A trace that spans several specs (reloads) is continued with each of them, kept by
        // digest in the data directory (reload.cpp).
        auto kernel = ck::continue_trace(
            kept_specs(storage.data_dir, model),
            std::move(options),
            [kept, tickets](const ck::TaskModel& in_force, const ck::TraceEntry& e) {
              note_receipt(in_force, e, *kept);
              tickets->note(in_force, e);
            });
        say("task `" + model->name + "`: resumed from `" + path + "` (" + std::to_string(n) +
            " entries replayed and verified)");
        if (kernel->model().digest != model->digest) {
          restore_spec_file(storage.data_dir, kernel->model(), say);
          model = kernel->model_ptr();
        }
        receipts = std::move(*kept);
        if (!tickets->pending.empty())
          say("task `" + model->name + "`: " + std::to_string(tickets->pending.size()) +
              " approval ticket(s) still pending");
        return std::make_unique<Task>(model,
                                      path,
                                      std::move(writer),
                                      std::move(kernel),
                                      std::move(receipts),
                                      std::move(*tickets),
                                      storage.clock,
                                      storage.checkpoint_every);
      } catch (const InvalidArgument& e) {
        throw TraceError("cannot continue the trace `" + path + "`: " + e.what());
      }
    }
    options.writer =
        std::make_shared<ck::TraceWriter>(path, ck::FlushPolicy::flush, ck::TraceOpen::create);
  }
  auto writer = options.writer;
  auto kernel = std::make_unique<ck::SafetyKernel>(model, std::move(options));
  return std::make_unique<Task>(model,
                                path,
                                std::move(writer),
                                std::move(kernel),
                                receipts,
                                TicketLog{},
                                storage.clock,
                                storage.checkpoint_every);
}

}  // namespace clampai::server
