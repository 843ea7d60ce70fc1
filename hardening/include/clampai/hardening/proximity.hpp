// Boundary proximity, exact: for each linear invariant, the slack to its boundary in a state
// and how many executions of each action reach it. For the agent's saliency and risk.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "clampai/kernel/model.hpp"
#include "clampai/kernel/number.hpp"
#include "clampai/kernel/state.hpp"

namespace clampai::hardening {

/// How one action moves a boundary's margin.
struct Approach {
  std::string action{};
  /// The exact change of the margin per execution, when it is the same in every state (the
  /// action increments or decrements the boundary's variables by amounts that read no state;
  /// parameters count with their defaults). Unset otherwise.
  std::optional<kernel::Decimal> delta{};
  /// How many executions in a row keep the boundary satisfied from this state: set iff
  /// `delta` is negative (the action approaches the boundary). The next execution crosses it.
  std::optional<std::int64_t> steps{};
  std::string note{};  // why `delta` is unknown; empty otherwise
};

/// One linear boundary `lhs OP rhs` (OP one of <=, <, >=, >) of an invariant (each conjunct of
/// a conjunction is its own boundary).
struct BoundaryProximity {
  std::string invariant{};
  std::string boundary{};  // the comparison's source text
  /// The margin, exactly: rhs - lhs for <= and <, lhs - rhs for >= and >. The boundary holds
  /// iff slack >= 0 (non-strict) or slack > 0 (strict).
  kernel::Decimal slack{};
  bool strict = false;
  std::vector<Approach> actions{};  // every action, in model order
};

/// The proximity of every linear boundary of the model's invariants in `state`. Boundaries
/// that are not linear in the variables (products of variables, `old(x)`, lists, native
/// predicates) or that cannot be evaluated in `state` are left out. Exact: fixed-point
/// arithmetic, no finite differences. No counterpart in the proofs.
std::vector<BoundaryProximity> boundary_proximity(const kernel::TaskModel& model,
                                                  const kernel::State& state);

}  // namespace clampai::hardening
