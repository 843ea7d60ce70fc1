// The safety kernel: the checks of the seed documents in their order, atomic commit,
// rollback by two independent mechanisms, and the hash-chained trace.
#include "clampai/kernel/safety_kernel.hpp"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>

#include "arena.hpp"
#include "clampai/kernel/assert.hpp"
#include "clampai/kernel/digest.hpp"
#include "clampai/kernel/error.hpp"
#include "clampai/kernel/parallel.hpp"
#include "digest_pair.hpp"
#include "json.hpp"
#include "numeric_program.hpp"
#include "test_hooks.hpp"
#include "trace_codec.hpp"

namespace clampai::kernel {

using detail::kZeroHash;
using detail::recorded_params;
using detail::system_clock_us;

namespace {

Reason reason(ReasonCode code, std::string subject, std::string message) {
  return Reason{code, std::move(subject), std::move(message)};
}

const char* eval_error_text(EvalError e) {
  return e == EvalError::overflow ? "arithmetic overflow" : "an undefined variable was read";
}

// Normalises a computed value to a variable's type (numbers to its scale). False on overflow.
bool normalise_slow(const Type& type, Value& v);
inline bool normalise(const Type& type, Value& v) {
  // The common case inline: a number already at its variable's scale, nothing to do.
  if (v.kind() == Value::Kind::number && type.is_numeric() && v.as_number().scale == type.scale())
    return true;
  return normalise_slow(type, v);
}
bool normalise_slow(const Type& type, Value& v) {
  if (v.kind() == Value::Kind::number && type.is_numeric()) {
    if (v.as_number().scale == type.scale()) return true;
    auto r = v.as_number().rescaled(type.scale());
    if (!r) return false;
    v = Value::number(*r);
  } else if (v.kind() == Value::Kind::list && type.element() != nullptr &&
             type.element()->is_numeric()) {
    Value::List items = v.as_list();
    for (auto& item : items) {
      if (!normalise(*type.element(), item)) return false;
    }
    v = Value::list(std::move(items));
  }
  return true;
}

// Checks one parameter value against its declaration; returns the normalised value.
std::optional<Reason> check_param(const Parameter& p, Value& v) {
  if (v.kind() != Value::Kind::number) {
    return reason(ReasonCode::invalid_parameter,
                  p.name,
                  "parameter `" + p.name + "` must be a number, got " + v.to_string());
  }
  auto r = v.as_number().rescaled(p.type.scale());
  if (!r) {
    return reason(
        ReasonCode::invalid_parameter,
        p.name,
        "parameter `" + p.name + "` = " + v.to_string() + " does not fit " + p.type.to_string());
  }
  if (p.min && *r < *p.min) {
    return reason(ReasonCode::invalid_parameter,
                  p.name,
                  "parameter `" + p.name + "` = " + r->to_string() + " is below its minimum " +
                      p.min->to_string());
  }
  if (p.max && *r > *p.max) {
    return reason(ReasonCode::invalid_parameter,
                  p.name,
                  "parameter `" + p.name + "` = " + r->to_string() + " is above its maximum " +
                      p.max->to_string());
  }
  v = Value::number(*r);
  return std::nullopt;
}

}  // namespace

std::atomic<bool> detail::test_no_background_hasher{false};
std::atomic<std::uint64_t> detail::test_lines_rendered_ahead{0};

std::string_view to_string(ReasonCode code) {
  static constexpr std::string_view kNames[] = {"unknown_action",
                                                "invalid_parameter",
                                                "below_min_cost",
                                                "budget_exceeded",
                                                "step_limit",
                                                "dependency_unmet",
                                                "requires_failed",
                                                "overflow",
                                                "undefined_value",
                                                "bound_violated",
                                                "invariant_violated",
                                                "monitoring_violated",
                                                "invariant_error",
                                                "lookahead_trap",
                                                "information_flow",
                                                "attestation_failed",
                                                "environment_drift",
                                                "dependency_not_ready",
                                                "precondition_failed"};
  return kNames[static_cast<int>(code)];
}

bool Decision::has(ReasonCode code) const noexcept {
  return std::any_of(
      reasons.begin(), reasons.end(), [&](const Reason& r) { return r.code == code; });
}

bool Decision::has(ReasonCode code, std::string_view subject) const noexcept {
  return std::any_of(reasons.begin(), reasons.end(), [&](const Reason& r) {
    return r.code == code && r.subject == subject;
  });
}

std::string state_digest(const State& state) {
  std::vector<std::pair<std::string_view, VarId>> order;
  order.reserve(state.size());
  for (VarId i = 0; i < state.size(); ++i) order.emplace_back(state.schema().name(i), i);
  std::sort(order.begin(), order.end());
  std::string out = "{";
  for (std::size_t k = 0; k < order.size(); ++k) {
    if (k > 0) out += ',';
    detail::append_json_string(out, order[k].first);
    out += ':';
    detail::append_value(out, state.get(order[k].second));
  }
  out += '}';
  return sha256_hex(out);
}

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
};

