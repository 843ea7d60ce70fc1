// The trace file's fast path (a line read without a JSON tree, hashed as read, two lines at a
// time with the SHA extensions) against the general path alone: whatever is done to a trace
// file (a byte changed, inserted or deleted anywhere, keys reordered or duplicated, whitespace,
// numbers and escapes written another way, a wrong `prev`, lines moved, a torn last line), with
// the line's hash made right again and the chain after it relinked, so that only the reading
// can tell, `verify_trace_file` gives exactly the verdict of a reference that parses every line
// as JSON, requires it to serialise back to itself and checks the chain on the parsed entries.
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

#include "clampai/kernel/digest.hpp"
#include "digest_pair.hpp"
#include "support.hpp"
#include "trace_codec.hpp"

using namespace clampai::kernel;
using clampai::test::lines_of;

namespace {

constexpr std::string_view kHashKey = ",\"hash\":\"";
constexpr std::string_view kPrevKey = ",\"prev\":\"";

// A trace with every kind of value and entry: strings with escapes and text outside ASCII, a
// string longer than the fast reader's line map, decimals, lists, negative integers, an
// optional variable deleted (null), booleans, parameters, rejections with reasons, a monitoring
// warning, a rollback and the seal.
std::vector<std::string> varied_trace() {
  // The long string: past 4096 bytes, where the fast reader's map of quotes ends.
  std::string spec = R"J({"variables": {
      "n": {"type": "int", "initial": 0, "min": -50, "max": 30},
      "cash": {"type": "decimal", "scale": 2, "initial": 10},
      "log": {"type": "list", "element": "int", "initial": []},
      "flag": {"type": "bool", "initial": false},
      "note": {"type": "string", "initial": "x"},
      "m": {"type": "int", "initial": 0},
      "ticket": {"type": "int", "optional": true, "initial": 7}},
    "actions": [
      {"id": "add", "cost": 1, "reversible": true, "parameters": {"k": {"type": "int", "min": -9, "max": 9, "default": 1}},
       "effects": [{"variable": "n", "mode": "increment", "value": "k"},
                   {"variable": "log", "mode": "append", "value": "k"},
                   {"variable": "cash", "mode": "decrement", "value": 0.25}]},
      {"id": "sub", "cost": 1, "effects": [{"variable": "n", "mode": "decrement", "value": 3},
                                           {"variable": "flag", "mode": "set", "value": true}]},
      {"id": "two", "cost": 1, "parameters": {"a": {"type": "int", "min": -9, "max": 9}, "b": {"type": "int", "min": -9, "max": 9}},
       "effects": [{"variable": "m", "mode": "increment", "value": "a"},
                   {"variable": "cash", "mode": "increment", "value": 0.5},
                   {"variable": "flag", "mode": "set", "value": "b > 0"}]},
      {"id": "one", "cost": 1, "parameters": {"a": {"type": "int", "min": -9, "max": 9}, "b": {"type": "int", "min": -9, "max": 9}},
       "effects": [{"variable": "m", "mode": "set", "value": "a + b"}]},
      {"id": "drop", "cost": 1, "effects": [{"variable": "ticket", "mode": "delete"}]},
      {"id": "long", "cost": 1, "effects": [{"variable": "note", "mode": "set", "value": "'LONG'"}]},
      {"id": "odd", "cost": 1, "effects": [{"variable": "note", "mode": "set", "value": "'q\"b\\\\s\tcaf\u00e9'"}]}],
    "invariants": [{"name": "cap", "check": "n <= 8",
                    "description": "say \"no\" \\ twice\nthen\u0001stop: caf\u00e9"},
                   {"name": "watch", "check": "n <= 2", "enforcement": "monitoring",
                    "description": "plain words"}],
    "budget": {"total": 100, "min_action_cost": 1}})J";
  spec.replace(spec.find("LONG"), 4, std::string(4200, 'L'));
  const std::string path = clampai::test::temp_file("varied.jsonl");
  {
    KernelOptions options = clampai::test::fixed_clock();
    options.writer = std::make_shared<TraceWriter>(path, FlushPolicy::buffered);
    options.record_rejections = true;
    SafetyKernel kernel(load_spec(spec), options);
    for (int i = 0; i < 3; ++i)  // the fast reader's shape: no lists, no warnings
      (void)kernel.execute("two", {{"a", Value::integer(i - 1)}, {"b", Value::integer(1 - i)}});
    (void)kernel.execute("one", {{"a", Value::integer(2)}, {"b", Value::integer(3)}});
    for (int i = 0; i < 6; ++i) {
      const Outcome o = kernel.execute("add", {{"k", Value::integer(i % 3 == 2 ? -2 : i)}});
      if (i == 2 && o.receipt) (void)kernel.rollback(*o.receipt);
    }
    (void)kernel.execute("sub", {});
    (void)kernel.execute("drop", {});
    (void)kernel.execute("long", {});
    (void)kernel.execute("odd", {});
    for (int i = 0; i < 4; ++i)
      (void)kernel.execute("add", {{"k", Value::integer(9)}});  // rejected
    for (int i = 0; i < 3; ++i) (void)kernel.execute("add", {{"k", Value::integer(-1)}});
    kernel.seal();
  }
  std::vector<std::string> lines = lines_of(path);
  std::remove(path.c_str());
  return lines;
}

