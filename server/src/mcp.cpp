// `clampai mcp`: JSON-RPC 2.0 over stdio (one message a line), the MCP lifecycle and tools.
// Each action is a tool decided by the kernel; protocol faults are JSON-RPC errors, rejections
// are tool results with isError (modelcontextprotocol/servers shows the same split).
#include "clampai/server/mcp.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <istream>
#include <optional>
#include <ostream>
#include <sstream>
#include <string>

#include "clampai/kernel/error.hpp"
#include "clampai/kernel/json.hpp"
#include "clampai/kernel/suggest.hpp"
#include "clampai/verifier/repair.hpp"
#include "json_out.hpp"
#include "jsonrpc.hpp"
#include "ops.hpp"
#include "task.hpp"

namespace clampai::server {

namespace ck = clampai::kernel;
namespace cv = clampai::verifier;
using ck::jsonio::JsonNode;
using namespace jsonrpc;  // NOLINT(google-build-using-namespace)

namespace {

constexpr unsigned kMaxDepth = 8;             // of the lookahead tool
constexpr std::uint32_t kSolverMs = 5000;     // Z3's limit in repair
constexpr std::size_t kMaxMessage = 1 << 20;  // bytes of one message
constexpr std::string_view kBuiltins[] = {"status", "lookahead", "repair"};

void number_schema(JsonOut& j, const ck::Parameter& p) {
  j.begin_object().key("type").value(p.type.kind() == ck::Type::Kind::integer ? "integer"
                                                                              : "number");
  if (p.min) j.key("minimum").raw(p.min->to_string());
  if (p.max) j.key("maximum").raw(p.max->to_string());
  if (p.default_value) j.key("default").raw(p.default_value->to_string());
  j.end_object();
}

}  // namespace

struct McpSession::Impl {
  std::unique_ptr<Task> task;

  std::string tools_list() const {
    const ck::TaskModel& m = task->model();
    JsonOut j;
    j.begin_object().key("tools").begin_array();
    for (const ck::Action& a : m.actions) {
      j.begin_object().key("name").value(a.id).key("title").value(a.name.empty() ? a.id : a.name);
      j.key("description")
          .value((a.description.empty() ? a.name : a.description) +
                 " (decided by the ClampAI safety kernel: a rejected call changes nothing)");
      j.key("inputSchema").begin_object().key("type").value("object").key("properties");
      j.begin_object();
      for (const ck::Parameter& p : a.parameters) {
        j.key(p.name);
        number_schema(j, p);
      }
      j.end_object().key("required").begin_array();
      for (const ck::Parameter& p : a.parameters) {
        if (!p.default_value) j.value(p.name);
      }
      j.end_array().key("additionalProperties").value(false).end_object();
      j.key("annotations").begin_object().key("destructiveHint").value(!a.reversible);
      j.key("readOnlyHint").value(false).end_object();
      j.end_object();
    }
    const auto proposal_schema = [&](bool with_depth) {
      j.key("inputSchema").begin_object().key("type").value("object").key("properties");
      j.begin_object().key("action").begin_object().key("type").value("string").key("enum");
      j.begin_array();
      for (const ck::Action& a : m.actions) j.value(a.id);
      j.end_array().end_object();
      j.key("params").begin_object().key("type").value("object");
      j.key("additionalProperties").begin_object().key("type").value("number").end_object();
      j.end_object();
      if (with_depth) {
        j.key("depth").begin_object().key("type").value("integer").key("minimum").value(
            std::int64_t{0});
        j.key("maximum").value(std::int64_t{kMaxDepth}).key("default").value(std::int64_t{3});
        j.end_object();
      }
      j.end_object().key("required").begin_array().value("action").end_array();
      j.key("additionalProperties").value(false).end_object();
    };
    j.begin_object()
        .key("name")
        .value("status")
        .key("description")
        .value(
            "The task's state, budget (total, net, gross, remaining), steps and whether its goal "
            "is "
            "reached");
    j.key("inputSchema").begin_object().key("type").value("object").key("properties");
    j.begin_object().end_object().key("additionalProperties").value(false).end_object();
    j.key("annotations").begin_object().key("readOnlyHint").value(true).end_object();
    j.end_object();
    j.begin_object()
        .key("name")
        .value("lookahead")
        .key("description")
        .value(
            "Look `depth` steps ahead of an action without executing it: capture basins entered "
            "or reachable, dead ends, and the cheapest plan to the goal");
    proposal_schema(true);
    j.key("annotations").begin_object().key("readOnlyHint").value(true).end_object();
    j.end_object();
    j.begin_object()
        .key("name")
        .value("repair")
        .key("description")
        .value(
            "The parameter values closest to a proposed action's that the kernel approves now, "
            "with "
            "a certificate, or the constraints that conflict");
    proposal_schema(false);
    j.key("annotations").begin_object().key("readOnlyHint").value(true).end_object();
    j.end_object();
    j.end_array().end_object();
    return j.take();
  }

