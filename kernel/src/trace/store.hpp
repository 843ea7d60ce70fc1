// The kernel's store (internal to the kernel library): the trace's lines, kept as compact
// records or canonical lines in a chunked arena, the ring of lines waiting for their hash, the
// background hasher that chains them (T6), the renderer of an executed entry's line, the views
// that read and verify the kept lines, and the undo records rollback needs (T7).
// SafetyKernel (kernel/src/safety_kernel.cpp) is its one user: it appends under its lock.
#pragma once

#include <algorithm>
#include <atomic>
#include <charconv>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "arena.hpp"
#include "clampai/kernel/parallel.hpp"
#include "clampai/kernel/safety_kernel.hpp"
#include "digest_pair.hpp"
#include "json.hpp"
#include "numeric_program.hpp"
#include "test_hooks.hpp"
#include "trace_codec.hpp"

namespace clampai::kernel {

// What rollback needs to undo one committed action: the values it changed, not the states
// (a state kept per action would keep its leaf, a few hundred bytes, alive for every step),
// written compactly in the kernel's undo arena (Impl::push_undo).
struct SafetyKernel::Undo {
  std::uint64_t sequence = 0;
  // In the undo arena, each as put_exact writes it: for the action's n effects in order, each
  // one's evaluated operand (undefined for delete), then the value of the variable it writes
  // before the action, then after it (3n values), then its parameters' values.
  const char* values = nullptr;
  Amount cost = 0;
  std::uint32_t action = 0;
  std::uint32_t boxed = 0;  // how many of the values are strings or lists (in Impl::boxed)
  // The `compensated` entry that undid the action (SafetyKernel::compensate), or 0: not
  // compensated. A compensated record stays in place (records are dropped in order only).
  std::uint64_t compensated_by = 0;
};

namespace store {
// Writes through a raw cursor into room that a bound reserved (no capacity checks): an
// executed entry's line is rendered this way on every step.
class LineWriter {
 public:
  explicit LineWriter(char* at) : start_(at), p_(at) {}
  [[nodiscard]] std::size_t size() const noexcept { return static_cast<std::size_t>(p_ - start_); }
  void put(std::string_view v) noexcept {
    std::memcpy(p_, v.data(), v.size());
    p_ += v.size();
  }
  void put(const char* v, std::size_t n) noexcept {
    std::memcpy(p_, v, n);
    p_ += n;
  }
  void put(char c) noexcept { *p_++ = c; }
  template <class Int>
  void put_int(Int v) noexcept {
    p_ = std::to_chars(p_, p_ + kIntBound, v).ptr;
  }
  // An amount as a JSON string (its digits, sign and point need no escaping), as
  // Decimal::append_to writes it.
  void put_amount(Amount a, int scale) noexcept {
    const bool negative = a < 0;
    const std::uint64_t magnitude =
        negative ? std::uint64_t{0} - static_cast<std::uint64_t>(a) : static_cast<std::uint64_t>(a);
    char digits[24];
    const auto n = static_cast<std::size_t>(
        std::to_chars(digits, digits + sizeof digits, magnitude).ptr - digits);
    const auto point = static_cast<std::size_t>(scale);
    *p_++ = '"';
    if (negative) *p_++ = '-';
    if (point == 0) {
      std::memcpy(p_, digits, n);
      p_ += n;
    } else if (n <= point) {
      *p_++ = '0';
      *p_++ = '.';
      std::memset(p_, '0', point - n);
      p_ += point - n;
      std::memcpy(p_, digits, n);
      p_ += n;
    } else {
      std::memcpy(p_, digits, n - point);
      p_ += n - point;
      *p_++ = '.';
      std::memcpy(p_, digits + (n - point), point);
      p_ += point;
    }
    *p_++ = '"';
  }

  static constexpr std::size_t kIntBound = 24;
  // The most bytes put_amount writes.
  static constexpr std::size_t amount_bound(int scale) {
    return static_cast<std::size_t>(scale) + 26;
  }

