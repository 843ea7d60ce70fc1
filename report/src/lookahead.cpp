#include "clampai/report/lookahead.hpp"

#include "encode.hpp"

namespace clampai::report {

using detail::json;

namespace {

json lookahead_json(const LookaheadReport& in) {
  const driver::LookaheadResult& r = *in.result;
  const kernel::TaskModel& m = *in.model;
  const json reasons = detail::reasons(r.decision.reasons);
  json j = {{"spec", in.spec},
            {"action", in.action},
            {"depth", in.depth},
            {"engine", in.engine},
            {"approved", r.decision.approved},
            {"reasons", reasons},
            {"trap", r.trap()},
            {"entered", r.entered},
            {"complete", r.complete},
            {"situations", r.situations}};
  if (!r.complete) j["incomplete_reason"] = r.incomplete_reason;
  j["reachable_basin"] = r.reachable_basin ? json(*r.reachable_basin) : json(nullptr);
  j["basin_witness"] = detail::plan(m, r.basin_witness);
  j["dead_end"] = r.dead_end;
  j["dead_end_witness"] = detail::plan(m, r.dead_end_witness);
  j["goal_reachable"] = r.goal_reachable;
  if (r.goal_reachable) {
    j["cheapest_plan"] = detail::plan(m, r.cheapest_plan);
    j["cheapest_cost"] = m.format_amount(r.cheapest_cost);
  }
  return j;
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
    out << lookahead_json(r).dump(2, ' ', false, detail::json::error_handler_t::replace) << "\n";
  } else {
    lookahead_text(out, r);
  }
}

}  // namespace clampai::report
