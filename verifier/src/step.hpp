// The symbolic twin of the kernel's decision (kernel::decide): one step of one action from a
// symbolic situation. Every verifier path that asks "would the kernel approve this action here,
// and what would it do" builds on this and on nothing else; tests/verifier/internal/ checks it
// against the kernel on random concrete inputs.
#pragma once

#include <z3++.h>

#include <string>
#include <utility>
#include <vector>

#include "clampai/kernel/decision.hpp"
#include "clampai/kernel/model.hpp"
#include "clampai/kernel/safety_kernel.hpp"
#include "z3_encoder.hpp"

namespace clampai::verifier::detail {

/// The symbolic situation before a step (kernel::Situation): the state is the encoder's `pre`
/// symbols; the budget is the net spend in budget units (the kernel's remaining budget is
/// `total - net`); `steps` counts non-emergency steps; `done[a]` counts completions of action
/// `a`.
struct SymSituation {
  z3::expr net;
  z3::expr steps;
  std::vector<z3::expr> done;

  /// Fresh, unconstrained symbols named `<prefix>$net`, `<prefix>$steps`, `<prefix>$done.<id>`.
  static SymSituation fresh(z3::context& ctx,
                            const kernel::TaskModel& m,
                            const std::string& prefix);
  /// The constants of a concrete situation.
  static SymSituation of(z3::context& ctx, const kernel::Situation& s);
  /// The budget invariant the kernel keeps (T1): 0 <= net <= total, steps >= 0, done >= 0.
  [[nodiscard]] z3::expr well_formed(const kernel::TaskModel& m) const;
};

/// One check of the kernel, in its order: the kernel adds the reason (`code`, `subject`) iff
/// `evaluated` holds and `holds` does not. `evaluated` is false after an earlier check that
/// stops the kernel (a bad parameter, a cost that overflows) and, for bounds and invariants,
/// after an effect that could not be computed.
struct Check {
  kernel::ReasonCode code;
  std::string subject;
  z3::expr holds;
  z3::expr evaluated;
  /// Why `holds` could not be encoded (then it is an unconstrained Bool); empty if it is exact.
  std::string unsupported{};
};

/// The symbolic step: approval is the conjunction of every check's `holds` (a check that is not
/// evaluated follows one that fails). The conjunctions below throw Unsupported if one of the
/// checks they take could not be encoded.
struct SymbolicStep {
  std::size_t action = 0;
  std::vector<z3::expr> params;  // the parameter symbols, in units of their scale
  std::vector<Check> checks;     // the kernel's reasons, in its check order
  std::vector<Check> warnings;   // monitoring invariants (never block)
  z3::expr cost;                 // the charge in budget units (when computed)
  std::vector<std::pair<kernel::VarId, z3::expr>> post;  // written variables; the last write wins
  SymSituation next;  // the situation after an approved step: net + cost, steps, done

  /// The kernel approves the step.
  [[nodiscard]] z3::expr approved() const;
  /// The conjunction of the checks whose code is not in `skip` (a premise that leaves some of
  /// the kernel's checks to the caller).
  [[nodiscard]] z3::expr approved_except(std::initializer_list<kernel::ReasonCode> skip) const;
  /// The conjunction of the checks with `code`.
  [[nodiscard]] z3::expr checks_of(kernel::ReasonCode code) const;
  /// The check of invariant `name` (blocking) or of its warning (monitoring); null if none.
  [[nodiscard]] const Check* invariant(const std::string& name) const;
  /// The post-state term of variable `id`: the last write, else the pre-state symbol.
  [[nodiscard]] z3::expr value_after(Encoder& enc, kernel::VarId id) const;
};

/// The kernel's decision on `model.actions[action]` with the encoder's parameter symbols, from
/// the encoder's pre-state and `pre`. Every check is encoded, including every invariant; an
/// invariant that cannot be (a native predicate, an unsupported construct) is marked in its
/// Check, so that the other checks stay usable.
/// @throws Unsupported if a check other than an invariant cannot be encoded (an optional
/// variable, a construct the encoder does not translate).
SymbolicStep symbolic_step(Encoder& enc, const SymSituation& pre, std::size_t action);

/// The situation after `step`, as constraints on the next situation's symbols: the state
/// (every variable of `next_enc` equals its value after the step) and the counters.
z3::expr successor(Encoder& enc,
                   const SymbolicStep& step,
                   Encoder& next_enc,
                   const SymSituation& next);

/// The same situation (a stutter): no variable and no counter changes.
z3::expr unchanged(Encoder& enc,
                   const SymSituation& pre,
                   Encoder& next_enc,
                   const SymSituation& next);

}  // namespace clampai::verifier::detail
