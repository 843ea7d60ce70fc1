// Checks between tasks: implications between formulas over the variables of several task
// models (shared by name), and stability of a formula under another task's action. The
// composition layer states its obligations with these; Z3 stays behind this header.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "clampai/kernel/model.hpp"
#include "clampai/verifier/verify.hpp"

namespace clampai::verifier {

/// A boolean formula: an expression of one model (read on the state, or, for a transition
/// invariant, on the pre- and post-state of a step), or a combination of formulas. Variables
/// of different models with the same name are the same variable (the caller checks that their
/// declarations agree).
struct Formula {
  enum class Kind : std::uint8_t { expr, all_of, any_of, negation };
  Kind kind = Kind::all_of;  // an empty all_of is `true`
  std::shared_ptr<const kernel::TaskModel> model{};
  kernel::ExprPtr expr{};
  std::vector<Formula> parts{};
  std::string label{};  // for messages: "guarantees of `deploy`"

  static Formula of(std::shared_ptr<const kernel::TaskModel> model,
                    kernel::ExprPtr expr,
                    std::string label);
  static Formula all(std::vector<Formula> parts, std::string label = "");
  static Formula any(std::vector<Formula> parts, std::string label = "");
  static Formula negate(Formula f);
};

/// One obligation between tasks: in every state (within every involved variable's bounds)
/// where all `premises` hold, `conclusion` holds. With `actor` set: for every such pre-state in
/// which the actor's kernel would approve action `action` (its `requires`, parameter bounds and
/// its blocking invariants and bounds after the step), `conclusion` holds after the step (a
/// transition invariant reads the pre-state through `old(x)`).
struct ContractCheck {
  std::string id{};
  std::vector<Formula> premises{};
  Formula conclusion{};
  std::shared_ptr<const kernel::TaskModel> actor{};
  std::size_t action = 0;
};

/// The verdict on a ContractCheck. A refutation carries a state (and, with an actor, the
/// parameters and the post-state) that the kernels' own evaluators confirm before it is
/// returned.
struct ContractOutcome {
  VerdictKind verdict = VerdictKind::unknown;
  std::string reason{};
  std::optional<Counterexample> counterexample{};
  /// For a refutation: the value of every variable the solver assigned, by name.
  std::vector<std::pair<std::string, kernel::Value>> assignment{};
};

/// The names of the variables a formula reads.
std::set<std::string> variables_of(const Formula& f);

/// Decides ContractChecks; keeps one solver context, so reuse it for many checks (a check that
/// fails in it gets a fresh one for the next). Not thread-safe: use one per thread.
class ContractChecker {
 public:
  /// Every check within `timeout_ms`, cut to `deadline`; after the deadline a check is
  /// `unknown` without solving.
  explicit ContractChecker(unsigned timeout_ms = 10000, Deadline deadline = {});
  ~ContractChecker();
  ContractChecker(const ContractChecker&) = delete;
  ContractChecker& operator=(const ContractChecker&) = delete;

  /// @throws InternalError if a counterexample does not replay (a verifier bug).
  ContractOutcome check(const ContractCheck& check);

 private:
  struct Impl;
  unsigned timeout_ms_;
  Deadline deadline_;
  std::unique_ptr<Impl> impl_;  // created by the first check
};

/// The task's own interface obligations (when it declares one): `interface:writes` (its
/// actions write only declared variables), `interface:forbidden` (never a forbidden one),
/// `interface:reads` (it reads only what it declares, or writes), `interface:guarantees` (the
/// goal with the blocking invariants implies the guarantees), and the lint
/// `lint:assumes-consistent` (the assumes can hold together with the invariants). `verify`
/// includes them.
std::vector<Obligation> interface_obligations(std::shared_ptr<const kernel::TaskModel> model,
                                              unsigned timeout_ms,
                                              Deadline deadline = {});

}  // namespace clampai::verifier
