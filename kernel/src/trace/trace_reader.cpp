// The streaming trace reader: trace files and a ledger's lines, block by block, each block's
// lines read and hashed on every core (trace.cpp's `check_piece`), the chain checked in order.
#include "clampai/kernel/trace_reader.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

#include "clampai/kernel/error.hpp"
#include "clampai/kernel/file.hpp"
#include "clampai/kernel/parallel.hpp"
#include "trace_codec.hpp"

namespace clampai::kernel {

namespace {

constexpr std::size_t kScanBytes = std::size_t{64} << 10;      // read at a time to find a newline
constexpr std::size_t kMinPieceBytes = std::size_t{32} << 10;  // a worker's least piece

// The start of a torn tail's message: what verified, and what the last line lacks.
std::string torn_tail(std::uint64_t entries, std::uint64_t tail_bytes) {
  return "truncated tail after " + std::to_string(entries) + " verified entries: the last line (" +
         std::to_string(tail_bytes) + " bytes) has no newline, ";
}

// The end of the last whole line of the file's bytes [0, end) (the byte after its newline; 0
// if there is none).
std::uint64_t whole_lines_end(const InputFile& file, std::uint64_t end, std::string& scratch) {
  scratch.resize(kScanBytes);
  while (end > 0) {
    const std::uint64_t begin = end > kScanBytes ? end - kScanBytes : 0;
    file.read(begin, end - begin, scratch.data());
    for (std::size_t i = end - begin; i-- > 0;)
      if (scratch[i] == '\n') return begin + i + 1;
    end = begin;
  }
  return 0;
}

// The start of the first line that starts at or after `at` (0 < at <= intact, where the whole
// lines end).
std::uint64_t line_start_from(const InputFile& file,
                              std::uint64_t at,
                              std::uint64_t intact,
                              std::string& scratch) {
  scratch.resize(kScanBytes);
  for (std::uint64_t from = at - 1; from < intact;) {
    const std::size_t n = std::min<std::uint64_t>(kScanBytes, intact - from);
    file.read(from, n, scratch.data());
    if (const void* nl = std::memchr(scratch.data(), '\n', n))
      return from + static_cast<std::size_t>(static_cast<const char*>(nl) - scratch.data()) + 1;
    from += n;
  }
  return intact;  // the file changed since its end was found (its reads will say so)
}

// The start of the first line at or after `at` in `bytes` (its size if none).
std::size_t line_start_in(std::string_view bytes, std::size_t at) {
  if (at == 0) return 0;
  const std::size_t nl = bytes.find('\n', at - 1);
  return nl == std::string_view::npos ? bytes.size() : nl + 1;
}

// A verdict against a trace that another process's writer still holds (a run in progress):
// its last line may be half written and its seal is still to come, so the verdict says so,
// and a torn tail gets no advice to cut the file.
void still_being_written(TraceCheck& check, std::uint64_t file_size) {
  constexpr std::string_view kWriting =
      "another process holds the trace's write lock: it is still being written (a run in "
      "progress); verify it again when the run has ended";
  if (check.truncated_tail) {
    check.message = torn_tail(check.entries, file_size - check.verified_bytes) +
                    std::string(kWriting) + " (do not cut a file while it is written)";
  } else {
    check.message += " (" + std::string(kWriting) + ")";
  }
}

// Runs `fn`, a file error becoming a trace error (its message names the file).
template <typename Fn>
auto as_trace_error(Fn&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const FileError& e) {
    throw TraceError(e.what());
  }
}

}  // namespace

struct TraceReader::Impl {
  Impl(std::string name, TraceReadOptions opts)
      : source(std::move(name)),
        options(opts),
        block_bytes(opts.block_bytes > 0 ? opts.block_bytes : default_trace_block_bytes),
        chain(opts.allow_unsealed) {}

  std::string source;
  TraceReadOptions options;
  std::size_t block_bytes;
  std::unique_ptr<InputFile> file;         // a file's trace, or
  std::function<bool(std::string&)> more;  // lines from elsewhere
  std::uint64_t size = 0;                  // the file's size when opened
  std::uint64_t intact = 0;                // where its whole lines end
  std::uint64_t last_start = 0;            // where its last whole line starts
  bool torn = false;                       // a last line without its newline
  bool exhausted = false;                  // `more` has no lines left

