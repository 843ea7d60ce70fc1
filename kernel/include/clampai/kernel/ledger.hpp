// Ledgers: where a task's committed history (the hash-chained trace) lives, and the protocol by
// which several kernels, in one process or many, share one (docs/LEDGER.md).
//
// A `Ledger` is an append-only log of canonical trace lines with one operation that changes it:
// a compare-and-set on its head. `SharedKernel` runs the protocol over any ledger: it decides
// locally on the latest committed head it knows, commits the entry only if that head is still
// the ledger's head, and on a conflict catches up and decides afresh. In-memory and file ledgers
// live here; the PostgreSQL ledger is in `ledger/` (clampai/ledger/postgres.hpp), and
// `clampai::ledger::open_ledger` opens any of them from a URL.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "clampai/kernel/error.hpp"
#include "clampai/kernel/safety_kernel.hpp"
#include "clampai/kernel/tickets.hpp"
#include "clampai/kernel/trace_reader.hpp"

namespace clampai {

/// A ledger cannot be reached (a lost connection, a server restarting): whether the operation
/// in flight took effect is unknown. `SharedKernel` reconnects and finds out by reading.
class LedgerUnavailable : public Error {
 public:
  using Error::Error;
};

}  // namespace clampai

namespace clampai::kernel {

/// One commit: the entry's canonical line and the head it produces, for the ledger to store
/// atomically with it.
struct LedgerRecord {
  std::uint64_t sequence = 0;  // the entry's sequence: the ledger must hold exactly this many
  std::string prev;            // the hash of the ledger's last entry (all zeros for the genesis)
  std::string hash;            // the entry's hash: the new head
  std::string kind;            // `genesis`, `executed`, `rejected`, `rolled_back`, `sealed`,
                               // `attested`, `checkpoint`, `approval_*`
  std::string line;            // the entry's canonical JSON line (no newline)
  std::string spec;            // the model's digest
  std::string state;           // the state after the entry, as a canonical JSON object
  std::string total;           // the budget (decimal text at the budget's scale)
  std::string gross;           // gross and net spend after the entry
  std::string net;
  std::uint64_t steps = 0;  // counters after the entry
  std::uint64_t emergency_steps = 0;
  // Budget pools (docs/POOLS.md): the task's pool (empty: none) and what the entry charges
  // (`executed`) or refunds (`rolled_back`) at every level from it up to the root (decimal text
  // at the budget's scale; empty: nothing). A ledger that keeps pools commits the entry only if
  // every level can take the charge, in the same transaction (`CommitStatus::refused`).
  std::string pool{};
  std::string pool_amount{};
};

/// One level of a budget pool as a ledger keeps it (decimal text; the database's figures).
struct LedgerPool {
  std::string name;
  std::string parent;  // empty: a root
  std::string total;
  std::string gross;
  std::string net;
  friend bool operator==(const LedgerPool&, const LedgerPool&) = default;
};

/// What a compare-and-set did.
enum class CommitStatus : std::uint8_t {
  committed,  // the entry is the ledger's new head
  conflict,   // the ledger's head was not `prev` (another kernel committed first): nothing changed
  refused,    // a pool of `pool`'s path cannot take `pool_amount`: nothing changed
};

/// An append-only, hash-chained log of one task's trace entries, with a compare-and-set head.
/// Implementations: `MemoryLedger`, `FileLedger` (here), `ledger::PostgresLedger`.
class Ledger {
 public:
  virtual ~Ledger() = default;
  /// What the ledger is, for messages (a URL without its password).
  [[nodiscard]] virtual std::string describe() const = 0;
  /// The canonical lines of the committed entries `from`, `from` + 1, ..., in order.
  /// @throws LedgerUnavailable if the ledger cannot be reached.
  virtual std::vector<std::string> read(std::uint64_t from) = 0;
  /// At most `limit` (> 0) of those lines: a page, so that a long trace is read through in
  /// bounded memory, its sequence numbers the cursor (`read_ledger`). The default takes them
  /// from `read(from)`; a ledger in a database reads only the page.
  /// @throws LedgerUnavailable if the ledger cannot be reached.
  virtual std::vector<std::string> read_page(std::uint64_t from, std::size_t limit);
  /// Appends `record.line` iff the ledger holds exactly `record.sequence` entries, the last of
  /// which has hash `record.prev`; atomically with the head it describes.
  /// @throws LedgerUnavailable if the ledger cannot be reached: the commit may or may not have
  /// happened (read to find out).
  virtual CommitStatus commit(const LedgerRecord& record) = 0;
  /// The budget pools from `pool` up to the root, as they are now (the task's own first); empty
  /// if the ledger has no pool `pool`. Only a ledger that keeps pools (PostgreSQL) has any: the
  /// default throws InvalidArgument saying this ledger keeps none.
  /// @throws LedgerUnavailable if the ledger cannot be reached.
  virtual std::vector<LedgerPool> pool_path(const std::string& pool);
};

/// A ledger in this process's memory. Copies made with `share()` see one log, so that several
/// `SharedKernel`s (threads) can share it: the protocol's model, and today's in-process kernel.
class MemoryLedger final : public Ledger {
 public:
  MemoryLedger();
  /// Another handle on the same log.
  [[nodiscard]] std::shared_ptr<MemoryLedger> share() const;
  [[nodiscard]] std::string describe() const override { return "memory:"; }
  std::vector<std::string> read(std::uint64_t from) override;
  std::vector<std::string> read_page(std::uint64_t from, std::size_t limit) override;
  CommitStatus commit(const LedgerRecord& record) override;

