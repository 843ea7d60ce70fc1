// The wire form of the kernel's types: one JSON writer, and one encoder per type (a reason, a
// decision, a state, a budget), used by every front end: the CLI's `--format json`, `serve`,
// `mcp`, the agent report and the Python bindings' `to_dict()` / `to_json()`. The same decision
// reads the same through each (docs/ARCHITECTURE.md). Strings are escaped by the kernel's one
// escaper (`kernel::jsonio::append_json_string`); no third-party type appears here.
#pragma once

#include <concepts>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "clampai/kernel/budget.hpp"
#include "clampai/kernel/decision.hpp"
#include "clampai/kernel/model.hpp"
#include "clampai/kernel/pools.hpp"
#include "clampai/kernel/state.hpp"
#include "clampai/kernel/value.hpp"

namespace clampai::kernel::jsonio {
struct JsonNode;
}  // namespace clampai::kernel::jsonio

namespace clampai::report {

/// Writes one JSON document as plain text, in one of two layouts; commas between members and
/// items are placed for the caller. Strings are escaped by the kernel's one escaper as RFC 8259
/// requires, each invalid UTF-8 sequence (text echoed from a client, a file name) as one U+FFFD.
class JsonWriter {
 public:
  enum class Layout : std::uint8_t {
    /// The wire form (the server's responses, Python's `to_json()`): no whitespace, members in
    /// the order written.
    compact,
    /// The reports' form (`--format json` of every command): two spaces of indent per level,
    /// `"key": value`, `[]` and `{}` when empty, and each object's members sorted by the bytes
    /// of their keys whatever order they are written in (an object's keys must be unique).
    /// Byte for byte what nlohmann's `dump(2)` writes of the same document (tests/report).
    indented,
  };

  JsonWriter() = default;
  explicit JsonWriter(Layout layout) : layout_(layout) {}

  JsonWriter& begin_object();
  JsonWriter& end_object();
  JsonWriter& begin_array();
  JsonWriter& end_array();
  /// The key of the next member. Requires an open object.
  JsonWriter& key(std::string_view k);
  JsonWriter& value(std::string_view s);
  JsonWriter& value(const char* s) { return value(std::string_view(s)); }
  JsonWriter& value(const std::string& s) { return value(std::string_view(s)); }
  JsonWriter& value(bool b);
  template <std::integral T>
  requires(!std::same_as<T, bool> && !std::same_as<T, char>) JsonWriter& value(T i) {
    if constexpr (std::is_signed_v<T>) {
      return integer(static_cast<std::int64_t>(i));
    } else {
      return unsigned_integer(static_cast<std::uint64_t>(i));
    }
  }
  /// As the reports have always written a double: Grisu2's digits (they read back as `d`; the
  /// shortest in almost every case), laid out like `%g` with `.0` on a whole number (`0.5`,
  /// `1.0`, `1e-05`); NaN and infinities as null.
  JsonWriter& value(double d);
  JsonWriter& null();
  /// Inserts `json`, which must be one complete JSON value (as it is, not indented).
  JsonWriter& raw(std::string_view json);
  /// A kernel value: numbers as JSON integers (scale 0, within +-2^53) or exact decimal
  /// strings ("12.50"), undefined as null.
  JsonWriter& value(const kernel::Value& v);
  /// An array of `items`, each written by `value`.
  template <typename Range>
  JsonWriter& array_of(const Range& items) {
    begin_array();
    for (const auto& item : items) value(item);
    return end_array();
  }
  [[nodiscard]] std::string take() { return std::move(out_); }

 private:
  struct Member {
    std::string key;
    std::size_t begin;  // where its `"key": ` starts in out_
  };
  struct Frame {
    bool first = true;              // no member or item written yet
    std::vector<Member> members{};  // an indented object's, to sort at its end
  };
  JsonWriter& integer(std::int64_t i);
  JsonWriter& unsigned_integer(std::uint64_t u);
  void separate();
  void close(char bracket);
  void sort_members(const Frame& f);
  void write_node(const kernel::jsonio::JsonNode& n);
  std::string out_;
  std::vector<Frame> open_;  // one per open container
  bool after_key_ = false;
  Layout layout_ = Layout::compact;
};

/// `{"code", "subject", "message"}`.
void write_reason(JsonWriter& j, const kernel::Reason& reason);
/// `[{"code", "subject", "message"}...]`.
void write_reasons(JsonWriter& j, const std::vector<kernel::Reason>& reasons);
/// The members of a decision, in this order: `action`, `approved`, `cost` (decimal text at the
/// budget's scale), `emergency`, `reasons`, `warnings`, `changes` (variable name to the value it
/// would be written). For a caller that adds its own members to the object.
void write_decision_members(JsonWriter& j,
                            const kernel::TaskModel& model,
                            std::string_view action,
                            const kernel::Decision& d);
/// The decision as one object (`write_decision_members`, the action named by its id).
void write_decision(JsonWriter& j, const kernel::TaskModel& model, const kernel::Decision& d);
/// An object from variable name to value.
void write_state(JsonWriter& j, const kernel::State& s);
/// `{"total", "net", "gross", "remaining"}` as decimal text at the budget's scale.
void write_budget(JsonWriter& j, const kernel::TaskModel& model, const kernel::BudgetController& b);
/// Budget pools (`PoolTree::status`): `[{"name", "parent" (null for a root), "total", "net",
/// "gross", "remaining", "tasks"}...]`, amounts as decimal text at each pool's scale, parents
/// before their children.
void write_pools(JsonWriter& j, const std::vector<kernel::PoolStatus>& pools);
/// What one commit (rollback) charged (refunded) at each level of a task's pool, its own pool
/// first: `[{"pool", "amount", "net", "gross", "total", "refund"}...]`.
void write_pool_charges(JsonWriter& j, const std::vector<kernel::PoolCharge>& charges);

/// The decision as one compact JSON text (Python's `to_json()`).
std::string decision_json(const kernel::TaskModel& model, const kernel::Decision& d);
std::string pools_json(const std::vector<kernel::PoolStatus>& pools);

}  // namespace clampai::report
