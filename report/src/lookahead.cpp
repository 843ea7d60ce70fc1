#include "clampai/report/lookahead.hpp"

#include "clampai/report/wire.hpp"
#include "encode.hpp"

namespace clampai::report {

namespace {

std::string lookahead_json(const LookaheadReport& in) {
  const driver::LookaheadResult& r = *in.result;
  const kernel::TaskModel& m = *in.model;
  JsonWriter j = detail::report_writer();
  j.begin_object().key("spec").value(in.spec).key("action").value(in.action);
  j.key("depth").value(in.depth).key("engine").value(in.engine);
  j.key("approved").value(r.decision.approved).key("reasons");
  write_reasons(j, r.decision.reasons);
  j.key("trap").value(r.trap()).key("entered").array_of(r.entered);
  j.key("complete").value(r.complete).key("situations").value(r.situations);
  if (!r.complete) j.key("incomplete_reason").value(r.incomplete_reason);
  j.key("reachable_basin");
  if (r.reachable_basin) {
    j.value(*r.reachable_basin);
  } else {
    j.null();
  }
  detail::write_plan(j.key("basin_witness"), m, r.basin_witness);
  j.key("dead_end").value(r.dead_end);
  detail::write_plan(j.key("dead_end_witness"), m, r.dead_end_witness);
  j.key("goal_reachable").value(r.goal_reachable);
  if (r.goal_reachable) {
    detail::write_plan(j.key("cheapest_plan"), m, r.cheapest_plan);
    j.key("cheapest_cost").value(m.format_amount(r.cheapest_cost));
  }
  return j.end_object().take();
}

void lookahead_text(std::ostream& out, const LookaheadReport& in) {
  const driver::LookaheadResult& r = *in.result;
  const kernel::TaskModel& m = *in.model;
  if (!r.decision.approved) {
    out << "REJECTED " << in.action << ": the kernel refuses it now\n";
    for (const auto& x : r.decision.reasons)
      out << "  " << kernel::to_string(x.code) << ": " << x.message << "\n";
    return;
  }
  const std::string k = std::to_string(in.depth);
  out << (r.trap() ? "TRAP " : "ok ") << in.action << " (cost " << m.format_amount(r.decision.cost)
      << "), looking " << k << " steps ahead\n";
  out << "  enters a basin     "
      << (r.entered.empty() ? std::string("no") : "yes: " + r.entered.front()) << "\n";
  out << "  basin reachable    "
      << (r.reachable_basin
              ? "`" + *r.reachable_basin + "` in " + std::to_string(r.basin_witness.size()) +
                    " steps: " + driver::describe_plan(m, r.basin_witness)
              : "none within " + k + " steps")
      << "\n";
  out << "  dead end           "
      << (r.dead_end ? "after " + driver::describe_plan(m, r.dead_end_witness) +
                           ": no action is approvable and the goal does not hold"
                     : "none within " + k + " steps")
      << "\n";
  out << "  goal               "
      << (r.goal_reachable
              ? "reachable: the cheapest plan costs " + m.format_amount(r.cheapest_cost) + ": " +
                    driver::describe_plan(m, r.cheapest_plan)
              : "not reachable within " + k + " steps and the budget left")
      << "\n";
  const std::string incomplete = r.complete ? "" : " (incomplete: " + r.incomplete_reason + ")";
  if (in.engine == "symbolic") {
    out << "  searched           symbolically (Z3), every parameter value" << incomplete << "\n";
  } else {
    out << "  searched           " << r.situations << " situations" << incomplete << "\n";
  }
}

}  // namespace

void write_lookahead(std::ostream& out, Format format, const LookaheadReport& r) {
  if (format == Format::json) {
    out << lookahead_json(r) << "\n";
  } else {
    lookahead_text(out, r);
  }
}

}  // namespace clampai::report
