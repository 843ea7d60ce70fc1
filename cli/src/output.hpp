// Output helpers shared by the `clampai` subcommands (private to the CLI).
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "clampai/kernel/lookahead.hpp"
#include "clampai/kernel/safety_kernel.hpp"
#include "clampai/kernel/value.hpp"
#include "clampai/verifier/verify.hpp"

namespace clampai::cli {

/// `{"name": "value as text", ...}`.
nlohmann::json named_values_json(const std::vector<std::pair<std::string, kernel::Value>>& values);

/// Prints a counterexample as a table of variables, before and (for a transition) after, on
/// stdout, indented by four spaces.
void print_counterexample(const verifier::Counterexample& cex);

/// A plan as JSON: `[{"action", "params": {name: value}, "cost"}]`.
nlohmann::json plan_json(const kernel::TaskModel& m, const kernel::Plan& p);

/// `clampai verify --depth K`: can the goal be reached from the initial state within K steps
/// and the budget?
struct GoalCheck {
  bool reachable = false;
  kernel::Plan plan{};
  kernel::Amount cost = 0;
  bool complete = true;
  /// Not reachable, proved for every run: the search was complete, K covers the T2 step bound
  /// and there is no emergency action (which could add steps).
  bool infeasible = false;
  std::string message{};  // one line, for people
};
GoalCheck check_goal(const kernel::TaskModel& m, unsigned depth);

/// The default of `--jobs`: one worker per core (verdicts do not depend on it).
unsigned default_jobs();

/// Parameter values from a JSON object (`{"n": 3, "amount": "12.50"}`): numbers read exactly
/// from their text, or strings holding exact decimals (kernel::parse_named_numbers). An empty
/// text is no parameters.
/// @throws SpecError naming `option` (or `option.NAME`) for malformed input.
kernel::ParamMap parse_params(const std::string& text, const std::string& option = "--params");

/// Loads `spec` and the situation to work in: its initial one, with the state `state` if that
/// is not empty: inline JSON when it starts with `{`, else the name of a JSON file.
/// @throws SpecError naming the file at fault.
std::pair<std::shared_ptr<const kernel::TaskModel>, kernel::Situation> load_situation(
    const std::string& spec, const std::string& state);

}  // namespace clampai::cli