  // Reads an action's arguments: only declared parameters, each a number of its type.
  ck::ParamMap action_arguments(const ck::Action& a, const JsonNode* args) const {
    ck::ParamMap params;
    if (args == nullptr) return params;
    if (args->kind != JsonNode::Kind::object)
      throw RpcError{
          kInvalidParams,
          "tool `" + a.id + "`: arguments must be an object, not " + ck::jsonio::describe(*args)};
    for (const auto& [name, v] : args->members) {
      const auto p = std::find_if(a.parameters.begin(),
                                  a.parameters.end(),
                                  [&n = name](const ck::Parameter& q) { return q.name == n; });
      if (p == a.parameters.end()) {
        std::vector<std::string> names;
        for (const auto& q : a.parameters) names.push_back(q.name);
        throw RpcError{
            kInvalidParams,
            "tool `" + a.id + "`: unknown argument `" + name + "`" + ck::did_you_mean(name, names)};
      }
      const bool integer = p->type.kind() == ck::Type::Kind::integer;
      if (v.kind != JsonNode::Kind::number || (integer && !v.integral))
        throw RpcError{kInvalidParams,
                       "tool `" + a.id + "`: argument `" + name + "` must be " +
                           (integer ? "an integer" : "a number") + ", not " +
                           ck::jsonio::describe(v) +
                           (v.kind == JsonNode::Kind::number ? " `" + v.text + "`" : "")};
      std::string error;
      const auto d = ck::Decimal::parse(v.text, &error);
      if (!d)
        throw RpcError{kInvalidParams, "tool `" + a.id + "`: argument `" + name + "`: " + error};
      params.emplace_back(name, ck::Value::number(*d));
    }
    return params;
  }

  std::string call_action(std::size_t index, const JsonNode* args) {
    const ck::TaskModel& m = task->model();
    const ck::Action& a = m.actions[index];
    const ck::ParamMap params = action_arguments(a, args);
    if (a.approval && !task->shadow()) return ask_approval(index, params);
    std::optional<driver::StepResult> executed;
    try {
      executed = task->execute(a.id, params);
    } catch (const InvalidArgument& e) {
      return tool_result(std::string("not executed: ") + e.what(), "{}", true);
    }
    ck::Outcome& out = executed->outcome;
    JsonOut s;
    s.begin_object();
    write_decision_members(s, m, a.id, out.decision);
    if (executed->would_be)  // shadow mode: followed whatever the kernel decided
      write_shadow_members(
          s, m, a.id, *executed->would_be, a.approval.has_value() && executed->would_be->approved);
    if (out.decision.approved) {
      s.key("state");
      write_state(s, out.state);
      s.key("budget");
      write_budget(s, m, task->kernel().budget());
      s.key("goal_reached").value(m.goal_holds(out.state)).end_object();
      std::string text =
          "executed `" + a.id + "` (cost " + m.format_amount(out.decision.cost) + ")";
      if (executed->would_be_rejected()) {
        text += ", not enforced: the kernel would have rejected it (";
        const std::vector<ck::Reason>& why = executed->would_be->reasons;
        for (std::size_t i = 0; i < why.size(); ++i)
          text += (i ? "; " : "") + std::string(ck::to_string(why[i].code)) + ": " + why[i].message;
        text += ")";
      }
      text += "; state:";
      for (std::size_t i = 0; i < out.state.size(); ++i) {
        const auto v = static_cast<ck::VarId>(i);
        text += " " + out.state.schema().name(v) + "=" + out.state.get(v).to_string();
      }
      text += "; budget remaining " + m.format_amount(task->kernel().budget().remaining());
      if (m.goal_holds(out.state)) text += "; the goal is reached";
      return tool_result(text, s.take(), false);
    }
    const Rejection r =
        rejection_result(m, task->kernel().situation(), index, params, out.decision, {}, kSolverMs);
    return tool_result(r.text, r.structured, true);
  }

