#include "clampai/report/agent.hpp"

#include <cstdio>

#include "clampai/kernel/expr.hpp"
#include "clampai/report/wire.hpp"
#include "encode.hpp"

namespace clampai::report {

std::string agent_step_line(const kernel::TaskModel& model, const AgentStep& s) {
  std::string line = "step " + std::to_string(s.index) + "  " + s.action;
  if (!s.params.empty()) line += " " + s.params;
  line += s.approved ? "  approved" : "  REJECTED";
  for (std::size_t i = 0; i < s.reasons.size(); ++i)
    line += (i ? ", " : " (") + std::string(kernel::to_string(s.reasons[i].code)) +
            (i + 1 == s.reasons.size() ? ")" : "");
  if (s.would_be && !s.would_be->approved) {  // shadow mode: followed all the same
    line += "  shadow: would be REJECTED";
    for (std::size_t i = 0; i < s.would_be->reasons.size(); ++i)
      line += (i ? ", " : " (") + std::string(kernel::to_string(s.would_be->reasons[i].code)) +
              (i + 1 == s.would_be->reasons.size() ? ")" : "");
  }
  line += "  spent " + model.format_amount(s.spent) + "/" + model.format_amount(model.budget.total);
  line += "  (" + s.source + (s.failure.empty() ? "" : " after " + s.failure) + ")";
  return line;
}

void write_agent(std::ostream& out, Format format, const AgentReport& r) {
  const kernel::TaskModel& model = *r.model;
  if (format == Format::json) {
    JsonWriter j = detail::report_writer();
    j.begin_object().key("spec").value(r.spec).key("llm").value(r.llm);
    if (!r.llm_model.empty()) j.key("model").value(r.llm_model);
    j.key("goal_reached").value(r.goal_reached).key("termination").value(r.termination);
    j.key("message").value(r.message).key("steps").value(r.steps);
    j.key("executed").value(r.executed).key("rejected").value(r.rejected);
    j.key("step_limit").value(r.step_limit).key("progress").value(r.progress);
    j.key("llm_calls").value(r.llm_calls).key("dominant_choices").value(r.dominant);
    j.key("fallbacks").value(r.fallbacks).key("failures").begin_object();
    for (const auto& [kind, n] : r.failures) j.key(kind).value(n);
    j.end_object().key("rejections_by_reason").begin_object();
    for (const auto& [code, n] : r.rejections_by_reason) j.key(code).value(n);
    j.end_object().key("tokens").begin_object().key("input").value(r.input_tokens);
    j.key("output").value(r.output_tokens).end_object();
    j.key("budget").begin_object().key("total").value(model.format_amount(r.total));
    j.key("net").value(model.format_amount(r.net)).key("gross").value(model.format_amount(r.gross));
    j.end_object().key("log").begin_array();
    for (const AgentStep& s : r.log) {
      j.begin_object().key("step").value(s.index).key("source").value(s.source);
      j.key("action").value(s.action).key("params").value(s.params);
      j.key("approved").value(s.approved).key("cost").value(model.format_amount(s.cost));
      j.key("spent").value(model.format_amount(s.spent));
      if (!s.failure.empty()) j.key("failure").value(s.failure);
      if (!s.reasons.empty()) write_reasons(j.key("reasons"), s.reasons);
      if (!s.repair.empty()) j.key("repair").value(s.repair);
      if (s.would_be) {  // shadow mode: what the enforcing kernel would have decided
        j.key("shadow").begin_object().key("approved").value(s.would_be->approved);
        write_reasons(j.key("reasons"), s.would_be->reasons);
        j.end_object();
      }
      if (s.input_tokens + s.output_tokens > 0) {
        j.key("tokens").begin_object().key("input").value(s.input_tokens);
        j.key("output").value(s.output_tokens).end_object();
      }
      j.end_object();
    }
    j.end_array();
    if (r.lookahead) j.key("lookahead").value(*r.lookahead);
    if (!r.approvals.empty()) detail::write_approvals(j, r.approvals);
    detail::write_shadow(j, r.shadow);
    j.key("trace").begin_object().key("entries").value(r.trace_entries);
    j.key("head").value(r.trace_head).key("verified").value(r.trace_verified);
    if (!r.trace_file.empty()) j.key("file").value(r.trace_file);
    j.end_object();
    if (!r.transcript_file.empty()) j.key("transcript").value(r.transcript_file);
    if (r.ledger) detail::write_ledger(j.key("ledger"), *r.ledger);
    if (!r.pools.empty()) write_pools(j.key("pools"), r.pools);
    out << j.end_object().take() << "\n";
    return;
  }
  out << "goal: "
      << (model.goal_description.empty() ? (model.goal ? kernel::to_source(*model.goal) : "(none)")
                                         : model.goal_description)
      << "\n";
  out << (r.goal_reached ? "result: goal reached" : "result: goal NOT reached") << " ("
      << r.termination << ": " << r.message << ")\n";
  char pct[32];
  std::snprintf(pct, sizeof pct, "%.0f%%", r.progress * 100.0);
  out << "  llm         " << r.llm << (r.llm_model.empty() ? "" : " (" + r.llm_model + ")") << ": "
      << r.llm_calls << " call" << (r.llm_calls == 1 ? "" : "s") << ", " << r.dominant
      << " dominant choice" << (r.dominant == 1 ? "" : "s") << " without a call, " << r.fallbacks
      << " fallback" << (r.fallbacks == 1 ? "" : "s");
  if (r.input_tokens + r.output_tokens > 0)
    out << ", tokens " << r.input_tokens << " in / " << r.output_tokens << " out";
  out << "\n  failures    ";
  bool any = false;
  for (const auto& [kind, n] : r.failures) {
    if (n == 0) continue;
    out << (any ? ", " : "") << kind << " " << n;
    any = true;
  }
  out << (any ? "\n" : "none\n");
  out << "  steps       " << r.steps << " (" << r.executed << " executed, " << r.rejected
      << " rejected) of at most " << r.step_limit << " (T2); progress " << pct << "\n";
  if (!r.rejections_by_reason.empty())
    out << "  rejections  " << detail::rejections_by_reason(r.rejected, r.rejections_by_reason)
        << "\n";
  out << "  cost        " << model.format_amount(r.net) << " of " << model.format_amount(r.total)
      << " (gross " << model.format_amount(r.gross) << ")\n";
  out << "  actions     ";
  bool first = true;
  std::size_t shown = 0;
  for (const AgentStep& s : r.log) {
    if (!s.approved) continue;
    if (shown++ == 20) {
      out << ", ...";
      break;
    }
    out << (first ? "" : ", ") << s.action;
    first = false;
  }
  out << (first ? "(none)\n" : "\n");
  if (r.lookahead) out << "  lookahead   " << *r.lookahead << " steps\n";
  detail::print_approvals(out, r.approvals);
  detail::print_shadow(out, r.shadow);
  out << "  trace       " << r.trace_entries
      << " entries, head sha256:" << r.trace_head.substr(0, 16) << "..., "
      << (r.trace_verified ? "chain verified" : "CHAIN BROKEN");
  if (!r.trace_file.empty()) out << ", written to " << r.trace_file;
  out << "\n";
  if (!r.transcript_file.empty()) out << "  transcript  " << r.transcript_file << "\n";
  if (r.ledger) detail::print_ledger(out, *r.ledger);
  detail::print_pools(out, r.pools);
}

}  // namespace clampai::report
