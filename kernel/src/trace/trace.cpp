// Trace entries: canonical serialization, hashing, chain verification, JSON Lines I/O.
#include "clampai/kernel/trace.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <exception>
#include <filesystem>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "clampai/kernel/digest.hpp"
#include "clampai/kernel/error.hpp"
#include "clampai/kernel/file.hpp"
#include "clampai/kernel/parallel.hpp"
#include "digest_pair.hpp"
#include "json.hpp"
#include "trace_codec.hpp"

#define CLAMPAI_INLINE inline __attribute__((always_inline))

namespace clampai::kernel {

unsigned detail::verification_threads() {
  return std::max(1U, std::min(8U, std::thread::hardware_concurrency()));
}

namespace {

using detail::verification_threads;

using detail::append_count;
using detail::append_json_string;
using detail::append_reasons;
using detail::append_value;
using detail::JsonNode;
using detail::kZeroHash;

constexpr std::string_view kKindNames[] = {"genesis",
                                           "executed",
                                           "rejected",
                                           "rolled_back",
                                           "sealed",
                                           "attested",
                                           "checkpoint",
                                           "approval_requested",
                                           "approval_granted",
                                           "approval_denied",
                                           "approval_expired",
                                           "spec_changed",
                                           "compensated"};
static_assert(std::size(kKindNames) == kEntryKinds, "every kind is named");

void append_named_values(std::string& out,
                         const std::vector<std::pair<std::string, Value>>& values) {
  auto by_name = [](const auto* a, const auto* b) { return a->first < b->first; };
  // Keys in order; small maps (the usual case) are sorted on the stack, by pointer.
  constexpr std::size_t kSmall = 16;
  const std::pair<std::string, Value>* small[kSmall];
  std::vector<const std::pair<std::string, Value>*> large;
  const std::pair<std::string, Value>** order = small;
  if (values.size() > kSmall) {
    large.resize(values.size());
    order = large.data();
  }
  for (std::size_t i = 0; i < values.size(); ++i) order[i] = &values[i];
  std::sort(order, order + values.size(), by_name);
  out += '{';
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out += ',';
    append_json_string(out, order[i]->first);
    out += ':';
    append_value(out, order[i]->second);
  }
  out += '}';
}

// The `pools` member: pool name -> {"gross", "net"}, names in order.
void append_pools(std::string& out, const std::vector<PoolLevel>& pools) {
  std::vector<const PoolLevel*> order;
  order.reserve(pools.size());
  for (const PoolLevel& p : pools) order.push_back(&p);
  std::sort(order.begin(), order.end(), [](const PoolLevel* a, const PoolLevel* b) {
    return a->name < b->name;
  });
  out += ",\"pools\":{";
  for (std::size_t i = 0; i < order.size(); ++i) {
    if (i > 0) out += ',';
    append_json_string(out, order[i]->name);
    out += ":{\"gross\":";
    append_json_string(out, order[i]->gross);
    out += ",\"net\":";
    append_json_string(out, order[i]->net);
    out += '}';
  }
  out += '}';
}

// The canonical JSON of an entry; keys in RFC 8785 order.
std::string serialize(const TraceEntry& e, bool with_hash) {
  std::string out;
  out.reserve(512);
  const detail::LineLayout at = detail::append_canonical_without_hash(out, e);
  if (with_hash) {
    std::string member = ",\"hash\":";
    append_json_string(member, e.hash);
    out.insert(at.hash_at, member);
  }
  return out;
}

// ---- reading ----

[[noreturn]] void bad(const std::string& message) { throw TraceError(message); }

const JsonNode& member(const JsonNode& obj, const char* key, JsonNode::Kind kind) {
  const JsonNode* n = obj.find(key);
  if (n == nullptr) bad(std::string("missing `") + key + "`");
  if (n->kind != kind) bad(std::string("`") + key + "` is " + detail::describe(*n));
  return *n;
}

std::uint64_t as_count(const JsonNode& n, const char* key) {
  if (!n.integral || n.text.empty() || n.text[0] == '-')
    bad(std::string("`") + key + "` is not a count");
  try {
    return std::stoull(n.text);
  } catch (const std::exception&) {
    bad(std::string("`") + key + "` is out of range");
  }
}

Value generic_value(const JsonNode& n) {
  switch (n.kind) {
    case JsonNode::Kind::null:
      return Value();
    case JsonNode::Kind::boolean:
      return Value::boolean(n.boolean);
    case JsonNode::Kind::number: {
      auto d = Decimal::parse(n.text);
      if (!d) bad("number `" + n.text + "` is out of range");
      return Value::number(*d);
    }
    case JsonNode::Kind::string:
      return Value::string(n.text);
    case JsonNode::Kind::array: {
      Value::List items;
      for (const auto& i : n.items) items.push_back(generic_value(i));
      return Value::list(std::move(items));
    }
    case JsonNode::Kind::object:
      bad("objects are not values");
  }
  return Value();
}

std::vector<std::pair<std::string, Value>> named_values(const JsonNode& obj, const char* key) {
  std::vector<std::pair<std::string, Value>> out;
  for (const auto& [k, v] : member(obj, key, JsonNode::Kind::object).members)
    out.emplace_back(k, generic_value(v));
  return out;
}

std::vector<Reason> reasons(const JsonNode& obj, const char* key) {
  std::vector<Reason> out;
  for (const auto& r : member(obj, key, JsonNode::Kind::array).items) {
    if (r.kind != JsonNode::Kind::object)
      bad(std::string("`") + key + "` holds " + detail::describe(r));
    Reason reason;
    const std::string& code = member(r, "code", JsonNode::Kind::string).text;
    bool known = false;
    for (int c = 0; c <= static_cast<int>(kLastReasonCode); ++c) {
      if (to_string(static_cast<ReasonCode>(c)) == code) {
        reason.code = static_cast<ReasonCode>(c);
        known = true;
      }
    }
    if (!known) bad("unknown reason code `" + code + "`");
    reason.message = member(r, "message", JsonNode::Kind::string).text;
    reason.subject = member(r, "subject", JsonNode::Kind::string).text;
    out.push_back(std::move(reason));
  }
  return out;
}

TraceEntry entry_from_json(const JsonNode& j) {
  if (j.kind != JsonNode::Kind::object) bad("an entry must be a JSON object");
  TraceEntry e;
  e.action = member(j, "action", JsonNode::Kind::string).text;
  e.changes = named_values(j, "changes");
  e.cost = member(j, "cost", JsonNode::Kind::string).text;
  e.emergency = member(j, "emergency", JsonNode::Kind::boolean).boolean;
  e.emergency_steps =
      as_count(member(j, "emergency_steps", JsonNode::Kind::number), "emergency_steps");
  e.gross = member(j, "gross", JsonNode::Kind::string).text;
  e.hash = member(j, "hash", JsonNode::Kind::string).text;
  const std::string& kind = member(j, "kind", JsonNode::Kind::string).text;
  const auto k = std::find(std::begin(kKindNames), std::end(kKindNames), kind);
  if (k == std::end(kKindNames)) bad("unknown entry kind `" + kind + "`");
  e.kind = static_cast<EntryKind>(k - std::begin(kKindNames));
  e.net = member(j, "net", JsonNode::Kind::string).text;
  e.params = named_values(j, "params");
  e.prev = member(j, "prev", JsonNode::Kind::string).text;
  e.reasons = reasons(j, "reasons");
  e.sequence = as_count(member(j, "seq", JsonNode::Kind::number), "seq");
  e.spec = member(j, "spec", JsonNode::Kind::string).text;
  e.state = member(j, "state", JsonNode::Kind::string).text;
  e.step = as_count(member(j, "step", JsonNode::Kind::number), "step");
  const JsonNode& time = member(j, "time", JsonNode::Kind::number);
  if (!time.integral) bad("`time` is not an integer");
  try {
    e.time_us = std::stoll(time.text);
  } catch (const std::exception&) {
    bad("`time` is out of range");
  }
  e.warnings = reasons(j, "warnings");
  // The optional members: present only when they say something, so that each entry has one
  // canonical line.
  std::size_t optional = 0;
  auto text = [&](const char* key, std::string& out) {
    if (j.find(key) == nullptr) return;
    ++optional;
    out = member(j, key, JsonNode::Kind::string).text;
    if (out.empty()) bad(std::string("`") + key + "` is empty (an empty one is left out)");
  };
  text("principal", e.principal);
  text("ticket", e.ticket);
  text("signature", e.signature);
  if (j.find("enforced") != nullptr) {
    ++optional;
    if (member(j, "enforced", JsonNode::Kind::boolean).boolean)
      bad("`enforced` is true (only `false` is written; an enforced entry leaves it out)");
    e.enforced = false;
  }
  if (j.find("pools") != nullptr) {
    ++optional;
    const JsonNode& pools = member(j, "pools", JsonNode::Kind::object);
    if (pools.members.empty()) bad("`pools` is empty (an entry that charges none leaves it out)");
    for (const auto& [name, level] : pools.members) {
      if (level.kind != JsonNode::Kind::object || level.members.size() != 2)
        bad("pool `" + name + "` must be an object with exactly `gross` and `net`");
      e.pools.push_back({name,
                         member(level, "gross", JsonNode::Kind::string).text,
                         member(level, "net", JsonNode::Kind::string).text});
    }
  }
  if (j.members.size() != 18 + optional)
    bad("unexpected members (an entry has exactly 18, and the optional `enforced`, `pools`, "
        "`principal`, `signature` and `ticket`)");
  return e;
}

// ---- reading a canonical line directly ----

// What the chain checks need of an entry, viewed in its line (or in a parsed entry).
struct ChainLink {
  std::uint64_t sequence = 0;
  EntryKind kind = EntryKind::executed;
  std::string_view prev;
  std::string_view hash;
};

// The first byte in [p, end) that a JSON string cannot hold as it is in a canonical line: a
// quote, a backslash, a control character or a byte >= 0x80 (outside plain ASCII); `end` if
// none. Sixteen bytes at a time where SSE2 is there.
inline const char* find_special(const char* p, const char* end) {
#if defined(__SSE2__)
  const __m128i quote = _mm_set1_epi8('"');
  const __m128i backslash = _mm_set1_epi8('\\');
  const __m128i space = _mm_set1_epi8(0x20);
  while (end - p >= 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    // Signed: bytes >= 0x80 are negative, so below 0x20 too.
    const __m128i hit =
        _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)),
                     _mm_cmplt_epi8(v, space));
    if (const int mask = _mm_movemask_epi8(hit))
      return p + __builtin_ctz(static_cast<unsigned>(mask));
    p += 16;
  }