// The `hash` member's 64 digits in `line`, or npos.
std::size_t hash_digits(const std::string& line) {
  const std::size_t at = line.find(kHashKey);
  if (at == std::string::npos || line.size() < at + kHashKey.size() + 65 ||
      line[at + kHashKey.size() + 64] != '"')
    return std::string::npos;
  return at + kHashKey.size();
}

// Makes the `hash` member of `line` (if it has one of 64 digits) the SHA-256 of the rest.
void rehash(std::string& line) {
  const std::size_t digits = hash_digits(line);
  if (digits == std::string::npos) return;
  const std::size_t member = digits - kHashKey.size();
  const std::string rest = line.substr(0, member) + line.substr(digits + 65);
  line.replace(digits, 64, sha256_hex(rest));
}

// Relinks the lines after `from`: each `prev` (of 64 digits) the hash of the line before, each
// hash made right again, so that the chain holds wherever the lines still have the members.
void relink(std::vector<std::string>& lines, std::size_t from) {
  for (std::size_t i = from + 1; i < lines.size(); ++i) {
    const std::size_t before = hash_digits(lines[i - 1]);
    const std::size_t prev = lines[i].find(kPrevKey);
    if (before == std::string::npos || prev == std::string::npos ||
        lines[i].size() < prev + kPrevKey.size() + 64)
      return;
    lines[i].replace(prev + kPrevKey.size(), 64, lines[i - 1].substr(before, 64));
    rehash(lines[i]);
  }
}

// What `verify_trace_file` must say of the file `text` (at `path`), through the general path
// only: every line parsed as JSON and serialised back to itself, the chain checked on the
// parsed entries (which recomputes every hash by serialising).
TraceCheck reference(const std::string& text, const std::string& path, bool allow_unsealed) {
  const std::size_t last_newline = text.rfind('\n');
  const std::size_t intact = last_newline == std::string::npos ? 0 : last_newline + 1;
  const bool torn = intact != text.size();
  std::vector<std::string> lines;
  for (std::size_t at = 0; at < intact;) {
    const std::size_t nl = text.find('\n', at);
    lines.push_back(text.substr(at, nl - at));
    at = nl + 1;
  }
  std::vector<TraceEntry> entries;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    std::string problem;
    try {
      entries.push_back(detail::entry_from_line(lines[i], path));
      if (entries.back().to_json_line() != lines[i])
        problem = "not in canonical form: the line was changed";
    } catch (const clampai::Error& e) {
      problem = e.what();
    }
    if (!problem.empty()) {
      TraceCheck check;
      check.entries = lines.size();
      check.first_bad = i;
      check.message =
          "entry " + std::to_string(i) + " (line " + std::to_string(i + 1) + "): " + problem;
      return check;
    }
  }
  TraceCheck check = verify_chain(entries, allow_unsealed || torn);
  if (!torn || (!lines.empty() && !check.ok)) return check;
  check.ok = false;
  check.entries = lines.size();
  check.first_bad = lines.size();
  check.truncated_tail = true;
  check.verified_bytes = intact;
  check.message = "truncated tail after " + std::to_string(lines.size()) + " verified entries";
  return check;
}

