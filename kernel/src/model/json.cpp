// The JSON reader (nlohmann SAX with positions and limits) and canonical writer.
#include "json.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <iterator>
#include <nlohmann/json.hpp>
#include <optional>
#include <unordered_set>

#include "clampai/kernel/error.hpp"
#include "clampai/kernel/suggest.hpp"

namespace clampai::kernel::jsonio {
namespace {

// An input iterator that tells how far the parser has read, for source positions.
class CountingIterator {
 public:
  using iterator_category = std::input_iterator_tag;
  using value_type = char;
  using difference_type = std::ptrdiff_t;
  using pointer = const char*;
  using reference = const char&;

  CountingIterator(const char* p, std::size_t* consumed) : p_(p), consumed_(consumed) {}
  reference operator*() const { return *p_; }
  CountingIterator& operator++() {
    ++p_;
    ++*consumed_;
    return *this;
  }
  CountingIterator operator++(int) {
    CountingIterator old = *this;
    ++*this;
    return old;
  }
  friend bool operator==(const CountingIterator& a, const CountingIterator& b) {
    return a.p_ == b.p_;
  }
  friend bool operator!=(const CountingIterator& a, const CountingIterator& b) {
    return a.p_ != b.p_;
  }

 private:
  const char* p_;
  std::size_t* consumed_;
};

class Builder : public nlohmann::json_sax<nlohmann::json> {
 public:
  Builder(std::string_view text, const std::string& what, const JsonLimits& limits)
      : text_(text), what_(what), limits_(limits) {
    line_starts_.push_back(0);
    for (std::size_t i = 0; i < text.size(); ++i) {
      if (text[i] == '\n') line_starts_.push_back(i + 1);
    }
  }

  std::size_t consumed = 0;
  JsonNode root;
  std::string error_path;
  std::string error_message;

  bool null() override { return value(JsonNode{}, 1); }
  bool boolean(bool b) override {
    JsonNode n;
    n.kind = JsonNode::Kind::boolean;
    n.boolean = b;
    return value(std::move(n), b ? 4 : 5);
  }
  bool number_integer(number_integer_t v) override { return number(std::to_string(v), true); }
  bool number_unsigned(number_unsigned_t v) override { return number(std::to_string(v), true); }
  bool number_float(number_float_t, const string_t& raw) override { return number(raw, false); }
  bool string(string_t& s) override {
    if (s.size() > limits_.max_string)
      return fail_here("string longer than " + std::to_string(limits_.max_string) + " bytes");
    JsonNode n;
    n.kind = JsonNode::Kind::string;
    n.text = std::move(s);
    const std::size_t len = n.text.size() + 2;
    return value(std::move(n), len);
  }
  bool binary(binary_t&) override { return fail_here("binary values are not JSON"); }
  bool start_object(std::size_t) override { return open(JsonNode::Kind::object); }
  bool key(string_t& k) override {
    if (k.size() > limits_.max_string)
      return fail_here("key longer than " + std::to_string(limits_.max_string) + " bytes");
    if (!keys_.back().insert(k).second) {
      const std::string parent = path();
      error_path = parent.empty() ? k : parent + "." + k;
      error_message = "duplicate key `" + k + "`";
      return false;
    }
    pending_key_ = std::move(k);
    return true;
  }
  bool end_object() override { return close(); }
  bool start_array(std::size_t) override { return open(JsonNode::Kind::array); }
  bool end_array() override { return close(); }
  bool parse_error(std::size_t position,
                   const std::string& last_token,
                   const nlohmann::detail::exception& ex) override {
    if (ex.id == 406) {  // a number beyond binary floating point's range, such as 1e400
      error_path = where(position > last_token.size() ? position - last_token.size() : 0);
      error_message = "`" + last_token + "`: the value does not fit a 64-bit fixed-point number";
      return false;
    }
    std::string msg = ex.what();
    // "[json.exception.parse_error.101] parse error at line 1, column 2: syntax error ..."
    if (auto p = msg.find("]"); p != std::string::npos) msg = msg.substr(p + 2);
    if (auto p = msg.find(": "); p != std::string::npos && msg.rfind("parse error", 0) == 0)
      msg = msg.substr(p + 2);
    error_path = where(position > 0 ? position - 1 : 0);
    error_message = "malformed JSON: " + msg;
    return false;
  }