#endif
  for (; p < end; ++p) {
    const auto c = static_cast<unsigned char>(*p);
    if (c == '"' || c == '\\' || c < 0x20 || c >= 0x80) return p;
  }
  return end;
}

// `n` bytes at `a` and `b` equal (n known at compile time: a few word compares).
template <std::size_t N>
CLAMPAI_INLINE bool same_bytes(const char* a, const char* b) {
  if constexpr (N >= 8) {
    std::size_t i = 0;
    for (; i + 8 <= N; i += 8) {
      std::uint64_t x = 0;
      std::uint64_t y = 0;
      std::memcpy(&x, a + i, 8);
      std::memcpy(&y, b + i, 8);
      if (x != y) return false;
    }
    if constexpr (N % 8 != 0) {
      std::uint64_t x = 0;
      std::uint64_t y = 0;
      std::memcpy(&x, a + N - 8, 8);
      std::memcpy(&y, b + N - 8, 8);
      return x == y;
    }
    return true;
  } else {
    bool equal = true;
    for (std::size_t i = 0; i < N; ++i) equal &= a[i] == b[i];
    return equal;
  }
}

// Where the quotes of a trace file's line are, found in one pass that also finds the line's
// end. In a line that holds no other byte `find_special` stops at (no backslash, no control
// character, nothing outside ASCII: "plain"), the first such byte from any position is the
// next quote, which the map gives without scanning the string again.
class QuoteMap {
 public:
  static constexpr std::size_t kMaxLine = 4096;  // longer lines are scanned string by string
  // How far ahead of the scan the bytes are fetched: lines not yet in the cache arrive from
  // memory while the lines before them are hashed.
  static constexpr std::size_t kPrefetch = 2048;

  // Scans the line at `p`, which ends at the first '\n' before `end` (or at `end`); returns
  // where it ends.
  const char* scan(const char* p, const char* end) {
    line_ = p;
    plain_ = true;
    const auto avail = static_cast<std::size_t>(end - p);
    std::size_t at = 0;
#if defined(__SSE2__)
    const __m128i quote = _mm_set1_epi8('"');
    const __m128i backslash = _mm_set1_epi8('\\');
    const __m128i space = _mm_set1_epi8(0x20);
    // 64 bytes (one word of the map) at a time, then 16.
    while (avail - at >= 64) {
      __builtin_prefetch(p + at + kPrefetch);
      std::uint64_t quotes = 0;
      std::uint64_t special = 0;
      for (int k = 0; k < 4; ++k) {
        const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + at + 16 * k));
        quotes |= static_cast<std::uint64_t>(
                      static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, quote))))
                  << (16 * k);
        special |= static_cast<std::uint64_t>(static_cast<unsigned>(_mm_movemask_epi8(
                       _mm_or_si128(_mm_cmpeq_epi8(v, backslash), _mm_cmplt_epi8(v, space)))))
                   << (16 * k);
      }
      if (at < kMaxLine) bits_[at >> 6] = quotes;
      if (special != 0) return stop(at + static_cast<std::size_t>(__builtin_ctzll(special)), avail);
      at += 64;
    }
    while (avail - at >= 16) {
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + at));
      const auto quotes = static_cast<std::uint64_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, quote)));
      // Signed: bytes >= 0x80 are negative, so below 0x20 too; '\n' is among these.
      const int special =
          _mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(v, backslash), _mm_cmplt_epi8(v, space)));
      if (at < kMaxLine) {
        if ((at & 63) == 0) bits_[at >> 6] = 0;
        bits_[at >> 6] |= quotes << (at & 63);
      }
      if (special != 0)
        return stop(at + static_cast<std::size_t>(__builtin_ctz(static_cast<unsigned>(special))),
                    avail);
      at += 16;
    }
