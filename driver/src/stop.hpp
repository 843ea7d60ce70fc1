// Why a run stops when its driver has nothing to propose (private to the driver library).
#pragma once

#include <algorithm>

#include "clampai/driver/driver.hpp"

namespace clampai::driver::detail {

/// Sets `result`'s termination (step limit, budget exhausted, or nothing approvable) and last
/// reasons from `kernel`'s counters and the proposals `choice` found rejected.
inline void record_stop(const SafetyKernel& kernel, const Choice& choice, RunResult& result) {
  const auto budget = kernel.budget();
  if (kernel.steps() >= static_cast<std::uint64_t>(kernel.step_limit())) {
    result.termination = Termination::step_limit;
  } else if (budget.remaining() < kernel.model().budget.min_action_cost ||
             (!choice.rejected.empty() &&
              std::all_of(choice.rejected.begin(), choice.rejected.end(), [](const Decision& d) {
                return d.has(kernel::ReasonCode::budget_exceeded);
              }))) {
    result.termination = Termination::budget_exhausted;
  } else {
    result.termination = Termination::no_approvable_action;
  }
  for (const auto& d : choice.rejected)
    result.last_reasons.insert(result.last_reasons.end(), d.reasons.begin(), d.reasons.end());
}

}  // namespace clampai::driver::detail