namespace {
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
bool is_json_integer(const Value& v) noexcept {
  constexpr std::int64_t kExact = std::int64_t{1} << 53;
  return v.kind() == Value::Kind::number && v.as_number().scale == 0 &&
         v.as_number().units > -kExact && v.as_number().units < kExact;
}

// The most bytes `v`'s canonical JSON takes.
std::size_t json_bound(const Value& v) noexcept {
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
constexpr std::size_t kExactBound = 2 + detail::kVarintBound;

char* put_exact(char* p, const Value& v) noexcept {
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

bool is_boxed(const Value& v) noexcept { return v.kind() >= Value::Kind::string; }

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
}  // namespace

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
  ~Impl() {
    if (worker.joinable()) {
      {
        std::lock_guard lock(worker_mutex);
        worker_stop = true;
      }
      worker_wake.notify_one();
      worker.join();
    }
  }
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
  ExecutedRecord decode(const char* record, LineValue* values) const noexcept {
    ExecutedRecord r;
    const char* p = record + 32;
    std::uint64_t v = 0;
    p = detail::get_varint(p, v);
    r.fields.action = static_cast<std::size_t>(v);
    r.fields.emergency = *p++ != 0;
    p = detail::get_varint(p, v);
    r.fields.cost = detail::unzigzag(v);
    p = detail::get_varint(p, v);
    r.fields.gross = detail::unzigzag(v);
    p = detail::get_varint(p, v);
    r.fields.net = detail::unzigzag(v);
    p = detail::get_varint(p, r.fields.emergency_steps);
    p = detail::get_varint(p, r.fields.step);
    p = detail::get_varint(p, v);
    r.fields.time = detail::unzigzag(v);
    const ActionLayout& layout = layouts[r.fields.action];
    const std::size_t count = layout.changes.size() + layout.params.size();
    for (std::size_t i = 0; i < count; ++i) {
      p = detail::get_varint(p, v);
      if ((v & 1) != 0) {
        const auto n = static_cast<std::size_t>(v >> 1);
        values[i] = LineValue{0, {p, n}};
        p += n;
      } else {
        values[i] = LineValue{detail::unzigzag(v >> 1), {}};
      }
    }
    r.values = values;
    p = detail::get_varint(p, v);
    r.fields.warnings = {p, static_cast<std::size_t>(v)};
    return r;
  }

  // Renders the canonical line of `r`, entry `sequence`, into `at` (room for its bound, as
  // publish_executed computed it):
  // its `prev` the 64 digits at `prev`, its `hash` the 64 at `hash` (left to be written if
  // null).
  LineLayout render(const ExecutedRecord& r,
                    std::uint64_t sequence,
                    const char* prev,
                    const char* hash,
                    char* at) const noexcept {
    const ActionLayout& layout = layouts[r.fields.action];
    const LineValue* params = r.values + layout.changes.size();
    LineWriter out(at);
    auto put_value = [&](const LineValue& v) {
      if (v.text.empty()) {
        out.put_int(v.integer);
      } else {
        out.put(v.text);
      }
    };
    out.put(layout.action);
    for (std::size_t i = 0; i < layout.changes.size(); ++i) {
      if (i > 0) out.put(',');
      out.put(layout.changes[i].second);
      put_value(r.values[layout.changes[i].first]);
    }
    out.put(kCost);
    out.put_amount(r.fields.cost, scale);
    out.put(r.fields.emergency ? kEmergency : kNoEmergency);
    out.put_int(r.fields.emergency_steps);
    out.put(kGross);
    out.put_amount(r.fields.gross, scale);
    const std::size_t hash_at = out.size();
    out.put(detail::kHashKey);
    if (hash != nullptr) {
      out.put(hash, 64);
    } else {
      out.put(std::string_view("0000000000000000000000000000000000000000000000000000000000000000"));
    }
    out.put('"');
    out.put(kNet);
    out.put_amount(r.fields.net, scale);
    out.put(kParams);
    for (std::size_t i = 0; i < layout.params.size(); ++i) {
      if (i > 0) out.put(',');
      out.put(layout.params[i].second);
      put_value(params[layout.params[i].first]);
    }
    out.put(kPrev);
    const std::size_t prev_at = out.size();
    out.put(prev, 64);
    out.put(kSeq);
    out.put_int(sequence);
    out.put(kStep);
    out.put_int(r.fields.step);
    out.put(kTime);
    out.put_int(r.fields.time);
    out.put(r.fields.warnings.empty() ? kNoWarnings : r.fields.warnings);
    return LineLayout{static_cast<std::uint32_t>(out.size()),
                      static_cast<std::uint32_t>(hash_at),
                      static_cast<std::uint32_t>(prev_at)};
  }

  // Hashes `job`'s line, entry `sequence` (T6): its `prev` is the hash before, its `hash` the
  // SHA-256 of the line without that member; a compact record gets the digest, a text line the
  // member's digits.
  void hash_line(const Job& job, std::uint64_t sequence) {
    Slot& s = *job.slot;
    if (s.compact) {
      LineLayout at = job.ahead;
      char* text = nullptr;
      if (at.size != 0) {
        text = pre_room(sequence);
        std::memcpy(text + at.prev_at, last_hash, sizeof last_hash);
      } else {
        text = rendered.get();
        at = render(decode(s.text, decoded.get()), sequence, last_hash, nullptr, text);
      }
      const std::size_t tail = at.hash_at + detail::kHashMember;
      unsigned char digest[32];
      detail::sha256_one({{text, at.hash_at}, {text + tail, at.size - tail}}, digest);
      std::memcpy(s.text, digest, sizeof digest);
      detail::digest_hex(digest, last_hash);
      std::memcpy(text + at.hash_at + detail::kHashKey.size(), last_hash, sizeof last_hash);
      last_text = text;
      last_rendered = at;
      return;
    }
    std::memcpy(s.text + s.prev_at, last_hash, sizeof last_hash);
    const std::size_t tail = s.hash_at + detail::kHashMember;
    char* digits = s.text + s.hash_at + detail::kHashKey.size();
    detail::sha256_one_hex({{s.text, s.hash_at}, {s.text + tail, s.size - tail}}, digits);
    std::memcpy(last_hash, digits, sizeof last_hash);
  }

  // The holder of `hashing`: hashes, in order, the lines published so far (line h is entry h:
  // every entry is published once, in sequence order).
  void hash_published() {
    const std::uint64_t p = published.load(std::memory_order_acquire);
    for (std::uint64_t h = hashed.load(std::memory_order_relaxed); h < p; ++h) {
      hash_line(ring[h % kRing], h);
      hashed.store(h + 1, std::memory_order_release);
    }
  }

  // Hashes every waiting line, in order, unless another thread is at it (then false: that one
  // also hashes whatever was published before it stops). Never blocks.
  bool drain() {
    if (hashing.exchange(true, std::memory_order_seq_cst)) return false;
    for (;;) {
      hash_published();
      hashing.store(false, std::memory_order_seq_cst);
      // A line published while this thread held `hashing` may have found it held: take it.
      if (published.load(std::memory_order_seq_cst) == hashed.load(std::memory_order_relaxed))
        return true;
      if (hashing.exchange(true, std::memory_order_seq_cst)) return true;
    }
  }

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

  void worker_loop() {
    for (;;) {
      drain();
      // Sleeps until a batch waits: one wake-up per batch, not per line.
      std::unique_lock lock(worker_mutex);
      worker_sleeping.store(true, std::memory_order_seq_cst);
      worker_wake.wait(lock, [&] { return worker_stop || waiting() >= kBatch; });
      worker_sleeping.store(false, std::memory_order_relaxed);
      if (worker_stop) return;
    }
  }

  // After a deferred line is published, without the kernel's lock: wakes (or starts) the
  // background thread when enough lines wait. Never throws (without a thread, readers and the
  // full ring hash the lines).
  void nudge() noexcept {
    if (waiting() < kBatch) return;
    if (!worker.joinable()) {
      std::lock_guard lock(worker_mutex);
      if (!worker.joinable() && !worker_stop) {
        try {
          worker = std::thread([this] { worker_loop(); });
        } catch (...) {
          worker_stop = true;  // no thread: hashed by settle() and the full ring
        }
      }
      return;
    }
    if (worker_sleeping.load(std::memory_order_seq_cst)) {
      std::lock_guard lock(worker_mutex);
      worker_wake.notify_one();
    }
  }

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
  bool make_pre() noexcept {
    try {
      pre = std::make_unique_for_overwrite<char[]>(kRing * kPreBytes);
      return true;
    } catch (const std::bad_alloc&) {
      return false;
    }
  }

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

  void trim(std::size_t window) noexcept {
    if (window == 0) return;
    const std::uint64_t done = hashed.load(std::memory_order_acquire);
    std::optional<Slot> dropped;
    while (slots.size() > window && first_sequence < done) {
      dropped = slots.front();
      slots.pop_front();
      ++first_sequence;
    }
    if (dropped) hash_of(*dropped, before_first);  // its chunk is not freed yet
    // A reader without the lock may be reading the lines: the chunks wait for a later trim.
    if (pins.load(std::memory_order_acquire) > 0) return;
    lines.drop_before(slots.front().text);
  }

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
      undo.push_back(Undo{sequence, at, cost, static_cast<std::uint32_t>(action), n_boxed});
    } catch (...) {
      for (; n_boxed > 0; --n_boxed) boxed.pop_back();
      throw;
    }
    // Never empty, so that the record is inside its chunk (Arena).
    undo_bytes.commit(at, std::max<std::size_t>(static_cast<std::size_t>(p - at), 1));
  }

  // The values of the last undo record (`count` of them), as push_undo was given them.
  [[nodiscard]] std::vector<Value> last_undo_values(std::size_t count) const {
    const Undo& u = undo.back();
    const char* p = u.values;
    std::size_t next_boxed = boxed.size() - u.boxed;
    std::vector<Value> out(count);
    for (Value& v : out) {
      const auto tag = static_cast<unsigned char>(*p++);
      switch (tag) {
        case kUndefined:
          break;
        case kFalse:
        case kTrue:
          v = Value::boolean(tag == kTrue);
          break;
        case kNumber: {
          const auto scale_byte = static_cast<std::uint8_t>(*p++);
          std::uint64_t units = 0;
          p = detail::get_varint(p, units);
          v = Value::number(Decimal{detail::unzigzag(units), scale_byte});
          break;
        }
        default:
          v = boxed[next_boxed++];
          break;
      }
    }
    return out;
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
    void render(const Impl& k, std::size_t from, std::size_t to) {
      const std::size_t n = to - from;
      std::vector<std::size_t> at(n + 1, 0);  // where each line goes in `rendered_`
      for (std::size_t i = 0; i < n; ++i) {
        const Slot& s = slots_[from + i];
        at[i + 1] = at[i] + (s.compact ? s.hash_at : 0);  // a record's bound
      }
      if (at[n] > rendered_capacity_) {
        rendered_ = std::make_unique_for_overwrite<char[]>(at[n]);
        rendered_capacity_ = at[n];
      }
      std::vector<LineLayout> layouts(n);
      constexpr std::size_t kPiece = 512;  // lines per piece
      parallel_for((n + kPiece - 1) / kPiece,
                   detail::verification_threads(),
                   [&](std::size_t piece, unsigned) {
                     std::vector<LineValue> values(std::max<std::size_t>(k.max_values, 1));
                     for (std::size_t i = piece * kPiece; i < std::min(n, (piece + 1) * kPiece);
                          ++i) {
                       const Slot& s = slots_[from + i];
                       if (!s.compact) continue;
                       char prev[64];
                       if (from + i == 0) {
                         std::memcpy(prev, before_, sizeof prev);
                       } else {
                         hash_of(slots_[from + i - 1], prev);
                       }
                       char hash[64];
                       hash_of(s, hash);
                       layouts[i] = k.render(k.decode(s.text, values.data()),
                                             first_ + from + i,
                                             prev,
                                             hash,
                                             rendered_.get() + at[i]);
                     }
                   });
      lines_.clear();
      lines_.reserve(n);
      for (std::size_t i = 0; i < n; ++i) {
        const Slot& s = slots_[from + i];
        if (s.compact) {
          lines_.push_back({{rendered_.get() + at[i], layouts[i].size},
                            layouts[i].hash_at,
                            layouts[i].prev_at,
                            EntryKind::executed});
        } else {
          lines_.push_back({{s.text, s.size}, s.hash_at, s.prev_at, s.kind});
        }
      }
    }

    // Verifies the lines a batch at a time (verify_stored_lines on each, and the links and the
    // seal between batches).
    TraceCheck verify(const Impl& k) {
      const std::size_t n = slots_.size();
      TraceCheck check;
      for (std::size_t from = 0; from == 0 || from < n; from += kBatch) {
        const std::size_t to = std::min(n, from + kBatch);
        render(k, from, to);
        check = detail::verify_stored_lines(lines_, first_ + from, /*allow_unsealed=*/true);
        check.entries = n;
        if (!check.ok) return check;
        auto fail = [&](std::size_t i, const char* why) {
          check.ok = false;
          check.sealed = false;
          check.first_bad = first_ + i;
          check.message = "entry " + std::to_string(first_ + i) + ": " + why;
          return check;
        };
        if (from > 0) {  // the batch's first line links to the line before it
          char before[64];
          hash_of(slots_[from - 1], before);
          const detail::StoredLine& l = lines_.front();
          if (l.text.substr(l.prev_at, 64) != std::string_view(before, sizeof before))
            return fail(from, "does not link to the previous entry's hash");
        }
        if (check.sealed && to < n) return fail(to, "entries follow the seal");
      }
      check.message = detail::chain_summary(n, first_, check.sealed);
      return check;
    }

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
  [[nodiscard]] std::unique_ptr<View> view(std::size_t window) {
    settle();
    trim(window);  // what waited for its hash beyond the window
    std::vector<Slot> copy(slots.begin(), slots.end());
    return std::make_unique<View>(std::move(copy), first_sequence, before_first, pins);
  }
};