 private:
  struct Log;
  explicit MemoryLedger(std::shared_ptr<Log> log) : log_(std::move(log)) {}
  std::shared_ptr<Log> log_;
};

/// A ledger in a JSON Lines trace file (the format of `run --trace`, verified by `clampai trace
/// verify FILE`). Each commit takes the file's exclusive lock (flock), checks that the file still
/// ends where this handle last read it, appends the line and flushes it; so processes on one
/// machine can share the file. `fsync` makes every commit durable against a machine crash.
/// A line left without its newline by a writer that died is not an entry: the next commit
/// truncates it. A handle keeps of the file only its length, its last line and where every
/// 4,096th line starts: pages are read from the file (`read_page`), at any length.
class FileLedger final : public Ledger {
 public:
  /// Opens (creating it if missing) `path`.
  /// @throws LedgerUnavailable naming the file and the OS's reason if it cannot be opened.
  explicit FileLedger(std::string path, bool fsync = false);
  ~FileLedger() override;
  FileLedger(const FileLedger&) = delete;
  FileLedger& operator=(const FileLedger&) = delete;
  [[nodiscard]] std::string describe() const override { return path_; }
  std::vector<std::string> read(std::uint64_t from) override;
  std::vector<std::string> read_page(std::uint64_t from, std::size_t limit) override;
  CommitStatus commit(const LedgerRecord& record) override;