 private:
  char* start_;
  char* p_;
};

// Whether `v` is an integer that JSON keeps exactly: written as a plain number (nearly every
// value an executed entry lists).
inline bool is_json_integer(const Value& v) noexcept {
  constexpr std::int64_t kExact = std::int64_t{1} << 53;
  return v.kind() == Value::Kind::number && v.as_number().scale == 0 &&
         v.as_number().units > -kExact && v.as_number().units < kExact;
}

// The most bytes `v`'s canonical JSON takes.
inline std::size_t json_bound(const Value& v) noexcept {
  switch (v.kind()) {
    case Value::Kind::undefined:
    case Value::Kind::boolean:
      return 5;
    case Value::Kind::number:
      return 64;
    case Value::Kind::string:
      return 2 + 6 * v.as_string().size();  // every byte escaped as \u00XX at worst
    case Value::Kind::list: {
      std::size_t n = 2;
      for (const Value& item : v.as_list()) n += json_bound(item) + 1;
      return n;
    }
  }
  return 64;
}

// A value exactly, as an undo record keeps it: a tag, then a number's scale and units; a
// string or a list is boxed (kept whole, in record order, beside the bytes).
enum ExactTag : unsigned char { kUndefined, kFalse, kTrue, kNumber, kBoxed };
inline constexpr std::size_t kExactBound = 2 + detail::kVarintBound;

inline char* put_exact(char* p, const Value& v) noexcept {
  switch (v.kind()) {
    case Value::Kind::undefined:
      *p++ = static_cast<char>(kUndefined);
      return p;
    case Value::Kind::boolean:
      *p++ = static_cast<char>(v.as_bool() ? kTrue : kFalse);
      return p;
    case Value::Kind::number:
      *p++ = static_cast<char>(kNumber);
      *p++ = static_cast<char>(v.as_number().scale);
      return detail::put_varint(p, detail::zigzag(v.as_number().units));
    case Value::Kind::string:
    case Value::Kind::list:
      break;
  }
  *p++ = static_cast<char>(kBoxed);
  return p;
}

inline bool is_boxed(const Value& v) noexcept { return v.kind() >= Value::Kind::string; }

// One value of an executed entry's compact record, read back: an integer that JSON keeps
// exactly, or else the value's canonical JSON text.
struct LineValue {
  std::int64_t integer = 0;
  std::string_view text{};  // empty for an integer (no JSON text is empty)
};

// What an executed entry's line says besides its values, its sequence number and its links.
struct ExecutedFields {
  std::size_t action = 0;
  bool emergency = false;
  Amount cost = 0;
  Amount gross = 0;  // budget and counters after the entry
  Amount net = 0;
  std::uint64_t emergency_steps = 0;
  std::uint64_t step = 0;
  std::int64_t time = 0;
  std::string_view warnings{};  // `,"warnings":[...]}`, or empty for none
};

// An executed entry's compact record, read back (Impl::decode).
struct ExecutedRecord {
  ExecutedFields fields;
  const LineValue* values = nullptr;  // the changes, in the action's effect order, then params
};

// Where a rendered line's parts are.
struct LineLayout {
  std::uint32_t size = 0;
  std::uint32_t hash_at = 0;  // the `,"hash":"` member
  std::uint32_t prev_at = 0;  // the 64 digits of `prev`
};
}  // namespace store
// The helpers above are the store's own (this header is private to the kernel).
using namespace store;  // NOLINT(google-build-using-namespace)

// The kernel's storage: the trace's lines and the undo records in arenas whose chunks are
// reused once the window (the undo depth) drops what they hold, the buffers every step reuses,
// and the in-order hasher of the chain.
//
// An executed entry is kept as a compact record (its fields and values, ~35 bytes, and its
// SHA-256, 32 bytes), not as its canonical line (~330 bytes): on a long run what a step keeps
// is what it costs in new memory. Its line is rendered from the record, always the same bytes,
// when it is hashed, written, read or verified. Other entries (rare) are kept as their lines.
//
// Every line gets its slot under the kernel's lock and becomes a job of the hasher
// (`published` counts them). `drain` hashes the waiting lines in sequence order (`hashed`
// counts those done), each with the hash of the line before as its `prev`, whoever runs it: the
// background thread, or a caller that needs the chain complete (`settle`, under the kernel's
// lock, so that nothing is published meanwhile). Only the holder of `hashing` writes the
// waiting lines' hashes (and a text line's `prev`), `last_hash` and the rendering buffers; the
// containers are changed only under the kernel's lock (a slot never moves in its deque, a
// record never moves in its arena), and trim() drops hashed lines only.
struct SafetyKernel::Impl {
  static constexpr std::size_t kChunk = std::size_t{1} << 18;      // 256 KiB of lines per chunk
  static constexpr std::size_t kUndoChunk = std::size_t{1} << 16;  // 64 KiB of undo values

