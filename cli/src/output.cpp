#include "output.hpp"

#include <algorithm>
#include <iomanip>
#include <iostream>
#include <limits>
#include <thread>

#include "clampai/kernel.hpp"

namespace clampai::cli {

using nlohmann::json;

json named_values_json(const std::vector<std::pair<std::string, kernel::Value>>& values) {
  json o = json::object();
  for (const auto& [k, v] : values) o[k] = v.to_string();
  return o;
}

void print_counterexample(const verifier::Counterexample& cex) {
  std::size_t width = 8;
  for (const auto& [name, _] : cex.pre) width = std::max(width, name.size());
  std::cout << "    " << std::left << std::setw(static_cast<int>(width)) << "variable"
            << "  " << (cex.post.empty() ? "value\n" : "before            after\n");
  for (std::size_t i = 0; i < cex.pre.size(); ++i) {
    if (cex.post.empty()) {  // a state, not a transition (base case)
      std::cout << "    " << std::setw(static_cast<int>(width)) << cex.pre[i].first << "  "
                << cex.pre[i].second.to_string() << "\n";
      continue;
    }
    const std::string after = cex.post[i].second.to_string();
    std::cout << "    " << std::setw(static_cast<int>(width)) << cex.pre[i].first << "  "
              << std::setw(16) << cex.pre[i].second.to_string() << "  " << after
              << (after != cex.pre[i].second.to_string() ? "   (changed)" : "") << "\n";
  }
  if (!cex.params.empty()) {
    std::cout << "    with";
    for (const auto& [name, v] : cex.params) std::cout << " " << name << " = " << v.to_string();
    std::cout << "\n";
  }
  std::cout << std::right;
}

json plan_json(const kernel::TaskModel& m, const kernel::Plan& p) {
  json out = json::array();
  for (const auto& s : p) {
    json params = json::object();
    for (std::size_t i = 0; i < s.params.size(); ++i)
      params[m.actions[s.action].parameters[i].name] = s.params[i].to_string();
    out.push_back({{"action", m.actions[s.action].id},
                   {"params", params},
                   {"cost", m.format_amount(s.cost)}});
  }
  return out;
}

GoalCheck check_goal(const kernel::TaskModel& m, unsigned depth) {
  GoalCheck g;
  kernel::LookaheadOptions o;
  o.depth = depth;
  const std::string k = std::to_string(depth);
  const kernel::LookaheadResult r = kernel::plan_to_goal(m, kernel::Situation::initial(m), o);
  g.complete = r.complete;
  const std::string incomplete =
      r.complete ? "" : " (the search is incomplete: " + r.incomplete_reason + ")";
  if (r.goal_reachable) {
    g.reachable = true;
    g.plan = r.cheapest_plan;
    g.cost = r.cheapest_cost;
    g.message = "reachable within " + k + " steps: the cheapest plan costs " +
                m.format_amount(r.cheapest_cost) + " of the budget " +
                m.format_amount(m.budget.total) + ": " + kernel::describe_plan(m, r.cheapest_plan);
    return g;
  }
  // The same search without the budget and its step bound says whether money is the obstacle.
  kernel::TaskModel relaxed = m;
  relaxed.budget.total = std::numeric_limits<kernel::Amount>::max() / 4;
  relaxed.budget.step_limit = std::numeric_limits<std::int64_t>::max() / 4;
  const kernel::LookaheadResult free =
      kernel::plan_to_goal(relaxed, kernel::Situation::initial(relaxed), o);
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
                kernel::describe_plan(m, free.cheapest_plan) + ")";
  } else {
    g.message = "not reachable" + scope + ", whatever the budget";
  }
  g.message += incomplete;
  return g;
}

kernel::ParamMap parse_params(const std::string& text) {
  kernel::ParamMap out;
  if (text.empty()) return out;
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw SpecError("--params", std::string("malformed JSON: ") + e.what());
  } catch (const nlohmann::json::out_of_range&) {  // found by fuzz_params: `1e803`
    throw SpecError("--params", "a number out of range (beyond about 1.8e308)");
  }
  if (!j.is_object()) throw SpecError("--params", "expected an object of parameter values");
  for (const auto& [name, v] : j.items()) {
    const std::string num = v.is_string() ? v.get<std::string>() : v.dump();
    std::string err;
    const auto d = kernel::Decimal::parse(num, &err);
    if (!v.is_number() && !v.is_string()) err = "expected a number";
    if (!d || !err.empty())
      throw SpecError("--params." + name, "`" + num + "`: " + (err.empty() ? "not a number" : err));
    out.emplace_back(name, kernel::Value::number(*d));
  }
  return out;
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
    try {
      s.state = kernel::parse_state(*model, kernel::read_text_file(state));
    } catch (const Error& e) {
      throw SpecError(state, e.what());
    }
  }
  return {model, std::move(s)};
}

unsigned default_jobs() { return std::clamp(std::thread::hardware_concurrency(), 1U, 256U); }

}  // namespace clampai::cli
