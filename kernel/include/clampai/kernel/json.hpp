// JSON documents as ClampAI reads them: a DOM with exact number text and source positions,
// parsed with size and depth limits; RFC 8785 canonical serialization; helpers that read
// spec-like documents with errors naming the JSON path. Shared by the kernel's loaders and
// the composition layer (manifests, certificates); no third-party type appears here.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "clampai/kernel/file.hpp"
#include "clampai/kernel/number.hpp"
#include "clampai/kernel/type.hpp"
#include "clampai/kernel/value.hpp"

namespace clampai::kernel::jsonio {

/// A JSON value. Numbers keep their source text, so decimals are read exactly.
struct JsonNode {
  enum class Kind : std::uint8_t { null, boolean, number, string, array, object };
  Kind kind = Kind::null;
  bool boolean = false;
  bool integral = false;  // a number without fraction or exponent
  std::string text;       // string contents, or the number's source text
  std::vector<JsonNode> items;
  std::vector<std::pair<std::string, JsonNode>> members;  // in source order, keys unique
  std::uint32_t line = 0;
  std::uint32_t column = 0;

  // Declared here, defined in the .cpp: clang with libstdc++ cannot instantiate the implicit
  // ones of a type that holds `std::pair`s of itself.
  JsonNode();
  JsonNode(const JsonNode&);
  JsonNode(JsonNode&&) noexcept;
  JsonNode& operator=(const JsonNode&);
  JsonNode& operator=(JsonNode&&) noexcept;
  ~JsonNode();

  [[nodiscard]] const JsonNode* find(std::string_view key) const;
  static JsonNode make_string(std::string s);
  static JsonNode make_bool(bool b);
  static JsonNode make_integer(std::int64_t i);
  static JsonNode make_array();
  static JsonNode make_object();
  JsonNode& add(std::string key, JsonNode value);  // object member
  JsonNode& push(JsonNode value);                  // array item
};

/// Limits that keep hostile input from exhausting memory or the stack.
struct JsonLimits {
  std::size_t max_bytes = max_input_bytes();  // --max-input-bytes
  std::size_t max_depth = 64;
  std::size_t max_string = 64 * 1024;
};

/// Parses one JSON document.
/// @throws SpecError whose path is `line:column` (or the JSON path of the offending element)
/// for malformed JSON, a duplicate key, or a limit exceeded.
JsonNode parse_json(std::string_view text, const std::string& what, const JsonLimits& limits = {});

/// What can still be read of a text `parse_json` refused.
struct TopLevelMember {
  /// Whether the text is JSON all the same (refused for a duplicate key, a number beyond the
  /// fixed-point range, a limit) rather than malformed.
  bool is_json = false;
  /// The top-level object's member asked for, when it occurs there once with a value that is
  /// neither an array nor an object (a number beyond range reads as `0.0`).
  std::optional<JsonNode> value;
};

/// Reads the member `key` of the top-level object of `text`, tolerating what `parse_json`
/// refuses of valid JSON (so a refused message can be answered with its id). Takes time
/// linear in the text's size (the caller bounds it); builds no other node.
TopLevelMember find_top_level_member(std::string_view text, std::string_view key);

/// The kind of a node, for messages: `a number`, `an object`...
std::string describe(const JsonNode& n);

/// What the escaper does with bytes that are not valid UTF-8.
enum class InvalidUtf8 : std::uint8_t {
  keep,  ///< copied as they are (canonical trace lines: their strings were read as UTF-8)
  /// each invalid sequence (its maximal subpart, as Unicode recommends: `\xE2\x82` before
  /// an ASCII byte is one) becomes U+FFFD (text echoed from a client stays JSON)
  replace,
};
/// Appends `s` as a JSON string literal, escaped as RFC 8785 requires: the project's one
/// escaper (the trace's canonical lines, and every JSON the front ends write).
void append_json_string(std::string& out,
                        std::string_view s,
                        InvalidUtf8 invalid = InvalidUtf8::keep);
/// The same escaper in ASCII: every character outside printable ASCII (DEL included) as
/// `\uXXXX`, in UTF-16 code units (a surrogate pair above U+FFFF), as Python's `json.dumps`
/// writes by default. Returns false, `out` unchanged, if `s` is not valid UTF-8.
bool append_json_string_ascii(std::string& out, std::string_view s);
/// Appends the RFC 8785 canonical form of `n` (keys sorted by UTF-16 code units, no whitespace;
/// a number as the double it reads as, written as ECMAScript writes it: `1E2` is `100`, `-0`
/// is `0`, `1e-7` is `1e-7`). Returns false (leaving `out` partly written) for a number beyond
/// the range of a double.
bool append_canonical(std::string& out, const JsonNode& n);

/// A value as JSON: numbers with scale 0 within +-2^53 as integers, other numbers as decimal
/// strings ("12.50"), undefined as null.
JsonNode value_to_json(const Value& v);

/// Reads a value of `type`: numbers as JSON numbers (exact text) or decimal strings, null for
/// undefined. Returns false with `error` set when the JSON does not fit the type; the scale of
/// a number is not compared with the type's here.
bool value_from_json(const JsonNode& j, const Type& type, Value& out, std::string& error);

// ---- reading spec-like documents: every error names the JSON path ----

/// `path.key` (or `key` at the root).
std::string join(const std::string& path, const std::string& key);
/// `path[i]`.
std::string at_index(const std::string& path, std::size_t i);
/// @throws SpecError at `path` unless `n` is of `kind`.
void expect_kind(const JsonNode& n, JsonNode::Kind kind, const std::string& path);
/// Rejects keys not in `allowed`, so that a typo is an error rather than a silently ignored key.
void allow_keys(const JsonNode& obj,
                const std::string& path,
                std::initializer_list<std::string_view> allowed);
/// The member `key` of `obj`. @throws SpecError if it is missing.
const JsonNode& required(const JsonNode& obj, const std::string& path, const char* key);
/// The string member `key`, or `fallback` when absent. @throws SpecError if not a string.
std::string get_string(const JsonNode& obj,
                       const std::string& path,
                       const char* key,
                       std::string fallback = "");
/// A non-negative whole number.
std::int64_t get_count(const JsonNode& n, const std::string& path);
/// A number given as a JSON number (exact text) or a decimal string.
Decimal get_decimal(const JsonNode& n, const std::string& path);

}  // namespace clampai::kernel::jsonio
