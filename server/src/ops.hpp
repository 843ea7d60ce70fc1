// What the HTTP API and the MCP server both do with a task: read parameters, and answer the
// lookahead, repair, verify and status questions as JSON.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>

#include "clampai/kernel/json.hpp"
#include "clampai/kernel/safety_kernel.hpp"
#include "task.hpp"

namespace clampai::server {

/// Reads parameter values from `node` (an object whose members are JSON numbers, read exactly,
/// or strings holding decimals) into `out`. Returns what is wrong (naming `path.NAME`), or
/// nothing. A null `node` is no parameters.
std::optional<std::string> read_params(const kernel::jsonio::JsonNode* node,
                                       const std::string& path,
                                       kernel::ParamMap& out);

/// The ids of the model's actions, for did-you-mean.
std::vector<std::string> action_ids(const kernel::TaskModel& model);

/// `{"task", "state", "budget", "steps", "emergency_steps", "step_limit", "goal_reached",
/// "sealed", "trace_entries"}`.
std::string status_json(Task& task);

/// The lookahead report (schema/lookahead-report.schema.json) of `action` with `params` in the
/// task's current situation, `depth` steps ahead, the explicit engine with `timeout_ms`.
/// Requires `action` to be an action of the model.
std::string lookahead_json(Task& task,
                           std::string_view action,
                           const kernel::ParamMap& params,
                           unsigned depth,
                           std::uint32_t timeout_ms);

/// The proposal of `action` with `params` as given (defaults fill missing ones), not checked
/// against the parameters' bounds (moving them inside is a repair's work), or what is wrong: an
/// unknown parameter, a missing one without default. Requires `action` < the number of actions.
std::variant<kernel::Proposal, std::string> raw_proposal(const kernel::TaskModel& model,
                                                         std::size_t action,
                                                         const kernel::ParamMap& params);

/// The repair report (schema/repair-report.schema.json) of `action` with `params` in the
/// task's current situation, or what is wrong with the parameters (an unknown name, a missing
/// one without default). Requires `action` to be an action of the model.
std::variant<std::string, std::string> repair_json(Task& task,
                                                   std::size_t action,
                                                   const kernel::ParamMap& params,
                                                   std::uint32_t timeout_ms);

/// What to answer for a rejected proposal of `action` with `params`: a text for the model and
/// a JSON object of the decision's members (reason codes and messages) and
/// `closest_approved_params`, the parameters closest to `params` that the kernel approves in
/// `situation` (by repair, within `timeout_ms`), or null. `bindings` (parameter name to the text
/// that computed it: the gateway's binding expressions; may be empty) is added as `bindings` and
/// beside each value.
struct Rejection {
  std::string text;
  std::string structured;
};
Rejection rejection_result(const kernel::TaskModel& model,
                           const kernel::Situation& situation,
                           std::size_t action,
                           const kernel::ParamMap& params,
                           const kernel::Decision& decision,
                           const std::vector<std::pair<std::string, std::string>>& bindings,
                           std::uint32_t timeout_ms);

/// The tool result of an action `a` waiting for an approval as ticket `t` (docs/SERVE.md,
/// "Approvals"): not an error; structuredContent `{"action", "approved": false, "pending":
/// true, "ticket", "params", "request_sequence", "expires_at_us"}`.
std::string pending_result(const kernel::Action& a, const driver::Ticket& t);

/// The verify report (schema/verify-report.schema.json) of the task's model, computed once.
const std::string& verify_json(Task& task, std::uint32_t timeout_ms);

}  // namespace clampai::server
