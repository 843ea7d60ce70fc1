#include "clampai/report/verify.hpp"

#include <algorithm>
#include <iomanip>

#include "encode.hpp"

namespace clampai::report {

namespace cv = clampai::verifier;
using detail::json;

namespace {

constexpr const char* kReachability[] = {"not_checked", "reachable", "unreachable", "unknown"};

std::string obligation_line(const cv::Obligation& o) {
  if (o.kind == cv::ObligationKind::lint) return "WARNING " + o.id + ": " + o.reason;
  return detail::upper(cv::to_string(o.verdict)) + " " + o.id + ": " + o.reason;
}

std::string step_text(const std::string& action,
                      const std::vector<std::pair<std::string, kernel::Value>>& params) {
  std::string s = action;
  for (const auto& [name, v] : params) s += " " + name + "=" + v.to_string();
  return s;
}

// The SARIF rule of a finding that is not proved.
std::string rule_of(const kernel::TaskModel& model, const cv::Obligation& o) {
  if (o.verdict != cv::VerdictKind::refuted) return "obligation-unknown";
  const auto action = model.find_action(o.action);
  const bool emergency = action && model.actions[*action].emergency;
  switch (o.kind) {
    case cv::ObligationKind::preservation:
      return emergency ? "emergency-action-unsafe" : "invariant-not-preserved";
    case cv::ObligationKind::base_case:
      return "base-case-violated";
    case cv::ObligationKind::budget:
      return "budget-theorem-violated";
    case cv::ObligationKind::interface:
      return "interface-violated";
    case cv::ObligationKind::lint:
      break;
  }
  if (o.id == "lint:assumes-consistent") return "assumes-inconsistent";
  if (o.id.rfind("lint:consistent", 0) == 0) return "inconsistent-invariants";
  if (o.id.rfind("lint:independent", 0) == 0) return "redundant-invariant";
  if (o.id.rfind("lint:enabled", 0) == 0) return "dead-action";
  return "effect-overflow";
}

const std::vector<detail::SarifRule>& verify_rules() {
  static const std::vector<detail::SarifRule> rules = {
      {"invariant-not-preserved",
       "An action can break a blocking invariant: the kernel will block it in some states"},
      {"base-case-violated", "The initial state violates a blocking invariant"},
      {"budget-theorem-violated", "The integer budget model breaks T1 or T4"},
      {"obligation-unknown", "The solver could not decide an obligation"},
      {"emergency-action-unsafe",
       "An emergency action can break a blocking invariant (T8's condition)"},
      {"inconsistent-invariants", "The blocking invariants are jointly unsatisfiable"},
      {"redundant-invariant", "An invariant is implied by the others"},
      {"dead-action", "An action can never be enabled under the invariants"},
      {"effect-overflow", "An effect can overflow int64"},
      {"interface-violated", "The task does not keep its declared interface"},
      {"assumes-inconsistent",
       "The interface's assumes contradict the invariants: the task can never start"},
      {"goal-infeasible", "The goal cannot be reached within the budget, by any run"},
      {"information-flow-downward",
       "An action moves labelled data to a lower label: the reference monitor rejects it"},
  };
  return rules;
}

// Where a finding is shown: a preservation pair at its action, the rest where `verify` put it.
kernel::SourceLoc finding_loc(const kernel::TaskModel& model, const cv::Obligation& o) {
  if (o.kind == cv::ObligationKind::preservation) {
    if (auto a = model.find_action(o.action)) return model.actions[*a].loc;
  }
  return o.loc;
}

// The replayed steps of a finding with a reachability witness: each action where it is declared.
std::vector<std::pair<std::string, kernel::SourceLoc>> replay_steps(const kernel::TaskModel& model,
                                                                    const cv::Obligation& o) {
  std::vector<std::pair<std::string, kernel::SourceLoc>> steps;
  if (o.reachability.status != cv::Reachability::Status::reachable) return steps;
  for (const auto& [action, params] : o.reachability.witness) {
    kernel::SourceLoc loc{};
    if (auto a = model.find_action(action)) loc = model.actions[*a].loc;
    steps.emplace_back(step_text(action, params), loc);
  }
  return steps;
}

std::string flow_text(const kernel::TaskModel& model, const kernel::InformationFlow& f) {
  return "`" + model.actions[f.action].id + "` moves `" + f.source + "` (" +
         std::string(kernel::to_string(f.source_label)) + ") to `" + f.target + "` (" +
         std::string(kernel::to_string(f.target_label)) + ") at " + f.path +
         (f.expression.empty() ? "" : ": " + f.expression);
}

json verify_sarif(const VerifyReport& r) {
  const kernel::TaskModel& model = *r.model;
  json results = json::array();
  for (const auto& o : r.report->obligations) {
    if (o.verdict == cv::VerdictKind::proved) continue;
    const std::string level =
        o.verdict == cv::VerdictKind::refuted && o.kind != cv::ObligationKind::lint ? "error"
                                                                                    : "warning";
    json result = detail::sarif_result(
        rule_of(model, o), level, o.id + ": " + o.reason, r.spec, finding_loc(model, o));
    const auto steps = replay_steps(model, o);
    detail::sarif_attach(result, o.counterexample ? &*o.counterexample : nullptr, steps, r.spec);
    results.push_back(std::move(result));
  }
  if (r.goal && r.goal->infeasible) {
    json result =
        detail::sarif_result("goal-infeasible", "error", "goal: " + r.goal->message, r.spec, {});
    result["properties"]["plan"] = detail::plan(model, r.goal->plan);
    results.push_back(std::move(result));
  }
  for (const kernel::InformationFlow& f : r.downward_flows) {
    json result = detail::sarif_result("information-flow-downward",
                                       "error",
                                       "information flow: " + flow_text(model, f),
                                       r.spec,
                                       model.actions[f.action].loc);
    result["properties"]["path"] = f.path;
    result["properties"]["source"] = f.source;
    result["properties"]["target"] = f.target;
    results.push_back(std::move(result));
  }
  return detail::sarif_log(verify_rules(), std::move(results));
}

json verify_json(const VerifyReport& r) {
  const kernel::TaskModel& model = *r.model;
  const cv::Report& report = *r.report;
  json obligations = json::array();
  for (const auto& o : report.obligations) {
    json j = {{"id", o.id},
              {"kind", std::string(cv::to_string(o.kind))},
              {"verdict", std::string(cv::to_string(o.verdict))},
              {"reason", o.reason}};
    if (!o.action.empty()) j["action"] = o.action;
    if (!o.invariant.empty()) j["invariant"] = o.invariant;
    if (o.loc.line > 0) j["location"] = {{"line", o.loc.line}, {"column", o.loc.column}};
    if (o.reachability.status != cv::Reachability::Status::not_checked) {
      json witness = json::array();
      for (const auto& [action, params] : o.reachability.witness)
        witness.push_back({{"action", action}, {"params", detail::named_values(params)}});
      j["reachability"] = {{"status", kReachability[static_cast<int>(o.reachability.status)]},
                           {"depth", o.reachability.depth},
                           {"reason", o.reachability.reason},
                           {"witness", witness}};
    }
    if (o.counterexample) j["counterexample"] = detail::counterexample(*o.counterexample, true);
    obligations.push_back(j);
  }
  json facts = json::array();
  for (const auto& f : report.facts) facts.push_back({{"id", f.id}, {"statement", f.statement}});
  json j = {{"spec", r.spec},
            {"summary",
             {{"proved", report.proved},
              {"refuted", report.refuted},
              {"unknown", report.unknown},
              {"warnings", report.warnings},
              {"seconds", r.seconds}}},
            {"facts", facts},
            {"obligations", obligations}};
  if (r.goal) {
    j["goal"] = {{"depth", r.goal->depth},
                 {"reachable", r.goal->reachable},
                 {"infeasible", r.goal->infeasible},
                 {"complete", r.goal->complete},
                 {"message", r.goal->message},
                 {"plan", detail::plan(model, r.goal->plan)},
                 {"cost", model.format_amount(r.goal->cost)}};
  }
  if (r.labelled) {
    json flows = json::array();
    for (const kernel::InformationFlow& f : r.downward_flows)
      flows.push_back({{"action", model.actions[f.action].id},
                       {"source", f.source},
                       {"source_label", std::string(kernel::to_string(f.source_label))},
                       {"target", f.target},
                       {"target_label", std::string(kernel::to_string(f.target_label))},
                       {"path", f.path},
                       {"expression", f.expression}});
    j["information_flow"] = {{"checked", r.flows_checked}, {"downward", flows}};
  }
  return j;
}

void verify_junit(std::ostream& out, const VerifyReport& r) {
  const kernel::TaskModel& model = *r.model;
  std::vector<detail::JUnitCase> cases;
  for (const auto& o : r.report->obligations) {
    detail::JUnitCase c;
    c.classname = "verify." + std::string(cv::to_string(o.kind));
    c.name = o.id;
    if (o.verdict == cv::VerdictKind::proved) {
      cases.push_back(std::move(c));
      continue;
    }
    const kernel::SourceLoc loc = finding_loc(model, o);
    std::string where = "at " + r.spec;
    if (loc.line > 0) where += ":" + std::to_string(loc.line) + ":" + std::to_string(loc.column);
    if (o.kind == cv::ObligationKind::lint) {  // a warning: the test passes, the note stays
      c.out = "warning: " + o.reason + "\n" + where;
      cases.push_back(std::move(c));
      continue;
    }
    c.outcome = o.verdict == cv::VerdictKind::refuted ? "failure" : "error";
    c.type = std::string(cv::to_string(o.verdict));
    c.message = o.reason;
    c.details = where + "\n";
    if (o.counterexample)
      c.details += "counterexample: " +
                   detail::counterexample(*o.counterexample)
                       .dump(2, ' ', false, detail::json::error_handler_t::replace) +
                   "\n";
    const auto steps = replay_steps(model, o);
    if (!steps.empty()) {
      c.details += o.reachability.reason + ":";
      for (std::size_t i = 0; i < steps.size(); ++i) c.details += (i ? ", " : " ") + steps[i].first;
      c.details += "\n";
    }
    cases.push_back(std::move(c));
  }
  if (r.goal) {
    detail::JUnitCase c;
    c.classname = "verify.goal";
    c.name = "goal:depth " + std::to_string(r.goal->depth);
    if (r.goal->infeasible) {
      c.outcome = "failure";
      c.type = "refuted";
      c.message = r.goal->message;
    } else {
      c.out = r.goal->message;
    }
    cases.push_back(std::move(c));
  }
  for (const kernel::InformationFlow& f : r.downward_flows) {
    detail::JUnitCase c;
    c.classname = "verify.information_flow";
    c.name = "flow:" + model.actions[f.action].id + ":" + f.source + "->" + f.target;
    c.outcome = "failure";
    c.type = "refuted";
    c.message = flow_text(model, f);
    cases.push_back(std::move(c));
  }
  detail::write_junit(out, "clampai verify", r.spec, r.seconds, cases);
}

void verify_text(std::ostream& out, const VerifyReport& r) {
  const cv::Report& report = *r.report;
  for (const auto& o : report.obligations) {
    if (o.verdict == cv::VerdictKind::proved) continue;
    out << obligation_line(o) << "\n";
    if (o.counterexample) detail::print_counterexample(out, *o.counterexample);
    if (o.reachability.status != cv::Reachability::Status::not_checked) {
      out << "    " << o.reachability.reason;
      for (std::size_t i = 0; i < o.reachability.witness.size(); ++i) {
        const auto& [action, params] = o.reachability.witness[i];
        out << (i == 0 ? ": " : ", ") << step_text(action, params);
      }
      out << "\n";
    }
  }
  if (r.goal) out << (r.goal->infeasible ? "REFUTED goal: " : "goal: ") << r.goal->message << "\n";
  for (const kernel::InformationFlow& f : r.downward_flows)
    out << "REFUTED information flow: " << flow_text(*r.model, f) << "\n";
  if (r.labelled)
    out << "information flow: " << r.downward_flows.size() << " downward of " << r.flows_checked
        << " flows of labelled data\n";
  out << "by construction (facts of the kernel, not counted):";
  for (std::size_t i = 0; i < report.facts.size(); ++i)
    out << (i == 0 ? " " : ", ") << report.facts[i].id;
  out << "\n";
  out << "summary: " << report.proved + report.refuted + report.unknown
      << " obligations: " << report.proved << " proved, " << report.refuted << " refuted, "
      << report.unknown << " unknown; " << report.warnings << " lint warning"
      << (report.warnings == 1 ? "" : "s");
  // What else the exit code counts: refuted besides the obligations.
  if (!r.downward_flows.empty())
    out << "; " << r.downward_flows.size() << " information flow"
        << (r.downward_flows.size() == 1 ? "" : "s") << " refuted";
  if (r.goal && r.goal->infeasible) out << "; the goal refuted";
  out << " (" << std::fixed << std::setprecision(3) << r.seconds << " s)\n";
  out.unsetf(std::ios::floatfield);
}

}  // namespace

void add_information_flows(VerifyReport& r) {
  const kernel::TaskModel& m = *r.model;
  r.labelled = !m.sinks.empty() ||
               std::any_of(m.variables.begin(), m.variables.end(), [](const kernel::Variable& v) {
                 return v.labelled;
               });
  if (!r.labelled) return;
  const auto flows = kernel::information_flows(m);
  r.flows_checked = flows.size();
  r.downward_flows.clear();
  for (const auto& f : flows)
    if (f.downward()) r.downward_flows.push_back(f);
}

void write_verify(std::ostream& out, Format format, const VerifyReport& r) {
  switch (format) {
    case Format::text:
      verify_text(out, r);
      return;
    case Format::json:
      out << verify_json(r).dump(2, ' ', false, detail::json::error_handler_t::replace) << "\n";
      return;
    case Format::sarif:
      out << verify_sarif(r).dump(2, ' ', false, detail::json::error_handler_t::replace) << "\n";
      return;
    case Format::junit:
      verify_junit(out, r);
      return;
  }
}

}  // namespace clampai::report
