// The step's prompt: a decision-support document (goal, progress, budget, the salient state,
// the invariants, the offered actions with their values), and the tools.
#include "prompt.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>

#include "clampai/driver/driver.hpp"
#include "clampai/kernel/expr.hpp"
#include "valuation_internal.hpp"

namespace clampai::agent::detail {

namespace {

// `x` with `digits` (at most 3) decimals; scores are small, so integer arithmetic is exact
// enough and much faster than a general formatter (this runs 300 times a step).
void fixed(std::string& out, double x, int digits = 2) {
  static constexpr std::int64_t scale[] = {1, 10, 100, 1000};
  digits = std::clamp(digits, 0, 3);
  if (!std::isfinite(x) || std::abs(x) > 1e15) x = 0.0;
  std::int64_t v = std::llround(x * static_cast<double>(scale[digits]));
  if (v < 0) {
    out += '-';
    v = -v;
  }
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof buf, v / scale[digits]);
  out.append(buf, r.ptr);
  if (digits == 0) return;
  out += '.';
  std::int64_t frac = v % scale[digits];
  for (std::int64_t d = scale[digits] / 10; d > 0; d /= 10) {
    out += static_cast<char>('0' + frac / d);
    frac %= d;
  }
}

void amount(std::string& out, const kernel::TaskModel& m, kernel::Amount a) {
  out += m.format_amount(a);
}

}  // namespace

ToolSpec tool_of(const kernel::TaskModel& model, std::size_t index) {
  const kernel::Action& a = model.actions.at(index);
  ToolSpec t;
  t.name = a.id;
  t.description = a.name.empty() || a.name == a.id ? a.description : a.name + ": " + a.description;
  if (t.description.empty()) t.description = "action `" + a.id + "`";
  nlohmann::json props = nlohmann::json::object();
  nlohmann::json required = nlohmann::json::array();
  for (const kernel::Parameter& p : a.parameters) {
    nlohmann::json s;
    s["type"] = p.type.kind() == kernel::Type::Kind::integer ? "integer" : "number";
    if (p.min) s["minimum"] = detail::to_double(*p.min);
    if (p.max) s["maximum"] = detail::to_double(*p.max);
    if (p.default_value) {
      s["default"] = detail::to_double(*p.default_value);
    } else {
      required.push_back(p.name);
    }
    if (p.type.kind() == kernel::Type::Kind::decimal)
      s["description"] = "at most " + std::to_string(p.type.scale()) + " digits after the point";
    props[p.name] = std::move(s);
  }
  nlohmann::json schema{{"type", "object"}, {"properties", std::move(props)}};
  if (!required.empty()) schema["required"] = std::move(required);
  schema["additionalProperties"] = false;
  t.input_schema = schema.dump();
  return t;
}

std::string describe_params(const kernel::TaskModel& model, const kernel::Proposal& p) {
  const kernel::Action& a = model.actions.at(p.action);
  if (a.parameters.empty()) return "no parameters";
  std::string out;
  for (std::size_t i = 0; i < a.parameters.size() && i < p.params.size(); ++i) {
    if (i) out += ", ";
    out += a.parameters[i].name + "=" + p.params[i].to_string();
  }
  return out;
}

std::string action_header(const kernel::TaskModel& m, std::size_t index) {
  const kernel::Action& a = m.actions.at(index);
  std::string out = a.id;
  if (!a.description.empty()) out += ": " + a.description;
  out += "\n     cost ";
  out += m.format_amount(nominal_cost(m, index));
  if (!a.parameters.empty()) {
    out += " (with ";
    out += describe_params(m, driver::default_proposal(m, index));
    out += "); parameters:";
    for (const auto& p : a.parameters) {
      out += " " + p.name + " " + p.type.to_string();
      if (p.min) out += " >= " + p.min->to_string();
      if (p.max) out += " <= " + p.max->to_string();
      if (p.default_value) out += " default " + p.default_value->to_string();
      out += ";";
    }
  }
  if (!a.reversible) out += "; irreversible";
  return out;
}