  // The block: bytes [offset, offset + len) of the trace, at `data` when it is kept (for
  // `next`), else read piece by piece into the workers' buffers.
  struct Buffer {
    std::unique_ptr<char[]> bytes;
    std::size_t capacity = 0;
  };
  std::vector<Buffer> workers;
  std::unique_ptr<char[]> buffer;
  std::size_t capacity = 0;
  std::string incoming;  // `more`'s lines
  const char* data = nullptr;
  std::size_t len = 0;
  std::uint64_t offset = 0;
  std::uint64_t next_offset = 0;  // where the next block starts
  std::size_t peak = 0;
  std::string scratch;
  // Its pieces (when verifying), and the next line: its piece, its index there, its offset.
  std::vector<detail::PieceCheck> pieces;
  std::size_t piece = 0;
  std::size_t in_piece = 0;
  std::size_t at = 0;
  bool loaded = false;

  // The chain: all that is kept of the lines before the next.
  detail::ChainChecker chain;
  std::string last_hash = detail::kZeroHash;  // the hash of the line before
  std::uint64_t lines = 0;                    // lines in the blocks loaded
  std::uint64_t index = 0;                    // the next line's index
  bool stopped = false;                       // a problem was found: no more entries
  std::optional<std::pair<std::uint64_t, std::string>> problem;  // the first line no entry
  bool finished = false;

  void open_file(const std::string& path) {
    file = std::make_unique<InputFile>(path, std::numeric_limits<std::size_t>::max());
    size = file->size();
    intact = options.verify ? whole_lines_end(*file, size, scratch) : size;
    torn = intact != size;
    if (intact > 0) last_start = whole_lines_end(*file, intact - 1, scratch);
    chain = detail::ChainChecker(options.allow_unsealed || torn);
  }

  char* room(std::size_t n) {
    if (capacity < n) {
      buffer.reset();  // the old block goes first: never two at once
      buffer = std::make_unique_for_overwrite<char[]>(n);
      capacity = n;
    }
    return buffer.get();
  }

  // Reads the next block (checking its pieces when verifying, unless only lines are counted
  // now); false at the end of the trace.
  bool load(bool count_only, bool keep) {
    loaded = false;
    pieces.clear();
    piece = 0;
    in_piece = 0;
    at = 0;
    data = nullptr;
    std::string_view bytes;
    if (file) {
      if (next_offset >= intact) return false;
      offset = next_offset;
      std::uint64_t end = intact;
      if (intact - offset > block_bytes)
        end = line_start_from(*file, offset + block_bytes, intact, scratch);
      len = static_cast<std::size_t>(end - offset);
      next_offset = end;
      if (count_only) {  // a little at a time: only the lines are counted
        scratch.resize(kScanBytes);
        for (std::uint64_t from = offset; from < end;) {
          const std::size_t n = std::min<std::uint64_t>(kScanBytes, end - from);
          file->read(from, n, scratch.data());
          lines += static_cast<std::uint64_t>(std::count(scratch.data(), scratch.data() + n, '\n'));
          from += n;
          if (from == end && scratch[n - 1] != '\n') ++lines;  // a last line without its newline
        }
        loaded = true;
        return true;
      }
      if (!options.verify) {
        data = room(len);
        file->read(offset, len, buffer.get());
      } else {
        split(end, [&](std::uint64_t from, std::uint64_t to) {
          return from == offset ? offset : line_start_from(*file, from, to, scratch);
        });
        const unsigned cores = detail::verification_threads();
        if (keep) {  // the block stays, for `next` to read its entries
          char* out = room(len);
          data = out;
          parallel_for(pieces.size(), cores, [&](std::size_t k, unsigned) {
            detail::PieceCheck& p = pieces[k];
            char* at_piece = out + (p.begin - offset);
            const auto n = static_cast<std::size_t>(p.end - p.begin);
            file->read(p.begin, n, at_piece);  // FileError: rethrown by parallel_for
            detail::check_piece(std::string_view(at_piece, n), p, source);
          });
        } else {  // each piece into its worker's buffer, reused: the bytes are not kept
          workers.resize(
              std::max<std::size_t>(workers.size(), parallel_workers(pieces.size(), cores)));
          parallel_for(pieces.size(), cores, [&](std::size_t k, unsigned w) {
            detail::PieceCheck& p = pieces[k];
            const auto n = static_cast<std::size_t>(p.end - p.begin);
            Buffer& b = workers[w];
            if (b.capacity < n) {
              b.bytes.reset();
              b.bytes = std::make_unique_for_overwrite<char[]>(n);
              b.capacity = n;
            }
            file->read(p.begin, n, b.bytes.get());  // FileError: rethrown by parallel_for
            detail::check_piece(std::string_view(b.bytes.get(), n), p, source);
          });
          std::size_t held = 0;
          for (const Buffer& b : workers) held += b.capacity;
          peak = std::max(peak, held);
        }
      }
    } else {
      incoming.clear();
      while (!exhausted && incoming.size() < block_bytes)
        if (!more(incoming)) exhausted = true;
      if (incoming.empty()) return false;
      if (incoming.back() != '\n') incoming += '\n';  // `more` gives whole lines
      offset = next_offset;
      data = incoming.data();
      len = incoming.size();
      next_offset = offset + len;
      if (options.verify && !count_only) {
        const std::string_view all(data, len);
        split(offset + len, [&](std::uint64_t from, std::uint64_t) {
          return offset + line_start_in(all, static_cast<std::size_t>(from - offset));
        });
        const unsigned cores = detail::verification_threads();
        parallel_for(pieces.size(), cores, [&](std::size_t k, unsigned) {
          detail::PieceCheck& p = pieces[k];
          detail::check_piece(all.substr(static_cast<std::size_t>(p.begin - offset),
                                         static_cast<std::size_t>(p.end - p.begin)),
                              p,
                              source);
        });
      }
    }
    if (data != nullptr) peak = std::max(peak, len);
    bytes = std::string_view(data != nullptr ? data : "", data != nullptr ? len : 0);
    if (!pieces.empty()) {
      for (const auto& p : pieces) lines += p.lines;
    } else {
      // Counted (or split by `next`): every newline ends a line, and so does the block's end.
      lines += static_cast<std::uint64_t>(std::count(bytes.begin(), bytes.end(), '\n'));
      if (!bytes.empty() && bytes.back() != '\n') ++lines;
    }
    loaded = true;
    return true;
  }