  struct Slot {
    char* text = nullptr;  // the canonical line, or (compact) the executed entry's record
    std::uint32_t size = 0;
    std::uint32_t hash_at = 0;  // of a line: where its `hash` member is; of a record: the
                                // most bytes its line takes (publish_executed)
    std::uint32_t prev_at = 0;  // of a line: where the digits of its `prev` are
    EntryKind kind = EntryKind::executed;
    bool compact = false;
  };
  // Per action: the canonical order of what an executed entry lists, keys pre-rendered.
  struct ActionLayout {
    std::string action;                                        // `{"action":"id","changes":{`
    std::vector<std::pair<std::size_t, std::string>> changes;  // effect index, `"name":`
    std::vector<std::pair<std::size_t, std::string>> params;   // parameter index, `"name":`
    std::size_t fixed = 0;  // the bytes of a line that do not depend on the step
  };
  // An executed entry as its commit fixes it.
  struct Executed {
    ExecutedFields fields;
    const Changes* changes = nullptr;  // in the action's effect order
    const std::vector<Value>* params = nullptr;
  };
  // A waiting line; an executed entry's line may have been rendered by its committer (`ahead`,
  // in `pre`, with its `prev` and `hash` digits to be written).
  struct Job {
    Slot* slot = nullptr;
    LineLayout ahead{};  // size 0: not rendered
  };

  detail::Arena lines{kChunk};
  std::deque<Slot> slots;            // the lines kept, oldest first
  std::uint64_t first_sequence = 0;  // the sequence number of slots.front()
  char before_first[64];             // the hash of the line before slots.front(), once trimmed
  std::deque<Undo> undo;
  detail::Arena undo_bytes{kUndoChunk};
  std::deque<Value> boxed;           // the undo records' strings and lists, in record order
  std::uint64_t undo_dropped = 0;    // undo records dropped by the depth limit
  mutable std::atomic<int> pins{0};  // live views
  // What compensation (SafetyKernel::compensate) needs beyond the undo records: per variable,
  // the sequence of the last entry that wrote it (0: none since the kernel started), and the
  // last `compensated` entry (0: none): no action committed before it can be rolled back.
  std::vector<std::uint64_t> last_write;
  std::uint64_t barrier = 0;

  std::string line;  // an entry other than an execution being built, without its hash
  std::vector<ActionLayout> layouts;
  std::size_t max_values = 0;  // the most values an executed entry lists (changes and params)
  // One per invariant of the model, in order: its comparison flattened, for decide_at.
  std::vector<detail::FlatComparison> flat;

  // The hasher. The ring holds the waiting lines (at most kRing; a full ring is drained by the
  // publisher).
  static constexpr std::size_t kRing = 1024;
  static constexpr std::uint64_t kBatch = 256;  // waiting lines that wake the background thread
  std::unique_ptr<Job[]> ring = std::make_unique<Job[]>(kRing);
  // When the hasher lags (kLag lines wait), the committer renders executed entries' lines
  // itself (a room of kPreBytes per place in the ring: the line that used it last, kRing
  // lines before, is hashed, since fewer than kRing wait), so that the two threads share the
  // work; the hasher then only hashes them. kLag is above kBatch: the lines that wait while
  // the hasher sleeps (up to a batch) are not a lag, and the committer rendering them (three
  // in four, with kLag = 64) made the committer slower and the process no faster.
  static constexpr std::uint64_t kLag = 512;
  static constexpr std::size_t kPreBytes = 1024;
  std::unique_ptr<char[]> pre;                 // kRing * kPreBytes, made when first needed
  std::unique_ptr<LineValue[]> decoded_ahead;  // max_values, the committer's
  int scale = 0;                               // the budget's