void write_text(const std::string& path, const std::string& text) {
  std::remove(path.c_str());  // not truncated: ext4 would flush the file to disk when closed
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string text;
  for (const auto& l : lines) text += l + '\n';
  return text;
}

// `verify_trace_file` on `text` gives the reference's verdict.
void same_as_reference(const std::string& path, const std::string& text, bool allow_unsealed) {
  write_text(path, text);
  const TraceCheck want = reference(text, path, allow_unsealed);
  const TraceCheck got = verify_trace_file(path, allow_unsealed);
  INFO("reference: " << want.message << "\nfile: " << got.message);
  REQUIRE(got.ok == want.ok);
  REQUIRE(got.entries == want.entries);
  REQUIRE(got.first_bad == want.first_bad);
  REQUIRE(got.sealed == want.sealed);
  REQUIRE(got.truncated_tail == want.truncated_tail);
  REQUIRE(got.verified_bytes == want.verified_bytes);
  if (got.truncated_tail) {
    REQUIRE_THAT(got.message, Catch::StartsWith(want.message));
  } else {
    REQUIRE(got.message == want.message);
  }
}

// Swaps the top-level members `a` and `b` (keys with their quotes, e.g. "\"cost\"") of `line`.
bool swap_members(std::string& line, const std::string& a, const std::string& b) {
  const std::size_t at_a = line.find("," + a + ":");
  const std::size_t at_b = line.find("," + b + ":");
  if (at_a == std::string::npos || at_b == std::string::npos || at_a > at_b) return false;
  const std::size_t end_a = line.find(",\"", at_a + 1);
  const std::size_t end_b = line.find(",\"", at_b + 1);
  if (end_a != at_b || end_b == std::string::npos) return false;
  const std::string member_a = line.substr(at_a, end_a - at_a);
  const std::string member_b = line.substr(at_b, end_b - at_b);
  line.replace(at_a, end_b - at_a, member_b + member_a);
  return true;
}

}  // namespace

TEST_CASE("SHA-256 two messages at a time agrees with OpenSSL", "[kernel][trace]") {
  std::mt19937_64 rng(2026);
  std::string bytes(1400, '\0');
  for (auto& c : bytes) c = static_cast<char>(rng());
  for (std::size_t n = 0; n <= 700; ++n) {
    const std::size_t other_n = (n * 7 + 13) % 701;
    for (const std::size_t cut :
         {std::size_t{0}, n / 2, n, static_cast<std::size_t>(rng() % (n + 1))}) {
      const std::string_view a(bytes.data(), n);
      const std::string_view b(bytes.data() + 700, other_n);
      const std::size_t other_cut = other_n - other_n / 3;
      const detail::SplitMessage ma{a.substr(0, cut), a.substr(cut)};
      const detail::SplitMessage mb{b.substr(0, other_cut), b.substr(other_cut)};
      unsigned char da[32];
      unsigned char db[32];
      unsigned char one[32];
      detail::sha256_two(ma, mb, da, db);
      detail::sha256_one(ma, one);
      const std::string want_a = sha256_hex(a);
      const std::string want_b = sha256_hex(b);
      INFO("sizes " << n << " (cut at " << cut << "), " << other_n);
      REQUIRE(detail::digest_is_hex(da, want_a));
      REQUIRE(detail::digest_is_hex(db, want_b));
      REQUIRE(detail::digest_is_hex(one, want_a));
    }
  }
  // The comparison with the hex text: every digit matters, lowercase only, 64 digits exactly.
  const std::string text = "the quick brown fox";
  const detail::SplitMessage m{text, {}};
  unsigned char d[32];
  detail::sha256_one(m, d);
  const std::string hex = sha256_hex(text);
  REQUIRE(detail::digest_is_hex(d, hex));
  for (std::size_t i = 0; i < 64; ++i) {
    for (const char c : std::string("0123456789abcdefABCDEFg \"")) {
      if (c == hex[i]) continue;
      std::string other = hex;
      other[i] = c;
      REQUIRE_FALSE(detail::digest_is_hex(d, other));
    }
  }
  REQUIRE_FALSE(detail::digest_is_hex(d, hex.substr(0, 63)));
  REQUIRE_FALSE(detail::digest_is_hex(d, hex + "0"));
  REQUIRE_FALSE(detail::digest_is_hex(d, ""));
}