  std::string where(std::size_t offset) const {
    auto [line, col] = line_col(offset);
    return std::to_string(line) + ":" + std::to_string(col);
  }

 private:
  std::pair<std::uint32_t, std::uint32_t> line_col(std::size_t offset) const {
    offset = std::min(offset, text_.empty() ? 0 : text_.size() - 1);
    auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
    const std::size_t line = static_cast<std::size_t>(it - line_starts_.begin());
    return {static_cast<std::uint32_t>(line),
            static_cast<std::uint32_t>(offset - line_starts_[line - 1] + 1)};
  }

  // The JSON path of the container being filled.
  std::string path() const {
    std::string p;
    for (std::size_t i = 0; i + 1 < stack_.size(); ++i) {
      const JsonNode& n = *stack_[i];
      if (n.kind == JsonNode::Kind::array) {
        p += "[" + std::to_string(n.items.size() - 1) + "]";
      } else {
        p += (p.empty() ? "" : ".") + n.members.back().first;
      }
    }
    return p;
  }

  bool fail_here(const std::string& message) {
    error_path = where(consumed > 0 ? consumed - 1 : 0);
    error_message = message;
    return false;
  }

  bool number(std::string text, bool integral) {
    JsonNode n;
    n.kind = JsonNode::Kind::number;
    n.integral = integral;
    n.text = std::move(text);
    // The lexer has read one character past a number.
    const std::size_t len = n.text.size() + 1;
    return value(std::move(n), len);
  }

  // Places a finished node; `span` is how far back from the read position it started.
  bool value(JsonNode n, std::size_t span) {
    const std::size_t start = consumed >= span ? consumed - span : 0;
    auto [line, col] = line_col(start);
    n.line = line;
    n.column = col;
    return place(std::move(n)) != nullptr;
  }

  JsonNode* place(JsonNode n) {
    if (stack_.empty()) {
      root = std::move(n);
      return &root;
    }
    JsonNode& parent = *stack_.back();
    if (parent.kind == JsonNode::Kind::array) {
      parent.items.push_back(std::move(n));
      return &parent.items.back();
    }
    parent.members.emplace_back(std::move(pending_key_), std::move(n));
    pending_key_.clear();
    return &parent.members.back().second;
  }

  bool open(JsonNode::Kind kind) {
    if (stack_.size() >= limits_.max_depth) {
      return fail_here("JSON nested more than " + std::to_string(limits_.max_depth) +
                       " levels deep");
    }
    JsonNode n;
    n.kind = kind;
    auto [line, col] = line_col(consumed > 0 ? consumed - 1 : 0);
    n.line = line;
    n.column = col;
    stack_.push_back(place(std::move(n)));
    keys_.emplace_back();
    return true;
  }

  bool close() {
    stack_.pop_back();
    keys_.pop_back();
    return true;
  }

  std::string_view text_;
  const std::string& what_;
  const JsonLimits& limits_;
  std::vector<std::size_t> line_starts_;
  // Pointers into the tree stay valid: a container is only appended to while it is the top of
  // the stack, and its parent is not appended to until it is closed.
  std::vector<JsonNode*> stack_;
  std::vector<std::unordered_set<std::string>> keys_;  // keys seen in each open container
  std::string pending_key_;
};

// Reads one member of the top-level object and only checks the rest is JSON: duplicate keys
// and nesting are not its concern, and it records where a number beyond range stopped it.
class Skimmer : public nlohmann::json_sax<nlohmann::json> {
 public:
  explicit Skimmer(std::string_view key) : key_(key) {}

