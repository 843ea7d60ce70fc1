// Numbers of the reasoning engine as doubles: scores rank actions; the kernel stays exact.
#include <cmath>

#include "clampai/driver/driver.hpp"
#include "clampai/kernel/expr.hpp"
#include "valuation_internal.hpp"

namespace clampai::agent::detail {

double to_double(const kernel::Decimal& d) noexcept {
  return static_cast<double>(d.units) / std::pow(10.0, d.scale);
}

double amount_to_double(const kernel::TaskModel& model, kernel::Amount a) noexcept {
  return static_cast<double>(a) / std::pow(10.0, model.budget.scale);
}

kernel::Amount nominal_cost(const kernel::TaskModel& model, std::size_t index) {
  const kernel::Action& a = model.actions.at(index);
  if (!a.cost_expr) return a.cost;
  const kernel::Proposal p = driver::default_proposal(model, index);
  kernel::EvalEnv env;
  env.params = p.params.data();
  kernel::Decimal out;
  if (kernel::evaluate_number(*a.cost_expr, env, out) != kernel::EvalError::none)
    return model.budget.min_action_cost;
  const auto scaled = out.rescaled(model.budget.scale);
  return scaled && scaled->units >= 0 ? scaled->units : model.budget.min_action_cost;
}

}  // namespace clampai::agent::detail