#endif
    for (; at < avail; ++at) {
      if (at < kMaxLine && (at & 63) == 0) bits_[at >> 6] = 0;
      const auto c = static_cast<unsigned char>(p[at]);
      if (c == '"') {
        if (at < kMaxLine) bits_[at >> 6] |= std::uint64_t{1} << (at & 63);
      } else if (c == '\\' || c < 0x20 || c >= 0x80) {
        return stop(at, avail);
      }
    }
    n_ = avail;
    plain_ = n_ <= kMaxLine;
    return line_ + n_;
  }

  // Whether the line scanned last is plain (and short enough for the map).
  [[nodiscard]] bool plain() const { return plain_; }

  // For a plain line: `find_special(p, end)` with `end` the line's end, from the map.
  CLAMPAI_INLINE const char* next(const char* p, const char* end) const {
    const auto i = static_cast<std::size_t>(p - line_);
    if (i >= n_) return end;
    std::size_t w = i >> 6;
    std::uint64_t x = bits_[w] & (~std::uint64_t{0} << (i & 63));
    const std::size_t words = (n_ + 63) >> 6;
    while (x == 0) {
      if (++w >= words) return end;
      x = bits_[w];
    }
    const std::size_t j = (w << 6) + static_cast<std::size_t>(__builtin_ctzll(x));
    return j < n_ ? line_ + j : end;
  }

 private:
  // The first byte other than a quote that a plain line cannot hold is at `at`: the line ends
  // there if it is the newline (and is plain), else at the next newline (and is not).
  const char* stop(std::size_t at, std::size_t avail) {
    if (line_[at] == '\n') {
      n_ = at;
      plain_ = n_ <= kMaxLine;
    } else {
      const void* nl = std::memchr(line_ + at, '\n', avail - at);
      n_ = nl != nullptr ? static_cast<std::size_t>(static_cast<const char*>(nl) - line_) : avail;
      plain_ = false;
    }
    return line_ + n_;
  }

  const char* line_ = nullptr;
  std::size_t n_ = 0;  // the line's length, without its newline
  bool plain_ = false;
  std::uint64_t bits_[kMaxLine / 64];  // bit i: byte i is a quote (words up to the line's end)
};

// Reads a line that is already in canonical form, without a JSON tree. Accepts exactly lines
// that are byte for byte the canonical form of the entry they yield (keys in order, no
// whitespace, minimal escapes, integers JSON keeps exact), and only within plain ASCII; anything
// else (a changed line, an unusual but canonical one) returns false and is read by the general
// path, which also names what is wrong. With a null entry it only checks, building nothing.
class CanonicalReader {
 public:
  explicit CanonicalReader(std::string_view line) : s_(line) {}
  // The same for a line whose quotes `quotes` mapped, if it is plain (else as above).
  CanonicalReader(std::string_view line, const QuoteMap& quotes)
      : s_(line), quotes_(quotes.plain() ? &quotes : nullptr) {}

  // `link` views `prev` and `hash` in the line; `hash_from`/`hash_to` delimit the
  // `,"hash":"..."` member. `e`, if not null, gets every field.
  bool entry(TraceEntry* e, ChainLink& link, std::size_t& hash_from, std::size_t& hash_to) {
    std::string* no = nullptr;
    auto field = [&](std::string TraceEntry::*m) { return e != nullptr ? &(e->*m) : no; };
    if (!lit("{\"action\":") || !str(field(&TraceEntry::action)) || !lit(",\"changes\":") ||
        !named(e != nullptr ? &e->changes : nullptr) || !lit(",\"cost\":") ||
        !str(field(&TraceEntry::cost)) || !lit(",\"emergency\":"))
      return false;
    bool emergency = false;
    if (lit("true")) {
      emergency = true;
    } else if (!lit("false")) {
      return false;
    }
    std::uint64_t emergency_steps = 0;
    if (!lit(",\"emergency_steps\":") || !count(emergency_steps) || !lit(",\"gross\":") ||
        !str(field(&TraceEntry::gross)))
      return false;
    hash_from = at_;
    std::string_view kind;
    if (!lit(",\"hash\":") || !plain(link.hash)) return false;
    hash_to = at_;
    if (!lit(",\"kind\":") || !plain(kind)) return false;
    const auto k = std::find(std::begin(kKindNames), std::end(kKindNames), kind);
    if (k == std::end(kKindNames)) return false;
    link.kind = static_cast<EntryKind>(k - std::begin(kKindNames));
    std::uint64_t step = 0;
    std::int64_t time = 0;
    if (!lit(",\"net\":") || !str(field(&TraceEntry::net)) || !lit(",\"params\":") ||
        !named(e != nullptr ? &e->params : nullptr) || !lit(",\"prev\":") || !plain(link.prev) ||
        !lit(",\"reasons\":") || !reasons(e != nullptr ? &e->reasons : nullptr) ||
        !lit(",\"seq\":") || !count(link.sequence) || !lit(",\"spec\":") ||
        !str(field(&TraceEntry::spec)) || !lit(",\"state\":") || !str(field(&TraceEntry::state)) ||
        !lit(",\"step\":") || !count(step) || !lit(",\"time\":") || !integer(time) ||
        !lit(",\"warnings\":") || !reasons(e != nullptr ? &e->warnings : nullptr) || !lit("}") ||
        at_ != s_.size())
      return false;
    if (e != nullptr) {
      e->emergency = emergency;
      e->emergency_steps = emergency_steps;
      e->hash.assign(link.hash);
      e->kind = link.kind;
      e->prev.assign(link.prev);
      e->sequence = link.sequence;
      e->step = step;
      e->time_us = time;
      // A line read here has none of the optional members: none is kept from an entry read
      // into `e` before (a reader reuses its entry).
      e->principal.clear();
      e->enforced = true;
      e->pools.clear();
      e->ticket.clear();
      e->signature.clear();
    }
    return true;
  }