  // Cuts the block [offset, end) into pieces at line starts (about 8 per core, each at least
  // kMinPieceBytes): `start(at, end)` is the first line start at or after `at`.
  template <typename Start>
  void split(std::uint64_t end, Start&& start) {
    const unsigned cores = detail::verification_threads();
    const std::size_t n = std::clamp<std::size_t>(len / kMinPieceBytes, 1, std::size_t{cores} * 8);
    pieces.resize(n);
    pieces[0].begin = offset;
    for (std::size_t k = 1; k < n; ++k) {
      const std::uint64_t want = std::max(pieces[k - 1].begin, offset + k * (len / n));
      pieces[k].begin = start(want, end);
      pieces[k - 1].end = pieces[k].begin;
    }
    pieces.back().end = end;
  }

  // Checks the next line's chain (its piece read and hashed it): false, and stopped, at the
  // first line that is no entry or breaks the chain.
  bool check_next(detail::PieceCheck& p) {
    if (!p.problem.empty() && in_piece == p.problem_line) {
      problem.emplace(index, p.problem);
      stopped = true;
      return false;
    }
    detail::LineCheck& c = p.checks[in_piece];
    if (in_piece == 0) c.links = detail::same_hash(p.first_prev, last_hash);
    if (!chain.add(index, c.sequence, c.kind, c.hash_ok, c.links)) {
      stopped = true;
      return false;
    }
    return true;
  }

  // The next line of the block, which `at` moves past.
  std::string_view take_line() {
    const char* p = data + at;
    const void* nl = std::memchr(p, '\n', len - at);
    const auto n =
        nl != nullptr ? static_cast<std::size_t>(static_cast<const char*>(nl) - p) : len - at;
    at += n + 1;
    return {p, n};
  }

  bool next(TraceEntry& entry) {
    while (!finished && !stopped) {
      if (options.verify) {
        if (!loaded || piece >= pieces.size()) {
          if (!load(false, true)) return false;
          continue;
        }
        detail::PieceCheck& pc = pieces[piece];
        if (in_piece >= pc.lines) {
          ++piece;
          in_piece = 0;
          continue;
        }
        if (!check_next(pc)) return false;
        detail::entry_of_line(take_line(), entry, source);  // read and checked by its piece
        ++index;
        if (++in_piece == pc.lines) last_hash = pc.last_hash;
        return true;
      }
      if (!loaded || at >= len) {
        if (!load(false, true)) return false;
        continue;
      }
      try {
        detail::entry_of_line(take_line(), entry, source);
      } catch (const Error& e) {
        // A file's lines are lines; a ledger's are its entries.
        throw TraceError((file ? "line " + std::to_string(index + 1)
                               : source + ": entry " + std::to_string(index)) +
                         ": " + e.what());
      }
      ++index;
      return true;
    }
    return false;
  }

