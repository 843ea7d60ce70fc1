#include "evaluate_cmd.hpp"

#include <iostream>
#include <variant>

#include "clampai/kernel.hpp"
#include "clampai/report/wire.hpp"
#include "output.hpp"

namespace clampai::cli {

namespace ck = clampai::kernel;

namespace {

struct Args {
  std::string spec, state, action, params, format = "text";
} args;

void print_reasons(const char* title, const std::vector<ck::Reason>& reasons) {
  if (reasons.empty()) return;
  std::cout << title << ":\n";
  for (const ck::Reason& r : reasons) {
    std::cout << "  " << ck::to_string(r.code);
    if (!r.subject.empty()) std::cout << " (" << r.subject << ")";
    std::cout << ": " << r.message << "\n";
  }
}

int evaluate_command() {
  auto [model, situation] = load_situation(args.spec, args.state);
  ck::KernelOptions ko;
  ko.check_initial_state = false;
  const ck::SafetyKernel resolver(model, ko);
  const auto resolved = resolver.resolve(args.action, parse_params(args.params));
  ck::Decision d;
  if (const auto* bad = std::get_if<ck::Reason>(&resolved)) {
    std::vector<std::string> ids;
    for (const auto& action : model->actions) ids.push_back(action.id);
    if (bad->code == ck::ReasonCode::unknown_action)
      throw SpecError("--action", bad->message + ck::did_you_mean(args.action, ids));
    // A parameter out of its bounds is the kernel's rejection, as through every front end.
    d.action = model->find_action(args.action).value_or(0);
    d.reasons.push_back(*bad);
  } else {
    d = ck::decide(*model, situation, std::get<ck::Proposal>(resolved));
  }
  if (args.format == "json") {
    report::JsonWriter j;
    j.begin_object().key("spec").value(args.spec);
    report::write_decision_members(j, *model, args.action, d);
    j.end_object();
    std::cout << j.take() << "\n";
  } else {
    std::cout << (d.approved ? "APPROVED" : "REJECTED") << " `" << args.action << "` (cost "
              << model->format_amount(d.cost) << (d.emergency ? ", emergency" : "") << ")\n";
    print_reasons("reasons", d.reasons);
    print_reasons("warnings", d.warnings);
    if (!d.changes.empty()) {
      std::cout << "changes:\n";
      for (const auto& [var, v] : d.changes)
        std::cout << "  " << model->variables[var].name << " = " << v.to_string() << "\n";
    }
    std::cout << "nothing was committed\n";
  }
  return d.approved ? 0 : 1;
}

}  // namespace

CLI::App* add_evaluate_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "evaluate",
      "Decide one proposed action as the kernel would (budget, steps, dependencies, guard, "
      "bounds, invariants), committing nothing");
  set_help_footer(cmd,
                  "0 approved, 1 rejected, 2 bad input",
                  "clampai evaluate examples/quickstart.json --action process_batch --format json",
                  "docs/SPEC.md (11. The kernel's checks and reason codes)");
  cmd->add_option("SPEC", args.spec, "Task spec (JSON)")->required();
  cmd->add_option("--action", args.action, "The proposed action's id")->required();
  cmd->add_option("--params", args.params, "The action's parameters, as a JSON object");
  cmd->add_option("--state",
                  args.state,
                  "The state: a JSON object inline ('{\"x\": 1}') or a file holding one; "
                  "default: the initial state (the budget and counters are always a fresh "
                  "run's)");
  cmd->add_option("--format", args.format, "Output format")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  add_quiet_flag(cmd);
  return cmd;
}

int run_evaluate_command() {
  try {
    return evaluate_command();
  } catch (const Error& e) {
    if (dynamic_cast<const SpecError*>(&e) != nullptr)
      return fail(args.format, "evaluate", args.spec, describe(args.spec, e));
    return fail(args.format, "evaluate", args.spec, e.what());
  }
}

}  // namespace clampai::cli