 private:
  std::string path_;
  bool fsync_;
  int fd_ = -1;
  std::mutex mutex_;
  // What is known of the file, without its lines: how many whole lines it has, where they
  // end, the last one, and where every kMark-th one starts (a page is found from there).
  static constexpr std::uint64_t kMark = 4096;
  std::uint64_t count_ = 0;
  std::uint64_t end_ = 0;
  std::string last_line_;
  std::vector<std::uint64_t> marks_;
  void catch_up_locked();  // under the flock
};

/// Opens a ledger of this library by URL: `memory:` (a fresh in-process log) or `file:PATH` /
/// a path (a `FileLedger`). Returns null for any other scheme (`postgresql://...` is opened by
/// `clampai::ledger::open_ledger`).
std::shared_ptr<Ledger> open_local_ledger(const std::string& url);

/// A `TraceReader` of `ledger`'s entries from the first, read `page` lines at a time
/// (`read_page`): a trace of any length in bounded memory. Problems name the entry.
std::unique_ptr<TraceReader> read_ledger(Ledger& ledger,
                                         TraceReadOptions options = {},
                                         std::size_t page = 4096);

/// Verifies canonical trace lines exactly as `verify_trace_file` verifies a file's lines
/// (through a `TraceReader`): each line must be the canonical JSON of its entry byte for
/// byte, then the chain. `source` names them in messages.
TraceCheck verify_trace_lines(const std::vector<std::string>& lines,
                              const std::string& source,
                              bool allow_unsealed);

/// Parses canonical trace lines into entries (as `read_trace_file` does).
/// @throws TraceError naming the line that is not an entry.
std::vector<TraceEntry> parse_trace_lines(const std::vector<std::string>& lines,
                                          const std::string& source);

/// A state as the canonical JSON object a ledger stores (what `parse_state` reads back).
std::string state_json(const State& state);

/// Where a `SharedKernel` is in a commit, for tests that inject faults there.
enum class SharedPhase : std::uint8_t {
  decided,     // a proposal is approved on the local head; the commit has not started
  committing,  // the commit is about to be sent to the ledger
};

/// Options of a `SharedKernel`.
struct SharedOptions {
  /// Append rejected proposals passed to `execute` to the shared trace.
  bool record_rejections = false;
  /// Microseconds since the epoch, for this kernel's trace entries; defaults to the system clock.
  std::function<std::int64_t()> clock;
  /// How many committed actions `rollback` can undo (0: all of them).
  std::size_t undo_depth = 1024;
  /// Conflicts one `execute` or `rollback` may meet before giving up (0: no limit). Each
  /// conflict means another kernel committed, so the group always progresses.
  std::uint64_t max_conflicts = 0;
  /// How many times to reconnect after `LedgerUnavailable` before giving up, and the delay
  /// before the first attempt (doubled each time, at most 2 s).
  unsigned reconnect_attempts = 60;
  unsigned reconnect_delay_ms = 50;
  /// Called at each phase of a commit (tests inject faults there); may be empty.
  std::function<void(SharedPhase)> hook;
  /// Consulted after every decision of the local replica that approves a non-emergency action,
  /// as `KernelOptions::guard` is (`driver::lookahead_guard` is one): `execute`, and a driver's
  /// `local().evaluate`, see its vetoes. Never while committed entries are replayed: a veto
  /// recorded by any kernel of the group (`record_rejections`) is replayed as recorded, so the
  /// kernels of a task may have different guards, or none. May be empty.
  std::function<std::optional<Reason>(const Situation&, const Proposal&, const Decision&)> guard;
  /// Signs every `checkpoint` entry this kernel commits (`--signing-key`), as
  /// `KernelOptions::signer` does in process: given the entry's `signed_bytes()` as it extends
  /// the head it is committed on, returns the signature (hex). Empty: not signed. The kernels of
  /// a task should all sign with one key (`trace verify --public-key` checks every checkpoint
  /// with one). A throw commits nothing.
  std::function<std::string(std::string_view)> signer{};
  /// `--checkpoint-every N`: `checkpoint()` commits a `checkpoint` entry once N entries of the
  /// shared trace follow the last checkpoint (or the genesis); 0: only at shutdown.
  std::uint64_t checkpoint_every = 0;
};

/// Counters of a `SharedKernel`'s protocol.
struct SharedStats {
  std::uint64_t commits = 0;     // entries this kernel committed
  std::uint64_t conflicts = 0;   // compare-and-sets lost to another kernel
  std::uint64_t applied = 0;     // entries of other kernels replayed into the local replica
  std::uint64_t reconnects = 0;  // LedgerUnavailable met (and recovered from, or rethrown)
  std::uint64_t in_doubt = 0;    // commits whose outcome was read back after a lost connection
};

/// A kernel whose committed history is a shared `Ledger`. A task whose budget names a pool
/// (`Budget::pool`) needs a ledger that keeps pools (PostgreSQL: `Ledger::pool_path`): each
/// charge is committed only if every level from the task's pool up to the root can take it,
/// in the commit's transaction; else the proposal is rejected as in process (`budget_exceeded`,
/// subject `pool:NAME`). The local replica has no pools: the ledger is their only arbiter. decides
/// on the latest committed head it knows (a local replica: a `SafetyKernel` that replays every
/// committed entry, byte for byte) and commits each entry with a compare-and-set on the ledger's
/// head; on a conflict it replays what the others committed and decides afresh. Linearizable for
/// the whole kernel: every committed entry was decided on the head it extends, so T1-T7 hold for
/// the group of kernels as for one (docs/LEDGER.md). Thread-safe (one lock; held across a commit).
class SharedKernel {
 public:
  /// Opens the task's ledger: replays its entries, or commits the genesis entry if it has none
  /// (if another kernel commits one first, replays that one).
  /// @throws InvalidArgument if the model's budget names a pool the ledger does not have (or
  /// keeps no pools); SpecError at `budget.pool` if a level's total is not exact at the task's
  /// budget scale; InvalidArgument if the ledger's trace is for another spec, sealed, or does not
  /// replay (naming the entry); TraceError if a line is not a trace entry; LedgerUnavailable
  /// if the ledger cannot be reached after the reconnect attempts.
  SharedKernel(std::shared_ptr<const TaskModel> model,
               std::shared_ptr<Ledger> ledger,
               SharedOptions options = {});
  ~SharedKernel();
  SharedKernel(const SharedKernel&) = delete;
  SharedKernel& operator=(const SharedKernel&) = delete;