SafetyKernel::SafetyKernel(std::shared_ptr<const TaskModel> model, KernelOptions options)
    : model_(std::move(model)),
      options_(std::move(options)),
      state_(model_->initial_state()),
      budget_(model_->budget.total),
      completions_(std::make_unique<std::atomic<std::uint64_t>[]>(model_->actions.size())),
      impl_(std::make_unique<Impl>()) {
  if (!options_.clock) options_.clock = system_clock_us;
  impl_->defer = options_.defer_hash && !options_.writer;
  impl_->worker_stop = detail::test_no_background_hasher.load(std::memory_order_relaxed);
  impl_->scale = model_->budget.scale;
  impl_->line.reserve(1024);
  impl_->flat.reserve(model_->invariants.size());
  for (const Invariant& inv : model_->invariants)
    impl_->flat.push_back(inv.expr ? detail::flatten(*inv.expr) : detail::FlatComparison{});
  for (const Action& a : model_->actions) {
    Impl::ActionLayout layout;
    layout.action = "{\"action\":";
    detail::append_json_string(layout.action, a.id);
    layout.action += ",\"changes\":{";
    for (std::size_t i = 0; i < a.effects.size(); ++i) {
      std::string key;
      detail::append_json_string(key, model_->variables[a.effects[i].variable].name);
      layout.changes.emplace_back(i, key + ':');
    }
    for (std::size_t i = 0; i < a.parameters.size(); ++i) {
      std::string key;
      detail::append_json_string(key, a.parameters[i].name);
      layout.params.emplace_back(i, key + ':');
    }
    // The order of the raw names, as the canonical serialization sorts them.
    std::sort(layout.changes.begin(), layout.changes.end(), [&](const auto& x, const auto& y) {
      return model_->variables[a.effects[x.first].variable].name <
             model_->variables[a.effects[y.first].variable].name;
    });
    std::sort(layout.params.begin(), layout.params.end(), [&](const auto& x, const auto& y) {
      return a.parameters[x.first].name < a.parameters[y.first].name;
    });
    layout.fixed = Impl::kFixed + layout.action.size();
    for (const auto& change : layout.changes) layout.fixed += change.second.size() + 1;
    for (const auto& param : layout.params) layout.fixed += param.second.size() + 1;
    impl_->layouts.push_back(std::move(layout));
    impl_->max_values = std::max(impl_->max_values, a.effects.size() + a.parameters.size());
  }
  // The renderers' buffers, so that hashing allocates nothing.
  impl_->decoded = std::make_unique<LineValue[]>(std::max<std::size_t>(impl_->max_values, 1));
  impl_->decoded_ahead = std::make_unique<LineValue[]>(std::max<std::size_t>(impl_->max_values, 1));
  // T3's base case: the kernel refuses to start from a state it could not keep safe.
  if (options_.check_initial_state) {
    const State& s = state_;
    for (const auto& v : model_->variables) {
      const Value& value = s.get(*model_->schema->find(v.name));
      if (value.kind() == Value::Kind::number &&
          ((v.min && value.as_number() < *v.min) || (v.max && value.as_number() > *v.max))) {
        throw InvalidArgument("the initial value of `" + v.name + "` is out of its bounds");
      }
    }
    for (const auto& inv : model_->invariants) {
      if (inv.enforcement == Enforcement::blocking && !holds_in(inv, s)) {
        throw InvalidArgument("the initial state violates blocking invariant `" + inv.name + "`");
      }
    }
  }

  if (!options_.resume.empty()) {
    const std::vector<TraceEntry> entries = std::move(options_.resume);
    options_.resume.clear();
    std::size_t i = 0;
    resume([&](TraceEntry& e) {
      if (i == entries.size()) return false;
      e = entries[i++];
      return true;
    });
    return;
  }
  if (options_.resume_from) {
    const auto next = std::move(options_.resume_from);
    options_.resume_from = nullptr;
    resume(next);
    return;
  }
  TraceEntry genesis;
  genesis.kind = EntryKind::genesis;
  genesis.cost = model_->format_amount(0);
  genesis.gross = model_->format_amount(0);
  genesis.net = model_->format_amount(0);
  genesis.spec = model_->digest;
  genesis.state = state_digest(state_);
  std::string line;
  append_locked(genesis, 0, 0, budget_, options_.writer ? &line : nullptr);
  if (options_.writer) write_line(0, std::move(line));
}

SafetyKernel::~SafetyKernel() = default;

std::variant<Proposal, Reason> SafetyKernel::resolve(std::string_view action_id,
                                                     const ParamMap& params) const {
  const auto index = model_->find_action(action_id);
  if (!index)
    return reason(ReasonCode::unknown_action,
                  std::string(action_id),
                  "unknown action `" + std::string(action_id) + "`");
  const Action& a = model_->actions[*index];
  for (const auto& [name, _] : params) {
    const bool known = std::any_of(a.parameters.begin(),
                                   a.parameters.end(),
                                   [&n = name](const Parameter& p) { return p.name == n; });
    if (!known)
      return reason(ReasonCode::invalid_parameter,
                    name,
                    "action `" + a.id + "` has no parameter `" + name + "`");
  }
  Proposal p{*index, {}};
  for (const Parameter& decl : a.parameters) {
    const auto it = std::find_if(
        params.begin(), params.end(), [&](const auto& kv) { return kv.first == decl.name; });
    Value v;
    if (it != params.end()) {
      v = it->second;
    } else if (decl.default_value) {
      v = Value::number(*decl.default_value);
    } else {
      return reason(ReasonCode::invalid_parameter,
                    decl.name,
                    "missing parameter `" + decl.name + "` (it has no default)");
    }
    if (auto bad = check_param(decl, v)) return *bad;
    p.params.push_back(std::move(v));
  }
  return p;
}

Decision SafetyKernel::evaluate(const Proposal& proposal) const {
  std::lock_guard lock(mutex_);
  return evaluate_locked(state_, proposal);
}

Decision SafetyKernel::evaluate(std::string_view action_id, const ParamMap& params) const {
  auto resolved = resolve(action_id, params);
  if (auto* r = std::get_if<Reason>(&resolved)) {
    Decision d;
    d.reasons.push_back(std::move(*r));
    return d;
  }
  return evaluate(std::get<Proposal>(resolved));
}

Decision SafetyKernel::evaluate_in(const State& state, const Proposal& proposal) const {
  if (state.size() != model_->variables.size())
    throw InvalidArgument("the state does not have the model's variables");
  std::lock_guard lock(mutex_);
  return evaluate_locked(state, proposal);
}

namespace {

// Why effect `e` cannot be computed: `err` on its variable.
[[gnu::noinline]] Reason effect_failure(const TaskModel& m, const Effect& e, EvalError err) {
  const Variable& var = m.variables[e.variable];
  return reason(err == EvalError::overflow ? ReasonCode::overflow : ReasonCode::undefined_value,
                var.name,
                "effect `" + std::string(to_string(e.mode)) + "` on `" + var.name +
                    "`: " + eval_error_text(err));
}

// Every effect but a numeric set, increment, decrement or multiply (`apply_effect`'s general
// path, out of line).
[[gnu::noinline]] std::optional<Reason> apply_general_effect(
    const TaskModel& m, const Effect& e, const EvalEnv& pre, Value& out, Value* operand) {
  const Variable& var = m.variables[e.variable];
  const Value& old = pre.state->get(e.variable);
  if (e.mode == EffectMode::del) {
    out = Value();
    return std::nullopt;
  }
  EvalResult r = kernel::evaluate(*e.value, pre);
  if (!r.ok()) return effect_failure(m, e, r.error);
  if (operand != nullptr) *operand = r.value;
  if (e.mode != EffectMode::set && !old.is_defined())
    return effect_failure(m, e, EvalError::undefined);
  switch (e.mode) {
    case EffectMode::set:
      out = std::move(r.value);
      break;
    case EffectMode::increment:
    case EffectMode::decrement:
    case EffectMode::multiply: {
      const Decimal& a = old.as_number();
      const Decimal& b = r.value.as_number();
      const auto n = e.mode == EffectMode::increment   ? checked_add(a, b)
                     : e.mode == EffectMode::decrement ? checked_sub(a, b)
                                                       : checked_mul(a, b);
      if (!n) return effect_failure(m, e, EvalError::overflow);
      out = Value::number(*n);
      break;
    }
    case EffectMode::append: {
      Value::List items = old.as_list();
      items.push_back(std::move(r.value));
      out = Value::list(std::move(items));
      break;
    }
    case EffectMode::remove: {
      Value::List items = old.as_list();
      const auto it = std::find(items.begin(), items.end(), r.value);
      if (it != items.end()) items.erase(it);
      out = Value::list(std::move(items));
      break;
    }
    case EffectMode::del:
      break;
  }
  if (!normalise(var.type, out)) return effect_failure(m, e, EvalError::overflow);
  return std::nullopt;
}

// Effect application on the pre-action state (a parallel assignment). Fills `out` with the new
// value, or returns the reason it cannot be computed. The numeric path (nearly every effect)
// is inline in both of its callers (a decision and a preview); the rest is out of line.
[[gnu::always_inline]] inline std::optional<Reason> apply_effect(
    const TaskModel& m, const Effect& e, const EvalEnv& pre, Value& out, Value* operand) {
  // `operand`, when asked for, gets the effect's evaluated value (what rollback inverts).
  // Numeric effects (the common case) compute their operand without a `Value` per node; the
  // result and the errors are those of the general path, in the same order.
  if (e.mode == EffectMode::del || !e.value->type.is_numeric() ||
      (e.mode != EffectMode::set && e.mode != EffectMode::increment &&
       e.mode != EffectMode::decrement && e.mode != EffectMode::multiply))
    return apply_general_effect(m, e, pre, out, operand);
  const Variable& var = m.variables[e.variable];
  const Value& old = pre.state->get(e.variable);
  // A literal operand (`+ 1`, the usual effect) is read where the parser put it: through a
  // copy just written, the CPU would stall reading back its one-byte scale.
  Decimal computed;
  const Decimal* operand_value = &computed;
  if (e.value->op == ExprOp::literal) {
    operand_value = &e.value->literal.as_number();
  } else if (const EvalError err = evaluate_number(*e.value, pre, computed);
             err != EvalError::none) {
    return effect_failure(m, e, err);
  }
  const Decimal& b = *operand_value;
  if (operand != nullptr) *operand = Value::number(b);
  if (e.mode == EffectMode::set) {
    out = Value::number(b);
  } else {
    if (!old.is_defined()) return effect_failure(m, e, EvalError::undefined);
    const Decimal& a = old.as_number();
    const auto n = e.mode == EffectMode::increment   ? checked_add(a, b)
                   : e.mode == EffectMode::decrement ? checked_sub(a, b)
                                                     : checked_mul(a, b);
    if (!n) return effect_failure(m, e, EvalError::overflow);
    out = Value::number(*n);
  }
  if (!normalise(var.type, out)) return effect_failure(m, e, EvalError::overflow);
  return std::nullopt;
}

}  // namespace

