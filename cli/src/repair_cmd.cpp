#include "repair_cmd.hpp"

#include <iostream>
#include <nlohmann/json.hpp>

#include "clampai/kernel.hpp"
#include "clampai/verifier.hpp"
#include "output.hpp"

namespace clampai::cli {

namespace ck = clampai::kernel;
namespace cv = clampai::verifier;
using nlohmann::json;

namespace {

struct Args {
  std::string spec, state, action, params, weights, norm, format = "text";
  unsigned timeout_ms = 10000;
} args;

// The proposal as given: named values for declared parameters (defaults fill the rest), not
// checked against the bounds (out-of-bounds values are what a repair is for).
ck::Proposal proposal_of(const ck::TaskModel& m, std::size_t action, const ck::ParamMap& given) {
  const ck::Action& a = m.actions[action];
  for (const auto& [name, v] : given) {
    if (std::none_of(a.parameters.begin(), a.parameters.end(), [&](const auto& p) {
          return p.name == name;
        }))
      throw SpecError("--params." + name, "`" + a.id + "` has no parameter `" + name + "`");
  }
  ck::Proposal p{action, {}};
  for (const ck::Parameter& par : a.parameters) {
    const auto it = std::find_if(
        given.begin(), given.end(), [&](const auto& g) { return g.first == par.name; });
    if (it != given.end()) {
      p.params.push_back(it->second);
    } else if (par.default_value) {
      p.params.push_back(ck::Value::number(*par.default_value));
    } else {
      throw SpecError("--params", "missing parameter `" + par.name + "` (it has no default)");
    }
  }
  return p;
}

std::string values_text(const ck::Action& a, const ck::Proposal& p) {
  std::string out;
  for (std::size_t i = 0; i < p.params.size(); ++i)
    out += (i ? ", " : "") + a.parameters[i].name + " = " + p.params[i].to_string();
  return out.empty() ? "(no parameters)" : out;
}

json params_json(const ck::Action& a, const ck::Proposal& p) {
  json j = json::object();
  for (std::size_t i = 0; i < p.params.size(); ++i)
    j[a.parameters[i].name] = p.params[i].to_string();
  return j;
}

json reasons_of(const std::vector<ck::Reason>& rs) {
  json out = json::array();
  for (const auto& r : rs)
    out.push_back({{"code", std::string(ck::to_string(r.code))},
                   {"subject", r.subject},
                   {"message", r.message}});
  return out;
}

int repair_command() {
  auto [model, situation] = load_situation(args.spec, args.state);
  const ck::TaskModel& m = *model;
  const auto index = m.find_action(args.action);
  if (!index) {
    std::vector<std::string> ids;
    for (const auto& action : m.actions) ids.push_back(action.id);
    throw SpecError("--action",
                    "unknown action `" + args.action + "`" + ck::did_you_mean(args.action, ids));
  }
  const ck::Action& a = m.actions[*index];
  const ck::Proposal proposal = proposal_of(m, *index, parse_params(args.params));
  cv::RepairOptions options;
  options.timeout_ms = args.timeout_ms;
  if (!args.norm.empty())
    options.norm = args.norm == "l1" ? cv::RepairNorm::l1 : cv::RepairNorm::l2;
  for (const auto& [name, w] : parse_params(args.weights, "--weights")) {
    if (w.as_number().units <= 0) throw SpecError("--weights." + name, "a weight must be positive");
    options.weights[name] = w.as_number();
  }
  cv::RepairResult r;
  try {
    r = cv::repair(m, situation, proposal, options);
  } catch (const InvalidArgument& e) {
    throw SpecError("--weights", e.what());
  }
  const int rc = r.status == cv::RepairStatus::approved || r.status == cv::RepairStatus::repaired
                     ? 0
                 : r.status == cv::RepairStatus::impossible ? 1
                                                            : 3;
  const auto& c = r.certificate;
  if (args.format == "json") {
    json j = {{"spec", args.spec},
              {"action", a.id},
              {"status", std::string(cv::to_string(r.status))},
              {"norm", std::string(cv::to_string(r.norm))},
              {"proposed", params_json(a, proposal)},
              {"rejected_because", reasons_of(r.original.reasons)}};
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
    std::cout << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return rc;
  }
  const std::string norm = r.norm == cv::RepairNorm::l1 ? "L1 distance" : "squared L2 distance";
  switch (r.status) {
    case cv::RepairStatus::approved:
      std::cout << "APPROVED " << a.id << " as proposed (" << values_text(a, proposal)
                << "): nothing to repair\n";
      return rc;
    case cv::RepairStatus::repaired:
      std::cout << "REPAIRED " << a.id << ": " << values_text(a, proposal) << "  ->  "
                << values_text(a, r.repaired) << "\n";
      std::cout << "  distance      " << c.distance << " (" << norm << ")"
                << (c.optimal ? ", the minimum"
                              : ", at least " + c.lower_bound + " for any values (off the grid)")
                << "\n";
      std::cout << "  kernel        approves it (cost " << m.format_amount(r.decision.cost) << ")"
                << (c.feasible ? "; every barrier condition holds" : "") << "\n";
      if (!c.binding.empty()) {
        std::cout << "  binding       ";
        for (std::size_t i = 0; i < c.binding.size(); ++i)
          std::cout << (i ? ", " : "") << c.binding[i];
        std::cout << "\n";
      }
      for (const auto& [name, value] : c.multipliers)
        std::cout << "  KKT           " << name << ": multiplier " << value << "\n";
      std::cout << "  method        " << c.method << "\n";
      break;
    case cv::RepairStatus::impossible:
      std::cout << "NO REPAIR for " << a.id << " (" << values_text(a, proposal) << "): " << r.reason
                << "\n";
      for (const auto& x : r.conflict) std::cout << "  conflict      " << x << "\n";
      break;
    case cv::RepairStatus::unknown:
      std::cout << "UNKNOWN " << a.id << ": " << r.reason << "\n";
      break;
  }
  for (const auto& x : r.original.reasons)
    std::cout << "  was rejected  " << ck::to_string(x.code) << ": " << x.message << "\n";
  return rc;
}

}  // namespace

CLI::App* add_repair_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "repair",
      "Find the parameter values closest to a proposal that the kernel approves, with a "
      "certificate, or the constraints that conflict");
  cmd->add_option("SPEC", args.spec, "Task spec (JSON)")->required();
  cmd->add_option("--state",
                  args.state,
                  "The state: a JSON object inline ('{\"x\": 1}') or a file holding one; "
                  "default: the initial state");
  cmd->add_option("--action", args.action, "The proposed action's id")->required();
  cmd->add_option("--params", args.params, "The proposed parameters, as a JSON object")->required();
  cmd->add_option("--norm",
                  args.norm,
                  "l1 (exact, Z3) or l2 (quadratic program); default: l1 if every parameter is "
                  "an integer, else l2")
      ->check(CLI::IsMember({"l1", "l2"}));
  cmd->add_option("--weights", args.weights, "Positive weight per parameter, as a JSON object");
  cmd->add_option("--timeout-ms", args.timeout_ms, "Z3's time limit")
      ->check(CLI::Range(1U, 3600000U))
      ->capture_default_str();
  cmd->add_option("--format", args.format, "Output format")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  return cmd;
}

int run_repair_command() {
  try {
    return repair_command();
  } catch (const Error& e) {
    std::cerr << "clampai: error: " << e.what() << "\n";
    return 2;
  }
}

}  // namespace clampai::cli
