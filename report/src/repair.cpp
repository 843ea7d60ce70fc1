#include "clampai/report/repair.hpp"

#include "clampai/report/wire.hpp"
#include "encode.hpp"

namespace clampai::report {

namespace cv = clampai::verifier;

namespace {

std::string values_text(const kernel::Action& a, const kernel::Proposal& p) {
  std::string out;
  for (std::size_t i = 0; i < p.params.size(); ++i)
    out += (i ? ", " : "") + a.parameters[i].name + " = " + p.params[i].to_string();
  return out.empty() ? "(no parameters)" : out;
}

void write_params(JsonWriter& j, const kernel::Action& a, const kernel::Proposal& p) {
  j.begin_object();
  for (std::size_t i = 0; i < p.params.size(); ++i)
    j.key(a.parameters[i].name).value(p.params[i].to_string());
  j.end_object();
}

std::string repair_json(const RepairReport& in) {
  const kernel::TaskModel& m = *in.model;
  const cv::RepairResult& r = *in.result;
  const kernel::Action& a = m.actions[in.proposal->action];
  const auto& c = r.certificate;
  JsonWriter j = detail::report_writer();
  j.begin_object().key("spec").value(in.spec).key("action").value(a.id);
  j.key("status").value(cv::to_string(r.status)).key("norm").value(cv::to_string(r.norm));
  write_params(j.key("proposed"), a, *in.proposal);
  write_reasons(j.key("rejected_because"), r.original.reasons);
  if (r.status == cv::RepairStatus::approved || r.status == cv::RepairStatus::repaired) {
    write_params(j.key("repaired"), a, r.repaired);
    j.key("cost").value(m.format_amount(r.decision.cost));
    j.key("certificate").begin_object().key("method").value(c.method);
    j.key("kernel_approved").value(c.kernel_approved).key("feasible").value(c.feasible);
    j.key("optimal").value(c.optimal).key("distance").value(c.distance);
    j.key("lower_bound").value(c.lower_bound).key("binding").array_of(c.binding);
    j.key("multipliers").begin_array();
    for (const auto& [name, value] : c.multipliers)
      j.begin_object().key("constraint").value(name).key("multiplier").value(value).end_object();
    j.end_array().end_object();
  }
  if (!r.conflict.empty()) j.key("conflict").array_of(r.conflict);
  if (!r.reason.empty()) j.key("reason").value(r.reason);
  return j.end_object().take();
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
    out << repair_json(r) << "\n";
  } else {
    repair_text(out, r);
  }
}

}  // namespace clampai::report