  /// Decides `proposal` on the latest head and commits it (retrying on conflicts with a fresh
  /// decision). A rejection is final only once decided on the ledger's latest head.
  Outcome execute(const Proposal& proposal);
  Outcome execute(std::string_view action_id, const ParamMap& params = {});
  /// The same for a decision the local replica made (`local().decide`): taken as decided when
  /// the replica is still at the head it was made on, decided afresh otherwise (and after a
  /// lost compare-and-set, as always).
  Outcome execute(Decided decided);
  /// Undoes `receipt`'s action (T7): it must be the most recent action of the shared trace still
  /// in effect. Refunds its cost once across all kernels (the rollback entry is committed by
  /// compare-and-set like any other).
  /// `principal` is recorded in the entry, as `SafetyKernel::rollback` records it.
  /// @throws InvalidArgument as `SafetyKernel::rollback` does.
  Outcome rollback(const Receipt& receipt, std::string_view principal = {});
  /// Compensates trace entry `sequence`'s action (`SafetyKernel::compensate`), which need not be
  /// the latest of the shared trace: its exact inverse applied to the latest head, decided by
  /// the local replica on that head and committed by compare-and-set like any other entry (on
  /// a conflict it catches up and decides again), refunding its cost once across all kernels.
  /// `principal` is recorded in the entry.
  /// @throws InvalidArgument as `SafetyKernel::compensate` does, on the latest head.
  Outcome compensate(std::uint64_t sequence, std::string_view principal = {});
  /// For drivers that screen proposals on `local()`: decides `proposal` on the local replica
  /// and, if it is rejected and rejections are recorded (`SharedOptions::record_rejections`),
  /// commits the rejected entry, by compare-and-set like any other (on a conflict it catches
  /// up and decides again, so a recorded rejection was decided on the head it extends). An
  /// approval commits nothing. Returns the decision.
  Decision record_rejection(const Proposal& proposal);
  /// True iff rejected proposals are committed to the shared trace.
  [[nodiscard]] bool records_rejections() const noexcept { return options_.record_rejections; }
  /// Commits `entry`, an `attested` entry (`attestation_entry`), to the shared trace: as
  /// `record_note` does (a gateway's outcome of a step).
  /// @throws InvalidArgument if `entry` is not a well-formed attested entry or names an unknown
  /// action, or the trace is sealed; LedgerUnavailable as `execute`.
  TraceEntry record_attested(TraceEntry entry);
  /// Commits a `checkpoint` entry (signed by `SharedOptions::signer`, if any) with the latest
  /// head's counters, budget and time, by compare-and-set like any other, if one is due: N
  /// (`SharedOptions::checkpoint_every`) entries of the shared trace follow its last checkpoint
  /// (or the genesis), whichever kernel committed them. With `final` (a process's shutdown:
  /// never a seal, the other kernels go on), one is due unless the ledger's last entry (read
  /// afresh) is a checkpoint already, or the kernel neither signs nor checkpoints. On a lost
  /// compare-and-set it catches up and checks again whether one is still due (another kernel
  /// may have committed it), so a checkpoint always extends a head on which it was due: no two
  /// kernels commit one for the same due point. Call it between operations, as
  /// `Checkpoints::after` in process. Returns the entry committed, if any.
  /// @throws what the signer throws (nothing committed); LedgerUnavailable as `execute`.
  std::optional<TraceEntry> checkpoint(bool final = false);
  /// Replays the entries other kernels committed since. Returns how many; for a task in a pool,
  /// also reads the pools' rows afresh, a change of them counting as one more.
  std::uint64_t refresh();
  /// The canonical lines of the ledger's entries `from`, `from` + 1, ... (the whole shared
  /// trace from 0), read under the kernel's lock (a ledger handle serves one thread at a time).
  /// @throws LedgerUnavailable if the ledger cannot be reached after the reconnect attempts.
  std::vector<std::string> read(std::uint64_t from = 0);

