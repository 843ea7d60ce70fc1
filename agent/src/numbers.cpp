// Numbers of the reasoning engine as doubles: scores rank actions; the kernel stays exact.
#include <cmath>

#include "clampai/driver/driver.hpp"
#include "clampai/kernel/expr.hpp"
#include "valuation_internal.hpp"

namespace clampai::agent::detail {

double pow10d(int k) noexcept {
  static constexpr double table[] = {1e0,
                                     1e1,
                                     1e2,
                                     1e3,
                                     1e4,
                                     1e5,
                                     1e6,
                                     1e7,
                                     1e8,
                                     1e9,
                                     1e10,
                                     1e11,
                                     1e12,
                                     1e13,
                                     1e14,
                                     1e15,
                                     1e16,
                                     1e17,
                                     1e18};
  return k >= 0 && k <= 18 ? table[k] : std::pow(10.0, k);
}

double to_double(const kernel::Decimal& d) noexcept {
  return static_cast<double>(d.units) / pow10d(d.scale);
}

double amount_to_double(const kernel::TaskModel& model, kernel::Amount a) noexcept {
  return static_cast<double>(a) / pow10d(model.budget.scale);
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
