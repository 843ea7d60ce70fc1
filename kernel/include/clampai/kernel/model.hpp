// The task model: variables, actions, effects, invariants, budget, goal. Built once, validated
// completely, immutable afterwards; the kernel and the verifier interpret the same object.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "clampai/kernel/budget.hpp"
#include "clampai/kernel/expr.hpp"
#include "clampai/kernel/security.hpp"
#include "clampai/kernel/state.hpp"
#include "clampai/kernel/type.hpp"
#include "clampai/kernel/value.hpp"

namespace clampai::kernel {

/// How an effect changes its variable. Every effect reads the pre-action state.
enum class EffectMode : std::uint8_t {
  set,        // x := v
  increment,  // x := x + v
  decrement,  // x := x - v
  multiply,   // x := x * v (v an integer)
  append,     // list x gets v at its end
  remove,     // the first element of list x equal to v is removed (none: unchanged)
  del,        // optional x becomes undefined ("delete" in specs)
};
/// The spec spelling of a mode: `set`, ..., `delete`.
std::string_view to_string(EffectMode mode);
/// The mode spelled `name`, or nullopt.
std::optional<EffectMode> parse_effect_mode(std::string_view name);

/// Whether a violated invariant blocks the action (T3) or is only reported.
enum class Enforcement : std::uint8_t { blocking, monitoring };

/// A line and column in the spec file (0 when the model was not loaded from a file).
struct SourceLoc {
  std::uint32_t line = 0;
  std::uint32_t column = 0;
};

/// A native invariant predicate: must be pure and must not throw (a throw counts as a
/// violation).
using NativePredicate = std::function<bool(const State&)>;

// ---------------------------------------------------------------------------------------------
// Declarations: what a spec file or a C++ caller gives `build_model`. Expressions are source
// text; nothing is checked until `build_model`.

/// A state variable. Numeric bounds apply to int and decimal variables; `max_length` to lists.
struct VariableDecl {
  std::string name{};
  Type type = Type::integer();
  Value initial{};
  std::optional<Decimal> min{};
  std::optional<Decimal> max{};
  std::optional<std::int64_t> max_length{};
  bool optional = false;  // may be deleted (then reads of it are errors; see `defined(x)`)
  /// Information-flow labels (docs/HARDENING.md): of the variable, and of a list's elements
  /// (default: the variable's). Unlabelled: PUBLIC.
  std::optional<SecurityLabel> label{};
  std::optional<SecurityLabel> element_label{};
  SourceLoc loc{};
};

/// A numeric action parameter (int or decimal) with optional bounds and default.
struct ParameterDecl {
  std::string name{};
  Type type = Type::integer();
  std::optional<Decimal> min{};
  std::optional<Decimal> max{};
  std::optional<Decimal> default_value{};
};

/// One effect: `variable` changed by `mode` with the value of the expression `value` (empty for
/// `del`).
struct EffectDecl {
  std::string variable{};
  EffectMode mode = EffectMode::set;
  std::string value{};
};

/// An action. `cost` is a decimal number, or an expression over the parameters.
/// An action's approval (`"approval": {"right", "ttl_s"}`): under `clampai serve` its
/// `execute` only asks, and the action commits once a principal holding `right` on the task,
/// not the one who asked, approves within `ttl_s` seconds (docs/SERVE.md, "Approvals").
struct Approval {
  std::string right = "approve";  // the right an approver needs (checked by the server)
  std::int64_t ttl_s = 3600;      // how long a request waits, in seconds (1 or more)
  friend bool operator==(const Approval&, const Approval&) = default;
};

struct ActionDecl {
  std::string id{};
  std::string name{};
  std::string description{};
  std::string cost = "0";
  bool reversible = true;
  std::vector<ParameterDecl> parameters{};
  std::string guard{};  // the `requires` expression; empty means always
  std::vector<EffectDecl> effects{};
  std::vector<EmitDecl> emits{};            // what it sends to sinks
  std::vector<std::string> attestations{};  // attestors that must pass before it commits
  std::optional<Approval> approval{};       // `approval`: the server asks a principal first
  SourceLoc loc{};
};

/// An invariant given as an expression, or (C++ only) as a native predicate.
struct InvariantDecl {
  std::string name{};
  std::string expression{};
  NativePredicate predicate{};  // used iff `expression` is empty
  Enforcement enforcement = Enforcement::blocking;
  std::string description{};
  std::string suggestion{};
  /// The control-barrier rate α in (0, 1] (`barrier_rate`): repairs keep h(s') >= (1 - α)·h(s),
  /// with h read off the invariant's comparison. Only for a blocking `a <= b` (`<`, `>=`, `>`).
  std::optional<Decimal> barrier_rate{};
  /// The invariant-library template it was written as (`value_range`, ...), for reports.
  std::string template_name{};
  /// A pattern invariant (`pii_pattern`, `secret_pattern`): holds iff no string in these
  /// variables (strings, enums, lists of them) matches one of the regular expressions. Built
  /// with the installed PatternCompiler (`set_pattern_compiler`); opaque to the verifier.
  std::vector<std::string> pattern_variables{};
  std::vector<std::string> patterns{};
  SourceLoc loc{};
};

/// The budget: amounts are decimals, stored as integers of 10^-scale units.
struct BudgetDecl {
  Decimal total{};
  Decimal min_action_cost{};
  int scale = 3;
  std::optional<std::int64_t> max_steps{};
  /// The budget pool the task's budget sits in (`budget.pool`, docs/POOLS.md); empty: none.
  std::string pool{};
};

/// What a task promises the tasks composed with it (docs/COMPOSE.md). `reads` and `writes`
/// default to what the task's expressions read and its effects write.
struct InterfaceDecl {
  std::string assumes{};     // must hold when the task starts; empty: true
  std::string guarantees{};  // holds whenever the goal is reached; empty: true
  std::optional<std::vector<std::string>> reads{};
  std::optional<std::vector<std::string>> writes{};
  std::vector<std::string> forbidden{};  // variables the task must never write
  std::string path = "interface";        // where errors are reported
  SourceLoc loc{};
};

/// A capture basin: a region of states the agent must steer clear of. Entering one is not
/// blocked (that is what invariants do); it is a trap the lookahead looks for.
struct BasinDecl {
  std::string name{};
  std::string expression{};
  std::string description{};
  SourceLoc loc{};
};

/// A whole task.
struct TaskDecl {
  std::string name{};
  std::string goal_description{};
  std::string goal{};  // expression; empty means the task has no goal
  /// A native goal (C++ or Python callers), used iff `goal` is empty; opaque to the verifier.
  NativePredicate goal_predicate{};
  std::string goal_path = "goal";  // where errors in `goal` are reported (`goal.check` in files)
  std::vector<VariableDecl> variables{};
  std::vector<ActionDecl> actions{};
  std::vector<InvariantDecl> invariants{};
  BudgetDecl budget{};
  std::vector<std::string> emergency_actions{};
  std::vector<std::pair<std::string, std::vector<std::string>>> dependencies{};
  std::optional<InterfaceDecl> interface {};
  std::vector<BasinDecl> basins{};  // `capture_basins`
  std::vector<SinkDecl> sinks{};
  std::vector<AttestorDecl> attestors{};
  std::vector<std::string> goal_attestations{};  // must pass before the goal counts as reached
  std::vector<ProbeDecl> probes{};               // environment reconciliation (`probes`)
  std::vector<ReadinessDecl> readiness{};        // on `dependencies` edges (`readiness`)
};

// ---------------------------------------------------------------------------------------------
// The built model.

struct Variable {
  std::string name{};
  Type type = Type::integer();
  Value initial{};
  std::optional<Decimal> min{};
  std::optional<Decimal> max{};
  std::optional<std::int64_t> max_length{};
  bool optional = false;
  SecurityLabel label = SecurityLabel::public_data;
  SecurityLabel element_label = SecurityLabel::public_data;  // lists: of the elements
  bool labelled = false;                                     // declared a label
  SourceLoc loc{};
};

struct Parameter {
  std::string name{};
  Type type = Type::integer();
  std::optional<Decimal> min{};
  std::optional<Decimal> max{};
  std::optional<Decimal> default_value{};
};

struct Effect {
  VarId variable = 0;
  EffectMode mode = EffectMode::set;
  ExprPtr value{};  // null for `del`
};

struct Action {
  std::string id{};
  std::string name{};
  std::string description{};
  Amount cost = 0;      // in budget units, when `cost_expr` is null
  ExprPtr cost_expr{};  // a cost that depends on the parameters
  bool reversible = true;
  bool emergency = false;
  std::vector<Parameter> parameters{};
  std::vector<NamedType> parameter_scope{};  // names and types, for expressions
  ExprPtr guard{};                           // null: always enabled
  std::vector<Effect> effects{};             // at most one per variable
  std::vector<std::size_t> dependencies{};   // indices of actions that must have completed first
  std::vector<Emit> emits{};                 // what it sends to sinks
  std::vector<std::size_t> attestations{};   // indices into TaskModel::attestors
  std::optional<Approval> approval{};        // none: no approval is asked (never on T8's)
  SourceLoc loc{};
};

struct Invariant {
  std::string name{};
  ExprPtr expr{};  // null for a native predicate
  NativePredicate predicate{};
  Enforcement enforcement = Enforcement::blocking;
  std::string description{};
  std::string suggestion{};
  bool transition = false;  // refers to old(x)
  /// The control-barrier rate α and h, the margin of the comparison (`b - a` for `a <= b` or
  /// `a < b`, `a - b` for `>=` and `>`): set together, or neither. The kernel's check is the
  /// invariant itself; `clampai repair` also keeps h(s') >= (1 - α)·h(s).
  std::optional<Decimal> barrier_rate{};
  ExprPtr barrier{};
  std::string template_name{};  // the invariant-library template it was written as, if any
  /// Why the verifier cannot read it, when it is a predicate the kernel computes natively
  /// (a pattern or `no_duplicate_ids` template); empty otherwise.
  std::string opaque_reason{};
  SourceLoc loc{};
};

/// A task's interface contract. Always present in a model: a task that declares none has
/// `declared == false`, true assumes and guarantees, and its actual reads and writes.
struct Interface {
  bool declared = false;
  ExprPtr assumes{};               // null: true
  ExprPtr guarantees{};            // null: true
  std::vector<VarId> reads{};      // sorted; as declared, or what the task reads
  std::vector<VarId> writes{};     // sorted; as declared, or what the task's effects write
  std::vector<VarId> forbidden{};  // sorted
  /// What the task's expressions (requires, effects, costs, invariants, goal, assumes,
  /// guarantees) actually read and its effects actually write, for checking the declaration.
  std::vector<VarId> actual_reads{};
  std::vector<VarId> actual_writes{};
  SourceLoc loc{};
};

struct CaptureBasin {
  std::string name{};
  ExprPtr expr{};
  std::string description{};
  SourceLoc loc{};
};

struct Budget {
  Amount total = 0;
  Amount min_action_cost = 0;
  int scale = 3;
  std::optional<std::int64_t> declared_max_steps{};
  /// The pool the budget sits in (a name of a pools file, clampai/kernel/pools.hpp); empty:
  /// none. A charge then commits only if it fits every level of the pool tree as well.
  std::string pool{};
  /// The T2 bound: min(floor(total / min_action_cost), declared_max_steps), exact
  /// (`step_bound`).
  std::int64_t step_limit = 0;
};

/// The T2 step bound of a budget of `total` whose actions cost at least `min_action_cost`
/// (> 0): min(floor(total / min_action_cost), `max_steps`), exact. What `Budget::step_limit`
/// holds; the one place it is computed (escrow's leases take it with their slice as `total`).
[[nodiscard]] constexpr std::int64_t step_bound(
    Amount total,
    Amount min_action_cost,
    std::optional<std::int64_t> max_steps = std::nullopt) noexcept {
  const std::int64_t by_cost = total / min_action_cost;
  return max_steps && *max_steps < by_cost ? *max_steps : by_cost;
}

/// A validated task model. Immutable; share it with `std::shared_ptr<const TaskModel>`.
class TaskModel {
 public:
  std::string name{};
  std::string goal_description{};
  ExprPtr goal{};  // null: no goal expression
  /// A native goal, set only when `goal` is null: `goal_holds` calls it (a throw: not reached);
  /// searches that need the goal symbolically (the verifier) see no goal.
  NativePredicate goal_predicate{};
  std::vector<Variable> variables{};
  std::vector<Action> actions{};
  std::vector<Invariant> invariants{};
  Budget budget{};
  Interface interface {};
  std::vector<CaptureBasin> basins{};  // regions the lookahead steers clear of
  std::vector<SinkDecl> sinks{};
  std::vector<AttestorDecl> attestors{};         // validated: members and names resolve
  std::vector<std::size_t> goal_attestations{};  // indices into `attestors`
  std::vector<ProbeDecl> probes{};               // validated: variables exist, tolerance fits
  std::vector<ReadinessDecl> readiness{};        // validated: each is some action's dependency
  std::shared_ptr<const Schema> schema{};
  std::vector<Type> variable_types{};  // indexed by VarId
  /// SHA-256 (hex) of the model's canonical JSON form; native predicates count by name only.
  std::string digest{};

