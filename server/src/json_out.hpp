// A small streaming JSON writer for responses (the hot path builds text directly), and the
// JSON forms of the kernel's values, decisions and situations shared by the HTTP API and MCP.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "clampai/kernel/decision.hpp"
#include "clampai/kernel/model.hpp"
#include "clampai/kernel/safety_kernel.hpp"

namespace clampai::server {

/// Writes one JSON document; commas between members and items are placed for the caller.
class JsonOut {
 public:
  JsonOut& begin_object();
  JsonOut& end_object();
  JsonOut& begin_array();
  JsonOut& end_array();
  /// The key of the next member. Requires an open object.
  JsonOut& key(std::string_view k);
  JsonOut& value(std::string_view s);
  JsonOut& value(const char* s) { return value(std::string_view(s)); }
  JsonOut& value(const std::string& s) { return value(std::string_view(s)); }
  JsonOut& value(bool b);
  JsonOut& value(std::int64_t i);
  JsonOut& value(std::uint64_t u);
  JsonOut& null();
  /// Inserts `json`, which must be one complete JSON value.
  JsonOut& raw(std::string_view json);
  /// A kernel value: numbers as JSON integers or exact decimal strings, undefined as null.
  JsonOut& value(const kernel::Value& v);
  [[nodiscard]] std::string take() { return std::move(out_); }

 private:
  void separate();
  std::string out_;
  std::vector<bool> first_;  // one per open container: no member written yet
  bool after_key_ = false;
};

/// Appends `s` as a JSON string literal.
void append_json_string(std::string& out, std::string_view s);

/// `json` (one valid JSON document) without the white space between its tokens: one line, as
/// a message on MCP's stdio must be (white space inside strings is escaped, so kept as is).
std::string compact_json(std::string_view json);

/// `[{"code", "subject", "message"}...]`.
void write_reasons(JsonOut& j, const std::vector<kernel::Reason>& reasons);
/// The members of a decision: approved, action, cost, emergency, reasons, warnings, changes.
void write_decision_members(JsonOut& j,
                            const kernel::TaskModel& model,
                            std::string_view action,
                            const kernel::Decision& d);
/// An object from variable name to value.
void write_state(JsonOut& j, const kernel::State& s);
/// `{"total", "net", "gross", "remaining"}` as decimal text at the budget's scale.
void write_budget(JsonOut& j, const kernel::TaskModel& model, const kernel::BudgetController& b);

}  // namespace clampai::server
