// Static verification of a task model with an SMT solver (Z3): every action preserves every
// blocking invariant (T3's inductive step), the initial state satisfies them (the base case),
// and the integer budget model keeps T1 and T4.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "clampai/kernel/model.hpp"
#include "clampai/kernel/value.hpp"
#include "clampai/verifier/deadline.hpp"

namespace clampai::verifier {

/// The three possible answers; never a guess.
enum class VerdictKind : std::uint8_t { proved, refuted, unknown };
std::string_view to_string(VerdictKind v);

/// What an obligation is about.
enum class ObligationKind : std::uint8_t {
  base_case,     // the initial state satisfies a blocking invariant and every bound
  preservation,  // an action preserves a blocking invariant
  budget,        // T1 / T4 on the kernel's integer budget model
  interface,     // the task keeps its own interface contract (reads, writes, guarantees)
  lint,  // the spec itself: consistent invariants, none redundant, no dead action, no overflow
};
std::string_view to_string(ObligationKind k);

/// A concrete transition that breaks an obligation, replayed through the kernel before it is
/// reported: `SafetyKernel::evaluate_in(pre, action with params)` rejects for the invariant.
struct Counterexample {
  std::vector<std::pair<std::string, kernel::Value>> pre{};     // the variables that matter
  std::vector<std::pair<std::string, kernel::Value>> params{};  // the action's parameters
  std::vector<std::pair<std::string, kernel::Value>> post{};    // the same variables after
};

/// For a refuted preservation pair, with `--depth K`: can the initial state reach, within K
/// steps of actions the kernel approves, a state where the action would be blocked by the
/// invariant?
struct Reachability {
  enum class Status : std::uint8_t { not_checked, reachable, unreachable, unknown };
  Status status = Status::not_checked;
  unsigned depth = 0;  // the K searched
  /// For `reachable`: the actions from the initial state, with their parameters, that lead to
  /// a state where the refuted action is blocked; replayed through a kernel before reporting.
  std::vector<std::pair<std::string, std::vector<std::pair<std::string, kernel::Value>>>> witness{};
  std::string reason{};
};

/// One proof obligation and its verdict.
struct Obligation {
  ObligationKind kind = ObligationKind::preservation;
  std::string id{};         // stable: `preservation:<action>:<invariant>`, `base:<invariant>`...
  std::string action{};     // for preservation
  std::string invariant{};  // for base case and preservation
  VerdictKind verdict = VerdictKind::unknown;
  std::string
      reason{};  // why unknown (timeout, nonlinear arithmetic, opaque predicate, ...) or how proved
  std::optional<Counterexample> counterexample{};
  Reachability reachability{};  // preservation only, with VerifyOptions::depth > 0
  kernel::SourceLoc loc{};      // of the invariant (or the action) in the spec file
};

struct VerifyOptions {
  /// The time limit of every solver call (preservation, lints, interface obligations, each
  /// reachability query), in milliseconds.
  unsigned timeout_ms = 10000;
  /// The whole run's limit (default: none): a solver call is cut to the time left, and what
  /// has not started by then is `unknown` (`not checked: the run's time limit ...`).
  Deadline deadline{};
  unsigned jobs = 1;  // worker threads; the report does not depend on it (but for time limits)
  /// When not empty, every preservation obligation is also written to this directory as a
  /// standalone SMT-LIB 2 file (`<id>.smt2`, `:` replaced by `_`) that any solver can check:
  /// unsat means proved.
  std::string smtlib_dir{};
  /// When > 0, each refuted preservation pair is searched for from the initial state by bounded
  /// model checking, up to this many steps (see Reachability).
  unsigned depth = 0;
  /// Called from worker threads as obligations complete (done, total); may be empty.
  std::function<void(std::size_t, std::size_t)> progress{};
};

/// A property every run of the kernel has by construction, whatever the spec: reported, never
/// counted as a proof of the spec. `budget:t1` (net spend within [0, total]: every charge is
/// guarded by BudgetController::can_afford), `budget:t4` (gross spend never decreases) and
/// `budget:t2` (the step bound floor(total / min_action_cost), capped by max_steps). Lean:
/// lean/ClampAI/Spec/Budget.lean.
struct Fact {
  std::string id{};
  std::string statement{};
};

/// The result of verifying one model.
struct Report {
  std::vector<Obligation> obligations{};
  std::vector<Fact> facts{};                         // the kernel's, not the spec's
  std::size_t proved = 0, refuted = 0, unknown = 0;  // base case, preservation, interface
  std::size_t warnings = 0;                          // lints that are not proved
  double seconds = 0;
  /// 0 all proved, 1 something refuted, 3 unknowns and nothing refuted (DESIGN §4). Lints are
  /// warnings: they do not change the exit code.
  [[nodiscard]] int exit_code(bool fail_on_unknown = false) const;
};

/// Where obligation `o` is in `model`'s spec file: its invariant's position, else its action's,
/// else (for the interface's obligations) the interface's; none for whole-spec obligations.
/// Every obligation `verify` reports carries this location; a cached verdict re-derives it, as
/// the model's digest does not cover source positions.
kernel::SourceLoc location_of(const kernel::TaskModel& model, const Obligation& o);

/// Verifies `model`. Lints: `lint:consistent` is proved iff the bounds and the blocking state
/// invariants are jointly satisfiable; `lint:independent:<I>` iff I is not implied by the other
/// invariants (refuted: redundant, naming those that imply it, from an unsat core);
/// `lint:enabled:<a>` iff some state satisfying them enables a (refuted: dead action);
/// `lint:no-overflow:<a>` iff no value a writes can leave the int64 range (refuted: the kernel
/// would reject it with `overflow` in some state). Preservation of (a, I) is proved iff for every
/// state within the variable bounds where every blocking state invariant holds and `a`'s `requires`
/// holds, and for every parameter value within its bounds, I holds after `a`'s effects (effects
/// that would overflow int64 are excluded: the kernel rejects them with `overflow`); refuted with a
/// counterexample that `SafetyKernel::evaluate_in` rejects for I; unknown with the reason
/// otherwise.
/// @throws InternalError if a counterexample does not replay (a verifier bug, never a finding).
Report verify(std::shared_ptr<const kernel::TaskModel> model, const VerifyOptions& options = {});

/// A counterexample that the kernel does not confirm: the encoding and the kernel disagree.
class InternalError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

}  // namespace clampai::verifier
