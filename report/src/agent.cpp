#include "clampai/report/agent.hpp"

#include <cstdio>

#include "clampai/kernel/expr.hpp"
#include "encode.hpp"

namespace clampai::report {

using detail::json;

std::string agent_step_line(const kernel::TaskModel& model, const AgentStep& s) {
  std::string line = "step " + std::to_string(s.index) + "  " + s.action;
  if (!s.params.empty()) line += " " + s.params;
  line += s.approved ? "  approved" : "  REJECTED";
  for (std::size_t i = 0; i < s.reasons.size(); ++i)
    line += (i ? ", " : " (") + std::string(kernel::to_string(s.reasons[i].code)) +
            (i + 1 == s.reasons.size() ? ")" : "");
  line += "  spent " + model.format_amount(s.spent) + "/" + model.format_amount(model.budget.total);
  line += "  (" + s.source + (s.failure.empty() ? "" : " after " + s.failure) + ")";
  return line;
}

void write_agent(std::ostream& out, Format format, const AgentReport& r) {
  const kernel::TaskModel& model = *r.model;
  if (format == Format::json) {
    json j;
    j["spec"] = r.spec;
    j["llm"] = r.llm;
    if (!r.llm_model.empty()) j["model"] = r.llm_model;
    j["goal_reached"] = r.goal_reached;
    j["termination"] = r.termination;
    j["message"] = r.message;
    j["steps"] = r.steps;
    j["executed"] = r.executed;
    j["rejected"] = r.rejected;
    j["step_limit"] = r.step_limit;
    j["progress"] = r.progress;
    j["llm_calls"] = r.llm_calls;
    j["dominant_choices"] = r.dominant;
    j["fallbacks"] = r.fallbacks;
    j["failures"] = json::object();
    for (const auto& [kind, n] : r.failures) j["failures"][kind] = n;
    j["rejections_by_reason"] = r.rejections_by_reason;
    j["tokens"] = {{"input", r.input_tokens}, {"output", r.output_tokens}};
    j["budget"] = {{"total", model.format_amount(r.total)},
                   {"net", model.format_amount(r.net)},
                   {"gross", model.format_amount(r.gross)}};
    j["log"] = json::array();
    for (const AgentStep& s : r.log) {
      json e{{"step", s.index},
             {"source", s.source},
             {"action", s.action},
             {"params", s.params},
             {"approved", s.approved},
             {"cost", model.format_amount(s.cost)},
             {"spent", model.format_amount(s.spent)}};
      if (!s.failure.empty()) e["failure"] = s.failure;
      if (!s.reasons.empty()) e["reasons"] = detail::reasons(s.reasons);
      if (!s.repair.empty()) e["repair"] = s.repair;
      if (s.input_tokens + s.output_tokens > 0)
        e["tokens"] = {{"input", s.input_tokens}, {"output", s.output_tokens}};
      j["log"].push_back(std::move(e));
    }
    if (r.lookahead) j["lookahead"] = *r.lookahead;
    j["trace"] = {
        {"entries", r.trace_entries}, {"head", r.trace_head}, {"verified", r.trace_verified}};
    if (!r.trace_file.empty()) j["trace"]["file"] = r.trace_file;
    if (!r.transcript_file.empty()) j["transcript"] = r.transcript_file;
    if (r.ledger) j["ledger"] = detail::ledger(*r.ledger);
    if (!r.pools.empty()) j["pools"] = detail::pools(r.pools);
    out << j.dump(2, ' ', false, json::error_handler_t::replace) << "\n";
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
