// The SHA-256 hash-chained execution trace (T6), in memory and as a JSON Lines file.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "clampai/kernel/decision.hpp"
#include "clampai/kernel/value.hpp"

namespace clampai::kernel {

/// What a trace entry records.
enum class EntryKind : std::uint8_t {
  genesis,      // first entry: spec digest, initial state digest, budget
  executed,     // an approved action was committed
  rejected,     // a rejected proposal (recorded only when KernelOptions::record_rejections)
  rolled_back,  // an executed action was undone (T7)
  sealed,       // last entry: final state digest; nothing may follow
  attested,     // an attestation's result (the reference monitor's gates); changes nothing
  checkpoint,   // a point of the chain signed on the way (`--checkpoint-every`); changes nothing
  approval_requested,  // an action waits for a principal's approval (a ticket); changes nothing
  approval_granted,    // the ticket was approved (the commit, if any, is the next entry)
  approval_denied,     // the ticket was denied; changes nothing
  approval_expired,    // the ticket's time ran out; changes nothing
  spec_changed,        // the task's spec was replaced (a reload behind proofs)
  compensated,  // an earlier executed step was undone by its exact inverse (docs/SPEC.md, 13)
};
inline constexpr std::size_t kEntryKinds = 13;
std::string_view to_string(EntryKind kind);

/// Whether an entry of `kind` changes nothing but the trace (no state, budget or counter).
bool is_note(EntryKind kind);

/// A budget pool's spend after an entry (issue 41's nested budgets): one per level charged.
struct PoolLevel {
  std::string name;   // the pool's name in the pools file
  std::string gross;  // its gross and net spend after the entry (decimal text)
  std::string net;
  friend bool operator==(const PoolLevel&, const PoolLevel&) = default;
};

/// One entry. Every field is covered by `hash`, which is the SHA-256 of the entry's RFC 8785
/// canonical JSON without the `hash` member; `prev` links it to the entry before (T6).
struct TraceEntry {
  std::uint64_t sequence = 0;
  EntryKind kind = EntryKind::executed;
  std::string action;                                    // action id ("" for genesis/sealed)
  std::vector<std::pair<std::string, Value>> params{};   // parameter values
  std::vector<std::pair<std::string, Value>> changes{};  // variables written, with new values
  std::string cost{};                                    // decimal text at the budget scale
  bool emergency = false;
  std::vector<Reason> reasons{};   // why it was rejected
  std::vector<Reason> warnings{};  // monitoring violations
  std::uint64_t step = 0;          // counters after the entry
  std::uint64_t emergency_steps = 0;
  std::string gross;  // budget after the entry (decimal text)
  std::string net{};
  std::string spec;          // model digest (genesis only)
  std::string state;         // full state digest (genesis, sealed)
  std::int64_t time_us = 0;  // wall clock, microseconds since epoch
  std::string prev;          // hash of the previous entry (64 hex)
  std::string hash;          // hash of this entry (64 hex)
  // Optional members: absent from the line when empty (so every trace written without them
  // reads and hashes as before); each is covered by `hash` like the others.
  std::string principal{};         // who caused the entry (a server's principal)
  bool enforced = true;            // false: recorded in shadow mode, the theorems not enforced
  std::vector<PoolLevel> pools{};  // the pools charged, by name (written sorted by name)
  std::string ticket{};            // an approval's ticket
  std::string signature{};         // seal and checkpoint: Ed25519 over `signed_bytes()`, hex