  bool object_root = false;
  std::size_t seen = 0;  // how many times the member occurs at the top level
  std::optional<JsonNode> value;
  std::size_t overflow_end = 0;  // where a number beyond range ends, and its text
  std::string overflow;

  bool null() override { return scalar(JsonNode{}); }
  bool boolean(bool b) override { return scalar(JsonNode::make_bool(b)); }
  bool number_integer(number_integer_t v) override { return number(std::to_string(v), true); }
  bool number_unsigned(number_unsigned_t v) override { return number(std::to_string(v), true); }
  bool number_float(number_float_t, const string_t& raw) override { return number(raw, false); }
  bool string(string_t& s) override { return scalar(JsonNode::make_string(std::move(s))); }
  bool binary(binary_t&) override { return false; }
  bool start_object(std::size_t) override { return open(true); }
  bool key(string_t& k) override {
    at_key_ = depth_ == 1 && k == key_;
    return true;
  }
  bool end_object() override { return close(); }
  bool start_array(std::size_t) override { return open(false); }
  bool end_array() override { return close(); }
  bool parse_error(std::size_t position,
                   const std::string& last_token,
                   const nlohmann::detail::exception& ex) override {
    if (ex.id == 406) {
      overflow_end = position;
      overflow = last_token;
    }
    return false;
  }

 private:
  bool number(std::string text, bool integral) {
    JsonNode n;
    n.kind = JsonNode::Kind::number;
    n.integral = integral;
    n.text = std::move(text);
    return scalar(std::move(n));
  }
  bool scalar(JsonNode n) {
    if (at_key_) {
      ++seen;
      value = std::move(n);
    }
    at_key_ = false;
    return true;
  }
  bool open(bool object) {
    if (depth_ == 0) object_root = object;
    if (at_key_) {  // the member is a container: not read
      ++seen;
      value.reset();
    }
    at_key_ = false;
    ++depth_;
    return true;
  }
  bool close() {
    --depth_;
    return true;
  }