 private:
  template <std::size_t N>
  bool lit(const char (&t)[N]) {
    if (s_.size() - at_ < N - 1 || !same_bytes<N - 1>(s_.data() + at_, t)) return false;
    at_ += N - 1;
    return true;
  }
  // A string without escapes, viewed in the line.
  bool plain(std::string_view& out) {
    if (at_ >= s_.size() || s_[at_] != '"') return false;
    const std::size_t from = at_ + 1;
    const char* end = special(s_.data() + from);
    if (end == s_.data() + s_.size() || *end != '"') return false;
    const auto n = static_cast<std::size_t>(end - s_.data()) - from;
    out = s_.substr(from, n);
    at_ = from + n + 1;
    return true;
  }
  // A string as append_json_string writes it; `out` (if not null) gets its text.
  bool str(std::string* out) {
    if (at_ >= s_.size() || s_[at_] != '"') return false;
    ++at_;
    if (out != nullptr) out->clear();
    std::size_t run = at_;
    while (at_ < s_.size()) {
      at_ = static_cast<std::size_t>(special(s_.data() + at_) - s_.data());
      if (at_ == s_.size()) return false;
      const auto c = static_cast<unsigned char>(s_[at_]);
      if (c == '"') {
        if (out != nullptr) out->append(s_.data() + run, at_ - run);
        ++at_;
        return true;
      }
      if (c != '\\') return false;  // a control character or a byte outside ASCII
      if (out != nullptr) out->append(s_.data() + run, at_ - run);
      if (at_ + 1 >= s_.size()) return false;
      const char x = s_[at_ + 1];
      at_ += 2;
      char ch = 0;
      switch (x) {
        case '"':
          ch = '"';
          break;
        case '\\':
          ch = '\\';
          break;
        case 'b':
          ch = '\b';
          break;
        case 'f':
          ch = '\f';
          break;
        case 'n':
          ch = '\n';
          break;
        case 'r':
          ch = '\r';
          break;
        case 't':
          ch = '\t';
          break;
        case 'u': {
          // Only the control characters without a short escape, in lowercase hex.
          static constexpr std::string_view kHex = "0123456789abcdef";
          if (s_.size() - at_ < 4 || s_[at_] != '0' || s_[at_ + 1] != '0') return false;
          const auto hi = kHex.find(s_[at_ + 2]);
          const auto lo = kHex.find(s_[at_ + 3]);
          if (hi > 1 || lo == std::string_view::npos) return false;
          ch = static_cast<char>(hi * 16 + lo);
          if (ch == '\b' || ch == '\f' || ch == '\n' || ch == '\r' || ch == '\t') return false;
          at_ += 4;
          break;
        }
        default:
          return false;
      }
      if (out != nullptr) *out += ch;
      run = at_;
    }
    return false;
  }
  // Digits as to_chars writes them: no sign, no leading zero.
  // Digits as to_chars writes them (no sign, no leading zero), their value at most `max`
  // (else false).
  bool magnitude(std::uint64_t max, std::uint64_t& v) {
    const char* const from = s_.data() + at_;
    const char* const end = s_.data() + s_.size();
    const char* p = from;
    std::uint64_t acc = 0;  // wraps only past 19 digits, checked below
    while (p < end && static_cast<unsigned char>(*p - '0') < 10) {
      acc = acc * 10 + static_cast<std::uint64_t>(*p - '0');
      ++p;
    }
    const auto n = static_cast<std::size_t>(p - from);
    constexpr std::string_view kMaxDigits = "18446744073709551615";  // 2^64 - 1
    if (n == 0 || (n > 1 && *from == '0') || n > kMaxDigits.size() ||
        (n == kMaxDigits.size() && std::string_view(from, n) > kMaxDigits) || acc > max)
      return false;
    at_ += n;
    v = acc;
    return true;
  }
  bool count(std::uint64_t& v) { return magnitude(std::numeric_limits<std::uint64_t>::max(), v); }
  bool integer(std::int64_t& v) {
    const bool negative = at_ < s_.size() && s_[at_] == '-';
    if (negative) ++at_;
    constexpr auto kMax = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
    std::uint64_t m = 0;
    if (!magnitude(negative ? kMax + 1 : kMax, m) || (negative && m == 0)) return false;
    v = negative ? static_cast<std::int64_t>(~m + 1) : static_cast<std::int64_t>(m);
    return true;
  }
  // A value as append_value writes it (numbers: integers JSON keeps exact); `v` (if not null)
  // gets it.
  bool value(Value* v, int depth = 0) {
    if (at_ >= s_.size() || depth > 32) return false;
    const char c = s_[at_];
    if (c == 'n') {
      if (v != nullptr) *v = Value();
      return lit("null");
    }
    if (c == 't' || c == 'f') {
      if (v != nullptr) *v = Value::boolean(c == 't');
      return c == 't' ? lit("true") : lit("false");
    }
    if (c == '"') {
      if (v == nullptr) return str(nullptr);
      std::string text;
      if (!str(&text)) return false;
      *v = Value::string(std::move(text));
      return true;
    }
    if (c == '[') {
      ++at_;
      Value::List items;
      if (!lit("]")) {
        do {
          if (!value(v != nullptr ? &items.emplace_back() : nullptr, depth + 1)) return false;
        } while (lit(","));
        if (!lit("]")) return false;
      }
      if (v != nullptr) *v = Value::list(std::move(items));
      return true;
    }
    constexpr std::int64_t kExact = std::int64_t{1} << 53;
    std::int64_t i = 0;
    if (!integer(i) || i <= -kExact || i >= kExact) return false;
    if (v != nullptr) *v = Value::integer(i);
    return true;
  }
  // An object of values, keys (without escapes) in increasing order.
  bool named(std::vector<std::pair<std::string, Value>>* out) {
    if (out != nullptr) out->clear();
    if (!lit("{")) return false;
    if (lit("}")) return true;
    std::string_view last;
    bool first = true;
    do {
      std::string_view key;
      if (!plain(key) || (!first && !(last < key)) || !lit(":")) return false;
      first = false;
      last = key;
      if (out != nullptr) {
        auto& [name, v] = out->emplace_back();
        name.assign(key);
        if (!value(&v)) return false;
      } else if (!value(nullptr)) {
        return false;
      }
    } while (lit(","));
    return lit("}");
  }
  bool reasons(std::vector<Reason>* out) {
    if (out != nullptr) out->clear();
    if (!lit("[")) return false;
    if (lit("]")) return true;
    do {
      Reason scratch;
      Reason& r = out != nullptr ? out->emplace_back() : scratch;
      std::string_view code;
      if (!lit("{\"code\":") || !plain(code) || !lit(",\"message\":") ||
          !str(out != nullptr ? &r.message : nullptr) || !lit(",\"subject\":") ||
          !str(out != nullptr ? &r.subject : nullptr) || !lit("}"))
        return false;
      bool known = false;
      for (int c = 0; c <= static_cast<int>(kLastReasonCode) && !known; ++c) {
        if (to_string(static_cast<ReasonCode>(c)) == code) {
          r.code = static_cast<ReasonCode>(c);
          known = true;
        }
      }
      if (!known) return false;
    } while (lit(","));
    return lit("]");
  }

