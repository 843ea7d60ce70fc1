// Certified minimal repair of a parameterized action (the seed's reference-monitor projection):
// the parameter values closest to the proposed ones for which the kernel approves the action,
// with a certificate, or the constraints that cannot hold together.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "clampai/kernel/decision.hpp"
#include "clampai/kernel/model.hpp"
#include "clampai/kernel/number.hpp"
#include "clampai/kernel/safety_kernel.hpp"

namespace clampai::verifier {

/// How the distance between the proposed and the repaired parameters is measured. Distances are
/// in each parameter's own units (1 for an integer, 0.01 for a decimal(2) is 0.01), times its
/// weight.
enum class RepairNorm : std::uint8_t {
  l1,  // sum of w·|x - p|: solved exactly over the parameters' grids by Z3's optimizer
  l2,  // sum of w·(x - p)^2: a quadratic program solved by an exact active-set method
};
std::string_view to_string(RepairNorm norm);

struct RepairOptions {
  /// Default: l1 when every parameter of the action is an integer, else l2.
  std::optional<RepairNorm> norm{};
  /// Positive weight per parameter name (default 1): a heavier parameter moves less.
  std::map<std::string, kernel::Decimal> weights{};
  /// For the Z3 paths (l1, and the search for conflicting constraints).
  unsigned timeout_ms = 10000;
};

enum class RepairStatus : std::uint8_t {
  approved,    // the kernel approves the proposal as it is: nothing to repair
  repaired,    // `repaired` is approved and certified
  impossible,  // no parameter values make the kernel approve: `conflict` says why
  unknown,     // the tool could not decide (`reason`): outside what it models, or a timeout
};
std::string_view to_string(RepairStatus status);

/// Why a repair is what it is. Exact rational arithmetic throughout.
struct RepairCertificate {
  std::string method{};
  /// The repaired values satisfy every constraint (exactly) and the kernel's own `decide`
  /// approves the repaired proposal; every barrier condition holds.
  bool feasible = false;
  bool kernel_approved = false;
  /// No parameter values on the parameters' grids are closer in the norm. For l2 off the
  /// grid, false: then `lower_bound` bounds the distance of every feasible value from below.
  bool optimal = false;
  std::string distance{};  // of the repaired values from the proposed ones, in the norm
  /// l2: the exact optimum of the continuous problem (KKT), the strict constraints tightened to
  /// the grid: no values on the parameters' grids are closer.
  std::string lower_bound{};
  /// l2: the constraints active at the continuous optimum, each with its KKT multiplier (>= 0
  /// for an inequality), by which stationarity holds exactly.
  std::vector<std::pair<std::string, std::string>> multipliers{};
  /// The constraints that stop the repair from coming closer to the proposal: l1, an unsat core
  /// of the constraints with "closer than the optimum"; l2, the active constraints.
  std::vector<std::string> binding{};
};

struct RepairResult {
  RepairStatus status = RepairStatus::unknown;
  RepairNorm norm = RepairNorm::l1;
  kernel::Decision original{};  // the kernel's decision on the proposal
  kernel::Proposal repaired{};  // approved / repaired: the proposal to execute
  kernel::Decision decision{};  // the kernel's decision on `repaired`
  RepairCertificate certificate{};
  /// impossible: constraints that cannot all hold (a minimised unsat core, each named like
  /// "invariant `capacity`", "bound of `instances`", "parameter `n` >= 1", "the budget left
  /// (2.000)", or, for checks no parameter changes, "dependency_unmet: ...").
  std::vector<std::string> conflict{};
  std::string reason{};  // unknown: why; impossible: a sentence for people
};

/// The repair of `proposal` in `situation`: only the parameter values change (same action, same
/// effects; the cost changes only if a parameter drives it). Constraints: each parameter's
/// bounds, the action's `requires`, the bounds of every variable it writes, every blocking
/// invariant after the effects, the cost within the budget left (and above the minimum), and
/// for an invariant with a barrier rate α, h(s') >= (1 - α)·h(s). Reasons no parameter can fix
/// (a dependency, the step limit) make the repair impossible at once.
/// Requires `proposal.action` < the number of actions.
RepairResult repair(const kernel::TaskModel& model,
                    const kernel::Situation& situation,
                    const kernel::Proposal& proposal,
                    const RepairOptions& options = {});

}  // namespace clampai::verifier