namespace {

// Completion counts per action: a situation's, or the kernel's (read without its lock).
struct CompletionsRef {
  const std::uint64_t* plain = nullptr;
  const std::atomic<std::uint64_t>* shared = nullptr;
  std::uint64_t operator[](std::size_t i) const {
    // Acquire: a count newer than a snapshot comes with the entry that moved the head.
    return plain != nullptr ? plain[i] : shared[i].load(std::memory_order_acquire);
  }
};

// The cost of an action with a cost expression, evaluated in `pre`, at the budget's scale:
// false if that overflows or cannot be evaluated (out of line: most costs are constants).
[[gnu::noinline]] bool evaluated_cost(const TaskModel& model,
                                      const Action& a,
                                      const EvalEnv& pre,
                                      Amount& cost) {
  const EvalResult r = kernel::evaluate(*a.cost_expr, pre);
  std::optional<Decimal> scaled;
  if (r.ok()) scaled = r.value.as_number().rescaled(model.budget.scale);
  if (!scaled) return false;
  cost = scaled->units;
  return true;
}

// The cost of action `a` in `pre` at the budget's scale (its constant, or its expression
// evaluated): false if that overflows or cannot be evaluated.
[[gnu::always_inline]] inline bool action_cost(const TaskModel& model,
                                               const Action& a,
                                               const EvalEnv& pre,
                                               Amount& cost) {
  cost = a.cost;
  return !a.cost_expr || evaluated_cost(model, a, pre, cost);
}

// Every check of SafetyKernel::evaluate, on an explicit situation (T1, T2, T3, T8).
void decide_at(const TaskModel& model,
               const State& state,
               const BudgetController& budget,
               std::uint64_t steps,
               CompletionsRef completions,
               const Proposal& p,
               Decision& d,
               std::vector<Value>* operands = nullptr,
               const detail::FlatComparison* flat = nullptr) {
  const TaskModel* model_ = &model;
  // Everything reset, the vectors' capacity kept (a search decides many times into one).
  d.approved = false;
  d.reasons.clear();
  d.warnings.clear();
  d.action = 0;
  d.cost = 0;
  d.emergency = false;
  d.changes.clear();
  if (p.action >= model_->actions.size()) {
    d.reasons.push_back(
        reason(ReasonCode::unknown_action, "", "no action with index " + std::to_string(p.action)));
    return;
  }
  const Action& a = model_->actions[p.action];
  d.action = p.action;
  d.emergency = a.emergency;
  if (p.params.size() != a.parameters.size()) {
    d.reasons.push_back(reason(ReasonCode::invalid_parameter,
                               a.id,
                               "action `" + a.id + "` takes " +
                                   std::to_string(a.parameters.size()) + " parameters, got " +
                                   std::to_string(p.params.size())));
    return;
  }
  for (std::size_t i = 0; i < p.params.size(); ++i) {
    Value v = p.params[i];
    if (auto bad = check_param(a.parameters[i], v)) {
      d.reasons.push_back(std::move(*bad));
      return;
    }
  }
  const EvalEnv pre{&state, {}, &state, p.params.data()};

  // Cost (a parameter-dependent cost is evaluated first: every budget check needs it).
  Amount cost = 0;
  if (!action_cost(*model_, a, pre, cost)) {
    d.reasons.push_back(reason(ReasonCode::overflow, a.id, "the cost of `" + a.id + "` overflows"));
    return;
  }
  d.cost = cost;

  // Check 0: minimum cost (T2's precondition); emergency actions are exempt (T8).
  if (!a.emergency && cost < model_->budget.min_action_cost) {
    d.reasons.push_back(reason(ReasonCode::below_min_cost,
                               a.id,
                               "cost " + model_->format_amount(cost) +
                                   " is below the minimum action cost " +
                                   model_->format_amount(model_->budget.min_action_cost)));
  }
  // Check 1: budget (T1).
  if (!budget.can_afford(cost)) {
    d.reasons.push_back(reason(ReasonCode::budget_exceeded,
                               a.id,
                               "cost " + model_->format_amount(cost) +
                                   " exceeds the remaining budget " +
                                   model_->format_amount(budget.remaining())));
  }
  // Check 2: step limit (T2); emergency actions are exempt (T8).
  if (!a.emergency && steps >= static_cast<std::uint64_t>(model_->budget.step_limit)) {
    d.reasons.push_back(
        reason(ReasonCode::step_limit,
               a.id,
               "the step limit " + std::to_string(model_->budget.step_limit) + " is reached"));
  }
  // Dependencies; emergency actions are exempt (T8).
  if (!a.emergency) {
    for (auto dep : a.dependencies) {
      if (completions[dep] == 0) {
        d.reasons.push_back(reason(ReasonCode::dependency_unmet,
                                   model_->actions[dep].id,
                                   "`" + a.id + "` depends on `" + model_->actions[dep].id +
                                       "`, which has not completed"));
      }
    }
  }
  // The guard, on the pre-action state.
  if (a.guard) {
    bool value = false;
    const EvalError err = evaluate_bool(*a.guard, pre, value);
    if (err != EvalError::none) {
      d.reasons.push_back(
          reason(ReasonCode::requires_failed,
                 a.id,
                 "`requires` of `" + a.id + "` could not be evaluated: " + eval_error_text(err)));
    } else if (!value) {
      d.reasons.push_back(reason(ReasonCode::requires_failed,
                                 a.id,
                                 "`requires` of `" + a.id + "` is false: " + to_source(*a.guard)));
    }
  }
  // Simulate: every effect reads the pre-action state; nothing is committed.
  // With `operands`, each effect's evaluated value is kept for the undo record, from this one
  // pass (execute does not evaluate the effects a second time).
  bool simulated = true;
  if (d.changes.capacity() < a.effects.size()) d.changes.reserve(a.effects.size());
  if (operands != nullptr) operands->clear();
  for (const Effect& e : a.effects) {
    Value out;
    Value* operand = nullptr;
    if (operands != nullptr) operand = &operands->emplace_back();
    if (auto bad = apply_effect(*model_, e, pre, out, operand)) {
      d.reasons.push_back(std::move(*bad));
      simulated = false;
      continue;
    }
    d.changes.emplace_back(e.variable, std::move(out));
  }
  if (simulated) {
    for (const auto& [id, v] : d.changes) {
      const Variable& var = model_->variables[id];
      if (v.kind() == Value::Kind::number) {
        if (var.min && v.as_number() < *var.min) {
          d.reasons.push_back(reason(ReasonCode::bound_violated,
                                     var.name,
                                     "`" + var.name + "` would be " + v.to_string() +
                                         ", below its minimum " + var.min->to_string()));
        } else if (var.max && v.as_number() > *var.max) {
          d.reasons.push_back(reason(ReasonCode::bound_violated,
                                     var.name,
                                     "`" + var.name + "` would be " + v.to_string() +
                                         ", above its maximum " + var.max->to_string()));
        }
      } else if (v.kind() == Value::Kind::list && var.max_length &&
                 static_cast<std::int64_t>(v.as_list().size()) > *var.max_length) {
        d.reasons.push_back(
            reason(ReasonCode::bound_violated,
                   var.name,
                   "`" + var.name + "` would have " + std::to_string(v.as_list().size()) +
                       " items, more than its maximum length " + std::to_string(*var.max_length)));
      }
    }
    // Invariants on the simulated post-state (T3). Expressions read the pre-state patched by
    // the changes, so no state is built unless a native predicate needs one.
    const EvalEnv post{&state, d.changes, &state, p.params.data()};
    std::optional<State> post_state;
    const std::size_t invariants = model_->invariants.size();
    for (std::size_t i = 0; i < invariants; ++i) {
      // With `flat` (a kernel's: one per invariant), a simple comparison is read from that
      // contiguous array: no pointer followed for an invariant that holds.
      if (flat != nullptr && flat[i].shape != detail::NumericProgram::Shape::general) {
        bool value = false;
        if (detail::evaluate_flat(flat[i], post, value) == EvalError::none && value) [[likely]]
          continue;
      }
      const Invariant& inv = model_->invariants[i];
      bool holds = false;
      bool raised = false;  // a native predicate threw: `invariant_error`
      EvalError err = EvalError::none;
      if (inv.expr) {
        // The common case first, with nothing to build: an expression that holds.
        bool value = false;
        err = evaluate_bool(*inv.expr, post, value);
        if (err == EvalError::none && value) [[likely]]
          continue;
      }
      std::string why;
      if (inv.expr) {
        if (err != EvalError::none) why = std::string(" (") + eval_error_text(err) + ")";
      } else {
        if (!post_state) post_state = state.with(d.changes);
        try {
          holds = inv.predicate(*post_state);
        } catch (const std::exception& e) {
          raised = true;
          why = std::string(" (the predicate threw: ") + e.what() + ")";
        } catch (...) {
          raised = true;
          why = " (the predicate threw)";
        }
      }
      if (holds) continue;
      std::string message = "invariant `" + inv.name + "` would be violated" + why;
      if (!inv.description.empty()) message += ": " + inv.description;
      if (!inv.suggestion.empty()) message += " (suggestion: " + inv.suggestion + ")";
      if (inv.enforcement == Enforcement::blocking) {
        d.reasons.push_back(
            reason(raised ? ReasonCode::invariant_error : ReasonCode::invariant_violated,
                   inv.name,
                   std::move(message)));
      } else {
        d.warnings.push_back(
            reason(raised ? ReasonCode::invariant_error : ReasonCode::monitoring_violated,
                   inv.name,
                   std::move(message)));
      }
    }
  }
  d.approved = d.reasons.empty();
  return;
}

}  // namespace

