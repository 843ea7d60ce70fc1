#include "lookahead_cmd.hpp"

#include <atomic>
#include <iostream>
#include <string>
#include <vector>

#include "clampai/driver.hpp"
#include "clampai/kernel.hpp"
#include "clampai/report/lookahead.hpp"
#include "clampai/report/progress.hpp"
#include "clampai/verifier.hpp"
#include "output.hpp"

namespace clampai::cli {

namespace cd = clampai::driver;
namespace ck = clampai::kernel;

namespace {

struct Args {
  std::string spec, state, action, params, format = "text", engine = "explicit";
  unsigned timeout_ms = 10000;
  unsigned depth = 3;
  std::size_t max_param_values = 64;
} args;

constexpr std::size_t kMostParamValues = 1000000;  // --max-param-values's range

// The options of this command that would complete an incomplete search, as a hint after its
// reason; "" when none would.
std::string completing_options(const cd::LookaheadResult& r) {
  std::vector<std::string> ways;
  if (r.param_values_needed > kMostParamValues) {
    ways.emplace_back("--engine symbolic (exact for any parameter domain)");
  } else if (r.param_values_needed > args.max_param_values) {
    ways.push_back("--max-param-values " + std::to_string(r.param_values_needed) +
                   " or --engine symbolic");
  }
  if (r.timed_out) ways.emplace_back("a larger --timeout-ms");
  if (r.unsupported) ways.emplace_back("--engine explicit");
  std::string out;
  for (const auto& way : ways) out += (out.empty() ? "; rerun with " : "; and ") + way;
  return out;
}

}  // namespace

int lookahead_command();

CLI::App* add_lookahead_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "lookahead",
      "Look K steps ahead of a proposed action: capture basins entered or reachable, dead ends, "
      "and the cheapest plan to the goal");
  set_help_footer(cmd,
                  "0 no trap, 1 a trap or the action rejected, 2 bad input, 3 an incomplete search "
                  "(it names the option that would complete it)",
                  "clampai lookahead examples/pressure_vessel.json --action open_valve --depth 3",
                  "docs/SPEC.md (9.2 Capture basins)");
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
      ->check(CLI::Range(std::size_t{1}, kMostParamValues))
      ->capture_default_str();
  cmd->add_option("--engine",
                  args.engine,
                  "explicit (enumerates parameter values, memoised) or symbolic (Z3 bounded "
                  "model checking: exact for any parameter domain)")
      ->check(CLI::IsMember({"explicit", "symbolic"}))
      ->capture_default_str();
  cmd->add_option("--timeout-ms",
                  args.timeout_ms,
                  "Time limit: of the whole search (explicit), of each Z3 query (symbolic); "
                  "when it is reached the answer is incomplete (exit 3)")
      ->check(CLI::Range(1U, 3600000U))
      ->capture_default_str();
  cmd->add_option("--format", args.format, "Output format")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  add_quiet_flag(cmd);
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
  report::Progress progress(report::Progress::for_stderr("lookahead", quiet()));
  progress.phase("searching " + std::to_string(args.depth) + " steps ahead (" + args.engine + ")");
  cd::LookaheadOptions options;
  options.depth = args.depth;
  options.max_param_values = args.max_param_values;
  options.timeout_ms = args.timeout_ms;
  std::atomic<std::size_t> explored{0};
  if (args.engine == "explicit") {
    options.progress = [&explored](std::size_t n) { explored.store(n); };
    progress.status([&explored] { return std::to_string(explored.load()) + " situations"; });
  }
  cd::LookaheadResult r =
      args.engine == "symbolic"
          ? verifier::symbolic_lookahead(
                *model, situation, std::get<ck::Proposal>(resolved), options, args.timeout_ms)
          : cd::lookahead(*model, situation, std::get<ck::Proposal>(resolved), options);
  progress.stop();
  if (!r.complete) r.incomplete_reason += completing_options(r);
  const int rc = !r.decision.approved || r.trap() ? 1 : (r.complete ? 0 : 3);
  report::write_lookahead(std::cout,
                          format_of(args.format),
                          {args.spec, args.action, args.depth, args.engine, &*model, &r});
  return rc;
}

int run_lookahead_command() {
  try {
    return lookahead_command();
  } catch (const Error& e) {
    if (dynamic_cast<const SpecError*>(&e) != nullptr)
      return fail(args.format, "lookahead", args.spec, describe(args.spec, e));
    return fail(args.format, "lookahead", args.spec, e.what());
  }
}

}  // namespace clampai::cli