  std::string_view key_;
  std::size_t depth_ = 0;
  bool at_key_ = false;
};

constexpr std::int64_t kExactJsonInt = std::int64_t{1} << 53;

}  // namespace

JsonNode::JsonNode() = default;
JsonNode::JsonNode(const JsonNode&) = default;
JsonNode::JsonNode(JsonNode&&) noexcept = default;
JsonNode& JsonNode::operator=(const JsonNode&) = default;
JsonNode& JsonNode::operator=(JsonNode&&) noexcept = default;
JsonNode::~JsonNode() = default;

const JsonNode* JsonNode::find(std::string_view key) const {
  for (const auto& [k, v] : members) {
    if (k == key) return &v;
  }
  return nullptr;
}

JsonNode JsonNode::make_string(std::string s) {
  JsonNode n;
  n.kind = Kind::string;
  n.text = std::move(s);
  return n;
}
JsonNode JsonNode::make_bool(bool b) {
  JsonNode n;
  n.kind = Kind::boolean;
  n.boolean = b;
  return n;
}
JsonNode JsonNode::make_integer(std::int64_t i) {
  JsonNode n;
  n.kind = Kind::number;
  n.integral = true;
  n.text = std::to_string(i);
  return n;
}
JsonNode JsonNode::make_array() {
  JsonNode n;
  n.kind = Kind::array;
  return n;
}
JsonNode JsonNode::make_object() {
  JsonNode n;
  n.kind = Kind::object;
  return n;
}
JsonNode& JsonNode::add(std::string key, JsonNode value) {
  members.emplace_back(std::move(key), std::move(value));
  return members.back().second;
}
JsonNode& JsonNode::push(JsonNode value) {
  items.push_back(std::move(value));
  return items.back();
}

JsonNode parse_json(std::string_view text, const std::string& what, const JsonLimits& limits) {
  if (text.size() > limits.max_bytes) {
    throw SpecError("", "file larger than " + std::to_string(limits.max_bytes) + " bytes");
  }
  Builder builder(text, what, limits);
  CountingIterator first(text.data(), &builder.consumed);
  CountingIterator last(text.data() + text.size(), &builder.consumed);
  bool ok = false;
  try {
    ok = nlohmann::json::sax_parse(first, last, &builder);
  } catch (const nlohmann::json::exception& e) {
    throw SpecError(builder.where(builder.consumed), std::string("malformed JSON: ") + e.what());
  }
  if (!ok) {
    throw SpecError(builder.error_path,
                    builder.error_message.empty() ? "malformed JSON" : builder.error_message);
  }
  return std::move(builder.root);
}

TopLevelMember find_top_level_member(std::string_view text, std::string_view key) {
  // nlohmann stops at a number beyond binary floating point's range: such a number is written
  // over with `0.0` and spaces (still JSON, the same length, and not an integer) and the text
  // read again, a few times at most.
  constexpr int kRounds = 8;
  std::string patched;
  std::string_view input = text;
  for (int round = 0; round < kRounds; ++round) {
    Skimmer skim(key);
    if (nlohmann::json::sax_parse(input.data(),
                                  input.data() + input.size(),
                                  &skim,
                                  nlohmann::json::input_format_t::json,
                                  true)) {
      TopLevelMember out;
      out.is_json = true;
      if (skim.object_root && skim.seen == 1) out.value = std::move(skim.value);
      return out;
    }
    const std::size_t n = skim.overflow.size();
    if (n < 3 || skim.overflow_end < n || skim.overflow_end > input.size() ||
        input.substr(skim.overflow_end - n, n) != skim.overflow)
      return {};  // malformed
    if (patched.empty()) {
      patched.assign(text);
      input = patched;
    }
    patched.replace(skim.overflow_end - n, n, "0.0" + std::string(n - 3, ' '));
  }
  return {};
}

std::string describe(const JsonNode& n) {
  switch (n.kind) {
    case JsonNode::Kind::null:
      return "null";
    case JsonNode::Kind::boolean:
      return "a bool";
    case JsonNode::Kind::number:
      return "a number";
    case JsonNode::Kind::string:
      return "a string";
    case JsonNode::Kind::array:
      return "a list";
    case JsonNode::Kind::object:
      return "an object";
  }
  return "?";
}

namespace {

// The length of the valid UTF-8 sequence at `s[i]` (a byte >= 0x80), or 0 if there is none.
std::size_t utf8_sequence(std::string_view s, std::size_t i) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const auto cont = [&](std::size_t k) { return i + k < s.size() && (b(k) & 0xC0) == 0x80; };
  const unsigned char c = b(0);
  if (c >= 0xC2 && c <= 0xDF) return cont(1) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    if (!cont(1) || !cont(2)) return 0;
    if (c == 0xE0 && b(1) < 0xA0) return 0;   // overlong
    if (c == 0xED && b(1) >= 0xA0) return 0;  // surrogates
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (!cont(1) || !cont(2) || !cont(3)) return 0;
    if (c == 0xF0 && b(1) < 0x90) return 0;   // overlong
    if (c == 0xF4 && b(1) >= 0x90) return 0;  // beyond U+10FFFF
    return 4;
  }
  return 0;
}

// The length of the invalid sequence at `s[i]` (a byte >= 0x80 where `utf8_sequence` finds
// none): its maximal subpart, the longest start of a well-formed sequence there (at least the
// byte itself), which Unicode (chapter 3, "U+FFFD substitution of maximal subparts") replaces
// by one U+FFFD. `\xE2\x82` before an ASCII byte is one replacement, `\xC0\x80` two.
std::size_t utf8_invalid_length(std::string_view s, std::size_t i) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const unsigned char c = b(0);
  std::size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // the second byte's range
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;  // overlong below
    if (c == 0xED) hi = 0x9F;  // surrogates above
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;  // overlong below
    if (c == 0xF4) hi = 0x8F;  // beyond U+10FFFF above
  } else {
    return 1;
  }
  if (i + 1 >= s.size() || b(1) < lo || b(1) > hi) return 1;
  std::size_t k = 2;
  while (k < n && i + k < s.size() && (b(k) & 0xC0) == 0x80) ++k;
  return k;
}

}  // namespace