  // The first byte from `p` on that a string cannot hold as it is, or the line's end.
  const char* special(const char* p) const {
    const char* const end = s_.data() + s_.size();
    return quotes_ != nullptr ? quotes_->next(p, end) : find_special(p, end);
  }

  std::string_view s_;
  const QuoteMap* quotes_ = nullptr;
  std::size_t at_ = 0;
};

// The entry kind named `name`, if it is one (kKindNames, compared by length first).
// The kinds added with the optional members (checkpoint, approvals, spec changes) and
// compensations are rare: their lines take the general path.
CLAMPAI_INLINE bool kind_named(std::string_view name, EntryKind& kind) {
  static_assert(std::size(kKindNames) == 13, "the kinds read here are the first six");
  EntryKind k{};
  switch (name.size()) {
    case 6:
      k = EntryKind::sealed;
      break;
    case 7:
      k = EntryKind::genesis;
      break;
    case 8:
      k = name[0] == 'e'   ? EntryKind::executed
          : name[0] == 'r' ? EntryKind::rejected
                           : EntryKind::attested;
      break;
    case 11:
      k = EntryKind::rolled_back;
      break;
    default:
      return false;
  }
  const std::string_view want = kKindNames[static_cast<int>(k)];
  if (std::memcmp(name.data(), want.data(), want.size()) != 0) return false;
  kind = k;
  return true;
}

// How many decimal digits start at `p` (before `end`); sixteen bytes at a time where SSE2 is
// there and the line has them.
CLAMPAI_INLINE std::size_t digits_at(const char* p, const char* end) {
  std::size_t n = 0;
#if defined(__SSE2__)
  while (end - p - static_cast<std::ptrdiff_t>(n) >= 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + n));
    const __m128i digit = _mm_and_si128(_mm_cmpeq_epi8(_mm_max_epu8(v, _mm_set1_epi8('0')), v),
                                        _mm_cmpeq_epi8(_mm_min_epu8(v, _mm_set1_epi8('9')), v));
    const auto other = static_cast<unsigned>(~_mm_movemask_epi8(digit)) & 0xFFFFU;
    if (other != 0) return n + static_cast<std::size_t>(__builtin_ctz(other));
    n += 16;
  }
#endif
  while (p + n < end && static_cast<unsigned char>(p[n] - '0') < 10) ++n;
  return n;
}

// The check of CanonicalReader::entry without an entry, for a plain line (QuoteMap::plain) of
// the usual shape, in one pass without calls: it accepts only lines the reader accepts, with the
// same link and hash member, and leaves the rest to the reader (returns false): values other
// than null, booleans, strings and integers of at most 15 digits (lists); non-empty reasons or
// warnings; counts of 20 digits and more, times of 19. In a plain line the first special byte
// after a string's opening quote is its closing quote, so a string is what lies between two
// quotes.
class PlainLine {
 public:
  PlainLine(std::string_view line, const QuoteMap& quotes)
      : p_(line.data()), begin_(line.data()), end_(line.data() + line.size()), quotes_(quotes) {}

  bool check(ChainLink& link, std::size_t& hash_from, std::size_t& hash_to) {
    std::string_view text;
    if (!lit("{\"action\":") || !string(text) || !lit(",\"changes\":") || !named() ||
        !lit(",\"cost\":") || !string(text) || !lit(",\"emergency\":"))
      return false;
    if (!lit("true") && !lit("false")) return false;
    if (!lit(",\"emergency_steps\":") || !count() || !lit(",\"gross\":") || !string(text))
      return false;
    hash_from = static_cast<std::size_t>(p_ - begin_);
    if (!lit(",\"hash\":") || !string(link.hash)) return false;
    hash_to = static_cast<std::size_t>(p_ - begin_);
    if (!lit(",\"kind\":") || !string(text) || !kind_named(text, link.kind)) return false;
    if (!lit(",\"net\":") || !string(text) || !lit(",\"params\":") || !named() ||
        !lit(",\"prev\":") || !string(link.prev) || !lit(",\"reasons\":[]") || !lit(",\"seq\":"))
      return false;
    const char* const seq = p_;
    if (!count()) return false;
    link.sequence = 0;
    for (const char* d = seq; d < p_; ++d)
      link.sequence = link.sequence * 10 + static_cast<std::uint64_t>(*d - '0');
    return lit(",\"spec\":") && string(text) && lit(",\"state\":") && string(text) &&
           lit(",\"step\":") && count() && lit(",\"time\":") && integer(18) &&
           lit(",\"warnings\":[]}") && p_ == end_;
  }

 private:
  template <std::size_t N>
  CLAMPAI_INLINE bool lit(const char (&t)[N]) {
    if (end_ - p_ < static_cast<std::ptrdiff_t>(N - 1) || !same_bytes<N - 1>(p_, t)) return false;
    p_ += N - 1;
    return true;
  }
  // CanonicalReader::plain and ::str (which in a plain line take the same strings).
  CLAMPAI_INLINE bool string(std::string_view& out) {
    if (p_ == end_ || *p_ != '"') return false;
    const char* close = quotes_.next(p_ + 1, end_);
    if (close == end_) return false;
    out = std::string_view(p_ + 1, static_cast<std::size_t>(close - p_ - 1));
    p_ = close + 1;
    return true;
  }
  // At most `max_digits` digits (no leading zero): within every bound the reader checks.
  CLAMPAI_INLINE bool digits(std::size_t max_digits) {
    const std::size_t n = digits_at(p_, end_);
    if (n == 0 || n > max_digits || (n > 1 && *p_ == '0')) return false;
    p_ += n;
    return true;
  }
  CLAMPAI_INLINE bool count() { return digits(19); }  // below 2^64
  // An integer: at most `max_digits` digits, with a sign if negative; "-0" is not canonical.
  CLAMPAI_INLINE bool integer(std::size_t max_digits) {
    const bool negative = p_ != end_ && *p_ == '-';
    if (negative) ++p_;
    return digits(max_digits) && !(negative && p_[-1] == '0' && p_[-2] == '-');
  }
  // A value of CanonicalReader::value but lists.
  CLAMPAI_INLINE bool value() {
    if (p_ == end_) return false;
    std::string_view text;
    switch (*p_) {
      case 'n':
        return lit("null");
      case 't':
        return lit("true");
      case 'f':
        return lit("false");
      case '"':
        return string(text);
      default:
        return integer(15);  // below 2^53: JSON keeps it exact
    }
  }
  // `a < b` as std::string_view compares them (bytes as unsigned char), without a call.
  CLAMPAI_INLINE static bool before(std::string_view a, std::string_view b) {
    const std::size_t n = std::min(a.size(), b.size());
    for (std::size_t i = 0; i < n; ++i) {
      if (a[i] != b[i]) return static_cast<unsigned char>(a[i]) < static_cast<unsigned char>(b[i]);
    }
    return a.size() < b.size();
  }
  // CanonicalReader::named: keys in increasing order.
  CLAMPAI_INLINE bool named() {
    if (lit("{}")) return true;
    if (!lit("{")) return false;
    std::string_view last;
    bool first = true;
    do {
      std::string_view key;
      if (!string(key) || (!first && !before(last, key)) || !lit(":") || !value()) return false;
      first = false;
      last = key;
    } while (lit(","));
    return lit("}");
  }