namespace {
std::vector<std::uint64_t> copy_completions(const std::atomic<std::uint64_t>* c, std::size_t n) {
  std::vector<std::uint64_t> out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = c[i].load(std::memory_order_relaxed);
  return out;
}
}  // namespace

void SafetyKernel::set_guard(decltype(KernelOptions::guard) guard) {
  std::lock_guard lock(mutex_);
  options_.guard = std::move(guard);
  ++guard_epoch_;  // a decision that consulted the old guard is decided afresh at commit
}

Decision SafetyKernel::evaluate_locked(const State& state,
                                       const Proposal& p,
                                       std::vector<Value>* operands) const {
  Decision d;
  decide_at(*model_,
            state,
            budget_,
            steps_,
            {nullptr, completions_.get()},
            p,
            d,
            operands,
            impl_->flat.data());
  if (options_.guard && d.approved && !d.emergency) {
    const Situation here{state,
                         budget_,
                         steps_,
                         emergency_steps_,
                         copy_completions(completions_.get(), model_->actions.size())};
    if (std::optional<Reason> veto = options_.guard(here, p, d)) {
      d.approved = false;
      d.reasons.push_back(std::move(*veto));
    }
  }
  return d;
}

Situation Situation::initial(const TaskModel& model) {
  return Situation{model.initial_state(),
                   BudgetController(model.budget.total),
                   0,
                   0,
                   std::vector<std::uint64_t>(model.actions.size(), 0)};
}

Decision decide(const TaskModel& model, const Situation& s, const Proposal& proposal) {
  Decision d;
  decide_into(model, s, proposal, d);
  return d;
}

void decide_into(const TaskModel& model,
                 const Situation& s,
                 const Proposal& proposal,
                 Decision& out) {
  if (s.completions.size() != model.actions.size())
    throw InvalidArgument("decide: the situation does not count the model's actions");
  decide_at(model, s.state, s.budget, s.steps, {s.completions.data(), nullptr}, proposal, out);
}

bool preview_into(
    const TaskModel& model, const State& state, const Proposal& p, Amount& cost, Changes& changes) {
  // `decide_at`'s computation of `d.cost` and `d.changes`, without its checks.
  if (p.action >= model.actions.size()) return false;
  const Action& a = model.actions[p.action];
  if (p.params.size() != a.parameters.size()) return false;
  const EvalEnv pre{&state, {}, &state, p.params.data()};
  if (!action_cost(model, a, pre, cost)) return false;
  changes.clear();
  for (const Effect& e : a.effects) {
    Value out;
    if (apply_effect(model, e, pre, out, nullptr)) return false;
    changes.emplace_back(e.variable, std::move(out));
  }
  return true;
}

void decide_into(const TaskModel& model,
                 const State& state,
                 const BudgetController& budget,
                 std::uint64_t steps,
                 const std::uint64_t* completions,
                 const Proposal& proposal,
                 Decision& out) {
  decide_at(model, state, budget, steps, {completions, nullptr}, proposal, out);
}

Situation advance(const TaskModel& model, const Situation& s, const Decision& d) {
  if (!d.approved) throw InvalidArgument("advance: the decision is a rejection");
  Situation next{s.state.with(d.changes), s.budget, s.steps, s.emergency_steps, s.completions};
  next.budget.charge(d.cost);
  if (model.actions.at(d.action).emergency) {
    ++next.emergency_steps;
  } else {
    ++next.steps;
  }
  ++next.completions.at(d.action);
  return next;
}

Situation SafetyKernel::situation() const {
  std::lock_guard lock(mutex_);
  return Situation{state_,
                   budget_,
                   steps_,
                   emergency_steps_,
                   copy_completions(completions_.get(), model_->actions.size())};
}

void SafetyKernel::append_locked(TraceEntry& entry,
                                 std::uint64_t steps,
                                 std::uint64_t emergency_steps,
                                 const BudgetController& budget,
                                 std::string* line) {
  Impl& k = *impl_;
  k.settle();              // the entry names the hash before it, and gets its own
  entry.hash.reserve(64);  // so that setting it below cannot throw
  entry.sequence = k.next_sequence();
  entry.prev = k.slots.empty() ? kZeroHash : std::string(k.head_hash());
  entry.step = steps;
  entry.emergency_steps = emergency_steps;
  entry.gross = model_->format_amount(budget.gross());
  entry.net = model_->format_amount(budget.net());
  entry.time_us = options_.clock();
  k.line.clear();
  const detail::LineLayout at = detail::append_canonical_without_hash(k.line, entry);
  store_line_locked(entry.kind, k.line, at.hash_at, at.prev_at, line);
  entry.hash.assign(k.head_hash());  // within the reserved capacity: cannot throw
}

void SafetyKernel::store_line_locked(EntryKind kind,
                                     std::string_view bytes,
                                     std::size_t hash_at,
                                     std::size_t prev_at,
                                     std::string* line) {
  Impl& k = *impl_;
  // May throw with nothing changed.
  if (line != nullptr) line->reserve(bytes.size() + detail::kHashMember);
  // INVARIANT (chain): the line's prev is the hash of the line before (written by the
  // hasher, in order). May throw with nothing changed.
  k.append(kind,
           bytes.substr(0, hash_at),
           bytes.substr(hash_at),
           hash_at,
           prev_at + detail::kHashMember);
  k.settle();
  copy_last_line_locked(line);
}

void SafetyKernel::copy_last_line_locked(std::string* line) noexcept {
  if (line == nullptr) return;
  Impl& k = *impl_;
  k.settle();
  k.copy_last_line(*line);  // within the reserved capacity: cannot throw
}

void SafetyKernel::write_line(std::uint64_t sequence, std::string line) {
  options_.writer->write(sequence, std::move(line));
}

namespace {
std::vector<std::pair<std::string, Value>> named(const TaskModel& m, ChangeSpan changes) {
  std::vector<std::pair<std::string, Value>> out;
  out.reserve(changes.size());
  for (const auto& [id, v] : changes) out.emplace_back(m.variables[id].name, v);
  return out;
}
}  // namespace

std::vector<std::pair<std::string, Value>> detail::named_params(const Action& a,
                                                                const std::vector<Value>& params) {
  std::vector<std::pair<std::string, Value>> out;
  for (std::size_t i = 0; i < params.size() && i < a.parameters.size(); ++i)
    out.emplace_back(a.parameters[i].name, params[i]);
  return out;
}

TraceEntry detail::rejected_entry(const TaskModel& m, const Proposal& proposal, const Decision& d) {
  TraceEntry entry;
  entry.kind = EntryKind::rejected;
  if (proposal.action < m.actions.size()) {
    const Action& a = m.actions[proposal.action];
    entry.action = a.id;
    entry.params = named_params(a, proposal.params);
  }
  entry.cost = m.format_amount(d.cost);
  entry.emergency = d.emergency;
  entry.reasons = d.reasons;
  entry.warnings = d.warnings;
  return entry;
}

// A recorded entry's parameters as a proposal names them (decimals are written as strings);
// nullopt names the one that is not a number in `bad`.
std::optional<ParamMap> detail::recorded_params(const TraceEntry& e, std::string& bad) {
  ParamMap params;
  for (const auto& [name, v] : e.params) {
    Value value = v;
    if (v.kind() == Value::Kind::string) {
      auto d = Decimal::parse(v.as_string());
      if (!d) {
        bad = name;
        return std::nullopt;
      }
      value = Value::number(*d);
    }
    params.emplace_back(name, std::move(value));
  }
  return params;
}

SafetyKernel::Snapshot SafetyKernel::snapshot_locked() const {
  return Snapshot{state_, budget_, steps_, impl_->next_sequence()};
}

