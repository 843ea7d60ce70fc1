#include "clampai/report/run.hpp"

#include "clampai/kernel/expr.hpp"
#include "encode.hpp"

namespace clampai::report {

using detail::json;

namespace {

std::string type_of(const kernel::Variable& v) {
  return v.type.to_string() + (v.optional ? "?" : "");
}

std::string cost_of(const kernel::TaskModel& m, const kernel::Action& a) {
  return a.cost_expr ? kernel::to_source(*a.cost_expr) : m.format_amount(a.cost);
}

}  // namespace

void write_check(std::ostream& out,
                 Format format,
                 const std::string& spec,
                 const kernel::TaskModel& model) {
  std::size_t blocking = 0;
  for (const auto& inv : model.invariants)
    blocking += inv.enforcement == kernel::Enforcement::blocking;
  if (format == Format::json) {
    json j;
    j["spec"] = spec;
    j["name"] = model.name;
    j["digest"] = model.digest;
    j["variables"] = json::array();
    for (const auto& v : model.variables)
      j["variables"].push_back({{"name", v.name}, {"type", type_of(v)}});
    j["actions"] = json::array();
    for (const auto& a : model.actions) {
      j["actions"].push_back({{"id", a.id},
                              {"cost", cost_of(model, a)},
                              {"parameters", a.parameters.size()},
                              {"emergency", a.emergency}});
    }
    j["invariants"] = {{"blocking", blocking}, {"monitoring", model.invariants.size() - blocking}};
    j["budget"] = {{"total", model.format_amount(model.budget.total)},
                   {"min_action_cost", model.format_amount(model.budget.min_action_cost)},
                   {"step_limit", model.budget.step_limit}};
    if (!model.budget.pool.empty()) j["budget"]["pool"] = model.budget.pool;
    j["ok"] = true;
    out << j.dump(2, ' ', false, detail::json::error_handler_t::replace) << "\n";
    return;
  }
  out << "spec " << spec << (model.name.empty() ? "" : " (" + model.name + ")") << "\n";
  out << "  digest      sha256:" << model.digest << "\n";
  out << "  variables   " << model.variables.size() << ":";
  for (const auto& v : model.variables) out << " " << v.name << ":" << type_of(v);
  out << "\n  actions     " << model.actions.size() << ":";
  for (const auto& a : model.actions)
    out << " " << a.id << "(" << cost_of(model, a) << (a.emergency ? ", emergency" : "") << ")";
  out << "\n  invariants  " << model.invariants.size() << " (" << blocking << " blocking, "
      << model.invariants.size() - blocking << " monitoring)\n";
  out << "  budget      " << model.format_amount(model.budget.total) << ", min action cost "
      << model.format_amount(model.budget.min_action_cost) << ", step bound (T2) "
      << model.budget.step_limit << "\n";
  if (!model.budget.pool.empty())
    out << "  pool        " << model.budget.pool
        << " (not checked here: run, serve and agent check every level with --pools FILE)\n";
  out << "ok: well-formed and well-typed; the initial state satisfies every blocking invariant\n";
}

void write_run(std::ostream& out, Format format, const RunReport& in) {
  const kernel::TaskModel& model = *in.model;
  const driver::RunResult& r = *in.result;
  if (format == Format::json) {
    json j;
    j["spec"] = in.spec;
    j["goal_reached"] = r.goal_reached;
    j["termination"] = std::string(driver::to_string(r.termination));
    j["steps"] = in.steps;
    j["emergency_steps"] = in.emergency_steps;
    j["step_limit"] = in.step_limit;
    j["budget"] = {{"total", model.format_amount(in.total)},
                   {"net", model.format_amount(in.net)},
                   {"gross", model.format_amount(in.gross)}};
    j["attempted"] = r.attempted;
    j["rejected"] = r.rejected;
    j["rejections_by_reason"] = r.rejections_by_reason;
    j["actions"] = r.actions;
    j["last_reasons"] = detail::reasons(r.last_reasons);
    if (in.lookahead) j["lookahead"] = *in.lookahead;
    if (in.recover) {
      j["rollbacks"] = r.rollbacks;
      j["emergencies"] = r.emergencies;
      j["recovery"] = r.recovery;
    }
    j["trace"] = {
        {"entries", in.trace_entries}, {"head", in.trace_head}, {"verified", in.trace_verified}};
    if (!in.trace_file.empty()) j["trace"]["file"] = in.trace_file;
    if (in.trace_appended) j["trace"]["appended"] = true;
    if (in.ledger) j["ledger"] = detail::ledger(*in.ledger);
    if (!in.pools.empty()) j["pools"] = detail::pools(in.pools);
    out << j.dump(2, ' ', false, detail::json::error_handler_t::replace) << "\n";
    return;
  }
  out << "goal: "
      << (model.goal_description.empty() ? (model.goal ? kernel::to_source(*model.goal) : "(none)")
                                         : model.goal_description)
      << "\n";
  out << (r.goal_reached ? "result: goal reached" : "result: goal NOT reached") << " ("
      << driver::to_string(r.termination) << ")\n";
  out << "  steps       " << in.steps << " of at most " << in.step_limit
      << " (T2), emergency steps " << in.emergency_steps << "\n";
  out << "  cost        " << model.format_amount(in.net) << " of " << model.format_amount(in.total)
      << " (gross " << model.format_amount(in.gross) << ")\n";
  out << "  attempted   " << r.attempted << ", rejected " << r.rejected;
  if (!r.rejections_by_reason.empty())
    out << " (" << detail::rejections_by_reason(r.rejected, r.rejections_by_reason) << ")";
  out << "\n  actions     ";
  for (std::size_t i = 0; i < r.actions.size(); ++i) out << (i ? ", " : "") << r.actions[i];
  out << (r.actions.empty() ? "(none)\n" : "\n");
  if (in.recover) {
    out << "  recovery    " << r.rollbacks << " rollback" << (r.rollbacks == 1 ? "" : "s") << ", "
        << r.emergencies << " emergency action" << (r.emergencies == 1 ? "" : "s");
    for (std::size_t i = 0; i < r.recovery.size(); ++i) out << (i ? ", " : ": ") << r.recovery[i];
    out << "\n";
  }
  if (!r.goal_reached) {
    for (const auto& reason : r.last_reasons)
      out << "  why         " << kernel::to_string(reason.code) << ": " << reason.message << "\n";
  }
  out << "  trace       " << in.trace_entries
      << " entries, head sha256:" << in.trace_head.substr(0, 16) << "..., "
      << (in.trace_verified ? "chain verified" : "CHAIN BROKEN");
  if (!in.trace_file.empty())
    out << (in.trace_appended ? ", appended to " : ", written to ") << in.trace_file;
  out << "\n";
  if (in.ledger) detail::print_ledger(out, *in.ledger);
  detail::print_pools(out, in.pools);
}

void write_trace_check(std::ostream& out, Format format, const TraceReport& r) {
  const kernel::TraceCheck& check = r.check;
  if (format == Format::json) {
    json j{{"file", r.file},
           {"ok", check.ok},
           {"entries", check.entries},
           {"sealed", check.sealed},
           {"message", check.message},
           {"replay", r.replay},
           {"truncated_tail", check.truncated_tail}};
    j["first_bad_entry"] = check.first_bad ? json(*check.first_bad) : json(nullptr);
    if (check.truncated_tail) j["verified_bytes"] = check.verified_bytes;
    if (r.unresolved) j["steps_without_outcome"] = *r.unresolved;
    out << j.dump(2, ' ', false, detail::json::error_handler_t::replace) << "\n";
    return;
  }
  out << (check.ok               ? "ok: "
          : check.truncated_tail ? "TRUNCATED: "
                                 : "BROKEN: ")
      << r.file << ": " << check.message;
  if (!r.spec.empty() && r.replay == "ok") {
    out << (check.sealed ? "; replays through the kernel to the sealed state"
                         : "; replays through the kernel (the trace has no seal, so no final "
                           "state to compare)");
  }
  if (r.unresolved && !r.unresolved->empty()) {
    out << "; gateway steps without an outcome (forwarded or about to be when the gateway "
           "stopped: their effect may not have happened):";
    for (const std::uint64_t s : *r.unresolved) out << " " << s;
  }
  out << "\n";
}

}  // namespace clampai::report
