// How far a state is from satisfying a boolean expression of the task model: the measure behind
// the valuation's expected progress (distance to the goal) and the saliency's "near an
// invariant's boundary" (distance to the invariant's negation).
#pragma once

#include <memory>
#include <vector>

#include "clampai/kernel/expr.hpp"
#include "clampai/kernel/model.hpp"
#include "clampai/kernel/state.hpp"

namespace clampai::agent {

/// A distance d(s) >= 0 to the set of states satisfying `e` (or its negation), computed from the
/// expression: negations pushed to the comparisons; `a <= b` measures max(0, a - b), `a == b`
/// |a - b| (a strict comparison adds one unit of the operands' scale when it fails); each such
/// atom is divided by its distance in `reference` (or by max(1, |a|, |b|) when that is 0), so
/// every atom weighs 1 where the task started; `&&` adds, `||` takes the minimum, `if` follows
/// the condition; any other atom (a boolean variable, `contains`, `in`) is 0 when it holds and
/// 1 when not. For a linear goal, `1 - d(s') / d(s)` is the share of the remaining distance an
/// action closes. d(s) is 0 when `e` holds in `s`; it can be 0 where `e` is false only through
/// an evaluation error's absence of information (then an atom counts 1, never 0).
/// No formal counterpart: it ranks actions; it never decides one.
class Distance {
 public:
  /// Requires `e` to be a boolean expression over `model`'s variables (no parameters).
  Distance(const kernel::TaskModel& model,
           const kernel::ExprPtr& e,
           bool negate,
           const kernel::State& reference);
  ~Distance();
  Distance(Distance&&) noexcept;
  Distance& operator=(Distance&&) noexcept;

  /// d(state); `old(x)` reads `state` too.
  [[nodiscard]] double operator()(const kernel::State& state) const;
  /// d of `state` patched by `changes` (a decision's changes: the state after it), without
  /// building that state.
  [[nodiscard]] double operator()(const kernel::State& state, kernel::ChangeSpan changes) const;

  struct Node;  ///< the compiled tree (private to the implementation)

 private:
  std::unique_ptr<Node> root_;
};

}  // namespace clampai::agent
