// The questions a client may ask about a task besides evaluate and execute: answered with the
// report library's JSON, so the server's documents are the command line's.
#include "ops.hpp"

#include <algorithm>
#include <sstream>

#include "clampai/driver/lookahead.hpp"
#include "clampai/kernel/number.hpp"
#include "clampai/report/lookahead.hpp"
#include "clampai/report/repair.hpp"
#include "clampai/report/verify.hpp"
#include "clampai/verifier/repair.hpp"
#include "clampai/verifier/verify.hpp"
#include "json_out.hpp"
#include "jsonrpc.hpp"

namespace clampai::server {

namespace ck = clampai::kernel;
namespace cd = clampai::driver;
namespace cv = clampai::verifier;
using ck::jsonio::JsonNode;

std::optional<std::string> read_params(const JsonNode* node,
                                       const std::string& path,
                                       ck::ParamMap& out) {
  if (node == nullptr) return std::nullopt;
  if (node->kind != JsonNode::Kind::object)
    return path + ": expected an object, found " + ck::jsonio::describe(*node);
  for (const auto& [name, v] : node->members) {
    if (v.kind != JsonNode::Kind::number && v.kind != JsonNode::Kind::string)
      return path + "." + name + ": expected a number, found " + ck::jsonio::describe(v);
    std::string error;
    const auto d = ck::Decimal::parse(v.text, &error);
    if (!d) return path + "." + name + ": `" + v.text + "` is not a number: " + error;
    out.emplace_back(name, ck::Value::number(*d));
  }
  return std::nullopt;
}

std::vector<std::string> action_ids(const ck::TaskModel& model) {
  std::vector<std::string> ids;
  ids.reserve(model.actions.size());
  for (const auto& a : model.actions) ids.push_back(a.id);
  return ids;
}

std::string status_json(Task& task) {
  const ck::TaskModel& m = task.model();
  const ck::SafetyKernel& k = task.kernel();
  const ck::Situation s = k.situation();
  JsonOut j;
  j.begin_object().key("task").value(m.name).key("state");
  write_state(j, s.state);
  j.key("budget");
  write_budget(j, m, s.budget);
  j.key("steps").value(s.steps).key("emergency_steps").value(s.emergency_steps);
  j.key("step_limit").value(static_cast<std::int64_t>(k.step_limit()));
  j.key("goal_reached").value(m.goal_holds(s.state));
  j.key("sealed").value(k.is_sealed());
  j.key("trace_entries").value(k.trace_length());
  j.end_object();
  return j.take();
}

std::string lookahead_json(Task& task,
                           std::string_view action,
                           const ck::ParamMap& params,
                           unsigned depth,
                           std::uint32_t timeout_ms) {
  const ck::TaskModel& m = task.model();
  const auto resolved = task.kernel().resolve(action, params);
  cd::LookaheadResult r;
  if (const auto* bad = std::get_if<ck::Reason>(&resolved)) {
    r.decision.reasons.push_back(*bad);  // rejected: only the decision is filled
  } else {
    cd::LookaheadOptions options;
    options.depth = depth;
    options.timeout_ms = timeout_ms;
    r = cd::lookahead(m, task.kernel().situation(), std::get<ck::Proposal>(resolved), options);
  }
  std::ostringstream out;
  report::write_lookahead(
      out, report::Format::json, {m.name, std::string(action), depth, "explicit", &m, &r});
  return out.str();
}

std::variant<ck::Proposal, std::string> raw_proposal(const ck::TaskModel& model,
                                                     std::size_t action,
                                                     const ck::ParamMap& params) {
  const ck::Action& a = model.actions[action];
  for (const auto& [name, v] : params) {
    if (std::none_of(a.parameters.begin(), a.parameters.end(), [&n = name](const ck::Parameter& p) {
          return p.name == n;
        }))
      return "params." + name + ": `" + a.id + "` has no such parameter";
  }
  ck::Proposal proposal{action, {}};
  for (const ck::Parameter& p : a.parameters) {
    const auto it = std::find_if(
        params.begin(), params.end(), [&](const auto& given) { return given.first == p.name; });
    if (it != params.end()) {
      proposal.params.push_back(it->second);
    } else if (p.default_value) {
      proposal.params.push_back(ck::Value::number(*p.default_value));
    } else {
      return "params: missing `" + p.name + "` (it has no default)";
    }
  }
  return proposal;
}

std::variant<std::string, std::string> repair_json(Task& task,
                                                   std::size_t action,
                                                   const ck::ParamMap& params,
                                                   std::uint32_t timeout_ms) {
  const ck::TaskModel& m = task.model();
  auto proposal = raw_proposal(m, action, params);
  if (const auto* bad = std::get_if<std::string>(&proposal))
    return std::variant<std::string, std::string>(std::in_place_index<1>, *bad);
  cv::RepairOptions options;
  options.timeout_ms = timeout_ms;
  const ck::Proposal& p = std::get<ck::Proposal>(proposal);
  const cv::RepairResult r = cv::repair(m, task.kernel().situation(), p, options);
  std::ostringstream out;
  report::write_repair(out, report::Format::json, {m.name, &m, &p, &r});
  return std::variant<std::string, std::string>(std::in_place_index<0>, out.str());
}

std::string pending_result(const ck::Action& a, const cd::Ticket& t) {
  JsonOut s;
  s.begin_object().key("action").value(a.id).key("approved").value(false);
  s.key("pending").value(true).key("ticket").value(t.id).key("params").begin_object();
  for (const auto& [name, v] : t.params) s.key(name).value(v);
  s.end_object().key("request_sequence").value(t.sequence);
  s.key("expires_at_us").value(t.expires_us).end_object();
  return jsonrpc::tool_result("`" + a.id + "` waits for an approval (ticket " + t.id +
                                  "): nothing was executed; a principal with the right `" +
                                  a.approval->right + "` must approve it within " +
                                  std::to_string(a.approval->ttl_s) + " s",
                              s.take(),
                              false);
}

const std::string& verify_json(Task& task, std::uint32_t timeout_ms) {
  return task.verify_json([&task, timeout_ms] {
    cv::VerifyOptions options;
    options.timeout_ms = timeout_ms;
    const cv::Report report = cv::verify(task.model_ptr(), options);
    report::VerifyReport out;
    out.spec = task.model().name;
    out.model = &task.model();
    out.report = &report;
    std::ostringstream text;
    report::write_verify(text, report::Format::json, out);
    return text.str();
  });
}

Rejection rejection_result(const ck::TaskModel& m,
                           const ck::Situation& situation,
                           std::size_t index,
                           const ck::ParamMap& params,
                           const ck::Decision& decision,
                           const std::vector<std::pair<std::string, std::string>>& bindings,
                           std::uint32_t timeout_ms) {
  const ck::Action& a = m.actions[index];
  const auto binding_of = [&](const std::string& name) -> const std::string* {
    for (const auto& [p, text] : bindings) {
      if (p == name) return &text;
    }
    return nullptr;
  };
  JsonOut s;
  s.begin_object();
  write_decision_members(s, m, a.id, decision);
  std::string text = "rejected `" + a.id + "` by the safety kernel (nothing changed):";
  for (const ck::Reason& r : decision.reasons)
    text += "\n- " + std::string(ck::to_string(r.code)) + ": " + r.message;
  if (!bindings.empty()) {
    s.key("bindings").begin_object();
    text += "\nthe parameters, as the bindings computed them:";
    for (const auto& [p, expr] : bindings) {
      s.key(p).value(expr);
      for (const auto& [name, v] : params) {
        if (name == p) text += " " + p + "=" + v.to_string() + " (" + expr + ")";
      }
    }
    s.end_object();
  }
  // The closest parameters the kernel approves now, when only the parameters are at fault.
  s.key("closest_approved_params");
  const auto proposal = raw_proposal(m, index, params);
  bool suggested = false;
  if (!a.parameters.empty() && std::holds_alternative<ck::Proposal>(proposal)) {
    cv::RepairOptions options;
    options.timeout_ms = timeout_ms;
    const cv::RepairResult r = cv::repair(m, situation, std::get<ck::Proposal>(proposal), options);
    if (r.status == cv::RepairStatus::repaired || r.status == cv::RepairStatus::approved) {
      s.begin_object();
      text += "\nthe closest parameters the kernel approves now:";
      for (std::size_t i = 0; i < a.parameters.size(); ++i) {
        s.key(a.parameters[i].name).value(r.repaired.params[i]);
        text += " " + a.parameters[i].name + "=" + r.repaired.params[i].to_string();
        if (const std::string* b = binding_of(a.parameters[i].name)) text += " (" + *b + ")";
      }
      s.end_object();
      suggested = true;
    } else if (r.status == cv::RepairStatus::impossible) {
      text += "\nno parameter values make the kernel approve `" + a.id + "` now";
    }
  }
  if (!suggested) s.null();
  s.end_object();
  return {std::move(text), s.take()};
}

}  // namespace clampai::server