  /// The local replica at the latest head this kernel knows (for drivers: evaluate, state,
  /// completions). Its trace window is 1 entry; the ledger holds the trace.
  [[nodiscard]] const SafetyKernel& local() const noexcept { return *local_; }
  [[nodiscard]] const TaskModel& model() const noexcept { return *model_; }
  /// Entries in the ledger as far as this kernel knows, and the hash of the last one.
  [[nodiscard]] std::uint64_t length() const;
  [[nodiscard]] std::string head() const;
  [[nodiscard]] SharedStats stats() const;
  [[nodiscard]] const Ledger& ledger() const noexcept { return *ledger_; }

  // ---- Notes and approvals' tickets (docs/LEDGER.md, "Approvals") ----
  /// Commits `entry`, a note (`attested`, `approval_requested`, `approval_granted`,
  /// `approval_denied`, `approval_expired`), to the shared trace with the latest head's
  /// counters, budget and time, by compare-and-set like any other: as
  /// `SafetyKernel::record_note` appends it to a local trace, and replayed by every replica as
  /// recorded. Changes nothing but the trace. A ticket's answer (granted, denied, expired) is
  /// committed only while the ticket is open at the head it extends (`OpenTickets`: requested,
  /// for that action, and not answered), and a request only for a ticket not open: so of two
  /// answers, in any processes, exactly one is committed (the other catches up and is refused), and
  /// every replica refuses a ledger that breaks the rule. Returns the entry as committed.
  /// @throws InvalidArgument if `entry` is of another kind (or a checkpoint), a malformed
  /// attestation, names an unknown action, answers a ticket that is not open (naming it), or
  /// the trace is sealed; LedgerUnavailable as `execute`.
  TraceEntry record_note(TraceEntry entry);
  /// True iff `ticket` is open (requested, not answered) at the latest head this kernel knows.
  [[nodiscard]] bool ticket_open(std::string_view ticket) const;

 private:
  struct Undo {
    std::uint64_t sequence = 0;
    std::size_t action = 0;
    Amount cost = 0;
    State before;
    std::vector<Value> params;
  };
  void apply_locked(const TraceEntry& entry, std::size_t index);
  // `execute`, the first decision taken from `decided` if it is still current.
  Outcome execute_locked(const Proposal& proposal, Decided* decided);
  std::uint64_t refresh_locked();
  // Commits `entry` (complete but for prev/sequence/hash, set here) by compare-and-set,
  // resolving a lost connection by reading back; with the task's pool charge (or refund) when
  // it is in a pool. On a conflict, catches up.
  CommitStatus commit_locked(TraceEntry& entry, const Situation& after);
  // Reads the task's pools from the ledger into `pools_view_`; true iff they changed.
  bool read_pools_locked();
  // The rejection of a charge of `cost` by the first level of the task's pools, as
  // `pools_view_` has them, that cannot take it (nullopt if every level can).
  std::optional<Reason> pool_refusal(Amount cost) const;
  template <typename F>
  auto with_reconnect(F&& f) -> decltype(f());
  // The local replica's guard: `options_.guard`, except on the thread replaying an entry
  // (`replayer_`), which gets `replay_veto_` (the veto an entry recorded, or none).
  std::optional<Reason> guard(const Situation& s, const Proposal& p, const Decision& d) const;

  std::shared_ptr<const TaskModel> model_;
  std::shared_ptr<Ledger> ledger_;
  SharedOptions options_;
  mutable std::mutex mutex_;
  std::int64_t replay_time_ = 0;  // the local replica's clock: the entry being replayed
  std::atomic<std::thread::id> replayer_{};
  std::optional<Reason> replay_veto_;  // read only by `replayer_`
  std::string replay_signature_;       // the signature of the entry replayed (the replica's signer)
  std::optional<std::uint64_t> last_checkpoint_;  // the sequence of the trace's last checkpoint
  std::unique_ptr<SafetyKernel> local_;
  std::uint64_t length_ = 0;
  std::string head_;
  std::deque<Undo> undo_;
  // The task's pools as last read from the ledger (its own first): what the replica's decisions
  // check (its guard), as a kernel's `evaluate` checks its pools; the commit checks the rows.
  mutable std::mutex pools_mutex_;
  std::vector<LedgerPool> pools_view_;
  std::uint64_t undo_dropped_ = 0;
  std::uint64_t compensated_at_ = 0;  // the last `compensated` entry (0: none)
  SharedStats stats_;

  // ---- Approvals' tickets ----
  OpenTickets open_tickets_;  // GUARDED_BY mutex_: the tickets open at the head
};

}  // namespace clampai::kernel