  const char* p_;
  const char* const begin_;
  const char* const end_;
  const QuoteMap& quotes_;
};

}  // namespace

namespace detail {

void append_count(std::string& out, std::string_view key, std::uint64_t v) {
  out += key;
  char digits[24];
  const auto r = std::to_chars(digits, digits + sizeof digits, v);
  out.append(digits, r.ptr);
}

void append_count(std::string& out, std::string_view key, std::int64_t v) {
  out += key;
  char digits[24];
  const auto r = std::to_chars(digits, digits + sizeof digits, v);
  out.append(digits, r.ptr);
}

void append_reasons(std::string& out, const std::vector<Reason>& reasons) {
  out += '[';
  for (std::size_t i = 0; i < reasons.size(); ++i) {
    if (i > 0) out += ',';
    out += "{\"code\":";
    append_json_string(out, to_string(reasons[i].code));
    out += ",\"message\":";
    append_json_string(out, reasons[i].message);
    out += ",\"subject\":";
    append_json_string(out, reasons[i].subject);
    out += '}';
  }
  out += ']';
}

LineLayout append_canonical_without_hash(std::string& out, const TraceEntry& e) {
  LineLayout at;
  out += "{\"action\":";
  append_json_string(out, e.action);
  out += ",\"changes\":";
  append_named_values(out, e.changes);
  out += ",\"cost\":";
  append_json_string(out, e.cost);
  out += ",\"emergency\":";
  out += e.emergency ? "true" : "false";
  append_count(out, ",\"emergency_steps\":", e.emergency_steps);
  if (!e.enforced) out += ",\"enforced\":false";
  out += ",\"gross\":";
  append_json_string(out, e.gross);
  at.hash_at = out.size();
  out += ",\"kind\":";
  append_json_string(out, to_string(e.kind));
  out += ",\"net\":";
  append_json_string(out, e.net);
  out += ",\"params\":";
  append_named_values(out, e.params);
  if (!e.pools.empty()) append_pools(out, e.pools);
  out += ",\"prev\":";
  at.prev_at = out.size() + 1;
  append_json_string(out, e.prev);
  if (!e.principal.empty()) {
    out += ",\"principal\":";
    append_json_string(out, e.principal);
  }
  out += ",\"reasons\":";
  append_reasons(out, e.reasons);
  append_count(out, ",\"seq\":", e.sequence);
  if (!e.signature.empty()) {
    out += ",\"signature\":";
    append_json_string(out, e.signature);
  }
  out += ",\"spec\":";
  append_json_string(out, e.spec);
  out += ",\"state\":";
  append_json_string(out, e.state);
  append_count(out, ",\"step\":", e.step);
  if (!e.ticket.empty()) {
    out += ",\"ticket\":";
    append_json_string(out, e.ticket);
  }
  append_count(out, ",\"time\":", e.time_us);
  out += ",\"warnings\":";
  append_reasons(out, e.warnings);
  out += '}';
  return at;
}

TraceEntry entry_from_line(std::string_view line, const std::string& source) {
  return entry_from_json(parse_json(line, source));
}

TraceCheck verify_stored_lines(const std::vector<StoredLine>& lines,
                               std::uint64_t first_sequence,
                               bool allow_unsealed) {
  TraceCheck check;
  check.entries = lines.size();
  auto fail = [&](std::size_t i, const std::string& message) {
    check.ok = false;
    check.first_bad = first_sequence + i;
    check.message = "entry " + std::to_string(first_sequence + i) + ": " + message;
    return check;
  };
  if (lines.empty()) return fail(0, "the trace is empty (a trace starts with a genesis entry)");
  // Each line's hash covers its own bytes only: computed first, two lines at a time, in
  // pieces shared with the library's worker threads; then checked in order.
  std::vector<char> hash_ok(lines.size(), 0);
  auto message = [&](std::size_t i) {
    const StoredLine& l = lines[i];
    return detail::SplitMessage{l.text.substr(0, l.hash_at),
                                l.text.substr(l.hash_at + kHashMember)};
  };
  auto matches = [&](std::size_t i, const unsigned char* digest) {
    const StoredLine& l = lines[i];
    return detail::digest_is_hex(digest, l.text.substr(l.hash_at + kHashKey.size(), 64)) ? 1 : 0;
  };
  auto complete = [&](std::size_t i) {
    return lines[i].text.size() >= lines[i].hash_at + kHashMember;
  };
  constexpr std::size_t kPiece = 512;  // lines per piece
  const std::size_t pieces = (lines.size() + kPiece - 1) / kPiece;
  const unsigned cores = verification_threads();
  parallel_for(pieces, cores, [&](std::size_t piece, unsigned) {
    const std::size_t end = std::min(lines.size(), (piece + 1) * kPiece);
    unsigned char first[32];
    unsigned char second[32];
    std::size_t waiting = end;  // a complete line not hashed yet (none if `end`)
    for (std::size_t i = piece * kPiece; i < end; ++i) {
      if (!complete(i)) continue;  // a line too short for its hash member: a mismatch
      if (waiting == end) {
        waiting = i;
        continue;
      }
      detail::sha256_two(message(waiting), message(i), first, second);
      hash_ok[waiting] = static_cast<char>(matches(waiting, first));
      hash_ok[i] = static_cast<char>(matches(i, second));
      waiting = end;
    }
    if (waiting != end) {
      detail::sha256_one(message(waiting), first);
      hash_ok[waiting] = static_cast<char>(matches(waiting, first));
    }
  });
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const StoredLine& l = lines[i];
    const std::uint64_t seq = first_sequence + i;
    if (!hash_ok[i]) return fail(i, "hash mismatch: the entry was changed");
    const std::string_view prev = l.text.substr(l.prev_at, 64);
    if (i > 0 && prev != lines[i - 1].text.substr(lines[i - 1].hash_at + kHashKey.size(), 64))
      return fail(i, "does not link to the previous entry's hash");
    if (seq == 0 && prev != kZeroHash) return fail(i, "does not link to the previous entry's hash");
    if ((seq == 0) != (l.kind == EntryKind::genesis)) {
      return fail(
          i,
          seq == 0 ? "the first entry is not a genesis entry" : "a genesis entry after the start");
    }
    if (l.kind == EntryKind::sealed && i + 1 != lines.size())
      return fail(i + 1, "entries follow the seal");
  }
  check.sealed = lines.back().kind == EntryKind::sealed;
  if (!check.sealed && !allow_unsealed) {
    return fail(lines.size(),
                "the trace ends without a seal: it was truncated after entry " +
                    std::to_string(first_sequence + lines.size() - 1) +
                    ", or the run did not finish");
  }
  check.ok = true;
  check.message = chain_summary(lines.size(), first_sequence, check.sealed);
  return check;
}