Outcome SafetyKernel::execute(const Proposal& proposal) {
  // The effects' values from the decision, for the undo record (T7); one buffer per thread.
  thread_local std::vector<Value> operands;
  Snapshot at = [&] {
    std::lock_guard lock(mutex_);
    if (sealed_) throw InvalidArgument("the kernel is sealed: nothing can execute after the seal");
    return snapshot_locked();
  }();
  // Decided without the lock: counts newer than the snapshot move the head (below).
  Decision d;
  decide_at(*model_,
            at.state,
            at.budget,
            at.steps,
            {nullptr, completions_.get()},
            proposal,
            d,
            &operands,
            impl_->flat.data());
  if (!d.approved && !options_.record_rejections &&
      impl_->published.load(std::memory_order_seq_cst) == at.head) {
    // An untraced rejection changes nothing: it stands if it was made on one head (nothing
    // was appended while it was made, so every count it read was the snapshot's).
    return Outcome{std::move(d), std::nullopt, std::move(at.state)};
  }
  // If the head moved while deciding, decided again under the lock on the new head: every
  // commit moves the head, so a retry on a fresh snapshot would meet the same race (threads
  // sharing a kernel would waste decisions and lock round trips instead of committing).
  return commit_if_head_unchanged(at, proposal, std::move(d), operands);
}

Decided SafetyKernel::decide(const Proposal& proposal) const {
  std::lock_guard lock(mutex_);
  Decided out(this, proposal, state_);
  out.decision_ = evaluate_locked(state_, proposal, &out.operands_);
  out.head_ = impl_->next_sequence();
  out.guard_epoch_ = guard_epoch_;
  return out;
}

bool SafetyKernel::is_current(const Decided& decided) const {
  std::lock_guard lock(mutex_);
  return decided.kernel_ == this && decided.head_ == impl_->next_sequence() &&
         decided.guard_epoch_ == guard_epoch_;
}

Outcome SafetyKernel::execute(Decided decided) {
  if (decided.kernel_ != this) return execute(decided.proposal_);
  // The head the decision was made on (its budget and steps are not read by the commit).
  const Snapshot at{std::move(decided.state_), BudgetController(0), 0, decided.head_};
  return commit_if_head_unchanged(
      at, decided.proposal_, std::move(decided.decision_), decided.operands_, decided.guard_epoch_);
}

Outcome SafetyKernel::commit_if_head_unchanged(const Snapshot& at,
                                               const Proposal& proposal,
                                               Decision&& decision,
                                               std::vector<Value>& operands,
                                               std::optional<std::uint64_t> guarded) {
  std::string line;
  std::uint64_t sequence = 0;
  std::vector<std::pair<std::uint64_t, std::string>> attested;  // the commit gate's entries
  // The outcome's parts (an optional<Outcome> was zeroed whole, 288 bytes, on every call).
  std::optional<Receipt> receipt;
  std::optional<State> after;
  bool traced = false;
  bool wake = false;  // the background hasher may have to be woken (or started)
  // The next state, built on the snapshot before the lock (so that the critical section is
  // short): it stands if the head has not moved.
  std::optional<State> prepared;
  if (decision.approved) prepared = at.state.with(decision.changes);
  {
    std::lock_guard lock(mutex_);
    if (sealed_) throw InvalidArgument("the kernel is sealed: nothing can execute after the seal");
    Impl& k = *impl_;
    Decision& d = decision;
    if (k.next_sequence() != at.head) {  // the head moved: decided again on the current one
      decide_at(*model_,
                state_,
                budget_,
                steps_,
                {nullptr, completions_.get()},
                proposal,
                d,
                &operands,
                k.flat.data());
      prepared.reset();
      guarded.reset();
    }
    // A decision of `decide` consulted the guard on this head: unless the guard was replaced
    // since, its answer stands (the decision is not made twice).
    if (options_.guard && d.approved && !d.emergency && guarded != guard_epoch_) {
      const Situation here{state_,
                           budget_,
                           steps_,
                           emergency_steps_,
                           copy_completions(completions_.get(), model_->actions.size())};
      if (std::optional<Reason> veto = options_.guard(here, proposal, d)) {
        d.approved = false;
        d.reasons.push_back(std::move(*veto));
      }
    }
    if (options_.commit_gate && d.approved && !d.emergency) {
      const Situation here{state_,
                           budget_,
                           steps_,
                           emergency_steps_,
                           copy_completions(completions_.get(), model_->actions.size())};
      std::vector<AttestationRecord> records;
      std::optional<Reason> veto = options_.commit_gate(here, proposal, d, records);
      for (const AttestationRecord& r : records) {
        TraceEntry entry = attestation_entry(r);
        entry.cost = model_->format_amount(0);
        std::string text;
        append_locked(entry, steps_, emergency_steps_, budget_, options_.writer ? &text : nullptr);
        attested.emplace_back(entry.sequence, std::move(text));
      }
      if (veto) {
        d.approved = false;
        d.reasons.push_back(std::move(*veto));
      }
    }
    traced = d.approved || options_.record_rejections;
    if (!d.approved) {
      if (traced) {
        TraceEntry entry = detail::rejected_entry(*model_, proposal, d);
        append_locked(entry, steps_, emergency_steps_, budget_, options_.writer ? &line : nullptr);
        sequence = entry.sequence;
      }
      after = state_;
    } else {
      const Action& a = model_->actions[proposal.action];
      // Everything that can fail (allocation) happens before the first mutation (T5).
      State next = prepared ? std::move(*prepared) : state_.with(d.changes);
      BudgetController budget_after = budget_;
      budget_after.charge(d.cost);  // can_afford held on this head; throws InvalidArgument
      // only if gross spend (which refunds never lower) would pass int64: nothing changed yet
      sequence = k.next_sequence();
      // The entry as the commit fixes it, with the counters after it; the hasher renders its
      // canonical line (with its `prev`) and hashes it.
      std::string warnings;
      if (!d.warnings.empty()) {
        warnings.assign(",\"warnings\":");
        detail::append_reasons(warnings, d.warnings);
        warnings += '}';
      }
      const Impl::Executed entry{{proposal.action,
                                  a.emergency,
                                  d.cost,
                                  budget_after.gross(),
                                  budget_after.net(),
                                  emergency_steps_ + (a.emergency ? 1 : 0),
                                  steps_ + (a.emergency ? 0 : 1),
                                  options_.clock(),
                                  warnings},
                                 &d.changes,
                                 &proposal.params};
      const Amount cost = d.cost;
      // The undo record: the operands, the values before and after, the parameters.
      CLAMPAI_ALWAYS_ASSERT(operands.size() == a.effects.size() &&
                            d.changes.size() == a.effects.size());
      k.push_undo(sequence, proposal.action, a, cost, operands, state_, d.changes, proposal.params);
      try {
        k.publish_executed(entry, options_.writer ? &line : nullptr);
        copy_last_line_locked(options_.writer ? &line : nullptr);
      } catch (...) {
        k.pop_undo_back();
        throw;
      }

      // Commit: nothing below throws. INVARIANT (budget-safe), (step-bound), (state-valid),
      // (chain).
      budget_ = budget_after;
      if (a.emergency) {
        ++emergency_steps_;
      } else {
        ++steps_;
      }
      completions_[proposal.action].store(
          completions_[proposal.action].load(std::memory_order_relaxed) + 1,
          std::memory_order_release);  // after the entry: see CompletionsRef
      state_ = std::move(next);
      if (options_.undo_depth > 0 && k.undo.size() > options_.undo_depth) k.drop_undo_front();
      receipt = Receipt{sequence, proposal.action, cost};
      after = state_;
    }
    k.trim_some(options_.trace_window);
    wake = k.defer && k.lagging(Impl::kBatch);  // without reading `hashed` on most steps
  }
  if (options_.writer)
    for (auto& [seq, text] : attested) write_line(seq, std::move(text));
  if (!traced) return Outcome{std::move(decision), receipt, std::move(*after)};
  if (options_.writer) {
    write_line(sequence, std::move(line));
  } else if (impl_->defer) {
    if (wake) impl_->nudge();
  } else {
    impl_->help_hash();
  }
  return Outcome{std::move(decision), receipt, std::move(*after)};
}

Decision SafetyKernel::record_rejection(const Proposal& proposal) {
  std::string line;
  std::uint64_t sequence = 0;
  Decision d;
  {
    std::lock_guard lock(mutex_);
    d = evaluate_locked(state_, proposal);
    if (d.approved || !options_.record_rejections || sealed_) return d;
    TraceEntry entry = detail::rejected_entry(*model_, proposal, d);
    append_locked(entry, steps_, emergency_steps_, budget_, options_.writer ? &line : nullptr);
    sequence = entry.sequence;
    impl_->trim(options_.trace_window);
  }
  if (options_.writer) write_line(sequence, std::move(line));
  return d;
}

TraceEntry SafetyKernel::record_attested(TraceEntry entry) {
  if (entry.kind != EntryKind::attested)
    throw InvalidArgument("record_attested: a `" + std::string(to_string(entry.kind)) +
                          "` entry is not an attestation");
  if (auto bad = malformed_attestation(entry)) throw InvalidArgument("record_attested: " + *bad);
  if (!entry.action.empty() && !model_->find_action(entry.action))
    throw InvalidArgument("record_attested: unknown action `" + entry.action + "`");
  TraceEntry kept;
  kept.kind = EntryKind::attested;
  kept.action = std::move(entry.action);
  kept.params = std::move(entry.params);
  kept.cost = model_->format_amount(0);
  std::string line;
  {
    std::lock_guard lock(mutex_);
    if (sealed_)
      throw InvalidArgument("the kernel is sealed: nothing can be recorded after the seal");
    append_locked(kept, steps_, emergency_steps_, budget_, options_.writer ? &line : nullptr);
    impl_->trim(options_.trace_window);
  }
  if (options_.writer) write_line(kept.sequence, std::move(line));
  return kept;
}

