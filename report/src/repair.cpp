#include "clampai/report/repair.hpp"

#include "encode.hpp"

namespace clampai::report {

namespace cv = clampai::verifier;
using detail::json;

namespace {

std::string values_text(const kernel::Action& a, const kernel::Proposal& p) {
  std::string out;
  for (std::size_t i = 0; i < p.params.size(); ++i)
    out += (i ? ", " : "") + a.parameters[i].name + " = " + p.params[i].to_string();
  return out.empty() ? "(no parameters)" : out;
}

json params_json(const kernel::Action& a, const kernel::Proposal& p) {
  json j = json::object();
  for (std::size_t i = 0; i < p.params.size(); ++i)
    j[a.parameters[i].name] = p.params[i].to_string();
  return j;
}

json repair_json(const RepairReport& in) {
  const kernel::TaskModel& m = *in.model;
  const cv::RepairResult& r = *in.result;
  const kernel::Action& a = m.actions[in.proposal->action];
  const auto& c = r.certificate;
  json j = {{"spec", in.spec},
            {"action", a.id},
            {"status", std::string(cv::to_string(r.status))},
            {"norm", std::string(cv::to_string(r.norm))},
            {"proposed", params_json(a, *in.proposal)},
            {"rejected_because", detail::reasons(r.original.reasons)}};
  if (r.status == cv::RepairStatus::approved || r.status == cv::RepairStatus::repaired) {
    j["repaired"] = params_json(a, r.repaired);
    j["cost"] = m.format_amount(r.decision.cost);
    json multipliers = json::array();
    for (const auto& [name, value] : c.multipliers)
      multipliers.push_back({{"constraint", name}, {"multiplier", value}});
    j["certificate"] = {{"method", c.method},
                        {"kernel_approved", c.kernel_approved},
                        {"feasible", c.feasible},
                        {"optimal", c.optimal},
                        {"distance", c.distance},
                        {"lower_bound", c.lower_bound},
                        {"binding", c.binding},
                        {"multipliers", multipliers}};
  }
  if (!r.conflict.empty()) j["conflict"] = r.conflict;
  if (!r.reason.empty()) j["reason"] = r.reason;
  return j;
}

void repair_text(std::ostream& out, const RepairReport& in) {
  const kernel::TaskModel& m = *in.model;
  const cv::RepairResult& r = *in.result;
  const kernel::Action& a = m.actions[in.proposal->action];
  const kernel::Proposal& proposal = *in.proposal;
  const auto& c = r.certificate;
  const std::string norm = r.norm == cv::RepairNorm::l1 ? "L1 distance" : "squared L2 distance";
  switch (r.status) {
    case cv::RepairStatus::approved:
      out << "APPROVED " << a.id << " as proposed (" << values_text(a, proposal)
          << "): nothing to repair\n";
      return;
    case cv::RepairStatus::repaired:
      out << "REPAIRED " << a.id << ": " << values_text(a, proposal) << "  ->  "
          << values_text(a, r.repaired) << "\n";
      out << "  distance      " << c.distance << " (" << norm << ")"
          << (c.optimal ? ", the minimum"
                        : ", at least " + c.lower_bound + " for any values (off the grid)")
          << "\n";
      out << "  kernel        approves it (cost " << m.format_amount(r.decision.cost) << ")"
          << (c.feasible ? "; every barrier condition holds" : "") << "\n";
      if (!c.binding.empty()) {
        out << "  binding       ";
        for (std::size_t i = 0; i < c.binding.size(); ++i) out << (i ? ", " : "") << c.binding[i];
        out << "\n";
      }
      for (const auto& [name, value] : c.multipliers)
        out << "  KKT           " << name << ": multiplier " << value << "\n";
      out << "  method        " << c.method << "\n";
      break;
    case cv::RepairStatus::impossible:
      out << "NO REPAIR for " << a.id << " (" << values_text(a, proposal) << "): " << r.reason
          << "\n";
      for (const auto& x : r.conflict) out << "  conflict      " << x << "\n";
      break;
    case cv::RepairStatus::unknown:
      out << "UNKNOWN " << a.id << ": " << r.reason << "\n";
      break;
  }
  for (const auto& x : r.original.reasons)
    out << "  was rejected  " << kernel::to_string(x.code) << ": " << x.message << "\n";
}

}  // namespace

void write_repair(std::ostream& out, Format format, const RepairReport& r) {
  if (format == Format::json) {
    out << repair_json(r).dump(2, ' ', false, detail::json::error_handler_t::replace) << "\n";
  } else {
    repair_text(out, r);
  }
}

}  // namespace clampai::report