  // The constant parts of an executed entry's line (keys in canonical order).
  static constexpr std::string_view kCost = "},\"cost\":";
  static constexpr std::string_view kEmergency = ",\"emergency\":true,\"emergency_steps\":";
  static constexpr std::string_view kNoEmergency = ",\"emergency\":false,\"emergency_steps\":";
  static constexpr std::string_view kGross = ",\"gross\":";
  static constexpr std::string_view kNet = ",\"kind\":\"executed\",\"net\":";
  static constexpr std::string_view kParams = ",\"params\":{";
  static constexpr std::string_view kPrev = "},\"prev\":\"";
  static constexpr std::string_view kSeq = "\",\"reasons\":[],\"seq\":";
  static constexpr std::string_view kStep = ",\"spec\":\"\",\"state\":\"\",\"step\":";
  static constexpr std::string_view kTime = ",\"time\":";
  static constexpr std::string_view kNoWarnings = ",\"warnings\":[]}";
  static constexpr std::size_t kFixed = kCost.size() + kNoEmergency.size() + kGross.size() +
                                        detail::kHashMember + kNet.size() + kParams.size() +
                                        kPrev.size() + 64 + kSeq.size() + kStep.size() +
                                        kTime.size() + 4 * LineWriter::kIntBound;
  // The most bytes of a compact record besides its values and warnings.
  static constexpr std::size_t kRecordFixed = 32 + 1 + 9 * detail::kVarintBound;

  // What the committer and the hasher each write, on cache lines of their own (a line they
  // shared would move between the cores on every step).
  alignas(64) std::atomic<std::uint64_t> published{0};  // lines appended (under the kernel's lock)
  std::uint64_t seen_hashed = 0;  // under the kernel's lock: `hashed` as last read (<= hashed)
  alignas(64) std::atomic<std::uint64_t> hashed{0};  // lines hashed, in order
  alignas(64) std::atomic<bool> hashing{false};      // held by whoever drains
  // The holder of `hashing`'s own (grown only under the kernel's lock once every line is
  // hashed, before a line that needs more is published).
  alignas(64) char last_hash[64];    // the hash of line `hashed` - 1 (zeros before any)
  std::unique_ptr<char[]> rendered;  // the last executed entry's line, rendered and hashed
  std::size_t rendered_capacity = 0;
  LineLayout last_rendered{};            // the last executed entry's line hashed
  std::unique_ptr<LineValue[]> decoded;  // max_values
  const char* last_text = nullptr;       // where that line is (`rendered`, or in `pre`)
  // The background thread, started when kBatch lines first wait (never if defer is false).
  alignas(64) bool defer = true;
  std::thread worker;
  std::mutex worker_mutex;
  std::condition_variable worker_wake;
  bool worker_stop = false;  // under worker_mutex
  alignas(64) std::atomic<bool> worker_sleeping{false};

  Impl() {
    std::memset(last_hash, '0', sizeof last_hash);
    std::memset(before_first, '0', sizeof before_first);
  }
  ~Impl();
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  [[nodiscard]] std::uint64_t next_sequence() const { return first_sequence + slots.size(); }
  // The last line's hash: requires every line to be hashed (settle()).
  [[nodiscard]] std::string_view head_hash() const { return {last_hash, sizeof last_hash}; }
  [[nodiscard]] std::uint64_t waiting() const {
    return published.load(std::memory_order_seq_cst) - hashed.load(std::memory_order_seq_cst);
  }
  // Under the kernel's lock: whether at least `n` lines wait, reading `hashed` (a cache line
  // the hasher writes) only when the value last read does not settle it.
  [[nodiscard]] bool lagging(std::uint64_t n) {
    const std::uint64_t p = published.load(std::memory_order_relaxed);
    if (p - seen_hashed < n) return false;
    seen_hashed = hashed.load(std::memory_order_acquire);
    return p - seen_hashed >= n;
  }

  // Reads the compact record at `record` (written by publish_executed), its values into
  // `values` (room for max_values).
  ExecutedRecord decode(const char* record, LineValue* values) const noexcept;

  // Renders the canonical line of `r`, entry `sequence`, into `at` (room for its bound, as
  // publish_executed computed it):
  // its `prev` the 64 digits at `prev`, its `hash` the 64 at `hash` (left to be written if
  // null).
  LineLayout render(const ExecutedRecord& r,
                    std::uint64_t sequence,
                    const char* prev,
                    const char* hash,
                    char* at) const noexcept;

  // Hashes `job`'s line, entry `sequence` (T6): its `prev` is the hash before, its `hash` the
  // SHA-256 of the line without that member; a compact record gets the digest, a text line the
  // member's digits.
  void hash_line(const Job& job, std::uint64_t sequence);