Outcome SafetyKernel::execute(std::string_view action_id, const ParamMap& params) {
  auto resolved = resolve(action_id, params);
  if (auto* r = std::get_if<Reason>(&resolved)) {
    // Unknown actions and bad parameters are rejections like any other (T5: nothing changes).
    Decision d;
    d.reasons.push_back(std::move(*r));
    std::string line;
    std::uint64_t sequence = 0;
    {
      std::lock_guard lock(mutex_);
      if (sealed_)
        throw InvalidArgument("the kernel is sealed: nothing can execute after the seal");
      if (!options_.record_rejections) return Outcome{std::move(d), std::nullopt, state_};
      TraceEntry entry;
      entry.kind = EntryKind::rejected;
      entry.action = std::string(action_id);
      entry.params = params;
      entry.cost = model_->format_amount(0);
      entry.reasons = d.reasons;
      append_locked(entry, steps_, emergency_steps_, budget_, options_.writer ? &line : nullptr);
      sequence = entry.sequence;
      impl_->trim(options_.trace_window);
    }
    if (options_.writer) write_line(sequence, std::move(line));
    return Outcome{std::move(d), std::nullopt, state()};
  }
  return execute(std::get<Proposal>(resolved));
}

Outcome SafetyKernel::rollback(const Receipt& receipt) {
  std::string line;
  std::uint64_t sequence = 0;
  Decision undone;
  std::optional<State> after;
  {
    std::lock_guard lock(mutex_);
    if (sealed_)
      throw InvalidArgument("the kernel is sealed: nothing can be rolled back after the seal");
    Impl& k = *impl_;
    auto beyond_depth = [&] {
      return InvalidArgument("cannot roll back trace entry " + std::to_string(receipt.sequence) +
                             ": only the last " + std::to_string(options_.undo_depth) +
                             " committed actions can be rolled back (KernelOptions::undo_depth); "
                             "the undo records of older ones were dropped");
    };
    if (k.undo.empty()) {
      if (k.undo_dropped > 0) throw beyond_depth();
      throw InvalidArgument("nothing to roll back: no committed action is in effect");
    }
    const Undo& u = k.undo.back();
    if (k.undo_dropped > 0 && receipt.sequence < k.undo.front().sequence) throw beyond_depth();
    if (receipt.sequence != u.sequence) {
      throw InvalidArgument("cannot roll back trace entry " + std::to_string(receipt.sequence) +
                            ": the state is not the one it produced (the most recent action still "
                            "in effect is entry " +
                            std::to_string(u.sequence) + "; roll back in reverse order)");
    }
    const Action& a = model_->actions[u.action];
    if (!a.reversible)
      throw InvalidArgument("action `" + a.id +
                            "` is declared irreversible and cannot be rolled back");
    const std::size_t n = a.effects.size();
    const std::vector<Value> values = k.last_undo_values(3 * n + a.parameters.size());
    const Value* operands = values.data();
    const Value* old = operands + n;
    const Value* written = old + n;
    // The state is the one the action produced (the receipt is the latest action in effect):
    // every variable it wrote still holds what it wrote.
    const State current = state_;
    for (std::size_t i = 0; i < n; ++i)
      CLAMPAI_ALWAYS_ASSERT(current.get(a.effects[i].variable) == written[i]);

    // Mechanism 1: the algebraic inverse of each declared effect.
    Changes inverse;
    for (std::size_t i = 0; i < n; ++i) {
      const Effect& e = a.effects[i];
      const Value& now = current.get(e.variable);
      if (e.mode == EffectMode::increment || e.mode == EffectMode::decrement) {
        const auto r = e.mode == EffectMode::increment
                           ? checked_sub(now.as_number(), operands[i].as_number())
                           : checked_add(now.as_number(), operands[i].as_number());
        CLAMPAI_ALWAYS_ASSERT(r.has_value());
        Value v = Value::number(*r);
        CLAMPAI_ALWAYS_ASSERT(normalise(model_->variables[e.variable].type, v));
        inverse.emplace_back(e.variable, std::move(v));
      } else {
        // set, multiply, append, remove, delete: restore the old value (set(old)).
        inverse.emplace_back(e.variable, old[i]);
      }
    }
    State restored = current.with(inverse);
    // Mechanism 2: the pre-action state from the recorded values, and the inverse from its
    // difference with the current state.
    std::vector<std::pair<VarId, Value>> recorded;
    recorded.reserve(n);
    for (std::size_t i = 0; i < n; ++i) recorded.emplace_back(a.effects[i].variable, old[i]);
    const State before = current.with(recorded);
    std::vector<std::pair<VarId, Value>> by_diff;
    for (VarId id : before.diff(current)) by_diff.emplace_back(id, before.get(id));
    const State restored_by_diff = current.with(by_diff);
    // T7: both mechanisms give exactly the pre-action state.
    CLAMPAI_ALWAYS_ASSERT(restored == before);
    CLAMPAI_ALWAYS_ASSERT(restored_by_diff == before);

    TraceEntry entry;
    entry.kind = EntryKind::rolled_back;
    entry.action = a.id;
    entry.params = detail::named_params(
        a, {values.begin() + 3 * static_cast<std::ptrdiff_t>(n), values.end()});
    entry.changes = named(*model_, inverse);
    entry.cost = model_->format_amount(u.cost);
    entry.emergency = a.emergency;
    BudgetController budget_after = budget_;
    budget_after.refund(u.cost);  // exactly that action's cost, once: its undo record is consumed
    undone.approved = true;
    undone.action = u.action;
    undone.cost = u.cost;
    undone.emergency = a.emergency;
    undone.changes = std::move(inverse);
    // Stores the entry's line; may throw with nothing changed.
    append_locked(entry, steps_, emergency_steps_, budget_after, options_.writer ? &line : nullptr);
    sequence = entry.sequence;

    // Commit: nothing below throws.
    budget_ = budget_after;
    completions_[u.action].store(completions_[u.action].load(std::memory_order_relaxed) - 1,
                                 std::memory_order_release);  // after the entry
    state_ = before;
    k.pop_undo_back();
    k.trim(options_.trace_window);
    after = state_;
  }
  if (options_.writer) write_line(sequence, std::move(line));
  return Outcome{std::move(undone), std::nullopt, std::move(*after)};
}

namespace {
// Why a rollback in a replayed trace finds no action to undo: none left, or only actions
// older than the undo records kept (`dropped` of them were let go).
std::string rollback_past(std::uint64_t dropped, std::size_t depth) {
  if (dropped == 0) return "a rollback with nothing to roll back";
  return "a rollback of an action older than the last " + std::to_string(depth) +
         " committed actions, whose undo records are all that is kept (the undo depth)";
}

[[noreturn]] void resume_failed(std::size_t entry, const std::string& why) {
  throw InvalidArgument("cannot continue the trace: entry " + std::to_string(entry) + ": " + why);
}
}  // namespace

void SafetyKernel::resume(const std::function<bool(TraceEntry&)>& next) {
  TraceEntry genesis;
  if (!next(genesis)) resume_failed(0, "the trace to continue is empty");
  if (genesis.kind != EntryKind::genesis) resume_failed(0, "not a genesis entry");
  if (genesis.spec != model_->digest) resume_failed(0, "the trace was written for another spec");
  if (genesis.state != state_digest(state_))
    resume_failed(0, "the initial state differs from the spec's");
  if (genesis.prev != kZeroHash || genesis.sequence != 0 || genesis.compute_hash() != genesis.hash)
    resume_failed(0, "the genesis entry is not intact");
  // Replayed without the writer (the entries are in the file already) and without the guard
  // (its vetoes are kept as recorded), under the recorded timestamps: each entry must come out
  // byte for byte as it was written, so the chain continues from the recorded hashes.
  std::shared_ptr<TraceWriter> writer = std::move(options_.writer);
  auto guard = std::move(options_.guard);
  auto commit_gate = std::move(options_.commit_gate);
  auto clock = std::move(options_.clock);
  const bool record = options_.record_rejections;
  options_.writer = nullptr;
  options_.guard = nullptr;
  options_.commit_gate = nullptr;
  options_.record_rejections = false;
  std::int64_t now = genesis.time_us;
  options_.clock = [&now] { return now; };
  {
    std::lock_guard lock(mutex_);
    TraceEntry first = genesis;
    append_locked(first, 0, 0, budget_, nullptr);
    if (impl_->head_hash() != genesis.hash) resume_failed(0, "the genesis entry is not intact");
  }
  // The receipts of the actions that can still be rolled back (`undo_depth`: older ones can
  // not), most recent last.
  std::deque<Receipt> receipts;
  std::uint64_t dropped = 0;
  TraceEntry e;
  for (std::size_t i = 1; next(e); ++i) {
    now = e.time_us;
    std::string bad;
    // An attestation's params are not an action's: its own shape is checked below.
    const std::optional<ParamMap> params =
        e.kind == EntryKind::attested ? ParamMap{} : recorded_params(e, bad);
    if (!params) resume_failed(i, "parameter `" + bad + "` is not a number");
    switch (e.kind) {
      case EntryKind::genesis:
        resume_failed(i, "a second genesis entry");
      case EntryKind::sealed:
        resume_failed(i, "the trace is sealed: nothing may follow a seal (start a new trace)");
      case EntryKind::executed: {
        const Outcome o = execute(e.action, *params);
        if (!o.receipt) resume_failed(i, "`" + e.action + "` is rejected on replay");
        receipts.push_back(*o.receipt);
        if (options_.undo_depth > 0 && receipts.size() > options_.undo_depth) {
          receipts.pop_front();
          ++dropped;
        }
        break;
      }
      case EntryKind::attested:
        if (auto why = malformed_attestation(e)) resume_failed(i, *why);
        [[fallthrough]];
      case EntryKind::rejected: {
        // A rejection (an attestation) changes nothing but the trace: kept as recorded once it
        // links.
        std::lock_guard lock(mutex_);
        impl_->settle();
        if (e.sequence != impl_->next_sequence() || e.prev != impl_->head_hash() ||
            e.compute_hash() != e.hash)
          resume_failed(i, "does not link to the entry before");
        TraceEntry kept = e;
        append_locked(kept, steps_, emergency_steps_, budget_, nullptr);
        break;
      }
      case EntryKind::rolled_back:
        if (receipts.empty()) resume_failed(i, rollback_past(dropped, options_.undo_depth));
        try {
          (void)rollback(receipts.back());
        } catch (const InvalidArgument& err) {
          resume_failed(i, err.what());
        }
        receipts.pop_back();
        break;
    }
    bool same = false;
    {
      std::lock_guard lock(mutex_);
      impl_->settle();
      same = impl_->head_hash() == e.hash;
      impl_->trim(options_.trace_window);
    }
    if (!same) resume_failed(i, "does not replay to the recorded entry");
  }
  options_.writer = std::move(writer);
  options_.guard = std::move(guard);
  options_.commit_gate = std::move(commit_gate);
  options_.clock = std::move(clock);
  options_.record_rejections = record;
}

