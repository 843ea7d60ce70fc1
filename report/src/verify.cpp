#include "clampai/report/verify.hpp"

#include <algorithm>
#include <iomanip>

#include "clampai/report/wire.hpp"
#include "encode.hpp"

namespace clampai::report {

namespace cv = clampai::verifier;

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

std::string verify_sarif(const VerifyReport& r) {
  const kernel::TaskModel& model = *r.model;
  std::vector<detail::SarifResult> results;
  for (const auto& o : r.report->obligations) {
    if (o.verdict == cv::VerdictKind::proved) continue;
    detail::SarifResult result;
    result.rule = rule_of(model, o);
    result.level = o.verdict == cv::VerdictKind::refuted && o.kind != cv::ObligationKind::lint
                       ? "error"
                       : "warning";
    result.text = o.id + ": " + o.reason;
    result.file = r.spec;
    result.loc = finding_loc(model, o);
    result.counterexample = o.counterexample ? &*o.counterexample : nullptr;
    result.steps = replay_steps(model, o);
    results.push_back(std::move(result));
  }
  if (r.goal && r.goal->infeasible) {
    detail::SarifResult result;
    result.rule = "goal-infeasible";
    result.level = "error";
    result.text = "goal: " + r.goal->message;
    result.file = r.spec;
    result.properties = [&](JsonWriter& j) {
      detail::write_plan(j.key("plan"), model, r.goal->plan);
    };
    results.push_back(std::move(result));
  }
  for (const kernel::InformationFlow& f : r.downward_flows) {
    detail::SarifResult result;
    result.rule = "information-flow-downward";
    result.level = "error";
    result.text = "information flow: " + flow_text(model, f);
    result.file = r.spec;
    result.loc = model.actions[f.action].loc;
    result.properties = [&f](JsonWriter& j) {
      j.key("path").value(f.path).key("source").value(f.source).key("target").value(f.target);
    };
    results.push_back(std::move(result));
  }
  JsonWriter j = detail::report_writer();
  detail::write_sarif_log(j, verify_rules(), results);
  return j.take();
}

std::string verify_json(const VerifyReport& r) {
  const kernel::TaskModel& model = *r.model;
  const cv::Report& report = *r.report;
  JsonWriter j = detail::report_writer();
  j.begin_object().key("spec").value(r.spec);
  j.key("summary").begin_object().key("proved").value(report.proved);
  j.key("refuted").value(report.refuted).key("unknown").value(report.unknown);
  j.key("warnings").value(report.warnings).key("seconds").value(r.seconds).end_object();
  j.key("facts").begin_array();
  for (const auto& f : report.facts)
    j.begin_object().key("id").value(f.id).key("statement").value(f.statement).end_object();
  j.end_array().key("obligations").begin_array();
  for (const auto& o : report.obligations) {
    j.begin_object().key("id").value(o.id).key("kind").value(cv::to_string(o.kind));
    j.key("verdict").value(cv::to_string(o.verdict)).key("reason").value(o.reason);
    if (!o.action.empty()) j.key("action").value(o.action);
    if (!o.invariant.empty()) j.key("invariant").value(o.invariant);
    if (o.loc.line > 0) {
      j.key("location").begin_object().key("line").value(o.loc.line);
      j.key("column").value(o.loc.column).end_object();
    }
    if (o.reachability.status != cv::Reachability::Status::not_checked) {
      j.key("reachability").begin_object();
      j.key("status").value(kReachability[static_cast<int>(o.reachability.status)]);
      j.key("depth").value(o.reachability.depth).key("reason").value(o.reachability.reason);
      j.key("witness").begin_array();
      for (const auto& [action, params] : o.reachability.witness) {
        j.begin_object().key("action").value(action);
        detail::write_named_values(j.key("params"), params);
        j.end_object();
      }
      j.end_array().end_object();
    }
    if (o.counterexample)
      detail::write_counterexample(j.key("counterexample"), *o.counterexample, true);
    j.end_object();
  }
  j.end_array();
  if (r.goal) {
    j.key("goal").begin_object().key("depth").value(r.goal->depth);
    j.key("reachable").value(r.goal->reachable).key("infeasible").value(r.goal->infeasible);
    j.key("complete").value(r.goal->complete).key("message").value(r.goal->message);
    detail::write_plan(j.key("plan"), model, r.goal->plan);
    j.key("cost").value(model.format_amount(r.goal->cost)).end_object();
  }
  if (r.labelled) {
    j.key("information_flow").begin_object().key("checked").value(r.flows_checked);
    j.key("downward").begin_array();
    for (const kernel::InformationFlow& f : r.downward_flows) {
      j.begin_object().key("action").value(model.actions[f.action].id);
      j.key("source").value(f.source);
      j.key("source_label").value(kernel::to_string(f.source_label));
      j.key("target").value(f.target);
      j.key("target_label").value(kernel::to_string(f.target_label));
      j.key("path").value(f.path).key("expression").value(f.expression).end_object();
    }
    j.end_array().end_object();
  }
  return j.end_object().take();
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
      c.details += "counterexample: " + detail::counterexample_text(*o.counterexample) + "\n";
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
      out << verify_json(r) << "\n";
      return;
    case Format::sarif:
      out << verify_sarif(r) << "\n";
      return;
    case Format::junit:
      verify_junit(out, r);
      return;
  }
}

}  // namespace clampai::report