std::string chain_summary(std::size_t entries, std::uint64_t first_sequence, bool sealed) {
  return std::to_string(entries) + " entries" +
         (first_sequence > 0 ? " (from entry " + std::to_string(first_sequence) + ")"
                             : std::string()) +
         ", chain intact" + (sealed ? ", sealed" : ", not sealed");
}

}  // namespace detail

std::string_view to_string(EntryKind kind) { return kKindNames[static_cast<int>(kind)]; }

bool is_note(EntryKind kind) {
  switch (kind) {
    case EntryKind::attested:
    case EntryKind::checkpoint:
    case EntryKind::approval_requested:
    case EntryKind::approval_granted:
    case EntryKind::approval_denied:
    case EntryKind::approval_expired:
      return true;
    case EntryKind::genesis:
    case EntryKind::executed:
    case EntryKind::rejected:
    case EntryKind::rolled_back:
    case EntryKind::sealed:
    case EntryKind::spec_changed:
    case EntryKind::compensated:
      return false;
  }
  return false;
}

std::optional<std::uint64_t> compensated_step(const TraceEntry& entry) {
  if (entry.kind != EntryKind::compensated || entry.params.size() != 1 ||
      entry.params.front().first != "compensates")
    return std::nullopt;
  const Value& v = entry.params.front().second;
  if (v.kind() != Value::Kind::number || v.as_number().scale != 0 || v.as_number().units < 0)
    return std::nullopt;
  return static_cast<std::uint64_t>(v.as_number().units);
}

std::string TraceEntry::signed_bytes() const {
  TraceEntry unsigned_entry = *this;
  unsigned_entry.signature.clear();
  std::string out;
  detail::append_canonical_without_hash(out, unsigned_entry);
  return out;
}

std::string TraceEntry::to_json_line() const { return serialize(*this, true); }

std::string TraceEntry::compute_hash() const {
  std::string out;
  out.reserve(512);
  detail::append_canonical_without_hash(out, *this);
  return sha256_hex(out);
}

TraceCheck verify_chain(const std::vector<TraceEntry>& entries, bool allow_unsealed) {
  // Recomputing the hashes is the cost, and each is independent of the others: on a long trace
  // they are computed by several threads first; the checks then run in order as before, so
  // the first failure reported is the same.
  std::vector<char> hash_ok(entries.size(), 0);
  const unsigned cores = verification_threads();
  constexpr std::size_t kChunk = 256;  // entries per work item
  parallel_for((entries.size() + kChunk - 1) / kChunk, cores, [&](std::size_t chunk, unsigned) {
    // Two entries serialised into reused buffers and hashed at a time (compute_hash's bytes).
    const std::size_t end = std::min(entries.size(), (chunk + 1) * kChunk);
    std::string first;
    std::string second;
    unsigned char first_digest[32];
    unsigned char second_digest[32];
    std::size_t i = chunk * kChunk;
    for (; i + 1 < end; i += 2) {
      first.clear();
      second.clear();
      detail::append_canonical_without_hash(first, entries[i]);
      detail::append_canonical_without_hash(second, entries[i + 1]);
      detail::sha256_two({first, {}}, {second, {}}, first_digest, second_digest);
      hash_ok[i] = detail::digest_is_hex(first_digest, entries[i].hash) ? 1 : 0;
      hash_ok[i + 1] = detail::digest_is_hex(second_digest, entries[i + 1].hash) ? 1 : 0;
    }
    if (i < end) {
      first.clear();
      detail::append_canonical_without_hash(first, entries[i]);
      detail::sha256_one({first, {}}, first_digest);
      hash_ok[i] = detail::digest_is_hex(first_digest, entries[i].hash) ? 1 : 0;
    }
  });
  detail::ChainChecker chain(allow_unsealed);
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const TraceEntry& e = entries[i];
    const bool links = e.prev == (i == 0 ? std::string_view(kZeroHash) : entries[i - 1].hash);
    if (!chain.add(i, e.sequence, e.kind, hash_ok[i] != 0, links)) break;
  }
  return chain.finish(entries.size());
}

