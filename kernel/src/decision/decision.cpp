// The decision's vocabulary: the spelling of the reason codes, and Decision's queries.
#include "clampai/kernel/decision.hpp"

#include <algorithm>
#include <iterator>

namespace clampai::kernel {

std::string_view to_string(ReasonCode code) {
  static constexpr std::string_view kNames[] = {
      "unknown_action",    "invalid_parameter",    "below_min_cost",      "budget_exceeded",
      "step_limit",        "dependency_unmet",     "requires_failed",     "overflow",
      "undefined_value",   "bound_violated",       "invariant_violated",  "monitoring_violated",
      "invariant_error",   "lookahead_trap",       "information_flow",    "attestation_failed",
      "environment_drift", "dependency_not_ready", "precondition_failed", "approval_denied",
      "approval_expired"};
  static_assert(std::size(kNames) == static_cast<std::size_t>(kLastReasonCode) + 1);
  return kNames[static_cast<int>(code)];
}

bool Decision::has(ReasonCode code) const noexcept {
  return std::any_of(
      reasons.begin(), reasons.end(), [&](const Reason& r) { return r.code == code; });
}

bool Decision::has(ReasonCode code, std::string_view subject) const noexcept {
  return std::any_of(reasons.begin(), reasons.end(), [&](const Reason& r) {
    return r.code == code && r.subject == subject;
  });
}

}  // namespace clampai::kernel