  /// The canonical JSON line of this entry, including `hash`.
  [[nodiscard]] std::string to_json_line() const;
  /// The SHA-256 this entry should have, recomputed from its fields.
  [[nodiscard]] std::string compute_hash() const;
  /// What a signature signs: the canonical JSON of the entry without `hash` and `signature`
  /// (it names `prev`, so it covers the whole chain before the entry).
  [[nodiscard]] std::string signed_bytes() const;
};

/// The sequence of the step a `compensated` entry compensates: its one parameter,
/// `compensates`, a non-negative integer. Nullopt if `entry` is of another kind or has another
/// shape.
std::optional<std::uint64_t> compensated_step(const TraceEntry& entry);

/// An attestation's result as the trace records it: an `attested` entry (docs/SPEC.md, 13).
struct AttestationRecord {
  std::string attestor{};  // its name in the spec
  std::string gate{};      // the id of the action it gates; empty for the goal
  bool passed = false;
  std::string evidence{};  // what it saw (program output, HTTP status...), whole
  std::string error{};     // why it could not decide, if it could not
};

/// How much of an attestation's evidence (or error) an `attested` entry keeps as text.
inline constexpr std::size_t kAttestationExcerptBytes = 240;

/// The `attested` entry of `record`, with everything the kernel fills when it appends it
/// (sequence, links, counters, budget, time, cost) left empty. The entry names the gate in
/// `action` (empty for the goal) and keeps in `params`: `attestor`, `gate` (`action` or `goal`),
/// `passed`, `evidence_sha256` (the SHA-256 of the whole evidence) and `detail` (the error, or
/// else the evidence: at most kAttestationExcerptBytes bytes, printable ASCII, others as `?`,
/// `...` when cut): its size is bounded whatever the attestor printed.
TraceEntry attestation_entry(const AttestationRecord& record);

/// Whether `entry` (of kind `attested`) has the shape `attestation_entry` gives: nullopt if so,
/// else what is wrong.
std::optional<std::string> malformed_attestation(const TraceEntry& entry);

/// The result of verifying a chain of entries.
struct TraceCheck {
  bool ok = false;
  std::size_t entries = 0;               // entries read
  std::optional<std::size_t> first_bad;  // index of the first bad entry (or where one is missing)
  bool sealed = false;
  std::string message{};  // what is wrong, or a summary
  /// The file's last line has no newline (a write cut short): `entries` complete entries
  /// verified before it, which end at byte `verified_bytes`.
  bool truncated_tail = false;
  std::size_t verified_bytes = 0;
};

/// Verifies the hash chain of `entries`: each hash recomputes, each `prev` links to the entry
/// before, sequence numbers count from 0, entry 0 is the genesis, nothing follows a seal.
/// A chain that does not end with a seal fails unless `allow_unsealed`.
TraceCheck verify_chain(const std::vector<TraceEntry>& entries, bool allow_unsealed = false);

/// Reads and verifies a JSON Lines trace file. Every line must be the canonical JSON of its
/// entry, byte for byte; the first line that is not is reported with its index. A last line
/// without a newline (a write cut short) is a truncated tail: not ok, `truncated_tail` set, and
/// the message says how many entries verified before it and how to drop it.
/// @throws TraceError if the file cannot be read: missing, not a regular file, or larger than
/// `max_input_bytes()` (file.hpp).
TraceCheck verify_trace_file(const std::string& path, bool allow_unsealed = false);

/// Reads a JSON Lines trace file into entries, without verifying them.
/// @throws TraceError naming the line if a line is not a trace entry, or the file cannot be read.
std::vector<TraceEntry> read_trace_file(const std::string& path);

/// When a `TraceWriter` makes entries durable.
enum class FlushPolicy : std::uint8_t {
  buffered,  // written through stdio buffers; durable at close()
  flush,     // flushed to the OS after every entry (survives a crash of the process)
  fsync,     // fsync()ed after every entry (survives a crash of the machine)
};

/// How a `TraceWriter` opens its file.
enum class TraceOpen : std::uint8_t {
  create,     // a new file: an existing one is an error (O_EXCL), never overwritten
  overwrite,  // create, or empty an existing file once the lock is held
  append,     // an existing trace, to continue it: see `continue_from`
};

/// Appends entries to a JSON Lines file, in sequence order, whichever thread hands them in.
/// Thread-safe. `write` returns once the entry (and every entry before it) is written under
/// the policy. The writer holds an exclusive advisory lock (flock) on the file for its
/// lifetime, so two writers (in one process or several) never write one trace.
class TraceWriter {
 public:
  /// Opens `path` as `mode` says and locks it; nothing is written yet. The file is never
  /// truncated before the lock is held. It is opened under the rule of every written file
  /// (`OutputFile`, file.hpp): never through a symbolic link, never a special file but
  /// /dev/null, which is accepted (and discards the trace; it is not locked).
  /// @throws TraceError naming the file and the OS's reason if it cannot be opened (a missing
  /// parent directory is named; it is not created), if it exists and `mode` is `create`, if it
  /// does not exist and `mode` is `append`, if it is a symbolic link or a special file other
  /// than /dev/null, or if another writer holds its lock.
  TraceWriter(const std::string& path, FlushPolicy policy, TraceOpen mode = TraceOpen::overwrite);
  ~TraceWriter();
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  /// Writes the canonical line of entry `sequence`. Requires sequences handed in without gaps.
  /// @throws TraceError on an I/O error.
  void write(std::uint64_t sequence, std::string line);
  /// Flushes and closes the file. @throws TraceError on an I/O error.
  void close();
  /// Continues a trace of `entries` entries (in `append` mode): the next entry written must be
  /// entry `entries`. Requires that nothing was written yet.
  /// @throws InvalidArgument if something was.
  void continue_from(std::uint64_t entries);
  /// Whether the file is /dev/null (nothing written is kept, so nothing can be continued).
  [[nodiscard]] bool discards() const noexcept { return discards_; }

 private:
  void write_ready_locked();

  std::mutex mutex_;
  std::condition_variable written_;
  std::FILE* file_ = nullptr;
  FlushPolicy policy_;
  bool discards_ = false;
  std::uint64_t next_ = 0;
  std::map<std::uint64_t, std::string> pending_;
  std::string error_;
};

}  // namespace clampai::kernel