  // The holder of `hashing`: hashes, in order, the lines published so far (line h is entry h:
  // every entry is published once, in sequence order).
  void hash_published();

  // Hashes every waiting line, in order, unless another thread is at it (then false: that one
  // also hashes whatever was published before it stops). Never blocks.
  bool drain();

  // Under the kernel's lock (nothing is published meanwhile): returns when every line is
  // hashed, helping or waiting for the thread at it.
  void settle() {
    while (hashed.load(std::memory_order_acquire) < published.load(std::memory_order_relaxed)) {
      if (!drain()) std::this_thread::yield();
    }
  }

  // Without the kernel's lock (KernelOptions::defer_hash off, after a commit): hashes the lines
  // that wait, the caller's among them, unless another thread is at it; that one hashes what
  // was published before it started, and what was published meanwhile waits for the next
  // commit or reader. So two threads' commits overlap with the hashing, and no caller hashes
  // for ever while others keep committing.
  void help_hash() {
    if (hashing.exchange(true, std::memory_order_seq_cst)) return;
    hash_published();
    hashing.store(false, std::memory_order_seq_cst);
  }

  void worker_loop();

  // After a deferred line is published, without the kernel's lock: wakes (or starts) the
  // background thread when enough lines wait. Never throws (without a thread, readers and the
  // full ring hash the lines).
  void nudge() noexcept;

  // Under the kernel's lock, before a line is published: hashes the waiting lines here if the
  // ring is full.
  void make_room() {
    if (lagging(kRing)) settle();
  }

  // Where the committer renders line `sequence` ahead (its place in the ring's room).
  [[nodiscard]] char* pre_room(std::uint64_t sequence) const noexcept {
    return pre.get() + (sequence % kRing) * kPreBytes;
  }

  // Under the kernel's lock: the slot just added is the next job of the hasher.
  void publish(LineLayout ahead = {}) noexcept {
    const std::uint64_t p = published.load(std::memory_order_relaxed);
    ring[p % kRing] = Job{&slots.back(), ahead};
    // Release: the hasher acquires it. (A worker that goes to sleep as a line is published may
    // miss it: the next publication wakes it, and readers hash what waits.)
    published.store(p + 1, std::memory_order_release);
  }

  // Under the kernel's lock: appends `e` as the next line, a compact record that the hasher
  // renders and hashes. If `whole`, reserves room in it for the whole line (see
  // copy_last_line). May throw (allocation) with nothing changed.
  void publish_executed(const Executed& e, std::string* whole) {
    make_room();
    const Changes& changes = *e.changes;
    const std::vector<Value>& params = *e.params;
    std::size_t n = kRecordFixed + e.fields.warnings.size();
    for (const auto& change : changes)
      n += is_json_integer(change.second) ? 0 : json_bound(change.second);
    for (const Value& v : params) n += is_json_integer(v) ? 0 : json_bound(v);
    n += (changes.size() + params.size()) * detail::kVarintBound;
    char* const at = lines.reserve(n);
    char* p = at + 32;  // the hash, by the hasher
    p = detail::put_varint(p, e.fields.action);
    *p++ = static_cast<char>(e.fields.emergency ? 1 : 0);
    p = detail::put_varint(p, detail::zigzag(e.fields.cost));
    p = detail::put_varint(p, detail::zigzag(e.fields.gross));
    p = detail::put_varint(p, detail::zigzag(e.fields.net));
    p = detail::put_varint(p, e.fields.emergency_steps);
    p = detail::put_varint(p, e.fields.step);
    p = detail::put_varint(p, detail::zigzag(e.fields.time));
    std::size_t bound = layouts[e.fields.action].fixed + 3 * LineWriter::amount_bound(scale) +
                        (e.fields.warnings.empty() ? kNoWarnings.size() : e.fields.warnings.size());
    // Rendered here if the hasher lags (make_room() above left fewer than kRing waiting, so the
    // room of line `sequence` is free): the values are then read for the renderer as they are
    // written.
    const std::uint64_t sequence = next_sequence();
    bool ahead = lagging(kLag);
    LineValue* values = decoded_ahead.get();
    auto put_value = [&](const Value& v) {
      if (is_json_integer(v)) {
        p = detail::put_varint(p, detail::zigzag(v.as_number().units) << 1);
        bound += LineWriter::kIntBound;
        if (ahead) *values++ = LineValue{v.as_number().units, {}};
        return;
      }
      line.clear();
      detail::append_value(line, v);  // may throw: nothing is kept yet
      p = detail::put_varint(p, (std::uint64_t{line.size()} << 1) | 1);
      std::memcpy(p, line.data(), line.size());
      if (ahead) *values++ = LineValue{0, {p, line.size()}};
      p += line.size();
      bound += line.size();
    };
    for (const auto& change : changes) put_value(change.second);
    for (const Value& v : params) put_value(v);
    p = detail::put_varint(p, e.fields.warnings.size());
    std::memcpy(p, e.fields.warnings.data(), e.fields.warnings.size());
    p += e.fields.warnings.size();
    if (bound > rendered_capacity) {
      settle();  // nothing is hashing: the hasher's buffer can grow
      rendered = std::make_unique_for_overwrite<char[]>(std::max(bound, std::size_t{4096}));
      rendered_capacity = std::max(bound, std::size_t{4096});
    }
    if (whole != nullptr) whole->reserve(bound);
    ahead = ahead && bound <= kPreBytes && (pre || make_pre());
    slots.push_back(Slot{at,
                         static_cast<std::uint32_t>(p - at),
                         static_cast<std::uint32_t>(bound),
                         0,
                         EntryKind::executed,
                         true});
    lines.commit(at, static_cast<std::size_t>(p - at));
    if (!ahead) {
      publish();
      return;
    }
    static constexpr char kUnknown[64] = {};  // the digits of `prev`, written by the hasher
    detail::test_lines_rendered_ahead.fetch_add(1, std::memory_order_relaxed);
    const ExecutedRecord r{e.fields, decoded_ahead.get()};
    publish(render(r, sequence, kUnknown, nullptr, pre_room(sequence)));
  }