TEST_CASE("Trace file fast path: rejects exactly what the general path rejects",
          "[kernel][trace]") {
  const std::vector<std::string> lines = varied_trace();
  REQUIRE(lines.size() >= 20);
  const std::string path = clampai::test::temp_file("fast.jsonl");
  same_as_reference(path, joined(lines), false);
  REQUIRE(verify_trace_file(path).ok);
  // The trace has what the test needs: a line longer than the fast reader's map, text outside
  // ASCII and escapes, lists, null, negative integers, reasons.
  bool long_line = false;
  bool escapes = false;
  bool null_value = false;
  bool negative = false;
  bool reasons = false;
  for (const auto& l : lines) {
    long_line = long_line || l.size() > 4096;
    escapes = escapes || l.find("\\\"") != std::string::npos;
    null_value = null_value || l.find(":null") != std::string::npos;
    negative = negative || l.find(":-") != std::string::npos;
    reasons = reasons || l.find("\"reasons\":[{") != std::string::npos;
  }
  REQUIRE(long_line);
  REQUIRE(escapes);
  REQUIRE(null_value);
  REQUIRE(negative);
  REQUIRE(reasons);

  const std::string structural = "\"\\,:{}[]0123456789-+.eE ntfu\t";
  std::mt19937_64 rng(16);
  auto pick = [&](std::size_t n) { return static_cast<std::size_t>(rng() % n); };
  for (int round = 0; round < 3000; ++round) {
    std::vector<std::string> changed = lines;
    const std::size_t k = pick(lines.size());
    std::string& l = changed[k];
    const int what = static_cast<int>(pick(14));
    INFO("round " << round << ", line " << k << ", change " << what);
    switch (what) {
      case 0:  // any byte to any value
        l[pick(l.size())] = static_cast<char>(rng());
        break;
      case 1:  // a byte to a character that matters to JSON
        l[pick(l.size())] = structural[pick(structural.size())];
        break;
      case 2:  // a byte deleted
        l.erase(pick(l.size()), 1);
        break;
      case 3:  // a byte inserted
        l.insert(pick(l.size() + 1), 1, structural[pick(structural.size())]);
        break;
      case 4: {  // whitespace where JSON allows it
        const std::size_t at = l.find_first_of(",:{}[", pick(l.size()));
        l.insert(at == std::string::npos ? l.size() : at + 1, pick(2) == 0 ? " " : "\n ");
        break;
      }
      case 5: {  // a member twice (a duplicate key)
        const std::size_t at = l.find(",\"", pick(l.size()));
        if (at == std::string::npos) break;
        const std::size_t end = l.find(",\"", at + 1);
        if (end == std::string::npos) break;
        l.insert(end, l.substr(at, end - at));
        break;
      }
      case 6: {  // two members in the other order
        static const char* const kKeys[] = {"\"action\"",
                                            "\"changes\"",
                                            "\"cost\"",
                                            "\"emergency\"",
                                            "\"emergency_steps\"",
                                            "\"gross\"",
                                            "\"hash\"",
                                            "\"kind\"",
                                            "\"net\"",
                                            "\"params\"",
                                            "\"prev\"",
                                            "\"reasons\"",
                                            "\"seq\"",
                                            "\"spec\"",
                                            "\"state\"",
                                            "\"step\"",
                                            "\"time\"",
                                            "\"warnings\""};
        const std::size_t i = 1 + pick(std::size(kKeys) - 2);
        (void)swap_members(l, kKeys[i], kKeys[i + 1]);
        break;
      }
      case 7: {  // keys of a changes or params object in the other order
        const std::size_t open = l.find(pick(2) == 0 ? "\"changes\":{\"" : "\"params\":{\"");
        if (open == std::string::npos) break;
        const std::size_t first = l.find('{', open) + 1;
        const std::size_t comma = l.find(",\"", first);
        const std::size_t close = l.find('}', first);
        if (comma == std::string::npos || comma > close) break;
        std::string second = l.substr(comma + 1, close - comma - 1);
        if (second.find(",\"") != std::string::npos) second = second.substr(0, second.find(",\""));
        const std::string one = l.substr(first, comma - first);
        l.replace(first, comma + 1 + second.size() - first, second + "," + one);
        break;
      }
      case 8: {  // a wrong `prev`: another line's hash, or the right one in capitals
        const std::size_t prev = l.find(kPrevKey);
        if (prev == std::string::npos) break;
        std::string digits = l.substr(prev + kPrevKey.size(), 64);
        if (pick(2) == 0) {
          const std::string& other = lines[pick(lines.size())];
          digits = other.substr(hash_digits(other), 64);
        } else {
          for (auto& c : digits) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
        }
        l.replace(prev + kPrevKey.size(), 64, digits);
        break;
      }
      case 9: {  // a number written another way
        static const char* const kForms[] = {"0", "-0", "+", ".0", "e0", "E+1", "00"};
        const std::size_t at = l.find_first_of("0123456789", pick(l.size()));
        if (at == std::string::npos) break;
        const std::string form = kForms[pick(std::size(kForms))];
        if (form == "+" || form == "-0" || form == "00") {
          l.insert(at, form == "-0" ? "-" : form == "00" ? "0" : "+");
        } else {
          std::size_t end = at;
          while (end < l.size() && std::isdigit(static_cast<unsigned char>(l[end]))) ++end;
          l.insert(end, form);
        }
        break;
      }
      case 10: {  // a character escaped (\u0061 for `a`, \/ for `/`, \u00e9 for é)
        const std::size_t at = l.find_first_of("aeio/", pick(l.size()));
        if (at == std::string::npos) break;
        const char c = l[at];
        l.replace(at,
                  1,
                  c == '/' ? std::string("\\/")
                           : "\\u00" + std::string(c == 'a'   ? "61"
                                                   : c == 'e' ? "65"
                                                   : c == 'i' ? "69"
                                                              : "6f"));
        break;
      }
      case 11:  // the line cut short
        l.resize(pick(l.size()));
        break;
      case 12: {  // lines moved, deleted or repeated
        const std::size_t other = pick(changed.size());
        const int how = static_cast<int>(pick(3));
        if (how == 0) {
          std::swap(changed[k], changed[other]);
        } else if (how == 1) {
          changed.erase(changed.begin() + static_cast<std::ptrdiff_t>(k));
        } else {
          changed.insert(changed.begin() + static_cast<std::ptrdiff_t>(k), changed[other]);
        }
        break;
      }
      default:  // the value of a counter (kept canonical): the hash or the chain must tell
        if (const std::size_t at = l.find("\"time\":"); at != std::string::npos)
          l[at + 8] = l[at + 8] == '1' ? '2' : '1';
        break;
    }
    if (what != 12 && pick(4) != 0) {
      rehash(changed[k]);  // only the reading (or the chain) can tell now
      if (pick(2) != 0) relink(changed, k);
    }
    std::string text = joined(changed);
    if (pick(20) == 0)
      text.resize(text.size() - 1 - pick(std::min<std::size_t>(40, text.size() - 1)));
    same_as_reference(path, text, pick(2) == 0);
  }
  std::remove(path.c_str());
}

