// The wire form of the kernel's types: one JSON writer, and one encoder per type (a reason, a
// decision, a state, a budget), used by every front end: the CLI's `--format json`, `serve`,
// `mcp`, the agent report and the Python bindings' `to_dict()` / `to_json()`. The same decision
// reads the same through each (docs/ARCHITECTURE.md). Strings are escaped by the kernel's one
// escaper (`kernel::jsonio::append_json_string`); no third-party type appears here.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "clampai/kernel/budget.hpp"
#include "clampai/kernel/decision.hpp"
#include "clampai/kernel/model.hpp"
#include "clampai/kernel/pools.hpp"
#include "clampai/kernel/state.hpp"
#include "clampai/kernel/value.hpp"

namespace clampai::report {

/// Writes one JSON document as plain text (the hot path of the server builds responses with
/// it); commas between members and items are placed for the caller. Strings are escaped as
/// RFC 8259 requires, an invalid UTF-8 sequence (text echoed from a client) as U+FFFD.
class JsonWriter {
 public:
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
  JsonWriter& value(std::int64_t i);
  JsonWriter& value(std::uint64_t u);
  JsonWriter& null();
  /// Inserts `json`, which must be one complete JSON value.
  JsonWriter& raw(std::string_view json);
  /// A kernel value: numbers as JSON integers (scale 0, within +-2^53) or exact decimal
  /// strings ("12.50"), undefined as null.
  JsonWriter& value(const kernel::Value& v);
  [[nodiscard]] std::string take() { return std::move(out_); }

 private:
  void separate();
  std::string out_;
  std::vector<bool> first_;  // one per open container: no member written yet
  bool after_key_ = false;
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

/// The same forms as one JSON text each (for callers that embed them in a document of their
/// own, such as the reports written with another JSON library, and Python's `to_json()`).
std::string reasons_json(const std::vector<kernel::Reason>& reasons);
std::string decision_json(const kernel::TaskModel& model, const kernel::Decision& d);
std::string pools_json(const std::vector<kernel::PoolStatus>& pools);

}  // namespace clampai::report
