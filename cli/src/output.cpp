#include "output.hpp"

#include <algorithm>
#include <iomanip>
#include <iostream>
#include <limits>
#include <thread>

#include "clampai/driver.hpp"
#include "clampai/kernel.hpp"

namespace clampai::cli {

report::GoalSummary check_goal(const kernel::TaskModel& m,
                               unsigned depth,
                               std::chrono::steady_clock::time_point deadline) {
  report::GoalSummary g;
  g.depth = depth;
  driver::LookaheadOptions o;
  o.depth = depth;
  o.deadline = deadline;
  const std::string k = std::to_string(depth);
  const driver::LookaheadResult r = driver::plan_to_goal(m, kernel::Situation::initial(m), o);
  g.complete = r.complete;
  const std::string incomplete =
      r.complete ? "" : " (the search is incomplete: " + r.incomplete_reason + ")";
  if (r.goal_reachable) {
    g.reachable = true;
    g.plan = r.cheapest_plan;
    g.cost = r.cheapest_cost;
    g.message = "reachable within " + k + " steps: the cheapest plan costs " +
                m.format_amount(r.cheapest_cost) + " of the budget " +
                m.format_amount(m.budget.total) + ": " + driver::describe_plan(m, r.cheapest_plan);
    return g;
  }
  // The same search without the budget and its step bound says whether money is the obstacle.
  kernel::TaskModel relaxed = m;
  relaxed.budget.total = std::numeric_limits<kernel::Amount>::max() / 4;
  relaxed.budget.step_limit = std::numeric_limits<std::int64_t>::max() / 4;
  const driver::LookaheadResult free =
      driver::plan_to_goal(relaxed, kernel::Situation::initial(relaxed), o);
  const bool emergency = std::any_of(
      m.actions.begin(), m.actions.end(), [](const kernel::Action& a) { return a.emergency; });
  g.infeasible = r.complete && free.complete && !emergency &&
                 static_cast<std::int64_t>(depth) >= m.budget.step_limit;
  const std::string scope = g.infeasible ? "" : " within " + k + " steps";
  if (free.goal_reachable) {
    g.plan = free.cheapest_plan;
    g.cost = free.cheapest_cost;
    g.message = "this task cannot complete" + scope + ": the cheapest plan costs " +
                m.format_amount(free.cheapest_cost) + ", the budget is " +
                m.format_amount(m.budget.total) + " (" +
                driver::describe_plan(m, free.cheapest_plan) + ")";
  } else {
    g.message = "not reachable" + scope + ", whatever the budget";
  }
  g.message += incomplete;
  return g;
}

void add_run_timeout_option(CLI::App* cmd, double& seconds) {
  cmd->add_option("--timeout",
                  seconds,
                  "Wall-time limit of the whole run, in seconds (0: none); what is not checked "
                  "by then is unknown (exit 3)")
      ->check(CLI::Range(0.0, 604800.0))
      ->capture_default_str();
}

std::uint64_t run_timeout_ms(double seconds) {
  if (seconds <= 0) return 0;
  return std::max<std::uint64_t>(1, static_cast<std::uint64_t>(seconds * 1000.0 + 0.5));
}

kernel::ParamMap parse_params(const std::string& text, const std::string& option) {
  if (text.empty()) return {};
  return kernel::parse_named_numbers(text, option);
}

std::pair<std::shared_ptr<const kernel::TaskModel>, kernel::Situation> load_situation(
    const std::string& spec, const std::string& state) {
  std::shared_ptr<const kernel::TaskModel> model;
  try {
    model = kernel::load_spec_file(spec);
  } catch (const Error& e) {
    throw SpecError(spec, e.what());
  }
  kernel::Situation s = kernel::Situation::initial(*model);
  if (!state.empty()) {
    // Inline JSON (an object starts with `{`), else a file.
    const auto first = state.find_first_not_of(" \t\r\n");
    const bool inline_json = first != std::string::npos && state[first] == '{';
    const std::string where = inline_json ? "--state" : state;
    try {
      s.state = kernel::parse_state(*model, inline_json ? state : kernel::read_text_file(state));
    } catch (const FileError&) {
      throw;  // names the file
    } catch (const Error& e) {
      throw SpecError(where, e.what());
    }
  }
  return {model, std::move(s)};
}

bool& quiet() {
  static bool value = false;
  return value;
}

void add_quiet_flag(CLI::App* cmd) {
  cmd->add_flag("-q,--quiet", quiet(), "Print no progress on stderr (errors still are)");
}

void set_help_footer(CLI::App* cmd,
                     const std::string& exit_codes,
                     const std::string& example,
                     const std::string& doc) {
  cmd->footer("Exit codes: " + exit_codes + "\nExample: " + example + "\nDocumentation: " + doc +
              "; every option: man clampai");
}

report::Format format_of(const std::string& name) {
  return report::parse_format(name).value_or(report::Format::text);
}

std::string describe(const std::string& input, const clampai::Error& e) {
  const auto* spec = dynamic_cast<const SpecError*>(&e);
  if (spec == nullptr) return input + ": " + e.what();
  std::string out;
  for (const SpecProblem& p : spec->problems()) {
    if (!out.empty()) out += '\n';
    if (p.path.rfind("--", 0) == 0) {  // an option's value, not a place in the file
      out += p.path + ": " + p.message;
      continue;
    }
    out += input;
    if (p.line > 0) out += ":" + std::to_string(p.line) + ":" + std::to_string(p.column);
    out += ": " + (p.path.empty() ? "" : p.path + ": ") + p.message;
  }
  return out;
}

std::shared_ptr<kernel::PoolTree> load_pools_option(const std::string& file,
                                                    const kernel::TaskModel* model,
                                                    const std::string& option) {
  std::vector<std::shared_ptr<const kernel::TaskModel>> models;
  if (model != nullptr)
    models.push_back(std::shared_ptr<const kernel::TaskModel>(model, [](const auto*) {}));
  return load_pools_option(file, models, option);
}

void refuse_pools_file_on_ledger(const std::string& pools, const std::string& ledger) {
  if (!pools.empty() && !ledger.empty())
    throw InvalidArgument(
        "--pools: with --ledger the budget pools are the ledger's (rows charged in each "
        "commit's transaction): create and change them with `clampai ledger pools apply " +
        pools + " --ledger URL`, then run without --pools (docs/POOLS.md)");
}

std::shared_ptr<kernel::PoolTree> load_pools_option(
    const std::string& file,
    const std::vector<std::shared_ptr<const kernel::TaskModel>>& models,
    const std::string& option) {
  if (file.empty()) {
    for (const auto& m : models) {
      if (!m->budget.pool.empty())
        throw SpecError("budget.pool",
                        "the budget is in pool `" + m->budget.pool + "`: give " + option +
                            " FILE, the pools file that declares it (docs/POOLS.md)");
    }
    return nullptr;
  }
  try {
    return kernel::load_pools_file(file);
  } catch (const SpecError& e) {
    throw SpecError(option, describe(file, e));
  }
}

int fail(const std::string& format,
         const std::string& command,
         const std::string& input,
         const std::string& message,
         bool internal) {
  const char* prefix = internal ? "clampai: internal error (a bug in clampai, please report it): "
                                : "clampai: error: ";
  for (std::size_t at = 0; at <= message.size();) {
    const std::size_t end = std::min(message.find('\n', at), message.size());
    std::cerr << prefix << std::string_view(message).substr(at, end - at) << "\n";
    at = end + 1;
  }
  report::Failure f;
  f.command = command;
  f.input = input;
  f.message = message;
  f.location = report::locate(input, message);
  f.internal = internal;
  report::write_failure(std::cout, format_of(format), f);
  return f.exit_code;
}

unsigned default_jobs() { return std::clamp(std::thread::hardware_concurrency(), 1U, 256U); }

}  // namespace clampai::cli