TraceEntry SafetyKernel::seal() {
  std::string line;
  TraceEntry sealed;
  {
    std::lock_guard lock(mutex_);
    if (sealed_) throw InvalidArgument("the trace is already sealed");
    TraceEntry entry;
    entry.kind = EntryKind::sealed;
    entry.cost = model_->format_amount(0);
    entry.state = state_digest(state_);
    append_locked(entry, steps_, emergency_steps_, budget_, options_.writer ? &line : nullptr);
    sealed_ = true;
    sealed = std::move(entry);
    impl_->trim(options_.trace_window);
  }
  if (options_.writer) {
    write_line(sealed.sequence, std::move(line));
    options_.writer->close();
  }
  return sealed;
}

State SafetyKernel::state() const {
  std::lock_guard lock(mutex_);
  return state_;
}

BudgetController SafetyKernel::budget() const {
  std::lock_guard lock(mutex_);
  return budget_;
}

std::uint64_t SafetyKernel::steps() const {
  std::lock_guard lock(mutex_);
  return steps_;
}

std::uint64_t SafetyKernel::emergency_steps() const {
  std::lock_guard lock(mutex_);
  return emergency_steps_;
}

std::uint64_t SafetyKernel::completions(std::size_t index) const {
  std::lock_guard lock(mutex_);
  if (index >= model_->actions.size())
    throw InvalidArgument("no action with index " + std::to_string(index));
  return completions_[index].load(std::memory_order_relaxed);
}

bool SafetyKernel::goal_reached() const { return model_->goal_holds(state()); }

bool SafetyKernel::is_sealed() const {
  std::lock_guard lock(mutex_);
  return sealed_;
}

std::vector<TraceEntry> SafetyKernel::trace() const {
  std::unique_ptr<Impl::View> view;
  {
    std::lock_guard lock(mutex_);
    view = impl_->view(options_.trace_window);
  }
  std::vector<TraceEntry> out;
  out.reserve(view->size());
  for (std::size_t from = 0; from < view->size(); from += Impl::View::kBatch) {
    view->render(*impl_, from, std::min(view->size(), from + Impl::View::kBatch));
    for (const auto& l : view->lines()) out.push_back(detail::entry_from_line(l.text, "the trace"));
  }
  return out;
}

std::uint64_t SafetyKernel::trace_length() const {
  std::lock_guard lock(mutex_);
  return impl_->next_sequence();
}

TraceCheck SafetyKernel::verify_trace() const {
  std::unique_ptr<Impl::View> view;
  {
    std::lock_guard lock(mutex_);
    view = impl_->view(options_.trace_window);
  }
  return view->verify(*impl_);
}

struct TraceReplay::Impl {
  Impl(std::shared_ptr<const TaskModel> m, std::size_t depth)
      : model(std::move(m)), kernel(model, options(depth)), undo_depth(depth) {}

  static KernelOptions options(std::size_t depth) {
    KernelOptions o;
    o.trace_window = 1;  // its own entries are not needed: only its state and counters
    o.undo_depth = depth;
    return o;
  }

  std::shared_ptr<const TaskModel> model;
  SafetyKernel kernel;
  std::size_t undo_depth;
  std::deque<Receipt> receipts;  // of the actions that can still be rolled back, latest last
  std::uint64_t dropped = 0;     // receipts let go with their undo records
  std::size_t entries = 0;
};

TraceReplay::TraceReplay(std::shared_ptr<const TaskModel> model, std::size_t undo_depth)
    : impl_(std::make_unique<Impl>(std::move(model), undo_depth)) {}

TraceReplay::~TraceReplay() = default;

std::size_t TraceReplay::entries() const { return impl_->entries; }

State TraceReplay::state() const { return impl_->kernel.state(); }

std::optional<std::string> TraceReplay::add(const TraceEntry& e) {
  const std::size_t i = impl_->entries++;
  const TaskModel& model = *impl_->model;
  SafetyKernel& kernel = impl_->kernel;
  if (i == 0) {
    if (e.kind != EntryKind::genesis) return "the trace does not start with a genesis entry";
    if (e.spec != model.digest) {
      return "the trace was written for another spec (digest " + e.spec.substr(0, 12) +
             "..., this spec is " + model.digest.substr(0, 12) + "...)";
    }
    if (e.state != state_digest(kernel.state())) return "the initial state differs from the spec's";
    return std::nullopt;
  }
  auto text = [](const std::vector<std::pair<std::string, Value>>& values) {
    std::vector<std::pair<std::string, Value>> sorted = values;
    std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
      return a.first < b.first;
    });
    std::string out;
    for (const auto& [k, v] : sorted) {
      out += k + "=";
      detail::append_value(out, v);
      out += ";";
    }
    return out;
  };
  std::string bad;
  const std::optional<ParamMap> recorded =
      e.kind == EntryKind::attested ? ParamMap{} : recorded_params(e, bad);
  if (!recorded) return "parameter `" + bad + "` is not a number";
  const ParamMap& params = *recorded;
  switch (e.kind) {
    case EntryKind::genesis:
      return "a second genesis entry";
    case EntryKind::executed: {
      Outcome o = kernel.execute(e.action, params);
      if (!o.decision.approved) return "`" + e.action + "` is rejected on replay";
      if (text(e.changes) != text(named(model, o.decision.changes)))
        return "`" + e.action + "` changes other values on replay";
      if (e.cost != model.format_amount(o.decision.cost))
        return "`" + e.action + "` costs " + model.format_amount(o.decision.cost) + " on replay";
      impl_->receipts.push_back(*o.receipt);
      if (impl_->undo_depth > 0 && impl_->receipts.size() > impl_->undo_depth) {
        impl_->receipts.pop_front();
        ++impl_->dropped;
      }
      break;
    }
    case EntryKind::rejected: {
      // A guard's veto (the lookahead) is not the model's verdict: a replaying kernel has no
      // guard, and a rejection changes nothing, so it is accepted as recorded.
      if (!e.reasons.empty() &&
          std::all_of(e.reasons.begin(), e.reasons.end(), [](const Reason& r) {
            return is_guard_reason(r.code);
          }))
        break;
      const Decision d = kernel.evaluate(e.action, params);
      if (d.approved)
        return "`" + e.action + "` was recorded as rejected but is approved on replay";
      break;
    }
    case EntryKind::rolled_back: {
      if (impl_->receipts.empty()) return rollback_past(impl_->dropped, impl_->undo_depth);
      try {
        Outcome o = kernel.rollback(impl_->receipts.back());
        if (text(e.changes) != text(named(model, o.decision.changes)))
          return std::string("the rollback restores other values on replay");
      } catch (const InvalidArgument& err) {
        return std::string(err.what());
      }
      impl_->receipts.pop_back();
      break;
    }
    case EntryKind::attested:
      // What an attestor saw is not the model's to decide; the entry changes nothing (the
      // counters below must not move).
      if (auto why = malformed_attestation(e)) return *why;
      if (!e.action.empty() && !model.find_action(e.action))
        return "an attestation of unknown action `" + e.action + "`";
      break;
    case EntryKind::sealed:
      if (e.state != state_digest(kernel.state()))
        return std::string("the final state differs from the sealed one");
      break;
  }
  if (e.step != kernel.steps() || e.emergency_steps != kernel.emergency_steps())
    return std::string("step counters differ on replay");
  const BudgetController b = kernel.budget();
  if (e.gross != model.format_amount(b.gross()) || e.net != model.format_amount(b.net()))
    return std::string("budget differs on replay");
  return std::nullopt;
}

std::optional<std::pair<std::size_t, std::string>> replay_trace(
    std::shared_ptr<const TaskModel> model,
    const std::vector<TraceEntry>& entries,
    State* final_state) {
  if (entries.empty())
    return std::pair<std::size_t, std::string>{0, "the trace does not start with a genesis entry"};
  TraceReplay replay(std::move(model), /*undo_depth=*/0);
  for (std::size_t i = 0; i < entries.size(); ++i)
    if (auto why = replay.add(entries[i])) return std::pair<std::size_t, std::string>{i, *why};
  if (final_state != nullptr) *final_state = replay.state();
  return std::nullopt;
}

}  // namespace clampai::kernel