namespace detail {

bool ChainChecker::add(
    std::uint64_t i, std::uint64_t sequence, EntryKind kind, bool hash_ok, bool links) {
  if (i > 0 && last_kind_ == EntryKind::sealed) return fail(i, "entries follow the seal");
  if (sequence != i)
    return fail(i,
                "sequence number " + std::to_string(sequence) + ", expected " + std::to_string(i) +
                    " (an entry was deleted, inserted or moved)");
  if (!hash_ok) return fail(i, "hash mismatch: the entry was changed");
  if (!links) return fail(i, "does not link to the previous entry's hash");
  if ((i == 0) != (kind == EntryKind::genesis)) {
    return fail(
        i, i == 0 ? "the first entry is not a genesis entry" : "a genesis entry after the start");
  }
  last_kind_ = kind;
  return true;
}

TraceCheck ChainChecker::finish(std::uint64_t entries) {
  check_.entries = entries;
  if (failed_) return check_;
  if (entries == 0) {
    fail(0, "the trace is empty (a trace starts with a genesis entry)");
    return check_;
  }
  check_.sealed = last_kind_ == EntryKind::sealed;
  if (!check_.sealed && !allow_unsealed_) {
    fail(entries,
         "the trace ends without a seal: it was truncated after entry " +
             std::to_string(entries - 1) + ", or the run did not finish");
    return check_;
  }
  check_.ok = true;
  check_.message = std::to_string(entries) + " entries, chain intact" +
                   (check_.sealed ? ", sealed" : ", not sealed");
  return check_;
}

bool ChainChecker::fail(std::uint64_t i, const std::string& message) {
  failed_ = true;
  check_.ok = false;
  check_.sealed = false;
  check_.first_bad = i;
  check_.message = "entry " + std::to_string(i) + ": " + message;
  return false;
}

bool same_hash(std::string_view a, std::string_view b) {
  return a.size() == 64 && b.size() == 64 ? same_bytes<64>(a.data(), b.data()) : a == b;
}

void entry_of_line(std::string_view line, TraceEntry& e, const std::string& source) {
  ChainLink link;
  std::size_t from = 0;
  std::size_t to = 0;
  if (CanonicalReader(line).entry(&e, link, from, to)) return;  // canonical: read directly
  e = entry_from_json(detail::parse_json(line, source));
}

// Reads and hashes the lines of `piece`: a line in canonical form directly (no tree, no copy),
// its SHA-256 over its bytes as read (without the `hash` member), two such lines at a time
// (digest_pair.hpp); any other line parsed as JSON, and it must serialise back to itself byte
// for byte. Each line's `prev` is compared with the hash of the line before while both are in
// the cache. After the first line that is no entry, the lines are only counted (that problem
// is what will be reported).
void check_piece(std::string_view bytes, PieceCheck& piece, const std::string& source) {
  const char* p = bytes.data();
  const char* const end = bytes.data() + bytes.size();
  piece.checks.reserve(bytes.size() / 256 + 1);
  // A canonical line read but not yet hashed: it waits for another to be hashed with.
  struct Waiting {
    std::size_t check = 0;
    detail::SplitMessage bytes;
    std::string_view hash;
  };
  std::optional<Waiting> waiting;
  std::string_view last_hash;
  QuoteMap quotes;
  while (p < end) {
    if (!piece.problem.empty()) {  // only counted now
      for (; p < end; ++piece.lines) {
        const void* nl = std::memchr(p, '\n', static_cast<std::size_t>(end - p));
        p = nl != nullptr ? static_cast<const char*>(nl) + 1 : end;
      }
      break;
    }
    const char* nl = quotes.scan(p, end);
    const std::string_view line(p, static_cast<std::size_t>(nl - p));
    p = nl + 1;
    const std::size_t index = piece.lines++;
    ChainLink link;
    LineCheck& check = piece.checks.emplace_back();
    std::size_t from = 0;
    std::size_t to = 0;
    if ((quotes.plain() && PlainLine(line, quotes).check(link, from, to)) ||
        CanonicalReader(line, quotes).entry(nullptr, link, from, to)) {
      const Waiting read{
          piece.checks.size() - 1, {line.substr(0, from), line.substr(to)}, link.hash};
      if (waiting) {
        unsigned char first[32];
        unsigned char second[32];
        detail::sha256_two(waiting->bytes, read.bytes, first, second);
        piece.checks[waiting->check].hash_ok = detail::digest_is_hex(first, waiting->hash);
        check.hash_ok = detail::digest_is_hex(second, read.hash);
        waiting.reset();
      } else {
        waiting = read;
      }
    } else {
      try {
        auto e = std::make_unique<TraceEntry>(entry_from_json(detail::parse_json(line, source)));
        if (e->to_json_line() != line)
          throw TraceError("not in canonical form: the line was changed");
        check.hash_ok = e->compute_hash() == e->hash;
        link = {e->sequence, e->kind, e->prev, e->hash};
        piece.parsed.push_back(std::move(e));
      } catch (const Error& err) {
        piece.checks.pop_back();
        piece.problem = err.what();
        piece.problem_line = index;
        continue;
      }
    }
    check.sequence = link.sequence;
    check.kind = link.kind;
    if (index == 0) {
      piece.first_prev = link.prev;
    } else {
      check.links = same_hash(link.prev, last_hash);
    }
    last_hash = link.hash;
  }
  if (waiting) {
    unsigned char digest[32];
    detail::sha256_one(waiting->bytes, digest);
    piece.checks[waiting->check].hash_ok = detail::digest_is_hex(digest, waiting->hash);
  }
  piece.last_hash = last_hash;
}

}  // namespace detail

TraceWriter::TraceWriter(const std::string& path, FlushPolicy policy, TraceOpen mode)
    : policy_(policy) {
  // The one rule for written files (file.hpp): no link, no special file but /dev/null (which
  // discards the trace), never clobbered but by `overwrite`, emptied only under the lock.
  WriteOptions options;
  options.mode = mode == TraceOpen::create      ? WriteMode::create
                 : mode == TraceOpen::overwrite ? WriteMode::replace
                                                : WriteMode::append_existing;
  options.what = "trace";
  options.exists_hint = " (a trace is never overwritten silently)";
  options.missing_hint = ": there is no trace to append to";
  options.lock = true;
  int fd = -1;
  try {
    OutputFile out(path, options);
    discards_ = out.discards();
    fd = out.release();
  } catch (const FileError& e) {
    throw TraceError(e.what());
  }
  file_ = ::fdopen(fd, mode == TraceOpen::append ? "ab" : "wb");
  if (file_ == nullptr) {
    ::close(fd);
    throw TraceError("cannot open the trace `" + path + "`: " + std::strerror(errno));
  }
}

void TraceWriter::continue_from(std::uint64_t entries) {
  std::lock_guard lock(mutex_);
  if (next_ != 0 || !pending_.empty())
    throw InvalidArgument("continue_from: entries were already written");

  next_ = entries;
}

TraceWriter::~TraceWriter() {
  try {
    close();
  } catch (const Error&) {
    // A destructor cannot report it; close() explicitly to see I/O errors.
  }
}

void TraceWriter::write_ready_locked() {
  for (auto it = pending_.find(next_); it != pending_.end(); it = pending_.find(next_)) {
    const std::string& line = it->second;
    if (std::fwrite(line.data(), 1, line.size(), file_) != line.size() ||
        std::fputc('\n', file_) == EOF) {
      error_ = "write failed";
    } else if (policy_ != FlushPolicy::buffered && std::fflush(file_) != 0) {
      error_ = "flush failed";
    } else if (policy_ == FlushPolicy::fsync && !discards_ && ::fsync(fileno(file_)) != 0) {
      error_ = "fsync failed";
    }
    pending_.erase(it);
    ++next_;
  }
}

void TraceWriter::write(std::uint64_t sequence, std::string line) {
  std::unique_lock lock(mutex_);
  if (file_ == nullptr) throw TraceError("the trace file is closed");
  pending_.emplace(sequence, std::move(line));
  write_ready_locked();
  written_.notify_all();
  written_.wait(lock, [&] { return next_ > sequence || !error_.empty(); });
  if (!error_.empty()) throw TraceError("trace file: " + error_);
}

void TraceWriter::close() {
  std::lock_guard lock(mutex_);
  if (file_ == nullptr) return;
  bool ok = std::fflush(file_) == 0;
  if (policy_ == FlushPolicy::fsync && !discards_) ok = ::fsync(fileno(file_)) == 0 && ok;
  const bool closed = std::fclose(file_) == 0;
  file_ = nullptr;
  if (!ok || !closed) throw TraceError("trace file: closing failed");
}

}  // namespace clampai::kernel
