#include "clampai/report/run.hpp"

#include "clampai/kernel/expr.hpp"
#include "clampai/report/wire.hpp"
#include "encode.hpp"

namespace clampai::report {

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
    JsonWriter j = detail::report_writer();
    j.begin_object().key("spec").value(spec).key("name").value(model.name);
    j.key("digest").value(model.digest).key("variables").begin_array();
    for (const auto& v : model.variables)
      j.begin_object().key("name").value(v.name).key("type").value(type_of(v)).end_object();
    j.end_array().key("actions").begin_array();
    for (const auto& a : model.actions) {
      j.begin_object().key("id").value(a.id).key("cost").value(cost_of(model, a));
      j.key("parameters").value(a.parameters.size()).key("emergency").value(a.emergency);
      j.end_object();
    }
    j.end_array().key("invariants").begin_object().key("blocking").value(blocking);
    j.key("monitoring").value(model.invariants.size() - blocking).end_object();
    j.key("budget").begin_object().key("total").value(model.format_amount(model.budget.total));
    j.key("min_action_cost").value(model.format_amount(model.budget.min_action_cost));
    j.key("step_limit").value(model.budget.step_limit);
    if (!model.budget.pool.empty()) j.key("pool").value(model.budget.pool);
    j.end_object();
    j.key("ok").value(true).end_object();
    out << j.take() << "\n";
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

namespace {
ApprovalsSection approvals_of(const driver::RunResult& r) {
  ApprovalsSection a{r.approvals_granted, r.approvals_denied, r.approvals_expired, {}};
  for (const driver::Ticket& t : r.waiting) a.waiting.emplace_back(t.id, t.action);
  return a;
}
}  // namespace

namespace detail {

void write_approvals(JsonWriter& j, const ApprovalsSection& a) {
  j.key("approvals").begin_object().key("granted").value(a.granted);
  j.key("denied").value(a.denied).key("expired").value(a.expired);
  j.key("waiting").begin_array();
  for (const auto& [ticket, action] : a.waiting)
    j.begin_object().key("ticket").value(ticket).key("action").value(action).end_object();
  j.end_array().end_object();
}

void print_approvals(std::ostream& out, const ApprovalsSection& a) {
  if (a.empty()) return;
  out << "  approvals   " << a.granted << " granted, " << a.denied << " denied, " << a.expired
      << " expired, " << a.waiting.size() << " waiting";
  for (std::size_t i = 0; i < a.waiting.size(); ++i)
    out << (i ? ", " : ": ") << "ticket " << a.waiting[i].first << " of `" << a.waiting[i].second
        << "`";
  out << "\n";
}

void write_shadow(JsonWriter& j, const ShadowSection& s) {
  if (!s.on) return;
  j.key("shadow").begin_object().key("would_be_rejected").value(s.rejected.size());
  j.key("rejections").begin_array();
  for (const driver::ShadowRejection& r : s.rejected) {
    j.begin_object().key("action").value(r.action).key("sequence");
    if (r.sequence) {
      j.value(*r.sequence);
    } else {
      j.null();
    }
    write_reasons(j.key("reasons"), r.reasons);
    j.end_object();
  }
  j.end_array().end_object();
}

void print_shadow(std::ostream& out, const ShadowSection& s) {
  if (!s.on) return;
  const std::size_t n = s.rejected.size();
  out << "  shadow      nothing enforced; " << n << " step" << (n == 1 ? "" : "s")
      << " the kernel would have rejected\n";
  for (const driver::ShadowRejection& r : s.rejected) {
    out << "              `" << r.action << "`"
        << (r.sequence ? " (entry " + std::to_string(*r.sequence) + ")" : " (not followed)");
    for (std::size_t i = 0; i < r.reasons.size(); ++i)
      out << (i ? "; " : ": ") << kernel::to_string(r.reasons[i].code)
          << (r.reasons[i].message.empty() ? "" : " (" + r.reasons[i].message + ")");
    out << "\n";
  }
}

}  // namespace detail

void write_run(std::ostream& out, Format format, const RunReport& in) {
  const kernel::TaskModel& model = *in.model;
  const driver::RunResult& r = *in.result;
  if (format == Format::json) {
    JsonWriter j = detail::report_writer();
    j.begin_object().key("spec").value(in.spec).key("goal_reached").value(r.goal_reached);
    j.key("termination").value(driver::to_string(r.termination));
    j.key("steps").value(in.steps).key("emergency_steps").value(in.emergency_steps);
    j.key("step_limit").value(in.step_limit);
    j.key("budget").begin_object().key("total").value(model.format_amount(in.total));
    j.key("net")
        .value(model.format_amount(in.net))
        .key("gross")
        .value(model.format_amount(in.gross));
    j.end_object().key("attempted").value(r.attempted).key("rejected").value(r.rejected);
    j.key("rejections_by_reason").begin_object();
    for (const auto& [code, n] : r.rejections_by_reason) j.key(code).value(n);
    j.end_object().key("actions").array_of(r.actions).key("last_reasons");
    write_reasons(j, r.last_reasons);
    if (in.lookahead) j.key("lookahead").value(*in.lookahead);
    if (in.recover) {
      j.key("rollbacks").value(r.rollbacks).key("emergencies").value(r.emergencies);
      j.key("recovery").array_of(r.recovery);
    }
    if (const ApprovalsSection a = approvals_of(r); !a.empty()) detail::write_approvals(j, a);
    detail::write_shadow(j, {r.shadow, r.shadow_rejections});
    j.key("trace").begin_object().key("entries").value(in.trace_entries);
    j.key("head").value(in.trace_head).key("verified").value(in.trace_verified);
    if (!in.trace_file.empty()) j.key("file").value(in.trace_file);
    if (in.trace_appended) j.key("appended").value(true);
    j.end_object();
    if (in.ledger) detail::write_ledger(j.key("ledger"), *in.ledger);
    if (!in.pools.empty()) write_pools(j.key("pools"), in.pools);
    out << j.end_object().take() << "\n";
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
  detail::print_approvals(out, approvals_of(r));
  detail::print_shadow(out, {r.shadow, r.shadow_rejections});
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
    JsonWriter j = detail::report_writer();
    j.begin_object().key("file").value(r.file).key("ok").value(check.ok);
    j.key("entries").value(check.entries).key("sealed").value(check.sealed);
    j.key("message").value(check.message).key("replay").value(r.replay);
    j.key("truncated_tail").value(check.truncated_tail).key("first_bad_entry");
    if (check.first_bad) {
      j.value(*check.first_bad);
    } else {
      j.null();
    }
    if (check.truncated_tail) j.key("verified_bytes").value(check.verified_bytes);
    if (r.unresolved) j.key("steps_without_outcome").array_of(*r.unresolved);
    if (r.signatures) {
      const kernel::SignatureCheck& sig = *r.signatures;
      j.key("signatures").begin_object().key("ok").value(sig.ok);
      j.key("signed_entries")
          .value(sig.signed_entries)
          .key("uncovered_entries")
          .value(sig.uncovered);
      j.key("message").value(sig.message).key("covered_through");
      if (sig.covered_through) {
        j.value(*sig.covered_through);
      } else {
        j.null();
      }
      j.end_object();
    }
    out << j.end_object().take() << "\n";
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
  if (r.signatures && r.signatures->ok) out << "; " << r.signatures->message;
  if (r.unresolved && !r.unresolved->empty()) {
    out << "; gateway steps without an outcome (forwarded or about to be when the gateway "
           "stopped: their effect may not have happened):";
    for (const std::uint64_t s : *r.unresolved) out << " " << s;
  }
  out << "\n";
}

}  // namespace clampai::report
