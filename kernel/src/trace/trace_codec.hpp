// The trace entry's canonical bytes, shared by the kernel's in-memory log and the trace file
// code (internal to the kernel library).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "clampai/kernel/safety_kernel.hpp"
#include "clampai/kernel/trace.hpp"

namespace clampai::kernel::detail {

/// The `prev` of a trace's first entry.
inline const std::string kZeroHash(64, '0');

/// The kernel's default clock: microseconds since the epoch.
inline std::int64_t system_clock_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

/// A recorded entry's parameters as a proposal names them (decimals are written as strings);
/// nullopt names the one that is not a number in `bad`.
std::optional<ParamMap> recorded_params(const TraceEntry& e, std::string& bad);

/// Parameter values named by `a`'s parameters, as a trace entry records them.
std::vector<std::pair<std::string, Value>> named_params(const Action& a,
                                                        const std::vector<Value>& params);

/// The trace entry of a rejected proposal (kind, action, parameters, cost, reasons, warnings;
/// the counters, time and links are the caller's).
TraceEntry rejected_entry(const TaskModel& m, const Proposal& proposal, const Decision& d);

/// The entry a note (`is_note`: `attested`, `checkpoint`, `approval_*`) is recorded as: its kind,
/// action, parameters, reasons, principal and ticket, no cost (the counters, time and links are
/// the caller's). `what` starts each refusal (`record_note: `).
/// @throws InvalidArgument if it is no note, a malformed attestation, or names an unknown action.
TraceEntry note_entry(const TaskModel& m, TraceEntry entry, const std::string& what);

/// The `,"hash":"` member that sits between `gross` and `kind`: its length with the 64 digits
/// and the closing quote.
inline constexpr std::string_view kHashKey = ",\"hash\":\"";
inline constexpr std::size_t kHashMember = kHashKey.size() + 64 + 1;

/// Where the parts of a canonical line without its `hash` member are.
struct LineLayout {
  std::size_t hash_at = 0;  // where the `hash` member goes
  std::size_t prev_at = 0;  // the 64 digits of `prev`
};

/// Appends the canonical JSON of `e` without its `hash` member to `out` (RFC 8785 key order).
LineLayout append_canonical_without_hash(std::string& out, const TraceEntry& e);

/// Appends a count member (`key` includes the separator, the quotes and the colon).
void append_count(std::string& out, std::string_view key, std::uint64_t v);
void append_count(std::string& out, std::string_view key, std::int64_t v);
/// Appends the canonical JSON array of `reasons`.
void append_reasons(std::string& out, const std::vector<Reason>& reasons);

/// Parses one canonical line (with its hash) back to an entry, without verifying it.
/// @throws TraceError naming what is wrong.
TraceEntry entry_from_line(std::string_view line, const std::string& source);

/// The threads a verification hashes on: every core, at most 8.
unsigned verification_threads();

/// One stored canonical line with its `hash` member, and where its parts are.
struct StoredLine {
  std::string_view text;
  std::uint32_t hash_at = 0;  // the `,"hash":"` member
  std::uint32_t prev_at = 0;  // the 64 digits of `prev`
  EntryKind kind = EntryKind::executed;
};

/// Verifies stored lines as they are: each line's SHA-256 is computed over its bytes without the
/// hash member (no re-serialisation) and compared with that member, each `prev` with the hash
/// before (entry `first_sequence` - 1's `prev_hash` for the first line, which may be empty when
/// the first line is the genesis), the genesis only at sequence 0, nothing after a seal.
/// Hashes on every core for long traces; reports the first failure in order.
TraceCheck verify_stored_lines(const std::vector<StoredLine>& lines,
                               std::uint64_t first_sequence,
                               bool allow_unsealed);

/// What the chain checks need of a line, found by the worker that read it.
struct LineCheck {
  std::uint64_t sequence = 0;
  EntryKind kind = EntryKind::executed;
  bool hash_ok = false;
  bool links = false;  // `prev` is the hash of the line before (a piece's first line: see below)
};

/// A run of whole lines of a trace, read and hashed by one worker (`check_piece`).
struct PieceCheck {
  std::uint64_t begin = 0;  // byte offsets in the trace, at line starts
  std::uint64_t end = 0;
  std::size_t lines = 0;          // lines in the piece
  std::vector<LineCheck> checks;  // one per line before the first that is no entry
  std::string first_prev;         // the first line's `prev` (its `links` is the caller's)
  std::string last_hash;          // the last checked line's `hash`
  std::vector<std::unique_ptr<TraceEntry>> parsed;  // the lines read by the general path
  std::size_t problem_line = 0;  // the first line that is no entry (if `problem` is set)
  std::string problem;
};

/// Reads and hashes the whole lines of `bytes` (each ends with '\n') into `piece`: a canonical
/// line directly, hashed over its bytes as read, two at a time; any other line parsed as JSON
/// and required to serialise back to itself. After the first line that is no entry, the lines
/// are only counted. `source` names the trace in messages.
void check_piece(std::string_view bytes, PieceCheck& piece, const std::string& source);

/// Two hashes (64 hex digits) equal.
bool same_hash(std::string_view a, std::string_view b);

/// Reads one line into `e` (directly if canonical, else through JSON), without verifying it.
/// @throws Error naming what is wrong if the line is no trace entry.
void entry_of_line(std::string_view line, TraceEntry& e, const std::string& source);

/// The checks of a chain, entry by entry in order (each entry's hash checked by the caller):
/// `add` says why the entry is bad (then stop), `finish` checks the end. Its messages are those
/// of every chain check (kept entries, parsed entries, trace files and ledgers). Needs no count
/// in advance: a trace is checked as it streams.
class ChainChecker {
 public:
  explicit ChainChecker(bool allow_unsealed) : allow_unsealed_(allow_unsealed) {}
  /// Entry `i` (the entries come in order from 0), whose `prev` is `links` (equal to the hash
  /// of the entry before, or to the zero hash for entry 0); false once one is bad.
  bool add(std::uint64_t i, std::uint64_t sequence, EntryKind kind, bool hash_ok, bool links);
  /// The verdict once `entries` entries were added (or one failed, then `entries` is the
  /// count reported).
  TraceCheck finish(std::uint64_t entries);
  [[nodiscard]] bool failed() const { return failed_; }

 private:
  bool fail(std::uint64_t i, const std::string& message);

  bool allow_unsealed_;
  TraceCheck check_;
  bool failed_ = false;
  EntryKind last_kind_ = EntryKind::genesis;
};

/// What an intact chain's check says: "N entries (from entry F), chain intact, sealed".
std::string chain_summary(std::size_t entries, std::uint64_t first_sequence, bool sealed);

}  // namespace clampai::kernel::detail