namespace {

// RFC 8785 section 3.2.2.3: the double `text` reads as (correctly rounded), in the shortest
// digits that read back as it, laid out as ECMAScript's Number.prototype.toString does.
// False for a number beyond the range of a double.
bool append_ecmascript_number(std::string& out, const std::string& text) {
  double d = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, d);
  if (ptr != end) return false;
  if (ec == std::errc::result_out_of_range) {
    // Beyond the doubles either way: too large has no form, too small reads as 0 (1e-400).
    const std::size_t e = text.find_first_of("eE");
    const std::string_view mantissa = std::string_view(text).substr(0, e);
    const std::size_t point = std::min(mantissa.find('.'), mantissa.size());
    const std::size_t lead = mantissa.find_first_of("123456789");
    if (lead == std::string_view::npos) return false;
    // The decimal exponent of the leading digit: its place and the exponent (one beyond the
    // range of long long is taken as +-2^62, which decides alone).
    long long exp10 = 0;
    if (e != std::string::npos) {
      const char* from = text.data() + e + 1 + (text[e + 1] == '+' ? 1 : 0);
      if (std::from_chars(from, end, exp10).ec != std::errc{})
        exp10 = *from == '-' ? -(1LL << 62) : (1LL << 62);
    }
    const long long place = lead < point ? static_cast<long long>(point - lead) - 1
                                         : -static_cast<long long>(lead - point);
    if (place + exp10 >= 0) return false;
    out += '0';
    return true;
  }
  if (ec != std::errc{} || !std::isfinite(d)) return false;
  if (d == 0) {  // "-0" too
    out += '0';
    return true;
  }
  if (d < 0) {
    out += '-';
    d = -d;
  }
  // Shortest round-trip digits in scientific form: D[.DDD]e[+-]X.
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  const std::string_view sci(buf, static_cast<std::size_t>(r.ptr - buf));
  const std::size_t e = sci.find('e');
  std::string digits(1, sci[0]);
  if (e > 1) digits.append(sci.substr(2, e - 2));
  int exp10 = 0;
  std::from_chars(sci.data() + e + (sci[e + 1] == '+' ? 2 : 1), sci.data() + sci.size(), exp10);
  const int k = static_cast<int>(digits.size());
  const int pos = exp10 + 1;  // the value is 0.DIGITS x 10^pos
  if (k <= pos && pos <= 21) {
    out += digits;
    out.append(static_cast<std::size_t>(pos - k), '0');
  } else if (0 < pos && pos <= 21) {
    out.append(digits, 0, static_cast<std::size_t>(pos));
    out += '.';
    out.append(digits, static_cast<std::size_t>(pos));
  } else if (-6 < pos && pos <= 0) {
    out += "0.";
    out.append(static_cast<std::size_t>(-pos), '0');
    out += digits;
  } else {
    out += digits[0];
    if (k > 1) {
      out += '.';
      out.append(digits, 1);
    }
    out += 'e';
    out += pos - 1 < 0 ? '-' : '+';
    out += std::to_string(std::abs(pos - 1));
  }
  return true;
}

// RFC 8785 section 3.2.3: keys sort by their UTF-16 code units. UTF-8's byte order is that of
// the code points, which differs only where a character beyond U+FFFF (a surrogate pair,
// 0xD800...) meets one of U+E000 to U+FFFF (lead byte 0xEE or 0xEF).
bool utf16_less(std::string_view a, std::string_view b) {
  const auto [ia, ib] = std::mismatch(a.begin(), a.end(), b.begin(), b.end());
  if (ib == b.end()) return false;
  if (ia == a.end()) return true;
  const auto ca = static_cast<unsigned char>(*ia);
  const auto cb = static_cast<unsigned char>(*ib);
  const auto high_bmp = [](unsigned char c) { return c == 0xEE || c == 0xEF; };
  if (ca >= 0xF0 && high_bmp(cb)) return true;
  if (high_bmp(ca) && cb >= 0xF0) return false;
  return ca < cb;
}

}  // namespace