  // A call of an action whose spec asks for an approval (docs/SERVE.md, "Approvals"): decided
  // now and, if approved, a pending ticket the client can show; nothing is committed.
  std::string ask_approval(std::size_t index, const ck::ParamMap& params) {
    const ck::TaskModel& m = task->model();
    const ck::Action& a = m.actions[index];
    auto resolved = task->kernel().resolve(a.id, params);
    Task::Asked asked;
    if (auto* p = std::get_if<ck::Proposal>(&resolved)) {
      try {
        asked = task->ask(*p);
      } catch (const std::exception& e) {  // sealed, or too many tickets
        return tool_result(std::string("not executed: ") + e.what(), "{}", true);
      }
    } else {
      asked.decision.reasons.push_back(std::get<ck::Reason>(std::move(resolved)));
    }
    if (!asked.ticket) {
      const Rejection r = rejection_result(
          m, task->kernel().situation(), index, params, asked.decision, {}, kSolverMs);
      return tool_result(r.text, r.structured, true);
    }
    return pending_result(a, *asked.ticket);
  }

  // The `action` and `params` of the lookahead and repair tools.
  std::pair<std::size_t, ck::ParamMap> proposal_arguments(std::string_view tool,
                                                          const JsonNode* args,
                                                          bool with_depth) const {
    const ck::TaskModel& m = task->model();
    if (args == nullptr || args->kind != JsonNode::Kind::object)
      throw RpcError{kInvalidParams,
                     "tool `" + std::string(tool) + "`: arguments must be an object with `action`"};
    for (const auto& [k, v] : args->members) {
      if (k != "action" && k != "params" && !(with_depth && k == "depth"))
        throw RpcError{kInvalidParams,
                       "tool `" + std::string(tool) + "`: unknown argument `" + k + "`"};
    }
    const JsonNode* action = args->find("action");
    if (action == nullptr || action->kind != JsonNode::Kind::string)
      throw RpcError{kInvalidParams,
                     "tool `" + std::string(tool) + "`: argument `action` must be an action id"};
    const auto index = m.find_action(action->text);
    if (!index)
      throw RpcError{kInvalidParams,
                     "tool `" + std::string(tool) + "`: no action `" + action->text + "`" +
                         ck::did_you_mean(action->text, action_ids(m))};
    ck::ParamMap params;
    if (auto bad = read_params(args->find("params"), "params", params))
      throw RpcError{kInvalidParams, "tool `" + std::string(tool) + "`: " + *bad};
    return {*index, std::move(params)};
  }

  std::string call_tool(const JsonNode* params) {
    if (params == nullptr || params->kind != JsonNode::Kind::object)
      throw RpcError{kInvalidParams, "tools/call: params must be an object with `name`"};
    const JsonNode* name = params->find("name");
    if (name == nullptr || name->kind != JsonNode::Kind::string)
      throw RpcError{kInvalidParams, "tools/call: `name` must be a tool name"};
    const JsonNode* args = params->find("arguments");
    if (args != nullptr && args->kind == JsonNode::Kind::null) args = nullptr;
    const ck::TaskModel& m = task->model();
    if (name->text == "status") return tool_result(status_json(*task), status_json(*task), false);
    if (name->text == "lookahead") {
      auto [index, p] = proposal_arguments("lookahead", args, true);
      unsigned depth = 3;
      if (const JsonNode* d = args->find("depth")) {
        if (d->kind != JsonNode::Kind::number || !d->integral || d->text.starts_with('-') ||
            d->text.size() > 2 || std::stoul(d->text) > kMaxDepth)
          throw RpcError{kInvalidParams,
                         "tool `lookahead`: `depth` must be an integer from 0 to " +
                             std::to_string(kMaxDepth)};
        depth = static_cast<unsigned>(std::stoul(d->text));
      }
      const std::string report = lookahead_json(*task, m.actions[index].id, p, depth, kSolverMs);
      return tool_result(report, report, false);
    }
    if (name->text == "repair") {
      auto [index, p] = proposal_arguments("repair", args, false);
      auto r = repair_json(*task, index, p, kSolverMs);
      if (r.index() == 1) throw RpcError{kInvalidParams, "tool `repair`: " + std::get<1>(r)};
      return tool_result(std::get<0>(r), std::get<0>(r), false);
    }
    const auto index = m.find_action(name->text);
    if (!index) {
      std::vector<std::string> names = action_ids(m);
      names.insert(names.end(), std::begin(kBuiltins), std::end(kBuiltins));
      throw RpcError{kInvalidParams,
                     "unknown tool `" + name->text + "`" + ck::did_you_mean(name->text, names)};
    }
    return call_action(*index, args);
  }