  /// The initial state, from the variables' initial values.
  [[nodiscard]] const State& initial_state() const { return *initial_; }
  /// The index of action `id`, or nullopt.
  [[nodiscard]] std::optional<std::size_t> find_action(std::string_view id) const;
  /// True iff the model has a goal (an expression or a native predicate) and `state` satisfies
  /// it (an evaluation error or a throwing predicate: no).
  [[nodiscard]] bool goal_holds(const State& state) const;
  /// The first capture basin `state` lies in, or null; an evaluation error counts as inside
  /// (a trap check fails closed).
  [[nodiscard]] const CaptureBasin* basin_of(const State& state) const;
  /// An amount of budget units as decimal text at the budget's scale (`2.000`).
  [[nodiscard]] std::string format_amount(Amount a) const;
  /// The scope of expressions over the state (and optionally an action's parameters).
  [[nodiscard]] ExprScope scope(const Action* action = nullptr, bool allow_old = false) const;

 private:
  friend std::shared_ptr<const TaskModel> build_model(const TaskDecl& decl);
  std::optional<State> initial_;
};

/// True iff `inv` holds in the single state `state` (`old(x)` reads `state` too). Fails closed:
/// an evaluation error or a native predicate that throws counts as a violation.
bool holds_in(const Invariant& inv, const State& state);

/// Compiles a pattern invariant: a predicate that holds iff no string in `variables` matches
/// one of `patterns`. @throws SpecError at `path` (e.g. `invariants[2].patterns[1]`) for a bad
/// pattern.
using PatternCompiler = std::function<NativePredicate(const std::vector<VarId>& variables,
                                                      const std::vector<std::string>& patterns,
                                                      const std::string& path)>;
/// Installs the regular-expression engine of pattern invariants (the kernel links none:
/// `hardening::install_pattern_engine()` installs RE2's). Thread-safe; replaces any earlier one.
void set_pattern_compiler(PatternCompiler compiler);

/// Validates `decl` completely and builds the model.
/// @throws SpecError naming the JSON path of the first problem (for example
/// `actions[2].requires:1:14: unknown variable `balnce``).
std::shared_ptr<const TaskModel> build_model(const TaskDecl& decl);

/// Checks a concrete value against `type` (kind, scale, enum membership, list items) and returns
/// it normalised to the type's scale.
/// @throws SpecError at `path` if it does not fit.
Value fit_value(const Value& v, const Type& type, const std::string& path);

/// Converts a decimal amount to budget units at `scale`.
/// @throws SpecError at `path` if it is negative, finer than the scale, or out of range.
Amount to_amount(const Decimal& d, int scale, const std::string& path);

}  // namespace clampai::kernel
