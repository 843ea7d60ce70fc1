// Compact storage for what the kernel keeps per step (internal to the kernel library): records
// of variable length in reused chunks, and the variable-length integers they are written in.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <utility>
#include <vector>

namespace clampai::kernel::detail {

/// The most bytes `put_varint` writes.
inline constexpr std::size_t kVarintBound = 10;

/// Writes `v` in 7-bit groups, least significant first (LEB128); returns the end.
inline char* put_varint(char* p, std::uint64_t v) noexcept {
  while (v >= 0x80) {
    *p++ = static_cast<char>(static_cast<unsigned char>(v | 0x80));
    v >>= 7;
  }
  *p++ = static_cast<char>(v);
  return p;
}

/// Reads what `put_varint` wrote at `p` into `v`; returns the end.
inline const char* get_varint(const char* p, std::uint64_t& v) noexcept {
  v = 0;
  for (unsigned shift = 0;; shift += 7) {
    const auto byte = static_cast<unsigned char>(*p++);
    v |= static_cast<std::uint64_t>(byte & 0x7F) << shift;
    if ((byte & 0x80) == 0) return p;
  }
}

/// A signed integer as an unsigned one that is small when the magnitude is (0, -1, 1, -2...).
inline constexpr std::uint64_t zigzag(std::int64_t v) noexcept {
  return (static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63);
}
inline constexpr std::int64_t unzigzag(std::uint64_t v) noexcept {
  return static_cast<std::int64_t>(v >> 1) ^ -static_cast<std::int64_t>(v & 1);
}

/// Records appended at the end and dropped from either end, packed in chunks; emptied chunks
/// are kept for reuse (at most two), so that a run whose records are dropped as fast as they
/// are added (a window) touches no new memory. A record never moves.
class Arena {
 public:
  explicit Arena(std::size_t chunk_bytes) : chunk_bytes_(chunk_bytes) { spare_.reserve(kSpare); }

  /// Room for `n` bytes after the last record (in a new chunk if the last one has not that
  /// much left). Nothing is kept until `commit`. May throw (allocation) with nothing kept.
  char* reserve(std::size_t n) {
    if (chunks_.empty() || chunks_.back().capacity - chunks_.back().used < n) {
      Chunk chunk;
      if (!spare_.empty() && spare_.back().capacity >= n) {
        chunk = std::move(spare_.back());
        spare_.pop_back();
      } else {
        chunk.capacity = std::max(chunk_bytes_, n);
        chunk.bytes = std::make_unique_for_overwrite<char[]>(chunk.capacity);
      }
      chunk.used = 0;
      chunks_.push_back(std::move(chunk));  // an empty chunk more keeps nothing
    }
    Chunk& last = chunks_.back();
    return last.bytes.get() + last.used;
  }
  /// The room `reserve` returned at `at` holds a record of `size` bytes (at most the room).
  void commit(const char* at, std::size_t size) noexcept {
    Chunk& last = chunks_.back();
    last.used = static_cast<std::size_t>(at - last.bytes.get()) + size;
  }
  /// Drops the last record, which starts at `at`; its room is the next one reserved.
  void pop_back(const char* at) noexcept {
    while (chunks_.size() > 1 && !holds(chunks_.back(), at)) recycle_back();
    chunks_.back().used = static_cast<std::size_t>(at - chunks_.back().bytes.get());
  }
  /// Frees the chunks before the one that holds `first`, the oldest record still kept.
  void drop_before(const char* first) noexcept {
    while (chunks_.size() > 1 && !holds(chunks_.front(), first)) {
      if (spare_.size() < kSpare) spare_.push_back(std::move(chunks_.front()));  // reserved
      chunks_.pop_front();
    }
  }

 private:
  struct Chunk {
    std::unique_ptr<char[]> bytes;
    std::size_t capacity = 0;
    std::size_t used = 0;
  };
  static constexpr std::size_t kSpare = 2;
  static bool holds(const Chunk& c, const char* p) noexcept {
    return p >= c.bytes.get() && p < c.bytes.get() + c.capacity;
  }
  void recycle_back() noexcept {
    if (spare_.size() < kSpare) spare_.push_back(std::move(chunks_.back()));  // reserved
    chunks_.pop_back();
  }

  std::size_t chunk_bytes_;
  std::deque<Chunk> chunks_;  // oldest first; the last one is being filled
  std::vector<Chunk> spare_;
};

}  // namespace clampai::kernel::detail