  // The room to render lines ahead (false if it cannot be had: the hasher renders them).
  bool make_pre() noexcept;

  // Under the kernel's lock: appends `head` + a `hash` member to be written + `tail` as one
  // line, whose `prev` digits (at `prev_at` in the whole line) are written by the hasher too.
  // May throw (allocation) with nothing changed.
  void append(EntryKind kind,
              std::string_view head,
              std::string_view tail,
              std::size_t hash_at,
              std::size_t prev_at) {
    make_room();
    const std::size_t n = head.size() + detail::kHashMember + tail.size();
    char* const at = lines.reserve(n);
    std::memcpy(at, head.data(), head.size());
    std::memcpy(at + head.size(), detail::kHashKey.data(), detail::kHashKey.size());
    at[head.size() + detail::kHashMember - 1] = '"';
    std::memcpy(at + head.size() + detail::kHashMember, tail.data(), tail.size());
    slots.push_back(Slot{at,
                         static_cast<std::uint32_t>(n),
                         static_cast<std::uint32_t>(hash_at),
                         static_cast<std::uint32_t>(prev_at),
                         kind,
                         false});
    lines.commit(at, n);
    publish();
  }

  // Under the kernel's lock, every line hashed (settle()): the last line, whole, into `out`
  // (which has room for it).
  void copy_last_line(std::string& out) const noexcept {
    const Slot& s = slots.back();
    if (s.compact) {
      out.assign(last_text, last_rendered.size);  // the hasher's last line
    } else {
      out.assign(s.text, s.size);
    }
  }

  // The 64 hex digits of a hashed line's hash, to `out`.
  static void hash_of(const Slot& s, char* out) noexcept {
    if (s.compact) {
      detail::digest_hex(reinterpret_cast<const unsigned char*>(s.text), out);
    } else {
      std::memcpy(out, s.text + s.hash_at + detail::kHashKey.size(), 64);
    }
  }

  // Drops lines beyond the window (hashed ones only), and the chunks no line is in any more.
  // Never throws.
  // After an execution: trims once every kTrimEvery lines beyond the window (readers trim
  // first, so they never see more than the window).
  static constexpr std::size_t kTrimEvery = 32;
  void trim_some(std::size_t window) noexcept {
    if (window != 0 && slots.size() >= window + kTrimEvery) trim(window);
  }

  void trim(std::size_t window) noexcept;