namespace {

constexpr char kHex[] = "0123456789abcdef";

// Appends the escape of `c`, a byte that JSON requires escaped (a quote, a backslash, a control
// character): its short form where JSON has one, else \u00XX.
void append_escape(std::string& out, unsigned char c) {
  switch (c) {
    case '"':
      out += "\\\"";
      break;
    case '\\':
      out += "\\\\";
      break;
    case '\b':
      out += "\\b";
      break;
    case '\f':
      out += "\\f";
      break;
    case '\n':
      out += "\\n";
      break;
    case '\r':
      out += "\\r";
      break;
    case '\t':
      out += "\\t";
      break;
    default: {
      const char escape[] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 0xF]};
      out.append(escape, sizeof escape);
    }
  }
}

void append_unit(std::string& out, unsigned u) {
  out += "\\u";
  for (int shift = 12; shift >= 0; shift -= 4) out += kHex[(u >> shift) & 0xF];
}

}  // namespace

void append_json_string(std::string& out, std::string_view s, InvalidUtf8 invalid) {
  out += '"';
  std::size_t run = 0;  // start of the pending run of characters that need no escape
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c != '"' && c != '\\') {
      if (c < 0x80 || invalid == InvalidUtf8::keep) continue;
      if (const std::size_t n = utf8_sequence(s, i); n > 0) {
        i += n - 1;
        continue;
      }
      out.append(s.data() + run, i - run);
      i += utf8_invalid_length(s, i) - 1;
      run = i + 1;
      out += "\xEF\xBF\xBD";  // U+FFFD
      continue;
    }
    out.append(s.data() + run, i - run);
    run = i + 1;
    append_escape(out, c);
  }
  out.append(s.data() + run, s.size() - run);
  out += '"';
}

bool append_json_string_ascii(std::string& out, std::string_view s) {
  const std::size_t start = out.size();
  out += '"';
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      if (c >= 0x20 && c != '"' && c != '\\' && c != 0x7F) {
        out += static_cast<char>(c);
      } else if (c == 0x7F) {
        append_unit(out, c);
      } else {
        append_escape(out, c);
      }
      continue;
    }
    const std::size_t n = utf8_sequence(s, i);
    if (n == 0) {
      out.resize(start);
      return false;
    }
    unsigned cp = c & (0x7Fu >> n);
    for (std::size_t k = 1; k < n; ++k)
      cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3Fu);
    i += n - 1;
    if (cp >= 0x10000) {
      cp -= 0x10000;
      append_unit(out, 0xD800 | (cp >> 10));
      append_unit(out, 0xDC00 | (cp & 0x3FF));
    } else {
      append_unit(out, cp);
    }
  }
  out += '"';
  return true;
}

