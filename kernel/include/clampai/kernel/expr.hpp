// The expression language shared by the kernel (concrete evaluation) and the verifier
// (symbolic interpretation): parsed once, with source positions, and type-checked.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "clampai/kernel/state.hpp"
#include "clampai/kernel/type.hpp"
#include "clampai/kernel/value.hpp"

namespace clampai::kernel {

/// A position inside an expression's text, 1-based.
struct SourcePos {
  std::uint32_t line = 1;
  std::uint32_t column = 1;
};

/// The node kinds of the expression AST. See docs/SPEC.md for the grammar and semantics.
enum class ExprOp : std::uint8_t {
  literal,       // `literal`
  variable,      // a state variable, `index` is its VarId
  old_variable,  // `old(x)`: x in the pre-action state
  parameter,     // an action parameter, `index` is its position
  neg,           // -a
  add,           // a + b
  sub,           // a - b
  mul,           // a * b
  eq,            // a == b
  ne,            // a != b
  lt,            // a < b
  le,            // a <= b
  gt,            // a > b
  ge,            // a >= b
  logical_and,   // a && b (short-circuit)
  logical_or,    // a || b (short-circuit)
  logical_not,   // !a
  implies,       // a -> b (short-circuit)
  ite,           // if a then b else c
  len,           // len(list)
  contains,      // contains(list, v)
  in_set,        // a in {b, c, ...}
  min,           // min(a, b)
  max,           // max(a, b)
  abs,           // abs(a)
  defined,       // defined(x): the variable x holds a value (optional variables)
  list,          // [a, b, ...]
};

namespace detail {
struct NumericProgram;
}

/// A typed, name-resolved expression node. Immutable once parsed.
struct Expr {
  ExprOp op = ExprOp::literal;
  Type type = Type::boolean();
  SourcePos pos;
  std::uint32_t index = 0;  // VarId for (old_)variable and defined; position for parameter
  std::string name;         // spelling of a variable or parameter, for messages
  Value literal;            // for ExprOp::literal
  std::vector<std::shared_ptr<const Expr>> args;
  std::uint32_t height = 1;  // 1 + the largest height of `args`; bounded so recursion is safe
  /// For a comparison of numbers, its operands as a flat program the evaluator runs instead of
  /// walking `args` (same result); null when they use other operators.
  std::shared_ptr<const detail::NumericProgram> program{};
};
using ExprPtr = std::shared_ptr<const Expr>;

/// A named, typed entity an expression may refer to.
struct NamedType {
  std::string name;
  Type type;
};

/// What an expression may refer to.
struct ExprScope {
  const Schema* variables = nullptr;                  // null: no state variables (cost expressions)
  const std::vector<Type>* variable_types = nullptr;  // indexed by VarId
  const std::vector<NamedType>* parameters = nullptr;
  bool allow_old = false;  // `old(x)` is allowed (invariants only)
};

/// Parses and type-checks `text` against `scope`.
/// @throws SpecError whose path is `path:line:column` for the first syntax or type error.
ExprPtr parse_expression(std::string_view text, const ExprScope& scope, const std::string& path);

/// True iff `e` may be stored in a variable or parameter of type `target`: `target.accepts`
/// its type, or it is a string literal (or list of them) whose values `target` declares.
bool assignable(const Type& target, const Expr& e);

/// True iff the expression refers to `old(x)` anywhere.
bool uses_old(const Expr& e);

/// Marks in `seen` (indexed by VarId, resized as needed) every variable `e` reads, through
/// `x`, `old(x)` or `defined(x)`.
void collect_variables(const Expr& e, std::vector<bool>& seen);

/// Why an evaluation produced no value. Blocking invariants fail closed on any error.
enum class EvalError : std::uint8_t {
  none,
  overflow,   // a result left the int64 fixed-point range, or a scale above 18
  undefined,  // an undefined (deleted) variable was read
};

/// The value of an expression, or the error that stopped it.
struct EvalResult {
  Value value;
  EvalError error = EvalError::none;
  [[nodiscard]] bool ok() const noexcept { return error == EvalError::none; }
};

/// Where an evaluation reads variables: `state` patched by `overlay` (later entries win; empty:
/// none), the pre-action state `old` for `old(x)`, and the action's parameter values.
struct EvalEnv {
  const State* state = nullptr;
  ChangeSpan overlay{};
  const State* old = nullptr;
  const Value* params = nullptr;
};

/// Evaluates `e` concretely. Never throws; `&&`, `||`, `->` and `if` evaluate only the operands
/// they need, so an error in an operand that is not needed is not an error.
/// Verifier counterpart: the Z3 encoding of the same AST (issue 3).
EvalResult evaluate(const Expr& e, const EvalEnv& env);

/// Evaluates a numeric expression (`e.type` is numeric) without building a `Value` per node:
/// the same number and the same error as `evaluate(e, env)`, faster.
EvalError evaluate_number(const Expr& e, const EvalEnv& env, Decimal& out);

/// Evaluates a boolean expression (`e.type` is bool): the same truth value and the same error
/// as `evaluate(e, env)`, without a `Value` for compiled comparisons (invariants, guards).
EvalError evaluate_bool(const Expr& e, const EvalEnv& env, bool& out);

/// Renders `e` back to source form (fully parenthesised where needed).
std::string to_source(const Expr& e);

}  // namespace clampai::kernel