  TraceCheck finish() {
    if (finished) throw InvalidArgument("TraceReader::finish: called twice");
    finished = true;
    // The rest of the lines: chain-checked until a problem, then only read for a line that is
    // no entry (which is reported first, wherever it is), then only counted.
    while (true) {
      if (!loaded || piece >= pieces.size()) {
        if (!load(problem.has_value() || !options.verify, false)) break;
        continue;  // counted only: no pieces
      }
      detail::PieceCheck& pc = pieces[piece];
      if (!stopped) {
        for (; in_piece < pc.lines; ++in_piece, ++index)
          if (!check_next(pc)) break;
        if (!stopped && pc.lines > 0) last_hash = pc.last_hash;
      }
      if (stopped && !problem && !pc.problem.empty()) problem.emplace(index_of(piece), pc.problem);
      ++piece;
      in_piece = 0;
    }
    if (!options.verify || problem) {
      TraceCheck check;
      check.ok = !options.verify;
      check.entries = lines;
      if (problem) {
        check.first_bad = problem->first;
        // A file's lines are lines; a ledger's are its entries.
        check.message = "entry " + std::to_string(problem->first) +
                        (file ? " (line " + std::to_string(problem->first + 1) + ")" : "") + ": " +
                        problem->second;
      }
      release();
      return check;
    }
    TraceCheck check = chain.finish(lines);
    if (torn && (lines == 0 || check.ok)) {
      check.ok = false;
      check.entries = lines;
      check.first_bad = lines;
      check.truncated_tail = true;
      check.verified_bytes = intact;
      check.message = torn_tail(lines, size - intact) +
                      "a write was cut short (a crash or a full disk); to recover, keep the "
                      "verified entries: `truncate -s " +
                      std::to_string(intact) + " FILE` (or `head -n " + std::to_string(lines) +
                      " FILE > COPY`), then verify again (with --allow-unsealed: the run did not "
                      "seal it)";
    }
    if (!check.ok && file && file->locked_by_another_process()) still_being_written(check, size);
    release();
    return check;
  }

  // Lets go of the buffers and the file once the verdict is known (a reader may be kept, by
  // a kernel's options, long after).
  void release() {
    buffer.reset();
    capacity = 0;
    workers.clear();
    pieces.clear();
    pieces.shrink_to_fit();
    std::string().swap(incoming);
    std::string().swap(scratch);
    data = nullptr;
    file.reset();
  }

  // The index of the first line of piece `k` of the block.
  [[nodiscard]] std::uint64_t index_of(std::size_t k) const {
    std::uint64_t before = lines;
    for (std::size_t j = k; j < pieces.size(); ++j) before -= pieces[j].lines;
    return before + pieces[k].problem_line;
  }
};

TraceReader::TraceReader(const std::string& path, TraceReadOptions options)
    : impl_(std::make_unique<Impl>(path, options)) {
  as_trace_error([&] { impl_->open_file(path); });
}

TraceReader::TraceReader(std::string source,
                         std::function<bool(std::string&)> more,
                         TraceReadOptions options)
    : impl_(std::make_unique<Impl>(std::move(source), options)) {
  impl_->more = std::move(more);
}

TraceReader::~TraceReader() = default;

bool TraceReader::next(TraceEntry& entry) {
  return as_trace_error([&] { return impl_->next(entry); });
}

TraceCheck TraceReader::finish() {
  return as_trace_error([&] { return impl_->finish(); });
}

std::uint64_t TraceReader::last_line_start() const { return impl_->last_start; }

std::size_t TraceReader::peak_buffer_bytes() const { return impl_->peak; }

TraceCheck verify_trace_file(const std::string& path, bool allow_unsealed) {
  TraceReadOptions options;
  options.allow_unsealed = allow_unsealed;
  return TraceReader(path, options).finish();
}

std::vector<TraceEntry> read_trace_file(const std::string& path) {
  TraceReadOptions options;
  options.verify = false;
  TraceReader reader(path, options);
  std::vector<TraceEntry> entries;
  TraceEntry entry;
  while (reader.next(entry)) entries.push_back(std::move(entry));
  return entries;
}

}  // namespace clampai::kernel
