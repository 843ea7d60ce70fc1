// The kernel's verdict on a proposed action: approved, or rejected with every reason.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "clampai/kernel/budget.hpp"
#include "clampai/kernel/state.hpp"
#include "clampai/kernel/value.hpp"

namespace clampai::kernel {

/// Stable codes for why an action was rejected (or, for monitoring invariants, flagged).
/// The spelling returned by `to_string` is part of the interface (trace files, JSON output).
enum class ReasonCode : std::uint8_t {
  unknown_action,       // no action with that id
  invalid_parameter,    // missing, unknown, mistyped or out-of-bounds parameter
  below_min_cost,       // cost below min_action_cost (T2's precondition)
  budget_exceeded,      // the cost does not fit the remaining budget (T1)
  step_limit,           // the T2 step bound is reached
  dependency_unmet,     // a declared dependency has not completed
  requires_failed,      // the action's `requires` guard is false (or could not be evaluated)
  overflow,             // an effect or cost left the int64 fixed-point range
  undefined_value,      // an effect read an undefined (deleted) variable
  bound_violated,       // a variable would leave its declared min/max/max_length
  invariant_violated,   // a blocking invariant would be false after the action (T3)
  monitoring_violated,  // a monitoring invariant would be false (a warning; never blocks)
  invariant_error,      // a native invariant predicate threw (fails closed; blocks if blocking)
  lookahead_trap,       // a kernel guard (the lookahead) found the post-state to be a trap
  // Given by the reference monitor's guard (clampai::hardening), never by the model's decision:
  information_flow,      // the action moves labelled data to a lower label
  attestation_failed,    // a required attestation did not pass
  environment_drift,     // the world's values differ from the model's beyond the tolerance
  dependency_not_ready,  // a dependency's readiness probe did not pass before its deadline
  // Given by a host program's guard (the Python bindings' `add_precondition`):
  precondition_failed,  // a precondition registered with the kernel returned false
  // Given by the server's approvals (docs/SERVE.md), never by the model's decision:
  approval_denied,   // a principal denied the approval the action waited for
  approval_expired,  // nobody approved the action within its approval's `ttl_s`
};
/// The last code (for readers that enumerate them).
inline constexpr ReasonCode kLastReasonCode = ReasonCode::approval_expired;
/// True iff only a kernel guard gives `code` (the lookahead, the reference monitor): a replay
/// without the guard cannot reproduce such a rejection, and accepts it as recorded.
constexpr bool is_guard_reason(ReasonCode code) noexcept {
  return code >= ReasonCode::lookahead_trap;
}
/// The stable spelling of a code: `budget_exceeded`, ...
std::string_view to_string(ReasonCode code);

/// One failing check.
struct Reason {
  ReasonCode code = ReasonCode::unknown_action;
  std::string subject{};  // the invariant, variable, parameter or action concerned
  std::string message{};  // for people
};

/// The verdict on one proposal. `evaluate` never changes anything; `execute` commits exactly
/// when `approved` is true.
struct Decision {
  bool approved = false;
  std::vector<Reason> reasons{};   // every failing check, in check order; empty iff approved
  std::vector<Reason> warnings{};  // monitoring invariants that would be violated
  std::size_t action = 0;          // index in the model (meaningless for unknown_action)
  Amount cost = 0;                 // the evaluated cost, in budget units
  bool emergency = false;
  /// The post-action values of the variables the effects write (when they could be computed).
  Changes changes{};

  [[nodiscard]] bool is_approved() const noexcept { return approved; }
  /// True iff some reason has `code`.
  [[nodiscard]] bool has(ReasonCode code) const noexcept;
  /// True iff some reason has `code` and `subject`.
  [[nodiscard]] bool has(ReasonCode code, std::string_view subject) const noexcept;
};

}  // namespace clampai::kernel