bool append_canonical(std::string& out, const JsonNode& n) {
  switch (n.kind) {
    case JsonNode::Kind::null:
      out += "null";
      return true;
    case JsonNode::Kind::boolean:
      out += n.boolean ? "true" : "false";
      return true;
    case JsonNode::Kind::number: {
      // An integer within +-2^53 is its own text (JSON has no leading zeros); any other number
      // is the double it reads as, written as ECMAScript writes it.
      if (n.integral && n.text != "-0") {
        long long v = 0;
        const char* end = n.text.data() + n.text.size();
        const auto [ptr, ec] = std::from_chars(n.text.data(), end, v);
        if (ec == std::errc{} && ptr == end && v > -kExactJsonInt && v < kExactJsonInt) {
          out += n.text;
          return true;
        }
      }
      return append_ecmascript_number(out, n.text);
    }
    case JsonNode::Kind::string:
      append_json_string(out, n.text);
      return true;
    case JsonNode::Kind::array: {
      out += '[';
      for (std::size_t i = 0; i < n.items.size(); ++i) {
        if (i > 0) out += ',';
        if (!append_canonical(out, n.items[i])) return false;
      }
      out += ']';
      return true;
    }
    case JsonNode::Kind::object: {
      std::vector<const std::pair<std::string, JsonNode>*> sorted;
      sorted.reserve(n.members.size());
      for (const auto& m : n.members) sorted.push_back(&m);
      std::sort(sorted.begin(), sorted.end(), [](auto* a, auto* b) {
        return utf16_less(a->first, b->first);
      });
      out += '{';
      for (std::size_t i = 0; i < sorted.size(); ++i) {
        if (i > 0) out += ',';
        append_json_string(out, sorted[i]->first);
        out += ':';
        if (!append_canonical(out, sorted[i]->second)) return false;
      }
      out += '}';
      return true;
    }
  }
  return false;
}

JsonNode value_to_json(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::undefined:
      return JsonNode{};
    case Value::Kind::boolean:
      return JsonNode::make_bool(v.as_bool());
    case Value::Kind::number: {
      const Decimal& d = v.as_number();
      if (d.scale == 0 && d.units > -kExactJsonInt && d.units < kExactJsonInt)
        return JsonNode::make_integer(d.units);
      return JsonNode::make_string(d.to_string());
    }
    case Value::Kind::string:
      return JsonNode::make_string(v.as_string());
    case Value::Kind::list: {
      JsonNode arr = JsonNode::make_array();
      for (const auto& item : v.as_list()) arr.push(value_to_json(item));
      return arr;
    }
  }
  return JsonNode{};
}

void append_value(std::string& out, const Value& v) {
  switch (v.kind()) {
    case Value::Kind::undefined:
      out += "null";
      return;
    case Value::Kind::boolean:
      out += v.as_bool() ? "true" : "false";
      return;
    case Value::Kind::number: {
      const Decimal& d = v.as_number();
      if (d.scale == 0 && d.units > -kExactJsonInt && d.units < kExactJsonInt) {
        char digits[24];
        const auto r = std::to_chars(digits, digits + sizeof digits, d.units);
        out.append(digits, r.ptr);
      } else {
        append_json_string(out, d.to_string());
      }
      return;
    }
    case Value::Kind::string:
      append_json_string(out, v.as_string());
      return;
    case Value::Kind::list: {
      out += '[';
      bool first = true;
      for (const auto& item : v.as_list()) {
        if (!first) out += ',';
        first = false;
        append_value(out, item);
      }
      out += ']';
      return;
    }
  }
}

bool value_from_json(const JsonNode& j, const Type& type, Value& out, std::string& error) {
  if (j.kind == JsonNode::Kind::null) {
    out = Value();
    return true;
  }
  switch (type.kind()) {
    case Type::Kind::boolean:
      if (j.kind != JsonNode::Kind::boolean) {
        error = "expected a bool, found " + describe(j);
        return false;
      }
      out = Value::boolean(j.boolean);
      return true;
    case Type::Kind::integer:
    case Type::Kind::decimal: {
      if (j.kind != JsonNode::Kind::number && j.kind != JsonNode::Kind::string) {
        error = "expected a number, found " + describe(j);
        return false;
      }
      auto d = Decimal::parse(j.text, &error);
      if (!d) {
        error = "`" + j.text + "`: " + error;
        return false;
      }
      out = Value::number(*d);
      return true;
    }
    case Type::Kind::string:
    case Type::Kind::enumeration:
      if (j.kind != JsonNode::Kind::string) {
        error = "expected a string, found " + describe(j);
        return false;
      }
      if (type.kind() == Type::Kind::enumeration && !type.has_enum_value(j.text)) {
        error = "`" + j.text + "` is not a value of " + type.to_string();
        return false;
      }
      out = Value::string(j.text);
      return true;
    case Type::Kind::list: {
      if (j.kind != JsonNode::Kind::array) {
        error = "expected a list, found " + describe(j);
        return false;
      }
      Value::List items;
      for (std::size_t i = 0; i < j.items.size(); ++i) {
        Value item;
        if (type.element() == nullptr || j.items[i].kind == JsonNode::Kind::null ||
            !value_from_json(j.items[i], *type.element(), item, error)) {
          if (j.items[i].kind == JsonNode::Kind::null) error = "list items cannot be null";
          error = "item " + std::to_string(i) + ": " + error;
          return false;
        }
        items.push_back(std::move(item));
      }
      out = Value::list(std::move(items));
      return true;
    }
  }
  return false;
}

