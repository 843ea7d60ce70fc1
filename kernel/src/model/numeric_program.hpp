// Comparisons of numeric operands (`a + b <= 10`, the usual invariant and guard) compiled, when
// the parser builds them, into one flat postfix program: evaluating it reads no AST node, so it
// stays in one or two cache lines however the nodes were allocated. The result and the first
// error are exactly those of evaluating the operands through the AST, in the same order.
#pragma once

#include <array>
#include <cstdint>
#include <memory>

#include "clampai/kernel/expr.hpp"

namespace clampai::kernel::detail {

struct NumericProgram {
  struct Instr {
    ExprOp op = ExprOp::literal;  // literal, variable, old_variable, parameter, neg, add, sub, mul
    std::uint32_t index = 0;      // VarId or parameter position
    Decimal literal{};
  };
  static constexpr std::uint32_t kMaxStack = 16;
  static constexpr std::uint32_t kMaxCode = 16;
  // The left operand, then the right one, in postfix; inline, so running it follows no pointer.
  std::array<Instr, kMaxCode> code{};
  std::uint32_t size = 0;
  // The most common shapes, run without the loop: `x OP c` (`var_literal`), `x + y OP c`,
  // `x - y OP c` (`sum_literal`, `difference_literal`) and longer sums and differences of
  // variables, `x + y - z + ... OP c` (`chain`: the code is x, then a variable and `add` or
  // `sub` per term, then c), x, y and z variables, c a literal; the same values and the same
  // first error as the code.
  enum class Shape : std::uint8_t { general, var_literal, sum_literal, difference_literal, chain };
  Shape shape = Shape::general;
  VarId x = 0;
  VarId y = 0;
  Decimal constant{};
};

/// The program of a comparison (`lt`, `le`, `gt`, `ge`, or `eq` / `ne` of numbers) whose
/// operands use only literals, variables, `old(x)`, parameters, unary `-`, `+`, `-` and `*`,
/// within NumericProgram::kMaxStack and kMaxCode; null otherwise (the AST is evaluated).
std::shared_ptr<const NumericProgram> compile_comparison(const Expr& comparison);

/// Both operands' values, or the first error.
EvalError run(const NumericProgram& p, const EvalEnv& env, Decimal& left, Decimal& right);

/// A comparison of one of the simplest shapes (`x OP c`, `x + y OP c`, `x - y OP c`) copied out
/// of its expression and program into 32 bytes: a kernel checks its invariants from one
/// contiguous array of these instead of following three pointers per invariant.
struct FlatComparison {
  NumericProgram::Shape shape = NumericProgram::Shape::general;  // general: not flat
  ExprOp op = ExprOp::le;
  VarId x = 0;
  VarId y = 0;
  Decimal constant{};
};
static_assert(sizeof(FlatComparison) <= 32, "two to a cache line");

/// `e` flattened, or a FlatComparison whose shape is `general` if `e` has none of those shapes.
FlatComparison flatten(const Expr& e);

/// Requires `c.shape != general`: exactly `evaluate_bool` of the expression it was flattened
/// from (the same value, the same error).
EvalError evaluate_flat(const FlatComparison& c, const EvalEnv& env, bool& out);

}  // namespace clampai::kernel::detail
