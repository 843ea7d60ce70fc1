// Ledgers and the shared-ledger protocol (clampai/kernel/ledger.hpp, docs/LEDGER.md).
#include "clampai/kernel/ledger.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>
#include <utility>
#include <variant>

#include "clampai/kernel/file.hpp"
#include "decide.hpp"
#include "json.hpp"
#include "trace_codec.hpp"

namespace clampai::kernel {

using detail::kZeroHash;
using detail::named_params;
using detail::system_clock_us;

namespace {

std::string os_error(const std::string& what, const std::string& path) {
  return what + " `" + path + "`: " + std::strerror(errno);
}

// A recorded entry's parameters as a proposal names them (decimals are written as strings).
ParamMap recorded_params(const TraceEntry& e, std::uint64_t index) {
  std::string bad;
  std::optional<ParamMap> params = detail::recorded_params(e, bad);
  if (!params) {
    throw InvalidArgument("cannot follow the ledger: entry " + std::to_string(index) +
                          ": parameter `" + bad + "` is not a number");
  }
  return std::move(*params);
}

// Sets the counters, budget and time an entry records: those of `after`.
void stamp(TraceEntry& entry, const TaskModel& m, const Situation& after, std::int64_t time) {
  entry.step = after.steps;
  entry.emergency_steps = after.emergency_steps;
  entry.gross = m.format_amount(after.budget.gross());
  entry.net = m.format_amount(after.budget.net());
  entry.time_us = time;
}

// The rejected entry of `proposal` (decided `d`) in situation `now`, as `execute` records it.
TraceEntry rejection_entry(const TaskModel& m,
                           const Proposal& proposal,
                           const Decision& d,
                           const Situation& now,
                           std::int64_t time) {
  TraceEntry entry = detail::rejected_entry(m, proposal, d);
  stamp(entry, m, now, time);
  return entry;
}

// Counts a lost compare-and-set of one call; gives up at `max` of them (0: never).
void count_conflict(std::uint64_t& conflicts, std::uint64_t max) {
  if (max > 0 && ++conflicts >= max)
    throw Error("gave up after " + std::to_string(conflicts) +
                " conflicts on the ledger (SharedOptions::max_conflicts)");
}

[[noreturn]] void follow_failed(const Ledger& ledger, std::size_t index, const std::string& why) {
  throw InvalidArgument("cannot follow the ledger " + ledger.describe() + ": entry " +
                        std::to_string(index) + ": " + why);
}

}  // namespace

// ---- lines ----

std::vector<TraceEntry> parse_trace_lines(const std::vector<std::string>& lines,
                                          const std::string& source) {
  std::vector<TraceEntry> entries;
  entries.reserve(lines.size());
  for (std::size_t i = 0; i < lines.size(); ++i) {
    try {
      entries.push_back(detail::entry_from_line(lines[i], source));
    } catch (const Error& e) {
      throw TraceError(source + ": entry " + std::to_string(i) + ": " + e.what());
    }
  }
  return entries;
}

TraceCheck verify_trace_lines(const std::vector<std::string>& lines,
                              const std::string& source,
                              bool allow_unsealed) {
  TraceReadOptions options;
  options.allow_unsealed = allow_unsealed;
  std::size_t at = 0;
  TraceReader reader(
      source,
      [&](std::string& out) {
        for (; at < lines.size() && out.size() < default_trace_block_bytes; ++at) {
          out += lines[at];
          out += '\n';
        }
        return at < lines.size();
      },
      options);
  return reader.finish();
}

std::vector<std::string> Ledger::read_page(std::uint64_t from, std::size_t limit) {
  std::vector<std::string> lines = read(from);
  if (lines.size() > limit) lines.resize(limit);
  return lines;
}

std::vector<LedgerPool> Ledger::pool_path(const std::string& pool) {
  throw InvalidArgument("the ledger " + describe() +
                        " keeps no budget pools (the budget is in pool `" + pool +
                        "`): pools across processes are kept on a PostgreSQL ledger, created with "
                        "`clampai ledger pools apply FILE --ledger URL` (docs/POOLS.md)");
}

std::unique_ptr<TraceReader> read_ledger(Ledger& ledger,
                                         TraceReadOptions options,
                                         std::size_t page) {
  if (page == 0) throw InvalidArgument("read_ledger: a page of no lines");
  return std::make_unique<TraceReader>(
      "the ledger " + ledger.describe(),
      [&ledger, page, next = std::uint64_t{0}](std::string& out) mutable {
        const std::vector<std::string> lines = ledger.read_page(next, page);
        for (const std::string& line : lines) {
          out += line;
          out += '\n';
        }
        next += lines.size();
        return lines.size() == page;  // a short page is the last
      },
      options);
}

std::string state_json(const State& state) {
  jsonio::JsonNode obj = jsonio::JsonNode::make_object();
  for (VarId id = 0; id < state.size(); ++id)
    obj.add(state.schema().name(id), jsonio::value_to_json(state.get(id)));
  std::string out;
  (void)jsonio::append_canonical(out, obj);
  return out;
}

// ---- memory ----

struct MemoryLedger::Log {
  std::mutex mutex;
  std::vector<std::string> lines;
  std::vector<std::string> hashes;
};

MemoryLedger::MemoryLedger() : log_(std::make_shared<Log>()) {}

std::shared_ptr<MemoryLedger> MemoryLedger::share() const {
  return std::shared_ptr<MemoryLedger>(new MemoryLedger(log_));
}

std::vector<std::string> MemoryLedger::read(std::uint64_t from) {
  return read_page(from, log_->lines.max_size());
}

std::vector<std::string> MemoryLedger::read_page(std::uint64_t from, std::size_t limit) {
  std::lock_guard lock(log_->mutex);
  if (from >= log_->lines.size()) return {};
  const std::size_t to = from + std::min<std::size_t>(limit, log_->lines.size() - from);
  return {log_->lines.begin() + static_cast<std::ptrdiff_t>(from),
          log_->lines.begin() + static_cast<std::ptrdiff_t>(to)};
}

CommitStatus MemoryLedger::commit(const LedgerRecord& record) {
  std::lock_guard lock(log_->mutex);
  Log& log = *log_;
  const std::string& head = log.hashes.empty() ? kZeroHash : log.hashes.back();
  if (log.lines.size() != record.sequence || head != record.prev) return CommitStatus::conflict;
  log.lines.push_back(record.line);
  log.hashes.push_back(record.hash);
  return CommitStatus::committed;
}

// ---- file ----

FileLedger::FileLedger(std::string path, bool fsync) : path_(std::move(path)), fsync_(fsync) {
  // The rule of every written file (file.hpp): never through a symbolic link, never a special
  // file (not even /dev/null: a ledger is read back; `memory:` is the ledger that keeps nothing).
  WriteOptions options;
  options.mode = WriteMode::update;
  options.what = "ledger file";
  options.read_too = true;
  options.null_ok = false;
  try {
    fd_ = OutputFile(path_, options).release();
  } catch (const FileError& e) {
    throw LedgerUnavailable(e.what());
  }
}

FileLedger::~FileLedger() {
  if (fd_ >= 0) ::close(fd_);
}

namespace {
// Holds flock(2) on a descriptor for a scope.
class FileLock {
 public:
  FileLock(int fd, int how, const std::string& path) : fd_(fd) {
    while (::flock(fd_, how) != 0) {
      if (errno != EINTR) throw LedgerUnavailable(os_error("cannot lock the ledger file", path));
    }
  }
  ~FileLock() { (void)::flock(fd_, LOCK_UN); }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_;
};
}  // namespace

namespace {
// Transfers all `size` bytes at `offset` with `op` (pread or pwrite), through short transfers
// and interruptions. @throws LedgerUnavailable naming `what` and `path`.
template <typename Op>
void transfer_all(
    Op op, std::size_t size, std::uint64_t offset, const char* what, const std::string& path) {
  std::size_t done = 0;
  while (done < size) {
    const ssize_t n = op(done, size - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw LedgerUnavailable(os_error(what, path));
    done += static_cast<std::size_t>(n);
  }
}

// How a ledger file is read: a chunk at a time, never the whole file.
constexpr std::size_t kFileChunk = std::size_t{1} << 20;

// Fills `chunk` (already sized) with the file's bytes at `at`.
void read_chunk(int fd, std::string& chunk, std::uint64_t at, const std::string& path) {
  transfer_all(
      [&](std::size_t got, std::size_t n, off_t off) {
        return ::pread(fd, chunk.data() + got, n, off);
      },
      chunk.size(),
      at,
      "cannot read",
      path);
}
}  // namespace

void FileLedger::catch_up_locked() {
  struct stat st {};
  if (::fstat(fd_, &st) != 0) throw LedgerUnavailable(os_error("cannot stat", path_));
  const auto size = static_cast<std::uint64_t>(st.st_size);
  if (size < end_) throw TraceError("the ledger file `" + path_ + "` shrank: it was truncated");
  // The new whole lines, a chunk at a time: counted, every kMark-th one's start marked, the
  // last one kept (a line without its newline is a write cut short: not an entry).
  std::string chunk;
  std::string line;
  std::uint64_t line_start = end_;
  std::uint64_t at = end_;
  bool partial = false;  // `line` holds the start of a line not ended yet
  while (at < size) {
    chunk.resize(static_cast<std::size_t>(std::min<std::uint64_t>(kFileChunk, size - at)));
    read_chunk(fd_, chunk, at, path_);
    std::size_t from = 0;
    while (from < chunk.size()) {
      const std::size_t nl = chunk.find('\n', from);
      if (!partial) {
        line.clear();
        line_start = at + from;
      }
      if (nl == std::string::npos) {
        line.append(chunk, from, std::string::npos);
        partial = true;
        break;
      }
      line.append(chunk, from, nl - from);
      partial = false;
      if (count_ % kMark == 0) marks_.push_back(line_start);
      ++count_;
      end_ = at + nl + 1;
      last_line_ = line;
      from = nl + 1;
    }
    at += chunk.size();
  }
}

std::vector<std::string> FileLedger::read(std::uint64_t from) {
  return read_page(from, std::numeric_limits<std::size_t>::max());
}

std::vector<std::string> FileLedger::read_page(std::uint64_t from, std::size_t limit) {
  std::lock_guard guard(mutex_);
  {
    FileLock lock(fd_, LOCK_SH, path_);
    catch_up_locked();
  }
  if (from >= count_) return {};
  // The lines before `end_` never change (commits append after it): read without the lock,
  // from the mark before `from`.
  const std::uint64_t want = std::min<std::uint64_t>(limit, count_ - from);
  std::uint64_t skip = from % kMark;
  std::uint64_t at = marks_[static_cast<std::size_t>(from / kMark)];
  std::vector<std::string> lines;
  std::string chunk;
  std::string line;
  while (lines.size() < want && at < end_) {
    chunk.resize(static_cast<std::size_t>(std::min<std::uint64_t>(kFileChunk, end_ - at)));
    read_chunk(fd_, chunk, at, path_);
    std::size_t pos = 0;
    while (pos < chunk.size() && lines.size() < want) {
      const std::size_t nl = chunk.find('\n', pos);
      if (nl == std::string::npos) {
        if (skip == 0) line.append(chunk, pos, std::string::npos);
        break;
      }
      if (skip > 0) {
        --skip;
      } else {
        line.append(chunk, pos, nl - pos);
        lines.push_back(std::move(line));
        line.clear();
      }
      pos = nl + 1;
    }
    at += chunk.size();
  }
  return lines;
}

CommitStatus FileLedger::commit(const LedgerRecord& record) {
  std::lock_guard guard(mutex_);
  FileLock lock(fd_, LOCK_EX, path_);
  catch_up_locked();
  if (count_ != record.sequence) return CommitStatus::conflict;
  if (count_ > 0 && detail::entry_from_line(last_line_, path_).hash != record.prev)
    return CommitStatus::conflict;
  if (count_ == 0 && record.prev != kZeroHash) return CommitStatus::conflict;
  // A line without its newline is a commit that never completed (its writer died before it
  // returned): it is not part of the ledger, and goes.
  if (::ftruncate(fd_, static_cast<off_t>(end_)) != 0)
    throw LedgerUnavailable(os_error("cannot truncate the torn tail of", path_));
  std::string text = record.line;
  text += '\n';
  transfer_all(
      [&](std::size_t at, std::size_t n, off_t off) {
        return ::pwrite(fd_, text.data() + at, n, off);
      },
      text.size(),
      end_,
      "cannot write",
      path_);
  if (fsync_ && ::fdatasync(fd_) != 0) throw LedgerUnavailable(os_error("cannot sync", path_));
  if (count_ % kMark == 0) marks_.push_back(end_);
  ++count_;
  end_ += text.size();
  last_line_ = record.line;
  return CommitStatus::committed;
}

std::shared_ptr<Ledger> open_local_ledger(const std::string& url) {
  if (url == "memory:") return std::make_shared<MemoryLedger>();
  if (url.rfind("file://", 0) == 0) return std::make_shared<FileLedger>(url.substr(7));
  if (url.rfind("file:", 0) == 0) return std::make_shared<FileLedger>(url.substr(5));
  if (url.find("://") != std::string::npos || url.rfind("memory:", 0) == 0) return nullptr;
  if (url.empty()) throw InvalidArgument("an empty ledger URL");
  return std::make_shared<FileLedger>(url);
}

// ---- the shared kernel ----

SharedKernel::SharedKernel(std::shared_ptr<const TaskModel> model,
                           std::shared_ptr<Ledger> ledger,
                           SharedOptions options)
    : model_(std::move(model)), ledger_(std::move(ledger)), options_(std::move(options)) {
  if (!ledger_) throw InvalidArgument("SharedKernel: no ledger");
  if (!options_.clock) options_.clock = system_clock_us;
  std::lock_guard lock(mutex_);
  auto fresh_local = [this](std::vector<TraceEntry> resume) {
    KernelOptions k;
    k.record_rejections = true;  // replays recorded rejections
    k.clock = [this] { return replay_time_; };
    k.trace_window = 1;
    k.undo_depth = options_.undo_depth;
    k.guard = [this](const Situation& s, const Proposal& p, const Decision& d) {
      return guard(s, p, d);
    };
    // A replayed seal or checkpoint keeps the signature it was committed with.
    k.signer = [this](std::string_view) { return replay_signature_; };
    k.resume = std::move(resume);
    return std::make_unique<SafetyKernel>(model_, std::move(k));
  };
  std::vector<std::string> lines = with_reconnect([&] { return ledger_->read_page(0, 1); });
  if (lines.empty()) {
    // A fresh kernel writes the genesis entry; commit it unless another kernel was first.
    replay_time_ = options_.clock();
    auto genesis_kernel = fresh_local({});
    TraceEntry genesis = genesis_kernel->trace().back();
    LedgerRecord r;
    r.sequence = 0;
    r.prev = kZeroHash;
    r.hash = genesis.hash;
    r.kind = "genesis";
    r.line = genesis.to_json_line();
    r.spec = model_->digest;
    r.state = state_json(genesis_kernel->state());
    r.total = model_->format_amount(model_->budget.total);
    r.gross = genesis.gross;
    r.net = genesis.net;
    CommitStatus status = CommitStatus::conflict;
    try {
      status = ledger_->commit(r);
    } catch (const LedgerUnavailable&) {
      ++stats_.in_doubt;
    }
    if (status == CommitStatus::committed) ++stats_.commits;
    lines = with_reconnect([&] { return ledger_->read_page(0, 1); });
    if (lines.empty())
      throw LedgerUnavailable("the ledger " + ledger_->describe() + " lost its genesis entry");
  }
  // The committed entries page by page (a trace of any length, in bounded memory; each page
  // read with the reconnects), parsed as they stream: each is checked as it is applied.
  constexpr std::size_t kPage = 4096;
  TraceReadOptions read;
  read.verify = false;
  TraceReader reader(
      "the ledger " + ledger_->describe(),
      [this, next = std::uint64_t{0}](std::string& out) mutable {
        const std::vector<std::string> page =
            with_reconnect([&] { return ledger_->read_page(next, kPage); });
        for (const std::string& line : page) {
          out += line;
          out += '\n';
        }
        next += page.size();
        return page.size() == kPage;
      },
      read);
  TraceEntry entry;
  if (!reader.next(entry))
    throw LedgerUnavailable("the ledger " + ledger_->describe() + " lost its genesis entry");
  // KernelOptions::resume checks the genesis (spec, initial state, hash); the rest is applied
  // entry by entry, as later ones will be.
  local_ = fresh_local({entry});
  length_ = 1;
  head_ = entry.hash;
  for (std::size_t i = 1; reader.next(entry); ++i) apply_locked(entry, i);
  stats_.applied = 0;
  if (!model_->budget.pool.empty()) {
    // The pool must be on the ledger, and every level's total exact at the task's scale (as
    // PoolTree::bind requires in process).
    const std::string& pool = model_->budget.pool;
    (void)read_pools_locked();
    const std::vector<LedgerPool>& path = pools_view_;
    if (path.empty())
      throw InvalidArgument("the ledger " + ledger_->describe() + " has no budget pool `" + pool +
                            "` (the spec's budget.pool): create it with `clampai ledger pools "
                            "apply FILE --ledger URL` (docs/POOLS.md)");
    for (const LedgerPool& level : path) {
      const std::optional<Decimal> total = Decimal::parse(level.total);
      if (!total || !total->rescaled(model_->budget.scale))
        throw SpecError("budget.pool",
                        "pool `" + level.name + "`'s total " + level.total +
                            " is not exact at the task's budget scale of " +
                            std::to_string(model_->budget.scale) + " digits after the point");
    }
  }
}

SharedKernel::~SharedKernel() = default;

template <typename F>
auto SharedKernel::with_reconnect(F&& f) -> decltype(f()) {
  unsigned delay = options_.reconnect_delay_ms;
  for (unsigned attempt = 0;; ++attempt) {
    try {
      return f();
    } catch (const LedgerUnavailable&) {
      if (attempt >= options_.reconnect_attempts) throw;
      ++stats_.reconnects;
      std::this_thread::sleep_for(std::chrono::milliseconds(delay));
      delay = std::min(2000U, delay * 2 + 1);
    }
  }
}

std::optional<Reason> SharedKernel::guard(const Situation& s,
                                          const Proposal& p,
                                          const Decision& d) const {
  if (replayer_.load(std::memory_order_relaxed) == std::this_thread::get_id()) return replay_veto_;
  if (options_.guard)
    if (std::optional<Reason> veto = options_.guard(s, p, d)) return veto;
  // Budget pools, after the guard as in process (SafetyKernel's check 4b), on the rows as last
  // read; the commit checks them again in its transaction.
  if (!model_->budget.pool.empty() && d.cost > 0) return pool_refusal(d.cost);
  return std::nullopt;
}

void SharedKernel::apply_locked(const TraceEntry& e, std::size_t index) {
  const auto fail = [&](const std::string& why) { follow_failed(*ledger_, index, why); };
  // The replica replays without the guard (its vetoes are replayed as recorded, below).
  struct Replaying {
    SharedKernel& k;
    explicit Replaying(SharedKernel& kernel) : k(kernel) {
      k.replay_veto_.reset();
      k.replay_signature_.clear();
      k.replayer_.store(std::this_thread::get_id(), std::memory_order_relaxed);
    }
    ~Replaying() {
      k.replayer_.store(std::thread::id(), std::memory_order_relaxed);
      k.replay_veto_.reset();
      k.replay_signature_.clear();
    }
    Replaying(const Replaying&) = delete;
    Replaying& operator=(const Replaying&) = delete;
  } replaying(*this);
  if (e.sequence != length_ || e.prev != head_ || e.compute_hash() != e.hash)
    fail("does not link to the entry before");
  replay_time_ = e.time_us;
  replay_signature_ = e.signature;
  const ParamMap params = e.kind == EntryKind::attested ? ParamMap{} : recorded_params(e, index);
  switch (e.kind) {
    case EntryKind::attested:
    case EntryKind::checkpoint:
    case EntryKind::approval_requested:
    case EntryKind::approval_granted:
    case EntryKind::approval_denied:
    case EntryKind::approval_expired:
      if (std::optional<std::string> refused = open_tickets_.refusal(e)) fail(*refused);
      try {
        (void)local_->record_note(e);  // changes nothing but the trace
      } catch (const InvalidArgument& err) {
        fail(err.what());
      }
      open_tickets_.note(e);
      break;
    case EntryKind::spec_changed:
      fail("a spec change on a shared ledger (a reload is refused on a shared ledger)");
      break;
    case EntryKind::genesis:
      follow_failed(*ledger_, index, "a second genesis entry");
    case EntryKind::sealed:
      (void)local_->seal();
      break;
    case EntryKind::executed: {
      auto resolved = local_->resolve(e.action, params);
      if (std::holds_alternative<Reason>(resolved))
        fail("`" + e.action + "`: " + std::get<Reason>(resolved).message);
      Proposal& p = std::get<Proposal>(resolved);
      p.principal = e.principal;
      Undo u{e.sequence, p.action, 0, local_->state(), p.params};
      const Outcome o = local_->execute(p);
      if (!o.receipt) fail("`" + e.action + "` is rejected on replay");
      u.cost = o.receipt->cost;
      undo_.push_back(std::move(u));
      if (options_.undo_depth > 0 && undo_.size() > options_.undo_depth) {
        undo_.pop_front();
        ++undo_dropped_;
      }
      break;
    }
    case EntryKind::rejected: {
      auto resolved = local_->resolve(e.action, params);
      // A guard's veto (the lookahead) is not the model's verdict: the replica's guard gives
      // the recorded one back, whatever guard (if any) this kernel has.
      // So is a budget pool's refusal: the pools are the ledger's rows, not the replica's.
      if (e.reasons.size() == 1 && (is_guard_reason(e.reasons.front().code) ||
                                    e.reasons.front().subject.rfind("pool:", 0) == 0))
        replay_veto_ = e.reasons.front();
      if (std::holds_alternative<Reason>(resolved)) {
        (void)local_->execute(e.action, params);  // traces the unknown action or bad parameter
      } else if (Proposal& p = std::get<Proposal>(resolved);
                 (p.principal = e.principal, local_->record_rejection(p).approved)) {
        fail("`" + e.action + "` was recorded as rejected but is approved on replay");
      }
      break;
    }
    case EntryKind::compensated: {
      const std::optional<std::uint64_t> step = compensated_step(e);
      if (!step) fail("a compensation without its step (`compensates`)");
      try {
        (void)local_->compensate(*step, e.principal);
      } catch (const InvalidArgument& err) {
        fail(err.what());
      }
      // Nothing committed before a compensation can be rolled back after it.
      undo_.clear();
      compensated_at_ = e.sequence;
      break;
    }
    case EntryKind::rolled_back: {
      if (undo_.empty()) fail("a rollback with nothing to roll back");
      const Undo& u = undo_.back();
      try {
        (void)local_->rollback(Receipt{u.sequence, u.action, u.cost}, e.principal);
      } catch (const InvalidArgument& err) {
        fail(err.what());
      }
      undo_.pop_back();
      break;
    }
  }
  if (local_->trace().back().hash != e.hash) fail("does not replay to the recorded entry");
  if (e.kind == EntryKind::checkpoint) last_checkpoint_ = e.sequence;
  ++length_;
  head_ = e.hash;
}

std::uint64_t SharedKernel::refresh_locked() {
  const std::vector<std::string> lines = with_reconnect([&] { return ledger_->read(length_); });
  const std::vector<TraceEntry> entries =
      parse_trace_lines(lines, "the ledger " + ledger_->describe());
  for (const TraceEntry& e : entries) {
    apply_locked(e, length_);
    ++stats_.applied;
  }
  return entries.size();
}

std::uint64_t SharedKernel::refresh() {
  std::lock_guard lock(mutex_);
  const std::uint64_t n = refresh_locked();
  if (model_->budget.pool.empty()) return n;
  return n + (read_pools_locked() ? 1 : 0);
}

std::vector<std::string> SharedKernel::read(std::uint64_t from) {
  std::lock_guard lock(mutex_);
  return with_reconnect([&] { return ledger_->read(from); });
}

CommitStatus SharedKernel::commit_locked(TraceEntry& entry, const Situation& after) {
  entry.sequence = length_;
  entry.prev = head_;
  // Signed as it extends this very head (after a lost compare-and-set: afresh on the new one).
  if (options_.signer && (entry.kind == EntryKind::sealed || entry.kind == EntryKind::checkpoint)) {
    entry.signature.clear();
    entry.signature = options_.signer(entry.signed_bytes());  // may throw: nothing committed
  }
  entry.hash = entry.compute_hash();
  LedgerRecord r;
  r.sequence = entry.sequence;
  r.prev = entry.prev;
  r.hash = entry.hash;
  r.kind = std::string(to_string(entry.kind));
  r.line = entry.to_json_line();
  r.spec = model_->digest;
  r.state = state_json(after.state);
  r.total = model_->format_amount(after.budget.total());
  r.gross = model_->format_amount(after.budget.gross());
  r.net = model_->format_amount(after.budget.net());
  r.steps = after.steps;
  r.emergency_steps = after.emergency_steps;
  if (!model_->budget.pool.empty() &&
      (entry.kind == EntryKind::executed || entry.kind == EntryKind::rolled_back ||
       entry.kind == EntryKind::compensated) &&
      entry.cost != model_->format_amount(0)) {
    r.pool = model_->budget.pool;
    r.pool_amount = entry.cost;
  }
  if (options_.hook) options_.hook(SharedPhase::committing);
  CommitStatus status = CommitStatus::conflict;
  try {
    status = ledger_->commit(r);
  } catch (const LedgerUnavailable&) {
    // The connection went while the commit was in flight: it happened iff the ledger now holds
    // this very line at this sequence (the line's hash covers its time and content).
    ++stats_.in_doubt;
    ++stats_.reconnects;
    const std::vector<std::string> lines =
        with_reconnect([&] { return ledger_->read(entry.sequence); });
    status = !lines.empty() && lines.front() == r.line ? CommitStatus::committed
                                                       : CommitStatus::conflict;
  }
  if (status == CommitStatus::committed) {
    apply_locked(entry, entry.sequence);
    ++stats_.commits;
    return status;
  }
  if (status == CommitStatus::conflict) {
    ++stats_.conflicts;
    refresh_locked();
  }
  return status;
}

bool SharedKernel::read_pools_locked() {
  std::vector<LedgerPool> path =
      with_reconnect([&] { return ledger_->pool_path(model_->budget.pool); });
  std::lock_guard lock(pools_mutex_);
  if (path == pools_view_) return false;
  pools_view_ = std::move(path);
  return true;
}

std::optional<Reason> SharedKernel::pool_refusal(Amount cost) const {
  std::lock_guard lock(pools_mutex_);
  const auto figure = [&](const LedgerPool& level, const std::string& text) {
    const std::optional<Decimal> d = Decimal::parse(text);
    if (!d)
      throw Error("the ledger " + ledger_->describe() + ": pool `" + level.name +
                  "` has the figure `" + text + "`, not a decimal");
    return *d;
  };
  for (const LedgerPool& level : pools_view_) {
    const Decimal total = figure(level, level.total);
    const Decimal net = figure(level, level.net);
    // The level's scale: the finest of the task's and its figures' (every one exact there).
    const int scale = std::max({static_cast<int>(model_->budget.scale),
                                static_cast<int>(total.scale),
                                static_cast<int>(net.scale)});
    const std::optional<Decimal> t = total.rescaled(scale);
    const std::optional<Decimal> n = net.rescaled(scale);
    const std::optional<Decimal> c =
        Decimal{cost, static_cast<std::uint8_t>(model_->budget.scale)}.rescaled(scale);
    if (!t || !n || !c) continue;  // beyond int64 at that scale: the database decides
    const std::optional<Decimal> remaining = checked_sub(*t, *n);
    if (!remaining || c->units <= remaining->units) continue;
    return detail::pool_refusal(*model_, level.name, cost, remaining->to_string(), t->to_string());
  }
  return std::nullopt;
}

Outcome SharedKernel::execute(const Proposal& proposal) {
  std::lock_guard lock(mutex_);
  return execute_locked(proposal, nullptr);
}

Outcome SharedKernel::execute(Decided decided) {
  std::lock_guard lock(mutex_);
  return execute_locked(decided.proposal(), &decided);
}

Outcome SharedKernel::execute_locked(const Proposal& proposal, Decided* decided) {
  std::uint64_t conflicts = 0;
  auto lost = [&] { count_conflict(conflicts, options_.max_conflicts); };
  while (true) {
    if (local_->is_sealed())
      throw InvalidArgument("the kernel is sealed: nothing can execute after the seal");
    // The replica changes only under this kernel's lock: a decision made on its head stands
    // while the head has not moved (once: after a lost compare-and-set it has).
    const Decision d =
        decided && local_->is_current(*decided) ? decided->decision() : local_->evaluate(proposal);
    decided = nullptr;
    const Situation now = local_->situation();
    if (!d.approved) {
      // A rejection is final only on the ledger's latest head (and a pool's, on its rows as
      // they are now).
      if (refresh_locked() > 0) continue;
      if (!model_->budget.pool.empty() &&
          std::any_of(d.reasons.begin(),
                      d.reasons.end(),
                      [](const Reason& r) { return r.subject.rfind("pool:", 0) == 0; }) &&
          read_pools_locked())
        continue;
      if (options_.record_rejections) {
        TraceEntry entry = rejection_entry(*model_, proposal, d, now, options_.clock());
        if (commit_locked(entry, now) != CommitStatus::committed) {
          lost();
          continue;
        }
      }
      return Outcome{d, std::nullopt, local_->state()};
    }
    if (options_.hook) options_.hook(SharedPhase::decided);
    const Situation after = advance(*model_, now, d);
    const Action& a = model_->actions[proposal.action];
    TraceEntry entry;
    entry.kind = EntryKind::executed;
    entry.action = a.id;
    entry.params = named_params(a, proposal.params);
    for (const auto& [id, v] : d.changes) entry.changes.emplace_back(model_->variables[id].name, v);
    entry.cost = model_->format_amount(d.cost);
    entry.emergency = a.emergency;
    entry.warnings = d.warnings;
    entry.principal = proposal.principal;
    stamp(entry, *model_, after, options_.clock());
    const CommitStatus status = commit_locked(entry, after);
    if (status == CommitStatus::committed)
      return Outcome{d, Receipt{entry.sequence, proposal.action, d.cost}, local_->state()};
    if (status == CommitStatus::refused) {
      // A level of the task's pools cannot take the cost (checked in the transaction, under
      // the rows' locks): the rejection names the first such level as the rows are now. If
      // none refuses any longer (a refund came in between), decide afresh.
      (void)read_pools_locked();
      if (std::optional<Reason> refused = pool_refusal(d.cost)) {
        Decision rejected = d;
        rejected.approved = false;
        rejected.changes.clear();
        rejected.reasons.assign(1, std::move(*refused));
        // Recorded as a guard's veto is (replayed as recorded: the replica has no pools); an
        // emergency action consults no guard, so its refusal is not recorded.
        if (!options_.record_rejections || d.emergency)
          return Outcome{rejected, std::nullopt, local_->state()};
        TraceEntry noted = rejection_entry(*model_, proposal, rejected, now, options_.clock());
        if (commit_locked(noted, now) == CommitStatus::committed)
          return Outcome{rejected, std::nullopt, local_->state()};
      }
    }
    lost();
  }
}

Decision SharedKernel::record_rejection(const Proposal& proposal) {
  std::lock_guard lock(mutex_);
  std::uint64_t conflicts = 0;
  while (true) {
    Decision d = local_->evaluate(proposal);
    if (d.approved || !options_.record_rejections || local_->is_sealed()) return d;
    const Situation now = local_->situation();
    TraceEntry entry = rejection_entry(*model_, proposal, d, now, options_.clock());
    // The compare-and-set checks that the rejection was decided on the latest head.
    if (commit_locked(entry, now) == CommitStatus::committed) return d;
    count_conflict(conflicts, options_.max_conflicts);
  }
}

TraceEntry SharedKernel::record_attested(TraceEntry entry) {
  if (entry.kind != EntryKind::attested)
    throw InvalidArgument("record_attested: a `" + std::string(to_string(entry.kind)) +
                          "` entry is not an attestation");
  return record_note(std::move(entry));
}

std::optional<TraceEntry> SharedKernel::checkpoint(bool final) {
  if (options_.checkpoint_every == 0 && !(final && options_.signer)) return std::nullopt;
  std::lock_guard lock(mutex_);
  if (final) refresh_locked();  // what is there now, whatever this kernel saw last
  std::uint64_t conflicts = 0;
  while (true) {
    // Due on the head this kernel knows; after a lost compare-and-set, on the one it caught up
    // with (where another kernel's checkpoint may have made it due no longer).
    const std::uint64_t since = length_ - 1 - last_checkpoint_.value_or(0);
    const bool due = final ? since > 0 || !last_checkpoint_ : since >= options_.checkpoint_every;
    if (!due || local_->is_sealed()) return std::nullopt;
    TraceEntry entry;
    entry.kind = EntryKind::checkpoint;
    entry.cost = model_->format_amount(0);  // as `SafetyKernel::record_note` keeps a note
    const Situation now = local_->situation();
    stamp(entry, *model_, now, options_.clock());
    if (commit_locked(entry, now) == CommitStatus::committed) return entry;
    count_conflict(conflicts, options_.max_conflicts);
  }
}

Outcome SharedKernel::execute(std::string_view action_id, const ParamMap& params) {
  std::variant<Proposal, Reason> resolved = local_->resolve(action_id, params);
  if (auto* p = std::get_if<Proposal>(&resolved)) return execute(*p);
  Decision d;
  d.reasons.push_back(std::move(std::get<Reason>(resolved)));
  std::lock_guard lock(mutex_);
  while (options_.record_rejections) {
    const Situation now = local_->situation();
    TraceEntry entry;
    entry.kind = EntryKind::rejected;
    entry.action = std::string(action_id);
    entry.params = params;
    entry.cost = model_->format_amount(0);
    entry.reasons = d.reasons;
    stamp(entry, *model_, now, options_.clock());
    if (commit_locked(entry, now) == CommitStatus::committed) break;
  }
  return Outcome{std::move(d), std::nullopt, local_->state()};
}

Outcome SharedKernel::rollback(const Receipt& receipt, std::string_view principal) {
  std::lock_guard lock(mutex_);
  while (true) {
    if (local_->is_sealed())
      throw InvalidArgument("the kernel is sealed: nothing can be rolled back after the seal");
    if (undo_.empty() || undo_.back().sequence != receipt.sequence) {
      // Perhaps the replica is behind; the answer must come from the latest head.
      if (refresh_locked() > 0) continue;
      if (receipt.sequence < compensated_at_) {
        throw InvalidArgument("cannot roll back trace entry " + std::to_string(receipt.sequence) +
                              ": entry " + std::to_string(compensated_at_) +
                              " compensated a step after it, so the state is not the one it "
                              "produced (compensate it instead)");
      }
      if (undo_.empty()) {
        throw InvalidArgument(
            undo_dropped_ > 0 ? "cannot roll back trace entry " + std::to_string(receipt.sequence) +
                                    ": its undo record was dropped (SharedOptions::undo_depth)"
                              : "nothing to roll back: no committed action is in effect");
      }
      throw InvalidArgument("cannot roll back trace entry " + std::to_string(receipt.sequence) +
                            ": the state is not the one it produced (the most recent action "
                            "still in effect is entry " +
                            std::to_string(undo_.back().sequence) +
                            "; roll back in reverse order)");
    }
    const Undo u = undo_.back();
    const Action& a = model_->actions[u.action];
    if (!a.reversible)
      throw InvalidArgument("action `" + a.id +
                            "` is declared irreversible and cannot be rolled back");
    Situation after = local_->situation();
    TraceEntry entry;
    entry.kind = EntryKind::rolled_back;
    entry.action = a.id;
    entry.principal = std::string(principal);
    entry.params = named_params(a, u.params);
    Changes restored;
    for (const Effect& eff : a.effects) {
      restored.emplace_back(eff.variable, u.before.get(eff.variable));
      entry.changes.emplace_back(model_->variables[eff.variable].name, u.before.get(eff.variable));
    }
    entry.cost = model_->format_amount(u.cost);
    entry.emergency = a.emergency;
    after.budget.refund(u.cost);
    after.state = u.before;
    stamp(entry, *model_, after, options_.clock());
    if (commit_locked(entry, after) == CommitStatus::committed) {
      Decision undone;
      undone.approved = true;
      undone.action = u.action;
      undone.cost = u.cost;
      undone.emergency = a.emergency;
      undone.changes = std::move(restored);
      return Outcome{std::move(undone), std::nullopt, local_->state()};
    }
  }
}

Outcome SharedKernel::compensate(std::uint64_t sequence, std::string_view principal) {
  std::lock_guard lock(mutex_);
  std::uint64_t conflicts = 0;
  while (true) {
    // Decided by the replica on the latest head it knows; a refusal stands only on the
    // ledger's latest head.
    Decision d;
    try {
      d = local_->plan_compensation(sequence);
    } catch (const InvalidArgument&) {
      if (refresh_locked() > 0) continue;
      throw;
    }
    const Action& a = model_->actions[d.action];
    Situation after = local_->situation();
    TraceEntry entry;
    entry.kind = EntryKind::compensated;
    entry.action = a.id;
    entry.principal = std::string(principal);
    entry.params.emplace_back("compensates", Value::integer(static_cast<std::int64_t>(sequence)));
    for (const auto& [id, v] : d.changes) entry.changes.emplace_back(model_->variables[id].name, v);
    entry.cost = model_->format_amount(d.cost);
    entry.emergency = a.emergency;
    entry.warnings = d.warnings;
    after.state = after.state.with(d.changes);
    after.budget.refund(d.cost);
    --after.completions[d.action];
    stamp(entry, *model_, after, options_.clock());
    // Applied on commit through the replica's `compensate`, which must give this very entry.
    if (commit_locked(entry, after) == CommitStatus::committed)
      return Outcome{std::move(d), std::nullopt, local_->state()};
    count_conflict(conflicts, options_.max_conflicts);
  }
}

std::uint64_t SharedKernel::length() const {
  std::lock_guard lock(mutex_);
  return length_;
}

std::string SharedKernel::head() const {
  std::lock_guard lock(mutex_);
  return head_;
}

SharedStats SharedKernel::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

// ---- notes and approvals' tickets ----

bool SharedKernel::ticket_open(std::string_view ticket) const {
  std::lock_guard lock(mutex_);
  return open_tickets_.open(ticket);
}

TraceEntry SharedKernel::record_note(TraceEntry entry) {
  const std::string what =
      entry.kind == EntryKind::attested ? "record_attested: " : "record_note: ";
  if (entry.kind == EntryKind::checkpoint)
    throw InvalidArgument(what +
                          "a checkpoint of a shared trace is signed on the head it "
                          "extends: SharedKernel::checkpoint commits it");
  // What `SafetyKernel::record_note` keeps of it, so that every replica replays it as is.
  const TraceEntry note = detail::note_entry(*model_, std::move(entry), what);
  std::lock_guard lock(mutex_);
  std::uint64_t conflicts = 0;
  while (true) {
    if (local_->is_sealed())
      throw InvalidArgument("the kernel is sealed: nothing can be recorded after the seal");
    // Checked on the head the entry extends (after a lost compare-and-set, on the new one); a
    // refusal is final only on the ledger's latest head.
    if (std::optional<std::string> refused = open_tickets_.refusal(note)) {
      if (refresh_locked() > 0) continue;
      throw InvalidArgument(what + *refused);
    }
    TraceEntry kept = note;  // afresh each attempt: the commit sets its links
    const Situation now = local_->situation();
    stamp(kept, *model_, now, options_.clock());
    if (commit_locked(kept, now) == CommitStatus::committed)
      return kept;  // no charge: never refused
    count_conflict(conflicts, options_.max_conflicts);
  }
}

}  // namespace clampai::kernel
