#include "repair_cmd.hpp"

#include <algorithm>
#include <iostream>
#include <string_view>
#include <variant>

#include "clampai/kernel.hpp"
#include "clampai/report/repair.hpp"
#include "clampai/verifier.hpp"
#include "output.hpp"

namespace clampai::cli {

namespace ck = clampai::kernel;
namespace cv = clampai::verifier;

namespace {

struct Args {
  std::string spec, state, action, params, weights, norm, format = "text";
  unsigned timeout_ms = 10000;
} args;

// The proposal as given: named values for declared parameters (defaults fill the rest), not
// checked against the bounds (out-of-bounds values are what a repair is for): the kernel's
// resolution, its reasons as errors of --params.
ck::Proposal proposal_of(const ck::TaskModel& m,
                         std::string_view action,
                         const ck::ParamMap& given) {
  std::variant<ck::Proposal, ck::Reason> resolved =
      ck::resolve(m, action, given, ck::ParamCheck::as_given);
  if (auto* p = std::get_if<ck::Proposal>(&resolved)) return std::move(*p);
  const ck::Reason& why = std::get<ck::Reason>(resolved);
  // An unknown name is an error of --params.NAME; a missing one, of --params.
  const bool given_name = std::any_of(
      given.begin(), given.end(), [&](const auto& g) { return g.first == why.subject; });
  throw SpecError(given_name ? "--params." + why.subject : std::string("--params"), why.message);
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
  const ck::Proposal proposal = proposal_of(m, args.action, parse_params(args.params));
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
  report::write_repair(std::cout, format_of(args.format), {args.spec, &m, &proposal, &r});
  return rc;
}

}  // namespace

CLI::App* add_repair_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "repair",
      "Find the parameter values closest to a proposal that the kernel approves, with a "
      "certificate, or the constraints that conflict");
  set_help_footer(cmd,
                  "0 approved or repaired, 1 no repair, 2 bad input, 3 undecided",
                  "clampai repair examples/autoscale.json --action scale_up --params '{\"n\": 50}'",
                  "docs/REPAIR.md");
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
  add_quiet_flag(cmd);
  return cmd;
}

int run_repair_command() {
  try {
    return repair_command();
  } catch (const Error& e) {
    if (dynamic_cast<const SpecError*>(&e) != nullptr)
      return fail(args.format, "repair", args.spec, describe(args.spec, e));
    return fail(args.format, "repair", args.spec, e.what());
  }
}

}  // namespace clampai::cli