  // Under the kernel's lock: the undo record of committed action `a` (index `action`; see
  // Undo): its effects' `operands`, the values they write in `before` and the `changes` they
  // make, and its `params`. May throw (allocation) with nothing changed.
  void push_undo(std::uint64_t sequence,
                 std::size_t action,
                 const Action& a,
                 Amount cost,
                 const std::vector<Value>& operands,
                 const State& before,
                 const Changes& changes,
                 const std::vector<Value>& params) {
    const std::size_t count = 3 * a.effects.size() + params.size();
    char* const at = undo_bytes.reserve(count * kExactBound + 1);
    char* p = at;
    std::uint32_t n_boxed = 0;
    auto put = [&](const Value& v) {
      p = put_exact(p, v);
      if (is_boxed(v)) {
        boxed.push_back(v);
        ++n_boxed;
      }
    };
    try {
      for (const Value& v : operands) put(v);
      for (const Effect& e : a.effects) put(before.get(e.variable));
      for (const auto& change : changes) put(change.second);
      for (const Value& v : params) put(v);
      undo.push_back(Undo{sequence, at, cost, static_cast<std::uint32_t>(action), n_boxed, 0});
    } catch (...) {
      for (; n_boxed > 0; --n_boxed) boxed.pop_back();
      throw;
    }
    // Never empty, so that the record is inside its chunk (Arena).
    undo_bytes.commit(at, std::max<std::size_t>(static_cast<std::size_t>(p - at), 1));
  }

  // The values of undo record `index` (`count` of them), as push_undo was given them.
  [[nodiscard]] std::vector<Value> undo_values(std::size_t index, std::size_t count) const;
  // The values of the last undo record.
  [[nodiscard]] std::vector<Value> last_undo_values(std::size_t count) const {
    return undo_values(undo.size() - 1, count);
  }

  // Drops the last undo record (its action was rolled back, or its commit failed).
  void pop_undo_back() noexcept {
    for (std::uint32_t i = undo.back().boxed; i > 0; --i) boxed.pop_back();
    undo_bytes.pop_back(undo.back().values);
    undo.pop_back();
  }

  // Drops the oldest undo record (the depth limit).
  void drop_undo_front() noexcept {
    for (std::uint32_t i = undo.front().boxed; i > 0; --i) boxed.pop_front();
    undo.pop_front();
    ++undo_dropped;
    if (!undo.empty()) undo_bytes.drop_before(undo.front().values);
  }

  // The kept lines, readable without the kernel's lock: slots and records never change once
  // hashed, and while a view lives (`pins` > 0) trim() frees no chunk. Executed entries'
  // lines are rendered from their records by render().
  class View {
   public:
    View(std::vector<Slot> slots, std::uint64_t first, const char* before, std::atomic<int>& pins)
        : slots_(std::move(slots)), first_(first), pins_(&pins) {
      std::memcpy(before_, before, sizeof before_);
      pins_->fetch_add(1, std::memory_order_relaxed);
    }
    ~View() { pins_->fetch_sub(1, std::memory_order_release); }
    View(const View&) = delete;
    View& operator=(const View&) = delete;
    [[nodiscard]] std::size_t size() const { return slots_.size(); }
    [[nodiscard]] std::uint64_t first_sequence() const { return first_; }
    // What render() rendered last.
    [[nodiscard]] const std::vector<detail::StoredLine>& lines() const { return lines_; }

    // How many lines are rendered at a time (see verify_trace): so that reading a long trace
    // kept whole needs room for a batch of lines, not for all of them.
    static constexpr std::size_t kBatch = std::size_t{1} << 16;

    // Renders lines [from, to) (without the kernel's lock), in pieces on every core: each
    // executed entry's line from its record, its `prev` the hash of the slot before.
    void render(const Impl& k, std::size_t from, std::size_t to);

    // Verifies the lines a batch at a time (verify_stored_lines on each, and the links and the
    // seal between batches).
    TraceCheck verify(const Impl& k);

   private:
    std::vector<Slot> slots_;
    std::uint64_t first_;
    char before_[64];
    std::atomic<int>* pins_;
    std::unique_ptr<char[]> rendered_;
    std::size_t rendered_capacity_ = 0;
    std::vector<detail::StoredLine> lines_;
  };

  // Under the kernel's lock: the kept lines, to be rendered without it. May throw
  // (allocation) with nothing changed.
  [[nodiscard]] std::unique_ptr<View> view(std::size_t window);
};

}  // namespace clampai::kernel