TEST_CASE("Trace file fast path: lines canonical but unusual take the general path",
          "[kernel][trace]") {
  const std::vector<std::string> lines = varied_trace();
  const std::string path = clampai::test::temp_file("unusual.jsonl");
  // Every line at every length around the map's word and block boundaries: a line padded by a
  // string of its own (an action name) of 0 to 200 bytes, hashed right and relinked.
  for (std::size_t pad = 0; pad <= 200; ++pad) {
    std::vector<std::string> changed = lines;
    for (std::size_t k = 1; k + 1 < changed.size(); ++k) {
      std::string& l = changed[k];
      const std::size_t at = l.find("{\"action\":\"") + 11;
      l.insert(at, std::string(pad, 'p'));
      rehash(l);
    }
    relink(changed, 0);
    same_as_reference(path, joined(changed), false);
    REQUIRE(verify_trace_file(path).ok);
  }
  std::remove(path.c_str());
}

namespace {

// A JSON string (quote to quote) or a number (a run of digits and signs) in a line.
struct Token {
  std::size_t at = 0;
  std::size_t size = 0;
  bool string = false;
};

// The members of the object that starts at `open` (its `{`): where each begins and ends.
std::vector<std::pair<std::size_t, std::size_t>> members_of(const std::string& l,
                                                            std::size_t open) {
  std::vector<std::pair<std::size_t, std::size_t>> out;
  int depth = 0;
  std::size_t from = open + 1;
  for (std::size_t i = open; i < l.size(); ++i) {
    const char c = l[i];
    if (c == '"') {
      for (++i; i < l.size() && l[i] != '"';) i += l[i] == '\\' ? 2 : 1;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if ((c == '}' || c == ']') && --depth == 0) {
      if (i > from) out.emplace_back(from, i);
      return out;
    } else if (c == ',' && depth == 1) {
      out.emplace_back(from, i);
      from = i + 1;
    }
  }
  return out;
}

std::vector<Token> tokens_of(const std::string& l) {
  std::vector<Token> out;
  for (std::size_t i = 0; i < l.size();) {
    if (l[i] == '"') {
      std::size_t j = i + 1;
      while (j < l.size() && l[j] != '"') j += l[j] == '\\' ? 2 : 1;
      out.push_back({i, j + 1 - i, true});
      i = j + 1;
    } else if (std::isdigit(static_cast<unsigned char>(l[i])) || l[i] == '-') {
      std::size_t j = i;
      while (j < l.size() && (std::isdigit(static_cast<unsigned char>(l[j])) || l[j] == '-')) ++j;
      out.push_back({i, j - i, false});
      i = j;
    } else {
      ++i;
    }
  }
  return out;
}

}  // namespace

TEST_CASE("Trace file fast path: every number, string and separator of a line written otherwise",
          "[kernel][trace]") {
  const std::vector<std::string> lines = varied_trace();
  const std::string path = clampai::test::temp_file("edits.jsonl");
  // A line of each shape: the genesis, executed entries (one with a list and a negative
  // number, one with null, one with a string full of escapes and one longer than the map), a
  // rejection with reasons, a rollback, the seal.
  std::vector<std::size_t> chosen;
  auto choose = [&](const std::string& needle) {
    for (std::size_t k = 0; k < lines.size(); ++k) {
      if (lines[k].find(needle) != std::string::npos &&
          std::find(chosen.begin(), chosen.end(), k) == chosen.end()) {
        chosen.push_back(k);
        return;
      }
    }
    FAIL("no line has " << needle);
  };
  choose("\"kind\":\"genesis\"");
  choose(":-");
  choose(":null");
  choose("\\\\s\\tcaf");
  choose("LLLL");
  choose("\"kind\":\"rejected\"");
  choose("\"kind\":\"rolled_back\"");
  choose("\"kind\":\"sealed\"");
  choose("\"kind\":\"executed\"");
  choose("\"params\":{\"a\":");
  choose("[0,1,");
  choose("\"action\":\"one\"");

  static const char* const kNumbers[] = {"-0",
                                         "0",
                                         "00",
                                         "9007199254740991",
                                         "9007199254740992",
                                         "-9007199254740991",
                                         "-9007199254740992",
                                         "999999999999999",
                                         "1000000000000000",
                                         "9223372036854775807",
                                         "9223372036854775808",
                                         "-9223372036854775808",
                                         "-9223372036854775809",
                                         "999999999999999999",
                                         "1000000000000000000",
                                         "9999999999999999999",
                                         "10000000000000000000",
                                         "18446744073709551615",
                                         "18446744073709551616",
                                         "1.5",
                                         "null",
                                         "true",
                                         "false",
                                         "t",
                                         "f",
                                         "n",
                                         "nul",
                                         "tru",
                                         "fals",
                                         "truex"};
  static const char* const kInString[] = {
      "\\u0061", "\\/", "\\u001f", "\x1f", "\xc3\xa9", "\xff", "\\\"", "\\n", "\\u000a", " "};
  static const char* const kKinds[] = {
      "executed",    "rejected", "attested",  "sealed",  "genesis", "rolled_back",
      "Executed",    "execute",  "executedx", "sealed ", "",        "unheard_of",
      "executeX",    "rejecteX", "attesteX",  "sealeX",  "genesiX", "rolled_bacX",
      "rolled-back", "xxxxxxxx"};
  std::size_t tried = 0;
  // The trace up to the line after the changed one (unsealed, unless the seal is changed).
  auto attempt = [&](std::size_t k, std::string line) {
    std::vector<std::string> changed(
        lines.begin(), lines.begin() + static_cast<std::ptrdiff_t>(std::min(k + 2, lines.size())));
    changed[k] = std::move(line);
    rehash(changed[k]);
    relink(changed, k);
    same_as_reference(path, joined(changed), true);
    ++tried;
  };
  for (const std::size_t k : chosen) {
    const std::string& l = lines[k];
    INFO("line " << k << ": " << l.substr(0, 200));
    for (const Token& t : tokens_of(l)) {
      const std::string text = l.substr(t.at, t.size);
      auto replaced = [&](const std::string& with) {
        std::string c = l;
        c.replace(t.at, t.size, with);
        return c;
      };
      if (!t.string) {
        for (const std::string& form : {"-" + text,
                                        "0" + text,
                                        "+" + text,
                                        text + ".0",
                                        text + "e0",
                                        text + "E+0",
                                        " " + text,
                                        text + " "})
          attempt(k, replaced(form));
        for (const char* n : kNumbers) attempt(k, replaced(n));
        continue;
      }
      const std::string content = text.substr(1, text.size() - 2);
      for (const char* s : kInString) attempt(k, replaced("\"" + std::string(s) + content + "\""));
      attempt(k, replaced("\"" + content + "\\\""));  // a backslash before the closing quote
      std::string upper = content;
      for (auto& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      attempt(k, replaced("\"" + upper + "\""));
      attempt(k, replaced("\"" + content + "x\""));
      attempt(k, replaced("\"\""));
      attempt(k, replaced(content));
      if (l.compare(t.at > 7 ? t.at - 7 : 0, 7, "\"kind\":") == 0) {
        for (const char* kind : kKinds) attempt(k, replaced("\"" + std::string(kind) + "\""));
      }
    }
    // Every separator: whitespace after it, deleted, doubled.
    for (std::size_t i = 0; i < l.size(); ++i) {
      if (std::string_view(",:{}[]").find(l[i]) == std::string_view::npos) continue;
      attempt(k, l.substr(0, i + 1) + " " + l.substr(i + 1));
      attempt(k, l.substr(0, i) + l.substr(i + 1));
      attempt(k, l.substr(0, i + 1) + l.substr(i));
    }
    // The members of `changes` and `params`: each twice, each pair of neighbours swapped.
    for (const char* object : {"\"changes\":{", "\"params\":{"}) {
      const auto members = members_of(l, l.find(object) + std::strlen(object) - 1);
      for (std::size_t m = 0; m < members.size(); ++m) {
        const auto [from, to] = members[m];
        attempt(k, l.substr(0, to) + "," + l.substr(from, to - from) + l.substr(to));
        if (m + 1 == members.size()) continue;
        const auto [next_from, next_to] = members[m + 1];
        attempt(k,
                l.substr(0, from) + l.substr(next_from, next_to - next_from) + "," +
                    l.substr(from, to - from) + l.substr(next_to));
      }
    }
    // Members: each twice, each pair of neighbours swapped.
    for (std::size_t at = l.find(",\""); at != std::string::npos; at = l.find(",\"", at + 1)) {
      const std::size_t end = l.find(",\"", at + 1);
      if (end == std::string::npos) break;
      attempt(k, l.substr(0, end) + l.substr(at, end - at) + l.substr(end));
      const std::size_t after = l.find(",\"", end + 1);
      if (after == std::string::npos) continue;
      attempt(
          k,
          l.substr(0, at) + l.substr(end, after - end) + l.substr(at, end - at) + l.substr(after));
    }
  }
  CHECK(tried > 3000);
  std::remove(path.c_str());
}

// The kept lines' verification (SafetyKernel::verify_trace) hashes two lines at a time in
// pieces of 512 on several threads: a changed byte is found in any line, first or last of a
// piece, of a pair or alone, and the first bad entry is the one reported.
TEST_CASE("Stored lines: a changed line is found wherever it sits", "[trace][fast-path]") {
  const auto model = load_spec(R"J({"variables": {"n": {"type": "int", "initial": 0}},
    "actions": [{"id": "inc", "cost": 1, "effects": [{"variable": "n", "mode": "increment", "value": 1}]}],
    "budget": {"total": 100000, "min_action_cost": 1}})J");
  SafetyKernel kernel(model);
  for (int i = 0; i < 1299; ++i) REQUIRE(kernel.execute("inc").decision.approved);
  kernel.seal();  // 1,301 lines: the last piece's last line is hashed alone
  std::vector<std::string> texts;
  for (const TraceEntry& e : kernel.trace()) texts.push_back(e.to_json_line());
  REQUIRE(texts.size() == 1301);
  auto stored = [&](const std::vector<std::string>& t) {
    std::vector<detail::StoredLine> lines;
    for (std::size_t i = 0; i < t.size(); ++i) {
      const std::size_t hash_at = t[i].find(",\"hash\":\"");
      const std::size_t prev_at = t[i].find("\"prev\":\"") + 8;
      const EntryKind kind = i == 0              ? EntryKind::genesis
                             : i + 1 == t.size() ? EntryKind::sealed
                                                 : EntryKind::executed;
      lines.push_back(
          {t[i], static_cast<std::uint32_t>(hash_at), static_cast<std::uint32_t>(prev_at), kind});
    }
    return lines;
  };
  REQUIRE(detail::verify_stored_lines(stored(texts), 0, false).ok);
  for (const std::size_t bad : {std::size_t{0},
                                std::size_t{1},
                                std::size_t{2},
                                std::size_t{510},
                                std::size_t{511},
                                std::size_t{512},
                                std::size_t{513},
                                std::size_t{1024},
                                std::size_t{1299},
                                std::size_t{1300}}) {
    INFO("line " << bad);
    std::vector<std::string> changed = texts;
    const std::size_t at = changed[bad].find("\"time\":") + 7;  // a digit of the time
    changed[bad][at] = changed[bad][at] == '1' ? '2' : '1';
    const TraceCheck check = detail::verify_stored_lines(stored(changed), 0, false);
    CHECK_FALSE(check.ok);
    CHECK(check.first_bad == bad);
    CHECK(check.message.find("hash mismatch") != std::string::npos);
  }
}