// ---- reading spec-like documents ----

std::string join(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}
std::string at_index(const std::string& path, std::size_t i) {
  return path + "[" + std::to_string(i) + "]";
}

void expect_kind(const JsonNode& n, JsonNode::Kind kind, const std::string& path) {
  if (n.kind != kind) {
    JsonNode probe;
    probe.kind = kind;
    throw SpecError(path, "expected " + describe(probe) + ", found " + describe(n));
  }
}

// Rejects keys not in `allowed`, so that a typo is an error rather than a silently ignored key.
void allow_keys(const JsonNode& obj,
                const std::string& path,
                std::initializer_list<std::string_view> allowed) {
  for (const auto& [key, _] : obj.members) {
    bool ok = false;
    for (auto a : allowed) ok = ok || key == a;
    if (!ok) {
      std::string list;
      std::vector<std::string> names;
      for (auto a : allowed) {
        list += (list.empty() ? "" : ", ") + std::string(a);
        names.emplace_back(a);
      }
      throw SpecError(join(path, key),
                      "unknown key `" + key + "`" + did_you_mean(key, names) +
                          " (expected one of: " + list + ")");
    }
  }
}

const JsonNode& required(const JsonNode& obj, const std::string& path, const char* key) {
  const JsonNode* n = obj.find(key);
  if (n == nullptr) throw SpecError(path, std::string("missing `") + key + "`");
  return *n;
}

std::string get_string(const JsonNode& obj,
                       const std::string& path,
                       const char* key,
                       std::string fallback) {
  const JsonNode* n = obj.find(key);
  if (n == nullptr) return fallback;
  expect_kind(*n, JsonNode::Kind::string, join(path, key));
  return n->text;
}

bool get_bool(const JsonNode& obj, const std::string& path, const char* key, bool fallback) {
  const JsonNode* n = obj.find(key);
  if (n == nullptr) return fallback;
  expect_kind(*n, JsonNode::Kind::boolean, join(path, key));
  return n->boolean;
}

std::int64_t get_count(const JsonNode& n, const std::string& path) {
  if (n.kind != JsonNode::Kind::number || !n.integral)
    throw SpecError(path,
                    "expected a whole number, found " +
                        (n.kind == JsonNode::Kind::number ? "`" + n.text + "`" : describe(n)));
  try {
    const long long v = std::stoll(n.text);
    if (v < 0) throw SpecError(path, "must not be negative, got " + n.text);
    return v;
  } catch (const std::out_of_range&) {
    throw SpecError(path, "`" + n.text + "` is out of range");
  }
}

// A number given as a JSON number (exact text) or a decimal string.
Decimal get_decimal(const JsonNode& n, const std::string& path) {
  if (n.kind != JsonNode::Kind::number && n.kind != JsonNode::Kind::string)
    throw SpecError(path, "expected a number, found " + describe(n));
  std::string err;
  auto d = Decimal::parse(n.text, &err);
  if (!d) throw SpecError(path, "`" + n.text + "`: " + err);
  return *d;
}

}  // namespace clampai::kernel::jsonio
