// Private helpers of the reasoning engine: numbers as doubles (ranking only, never deciding).
#pragma once

#include <cstddef>

#include "clampai/kernel/model.hpp"
#include "clampai/kernel/number.hpp"

namespace clampai::agent::detail {

/// 10^k as a double (a table for 0 <= k <= 18).
double pow10d(int k) noexcept;
/// `d` as a double (for scores only: the kernel's arithmetic stays exact).
double to_double(const kernel::Decimal& d) noexcept;
/// An amount of budget units as a double in the budget's currency.
double amount_to_double(const kernel::TaskModel& model, kernel::Amount a) noexcept;
/// The cost of action `index` with its default parameters, in budget units (a cost expression
/// that does not evaluate counts as the budget's minimum action cost).
kernel::Amount nominal_cost(const kernel::TaskModel& model, std::size_t index);

}  // namespace clampai::agent::detail
