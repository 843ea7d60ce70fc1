#include "lookahead_cmd.hpp"

#include <iostream>
#include <nlohmann/json.hpp>

#include "clampai/kernel.hpp"
#include "clampai/verifier.hpp"
#include "output.hpp"

namespace clampai::cli {

namespace ck = clampai::kernel;
using nlohmann::json;

namespace {

struct Args {
  std::string spec, state, action, params, format = "text", engine = "explicit";
  unsigned timeout_ms = 10000;
  unsigned depth = 3;
  std::size_t max_param_values = 64;
} args;

}  // namespace

int lookahead_command();

CLI::App* add_lookahead_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "lookahead",
      "Look K steps ahead of a proposed action: capture basins entered or reachable, dead ends, "
      "and the cheapest plan to the goal");
  cmd->add_option("SPEC", args.spec, "Task spec (JSON)")->required();
  cmd->add_option("--state",
                  args.state,
                  "The state: a JSON object inline ('{\"x\": 1}') or a file holding one; "
                  "default: the initial state");
  cmd->add_option("--action", args.action, "The proposed action's id")->required();
  cmd->add_option("--params", args.params, "The action's parameters, as a JSON object");
  cmd->add_option("--depth", args.depth, "Steps searched after the action")
      ->check(CLI::Range(0, 50))
      ->capture_default_str();
  cmd->add_option("--max-param-values",
                  args.max_param_values,
                  "Parameter vectors enumerated per action; larger domains make the answer "
                  "incomplete")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  cmd->add_option("--engine",
                  args.engine,
                  "explicit (enumerates parameter values, memoised) or symbolic (Z3 bounded "
                  "model checking: exact for any parameter domain)")
      ->check(CLI::IsMember({"explicit", "symbolic"}))
      ->capture_default_str();
  cmd->add_option("--timeout-ms", args.timeout_ms, "Z3's time limit per query (symbolic)")
      ->check(CLI::Range(1U, 3600000U))
      ->capture_default_str();
  cmd->add_option("--format", args.format, "Output format")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  return cmd;
}

int lookahead_command() {
  auto [model, situation] = load_situation(args.spec, args.state);
  ck::KernelOptions ko;
  ko.check_initial_state = false;
  const ck::SafetyKernel resolver(model, ko);
  const auto resolved = resolver.resolve(args.action, parse_params(args.params));
  if (const auto* bad = std::get_if<ck::Reason>(&resolved)) {
    std::vector<std::string> ids;
    for (const auto& action : model->actions) ids.push_back(action.id);
    throw SpecError("--action",
                    bad->message + (bad->code == ck::ReasonCode::unknown_action
                                        ? ck::did_you_mean(args.action, ids)
                                        : std::string()));
  }
  ck::LookaheadOptions options;
  options.depth = args.depth;
  options.max_param_values = args.max_param_values;
  const ck::LookaheadResult r =
      args.engine == "symbolic"
          ? verifier::symbolic_lookahead(
                *model, situation, std::get<ck::Proposal>(resolved), options, args.timeout_ms)
          : ck::lookahead(*model, situation, std::get<ck::Proposal>(resolved), options);
  const ck::TaskModel& m = *model;
  const int rc = !r.decision.approved || r.trap() ? 1 : (r.complete ? 0 : 3);
  if (args.format == "json") {
    json reasons = json::array();
    for (const auto& x : r.decision.reasons)
      reasons.push_back({{"code", std::string(ck::to_string(x.code))}, {"message", x.message}});
    json j = {{"spec", args.spec},
              {"action", args.action},
              {"depth", args.depth},
              {"engine", args.engine},
              {"approved", r.decision.approved},
              {"reasons", reasons},
              {"trap", r.trap()},
              {"entered", r.entered},
              {"complete", r.complete},
              {"situations", r.situations}};
    if (!r.complete) j["incomplete_reason"] = r.incomplete_reason;
    j["reachable_basin"] = r.reachable_basin ? json(*r.reachable_basin) : json(nullptr);
    j["basin_witness"] = plan_json(m, r.basin_witness);
    j["dead_end"] = r.dead_end;
    j["dead_end_witness"] = plan_json(m, r.dead_end_witness);
    j["goal_reachable"] = r.goal_reachable;
    if (r.goal_reachable) {
      j["cheapest_plan"] = plan_json(m, r.cheapest_plan);
      j["cheapest_cost"] = m.format_amount(r.cheapest_cost);
    }
    std::cout << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return rc;
  }
  if (!r.decision.approved) {
    std::cout << "REJECTED " << args.action << ": the kernel refuses it now\n";
    for (const auto& x : r.decision.reasons)
      std::cout << "  " << ck::to_string(x.code) << ": " << x.message << "\n";
    return rc;
  }
  const std::string k = std::to_string(args.depth);
  std::cout << (r.trap() ? "TRAP " : "ok ") << args.action << " (cost "
            << m.format_amount(r.decision.cost) << "), looking " << k << " steps ahead\n";
  std::cout << "  enters a basin     "
            << (r.entered.empty() ? std::string("no") : "yes: " + r.entered.front()) << "\n";
  std::cout << "  basin reachable    "
            << (r.reachable_basin
                    ? "`" + *r.reachable_basin + "` in " + std::to_string(r.basin_witness.size()) +
                          " steps: " + kernel::describe_plan(m, r.basin_witness)
                    : "none within " + k + " steps")
            << "\n";
  std::cout << "  dead end           "
            << (r.dead_end ? "after " + kernel::describe_plan(m, r.dead_end_witness) +
                                 ": no action is approvable and the goal does not hold"
                           : "none within " + k + " steps")
            << "\n";
  std::cout << "  goal               "
            << (r.goal_reachable
                    ? "reachable: the cheapest plan costs " + m.format_amount(r.cheapest_cost) +
                          ": " + kernel::describe_plan(m, r.cheapest_plan)
                    : "not reachable within " + k + " steps and the budget left")
            << "\n";
  if (args.engine == "symbolic") {
    std::cout << "  searched           symbolically (Z3), every parameter value"
              << (r.complete ? "" : " (incomplete: " + r.incomplete_reason + ")") << "\n";
  } else {
    std::cout << "  searched           " << r.situations << " situations"
              << (r.complete ? "" : " (incomplete: " + r.incomplete_reason + ")") << "\n";
  }
  return rc;
}

int run_lookahead_command() {
  try {
    return lookahead_command();
  } catch (const Error& e) {
    std::cerr << "clampai: error: " << e.what() << "\n";
    return 2;
  }
}

}  // namespace clampai::cli