  std::string initialize(const JsonNode* params) const {
    const std::string_view version = protocol_version(params, mcp_protocol_versions[0]);
    const ck::TaskModel& m = task->model();
    JsonOut j;
    j.begin_object().key("protocolVersion").value(version);
    j.key("capabilities").begin_object().key("tools").begin_object();
    j.key("listChanged").value(false).end_object().end_object();
    j.key("serverInfo")
        .begin_object()
        .key("name")
        .value("clampai")
        .key("version")
        .value(CLAMPAI_VERSION);
    j.end_object();
    j.key("instructions")
        .value("Task `" + m.name + "`" +
               (m.goal_description.empty() ? std::string() : ": " + m.goal_description) +
               ". Every action tool is decided by the ClampAI safety kernel (budget, step "
               "limit, dependencies, guards, bounds, invariants): a rejected call changes "
               "nothing and says why, with the closest parameters it would approve. Use "
               "`status` to see the state and budget, `lookahead` to check an action before "
               "taking it.");
    j.end_object();
    return j.take();
  }

  std::string handle(std::string_view text) {
    std::string refusal;
    ck::jsonio::JsonLimits limits;
    limits.max_bytes = kMaxMessage;
    limits.max_depth = 32;
    const std::optional<Envelope> env = read_envelope(text, limits, refusal);
    if (!env) return refusal;
    if (env->reply) return "";
    const JsonNode* method = env->method;
    const bool notification = env->notification;
    const JsonNode* params = env->params;
    const std::string& rid = env->id;
    try {
      std::string result;
      if (method->text == "initialize") {
        result = initialize(params);
      } else if (method->text == "ping") {
        result = "{}";
      } else if (method->text == "tools/list") {
        result = tools_list();
      } else if (method->text == "tools/call") {
        result = call_tool(params);
      } else if (method->text.starts_with("notifications/")) {
        return "";
      } else {
        throw RpcError{kMethodNotFound, "method not found: `" + method->text + "`"};
      }
      return notification ? "" : result_message(rid, result);
    } catch (const RpcError& e) {
      return notification ? "" : error_message(rid, e.code, e.message);
    } catch (const TraceError& e) {
      return notification ? "" : error_message(rid, kInternalError, e.what());
    } catch (const std::exception& e) {
      return notification
                 ? ""
                 : error_message(rid, kInternalError, std::string("internal error: ") + e.what());
    }
  }
};

McpSession::McpSession(std::shared_ptr<const ck::TaskModel> model, bool shadow)
    : impl_(std::make_unique<Impl>()) {
  for (const ck::Action& a : model->actions) {
    if (std::find(std::begin(kBuiltins), std::end(kBuiltins), a.id) != std::end(kBuiltins))
      throw InvalidArgument("action `" + a.id +
                            "` has the name of a built-in tool of `clampai mcp` (status, "
                            "lookahead, repair): rename it");
  }
  impl_->task = open_task(std::move(model), TaskStorage{}, {});
  if (shadow) impl_->task->enter_shadow_mode();
}

McpSession::~McpSession() = default;

std::string McpSession::handle(std::string_view message) noexcept {
  try {
    return impl_->handle(message);
  } catch (...) {
    return error_message("null", kInternalError, "internal error");
  }
}

int serve_mcp(std::shared_ptr<const ck::TaskModel> model,
              std::istream& in,
              std::ostream& out,
              bool shadow) {
  McpSession session(std::move(model), shadow);
  LineReader reader(in, kMaxMessage);
  std::string line;
  for (;;) {
    const LineReader::Got got = reader.next(line);
    if (got == LineReader::Got::end) break;
    std::string answer;
    if (got == LineReader::Got::too_long) {
      answer =
          error_message("null",
                        kInvalidRequest,
                        "invalid request: a message longer than " + std::to_string(kMaxMessage) +
                            " bytes (the limit), discarded up to its end of line");
    } else {
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      answer = session.handle(line);
    }
    if (!answer.empty()) out << answer << '\n' << std::flush;
  }
  return 0;
}

}  // namespace clampai::server
