// The server's JSON: the one writer and the kernel types' one wire form (report/wire.hpp), and
// what only MCP needs.
#pragma once

#include <string>
#include <string_view>

#include "clampai/kernel/decision.hpp"
#include "clampai/kernel/json.hpp"
#include "clampai/kernel/model.hpp"
#include "clampai/report/wire.hpp"

namespace clampai::server {

using JsonOut = report::JsonWriter;
using report::write_budget;
using report::write_decision_members;
using report::write_reasons;
using report::write_state;

/// Appends `s` as a JSON string literal (the kernel's one escaper; invalid UTF-8, as a client
/// may send, becomes U+FFFD).
inline void append_json_string(std::string& out, std::string_view s) {
  kernel::jsonio::append_json_string(out, s, kernel::jsonio::InvalidUtf8::replace);
}

/// Shadow mode's members of an execute answer or an MCP tool result (docs/SERVE.md, "Shadow
/// mode"): `"enforced": false` and `"shadow"`, what the enforcing kernel would have answered
/// (the decision's members; `"pending": true` when it would have waited for an approval).
void write_shadow_members(JsonOut& j,
                          const kernel::TaskModel& m,
                          std::string_view id,
                          const kernel::Decision& would_be,
                          bool pending);

/// `json` (one valid JSON document) without the white space between its tokens: one line, as
/// a message on MCP's stdio must be (white space inside strings is escaped, so kept as is).
std::string compact_json(std::string_view json);

}  // namespace clampai::server