void write_prompt(const PromptInput& in, std::string& out) {
  const kernel::TaskModel& m = *in.model;
  const kernel::Situation& s = *in.situation;
  out.clear();
  out += "GOAL: ";
  if (!m.goal_description.empty()) out += m.goal_description + " ";
  if (m.goal) {
    out += "(`";
    out += kernel::to_source(*m.goal);
    out += "`)";
  } else {
    out += "(none: the task runs until its budget or steps run out)";
  }
  out += "\nPROGRESS: ";
  fixed(out, in.progress * 100.0, 0);
  out += "%\nBUDGET: spent ";
  amount(out, m, s.budget.net());
  out += " of ";
  amount(out, m, m.budget.total);
  out += " (";
  amount(out, m, s.budget.remaining());
  out += " left); step ";
  out += std::to_string(s.steps + 1);
  out += " of at most ";
  out += std::to_string(m.budget.step_limit);
  out += "\nSTATE (the variables that matter now; the kernel checks all of them):\n";
  for (kernel::VarId v : in.salience->variables) {
    out += "  ";
    out += m.variables[v].name;
    out += " = ";
    out += s.state.get(v).to_string();
    for (const auto& [nv, why] : in.salience->near_boundary) {
      if (nv == v) {
        out += "   [near the boundary: " + why + "]";
        break;
      }
    }
    out += "\n";
  }
  if (in.salience->hidden > 0)
    out += "  (" + std::to_string(in.salience->hidden) + " more not shown)\n";
  if (!m.invariants.empty()) {
    out += "INVARIANTS (the kernel rejects any action that would break a blocking one):\n";
    for (const auto& inv : m.invariants) {
      out += "  " + inv.name + " (";
      out += inv.enforcement == kernel::Enforcement::blocking ? "blocking" : "monitoring";
      out += "): ";
      out += inv.expr ? kernel::to_source(*inv.expr) : std::string("a native predicate");
      out += "\n";
    }
  }
  out += "ACTIONS you may choose (ranked by computed value):\n";
  const std::size_t detailed = std::min(in.offered.size(), in.detailed_actions);
  for (std::size_t i = 0; i < detailed; ++i) {
    const Candidate& c = in.offered[i];
    const ActionValue& v = in.values[i];
    const Belief& b = (*in.beliefs)[c.action];
    out += "  ";
    out += std::to_string(i + 1);
    out += ". ";
    if (in.headers != nullptr)
      out += (*in.headers)[c.action];
    else
      out += action_header(m, c.action);
    out += "\n     value ";
    fixed(out, v.value);
    out += ": progress ";
    fixed(out, v.expected_progress);
    out += ", information ";
    fixed(out, v.information_gain);
    out += ", cost ";
    fixed(out, v.cost_ratio);
    out += ", risk ";
    fixed(out, v.risk);
    out += ", opportunity ";
    fixed(out, v.opportunity_cost);
    out += "; P(success) ";
    fixed(out, b.mean());
    out += " [";
    out += to_string(in.beliefs->tier(c.action));
    out += "]; ";
    out += v.hint;
    out += "\n";
  }
  if (detailed < in.offered.size()) {
    out += "  also offered, of lower value:";
    for (std::size_t i = detailed; i < in.offered.size(); ++i) {
      out += i == detailed ? " " : ", ";
      out += m.actions[in.offered[i].action].id;
    }
    out += "\n";
  }
  if (!in.waiting.empty()) {
    out += "WAITING on dependencies (not offered):";
    for (const auto& w : in.waiting) out += " " + w + ";";
    out += "\n";
  }
  if (in.critical_path.size() > 1) {
    out += "CRITICAL PATH:";
    for (std::size_t i = 0; i < in.critical_path.size(); ++i)
      out += (i ? " -> " : " ") + in.critical_path[i];
    out += "\n";
  }
  if (!in.last_outcome.empty()) out += "LAST OUTCOME: " + in.last_outcome + "\n";
  if (in.recent != nullptr && !in.recent->empty()) {
    out += "RECENT STEPS:\n";
    for (const StepRecord& r : *in.recent) {
      out += "  " + std::to_string(r.index) + ". " + r.action;
      if (!r.params.empty()) out += " (" + r.params + ")";
      out += r.approved ? ": approved" : ": rejected";
      for (const auto& reason : r.reasons) out += " " + std::string(kernel::to_string(reason.code));
      out += "\n";
    }
  }
  out +=
      "Choose one action: call its tool, or answer with JSON {\"action\": \"<id>\", \"params\": "
      "{...}}. Answer {\"stop\": true} to stop.\n";
}

}  // namespace clampai::agent::detail
