// Reading a trace as it streams: the one reader of trace files and of a ledger's lines, at any
// length, in memory bounded by its block, not by the trace.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "clampai/kernel/trace.hpp"

namespace clampai::kernel {

/// The default block of a `TraceReader`: 16 MiB.
inline constexpr std::size_t default_trace_block_bytes = std::size_t{16} << 20;

/// How a `TraceReader` reads.
struct TraceReadOptions {
  /// Accept a trace without a seal (a run that did not finish).
  bool allow_unsealed = false;
  /// The bytes read, hashed (on every core) and kept at a time; 0: default_trace_block_bytes.
  /// A line longer than the block is read whole: memory is the block plus the longest line.
  std::size_t block_bytes = 0;
  /// Check every line's canonical form and hash and the chain (true); false only parses the
  /// lines into entries (`read_trace_file`), a line that is no entry being an error.
  bool verify = true;
};

/// Reads a trace from its start to its end, block by block: each block's lines are read and
/// hashed on every core, then the chain is checked in order, keeping of what came before only
/// the last entry's hash and kind. Entries are handed out one at a time (`next`), so a replay
/// keeps only its own state. Verdicts and messages are those of `verify_trace_file`: a line
/// that is no entry, anywhere, is reported first (with its line); else the first entry that
/// breaks the chain; a last line without its newline is a truncated tail.
class TraceReader {
 public:
  /// Opens a trace file: a regular file of any size (the input limit `max_input_bytes()` is
  /// for specs, manifests and requests, not traces).
  /// @throws TraceError naming the file if it cannot be opened or is not a regular file.
  explicit TraceReader(const std::string& path, TraceReadOptions options = {});
  /// Reads lines from elsewhere (a ledger's pages, `read_ledger`): each call of `more`
  /// appends whole lines (each ending with '\n') to its argument and returns false when no
  /// more will come (it may have appended the last ones). `source` names the lines in
  /// messages, where a problem names the entry (a ledger's lines are its entries).
  TraceReader(std::string source,
              std::function<bool(std::string&)> more,
              TraceReadOptions options = {});
  ~TraceReader();
  TraceReader(const TraceReader&) = delete;
  TraceReader& operator=(const TraceReader&) = delete;

  /// The next entry, in order, whose line is an intact entry that extends the chain; false at
  /// the end of the trace or at its first problem (`finish` says which).
  /// @throws TraceError if the trace cannot be read (a file truncated while it is read), or,
  /// when not verifying, naming the line that is no entry.
  bool next(TraceEntry& entry);
  /// Reads the rest of the trace (its entries are not handed out) and returns the verdict.
  /// Once only; `next` returns false after it.
  /// @throws TraceError if the trace cannot be read.
  TraceCheck finish();
  /// Where the trace's last line starts, in bytes (a file's; 0 for other sources).
  [[nodiscard]] std::uint64_t last_line_start() const;
  /// The most bytes of the trace held at once: the block, or the line it had to grow to.
  [[nodiscard]] std::size_t peak_buffer_bytes() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace clampai::kernel
