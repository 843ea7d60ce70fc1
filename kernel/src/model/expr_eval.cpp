// Concrete evaluation of expressions: the kernel's interpretation of the AST.
#include <algorithm>

#include "clampai/kernel/expr.hpp"
#include "numeric_program.hpp"

namespace clampai::kernel {
namespace {

EvalResult error(EvalError e) { return EvalResult{Value(), e}; }
EvalResult ok(Value v) { return EvalResult{std::move(v), EvalError::none}; }
EvalResult number_or_overflow(const std::optional<Decimal>& d) {
  return d ? ok(Value::number(*d)) : error(EvalError::overflow);
}

const Value& lookup(const EvalEnv& env, VarId id) {
  // Later entries win; overlays hold the few variables one action writes.
  for (auto it = env.overlay.rbegin(); it != env.overlay.rend(); ++it) {
    if (it->first == id) return it->second;
  }
  return env.state->get(id);
}

bool values_equal(const Value& a, const Value& b) { return a == b; }

// `x + y` (`sum`) or `x - y` of two variables: the value, or the first error.
[[gnu::always_inline]] inline EvalError sum_or_difference(
    const EvalEnv& env, bool sum, VarId x, VarId y, Decimal& out) {
  const Value& a = lookup(env, x);
  if (!a.is_defined()) return EvalError::undefined;
  const Value& b = lookup(env, y);
  if (!b.is_defined()) return EvalError::undefined;
  const std::optional<Decimal> r =
      sum ? checked_add(a.as_number(), b.as_number()) : checked_sub(a.as_number(), b.as_number());
  if (!r) return EvalError::overflow;
  out = *r;
  return EvalError::none;
}

// `if`, `min` and `max` yield a number at the scale of their type (the join of their operands'
// scales), like every other numeric node: the typed, scaled expression is the one meaning that
// the kernel and the verifier's encoder share. A value that fits at its own scale but not at the
// joined one is an overflow.
EvalResult at_type_scale(const Expr& e, EvalResult r) {
  if (!r.ok() || !e.type.is_numeric() || r.value.kind() != Value::Kind::number ||
      r.value.as_number().scale == e.type.scale())
    return r;
  return number_or_overflow(r.value.as_number().rescaled(e.type.scale()));
}

// The value of a numeric expression without building a Value per node (the hot path of
// invariants such as `a + b <= 10`): exactly `evaluate`'s result, in the same order.
EvalError number(const Expr& e, const EvalEnv& env, Decimal& out) {
  switch (e.op) {
    case ExprOp::literal:
      out = e.literal.as_number();
      return EvalError::none;
    case ExprOp::variable: {
      const Value& v = lookup(env, e.index);
      if (!v.is_defined()) return EvalError::undefined;
      out = v.as_number();
      return EvalError::none;
    }
    case ExprOp::parameter:
      out = env.params[e.index].as_number();
      return EvalError::none;
    case ExprOp::add:
    case ExprOp::sub:
    case ExprOp::mul: {
      Decimal a;
      Decimal b;
      if (const EvalError err = number(*e.args[0], env, a); err != EvalError::none) return err;
      if (const EvalError err = number(*e.args[1], env, b); err != EvalError::none) return err;
      const std::optional<Decimal> r = e.op == ExprOp::add   ? checked_add(a, b)
                                       : e.op == ExprOp::sub ? checked_sub(a, b)
                                                             : checked_mul(a, b);
      if (!r) return EvalError::overflow;
      out = *r;
      return EvalError::none;
    }
    default: {
      EvalResult r = evaluate(e, env);
      if (!r.ok()) return r.error;
      out = r.value.as_number();
      return EvalError::none;
    }
  }
}

}  // namespace

namespace detail {

namespace {

// Appends the postfix code of a numeric operand; returns the stack it needs, 0 if it cannot.
std::uint32_t emit(const Expr& e, NumericProgram& p) {
  auto append = [&p](NumericProgram::Instr i) {
    if (p.size == NumericProgram::kMaxCode) return false;
    p.code[p.size++] = i;
    return true;
  };
  switch (e.op) {
    case ExprOp::literal:
      if (e.literal.kind() != Value::Kind::number) return 0;
      return append({e.op, 0, e.literal.as_number()}) ? 1 : 0;
    case ExprOp::variable:
    case ExprOp::old_variable:
    case ExprOp::parameter:
      return append({e.op, e.index, {}}) ? 1 : 0;
    case ExprOp::neg: {
      const std::uint32_t d = emit(*e.args[0], p);
      if (d == 0) return 0;
      return append({e.op, 0, {}}) ? d : 0;
    }
    case ExprOp::add:
    case ExprOp::sub:
    case ExprOp::mul: {
      const std::uint32_t l = emit(*e.args[0], p);
      if (l == 0) return 0;
      const std::uint32_t r = emit(*e.args[1], p);
      if (r == 0) return 0;
      return append({e.op, 0, {}}) ? std::max(l, r + 1) : 0;
    }
    default:
      return 0;
  }
}

}  // namespace

std::shared_ptr<const NumericProgram> compile_comparison(const Expr& c) {
  switch (c.op) {
    case ExprOp::lt:
    case ExprOp::le:
    case ExprOp::gt:
    case ExprOp::ge:
      break;
    case ExprOp::eq:
    case ExprOp::ne:
      if (!c.args[0]->type.is_numeric() || !c.args[1]->type.is_numeric()) return nullptr;
      break;
    default:
      return nullptr;
  }
  auto p = std::make_shared<NumericProgram>();
  const std::uint32_t l = emit(*c.args[0], *p);
  if (l == 0) return nullptr;
  const std::uint32_t r = emit(*c.args[1], *p);
  if (r == 0 || std::max(l, r + 1) > NumericProgram::kMaxStack) return nullptr;
  const auto& code = p->code;
  if (p->size >= 2 && code[p->size - 1].op == ExprOp::literal) {
    p->constant = code[p->size - 1].literal;
    if (p->size == 2 && code[0].op == ExprOp::variable) {
      p->shape = NumericProgram::Shape::var_literal;
      p->x = code[0].index;
    } else if (p->size == 4 && code[0].op == ExprOp::variable && code[1].op == ExprOp::variable &&
               (code[2].op == ExprOp::add || code[2].op == ExprOp::sub)) {
      p->shape = code[2].op == ExprOp::add ? NumericProgram::Shape::sum_literal
                                           : NumericProgram::Shape::difference_literal;
      p->x = code[0].index;
      p->y = code[1].index;
    } else if (p->size >= 6 && p->size % 2 == 0 && code[0].op == ExprOp::variable) {
      bool chain = true;
      for (std::uint32_t k = 1; k + 1 < p->size; k += 2)
        chain = chain && code[k].op == ExprOp::variable &&
                (code[k + 1].op == ExprOp::add || code[k + 1].op == ExprOp::sub);
      if (chain) p->shape = NumericProgram::Shape::chain;
    }
  }
  return p;
}

namespace {

// The general case: the postfix code run on a stack (out of line, so that the shapes `run`
// knows run with a small frame).
[[gnu::noinline]] EvalError run_code(const NumericProgram& p,
                                     const EvalEnv& env,
                                     Decimal& left,
                                     Decimal& right) {
  // The stack as plain, uninitialised integers: zeroing it on every call (a `Decimal` array is
  // value-initialised) would cost more than a typical program.
  std::int64_t units[NumericProgram::kMaxStack];
  std::uint8_t scales[NumericProgram::kMaxStack];
  std::uint32_t sp = 0;
  auto push = [&](const Decimal& d) {
    units[sp] = d.units;
    scales[sp] = d.scale;
    ++sp;
  };
  auto at = [&](std::uint32_t k) { return Decimal{units[k], scales[k]}; };
  for (std::uint32_t k = 0; k < p.size; ++k) {
    const NumericProgram::Instr& i = p.code[k];
    switch (i.op) {
      case ExprOp::literal:
        push(i.literal);
        break;
      case ExprOp::variable: {
        const Value& v = lookup(env, i.index);
        if (!v.is_defined()) return EvalError::undefined;
        push(v.as_number());
        break;
      }
      case ExprOp::old_variable: {
        const Value& v = (env.old != nullptr ? env.old : env.state)->get(i.index);
        if (!v.is_defined()) return EvalError::undefined;
        push(v.as_number());
        break;
      }
      case ExprOp::parameter:
        push(env.params[i.index].as_number());
        break;
      case ExprOp::neg: {
        const std::optional<Decimal> r = checked_neg(at(sp - 1));
        if (!r) return EvalError::overflow;
        --sp;
        push(*r);
        break;
      }
      default: {  // add, sub, mul
        if (i.op != ExprOp::mul && scales[sp - 2] == scales[sp - 1]) {
          // checked_add / checked_sub's own same-scale path, without the call.
          std::int64_t r = 0;
          if (i.op == ExprOp::add ? __builtin_add_overflow(units[sp - 2], units[sp - 1], &r)
                                  : __builtin_sub_overflow(units[sp - 2], units[sp - 1], &r))
            return EvalError::overflow;
          units[sp - 2] = r;
          --sp;
          break;
        }
        const Decimal a = at(sp - 2);
        const Decimal b = at(sp - 1);
        const std::optional<Decimal> r = i.op == ExprOp::add   ? checked_add(a, b)
                                         : i.op == ExprOp::sub ? checked_sub(a, b)
                                                               : checked_mul(a, b);
        if (!r) return EvalError::overflow;
        sp -= 2;
        push(*r);
        break;
      }
    }
  }
  left = at(0);
  right = at(1);
  return EvalError::none;
}

// `sum + b` (`add`) or `sum - b` into `sum` at different scales, or an overflow at any: a
// chain's rare step, out of line.
[[gnu::noinline]] EvalError chain_step(Decimal& sum, Decimal b, bool add) {
  const std::optional<Decimal> r = add ? checked_add(sum, b) : checked_sub(sum, b);
  if (!r) return EvalError::overflow;
  sum = *r;
  return EvalError::none;
}

// The left operand of a `chain` program (`x + y - z + ... OP c`): the loop's steps for this
// code, without dispatching on each instruction; the same value and the same first error.
// Terms at the sum's scale (the usual: a variable holds its type's scale) add as integers.
[[gnu::always_inline]] inline EvalError chain_sum(const NumericProgram& p,
                                                  const EvalEnv& env,
                                                  Decimal& out) {
  const Value& first = lookup(env, p.code[0].index);
  if (!first.is_defined()) return EvalError::undefined;
  Decimal sum = first.as_number();
  for (std::uint32_t k = 1; k + 1 < p.size; k += 2) {
    const Value& v = lookup(env, p.code[k].index);
    if (!v.is_defined()) return EvalError::undefined;
    const Decimal& b = v.as_number();
    const bool add = p.code[k + 1].op == ExprOp::add;
    std::int64_t r = 0;
    if (b.scale == sum.scale && !(add ? __builtin_add_overflow(sum.units, b.units, &r)
                                      : __builtin_sub_overflow(sum.units, b.units, &r))) {
      sum.units = r;
      continue;
    }
    if (const EvalError err = chain_step(sum, b, add); err != EvalError::none) return err;
  }
  out = sum;
  return EvalError::none;
}

}  // namespace

EvalError run(const NumericProgram& p, const EvalEnv& env, Decimal& left, Decimal& right) {
  switch (p.shape) {
    case NumericProgram::Shape::general:
      break;
    case NumericProgram::Shape::var_literal: {
      const Value& a = lookup(env, p.x);
      if (!a.is_defined()) return EvalError::undefined;
      left = a.as_number();
      right = p.constant;
      return EvalError::none;
    }
    case NumericProgram::Shape::sum_literal:
    case NumericProgram::Shape::difference_literal: {
      const bool sum = p.shape == NumericProgram::Shape::sum_literal;
      if (const EvalError err = sum_or_difference(env, sum, p.x, p.y, left); err != EvalError::none)
        return err;
      right = p.constant;
      return EvalError::none;
    }
    case NumericProgram::Shape::chain: {
      if (const EvalError err = chain_sum(p, env, left); err != EvalError::none) return err;
      right = p.constant;
      return EvalError::none;
    }
  }
  return run_code(p, env, left, right);
}

}  // namespace detail

EvalError evaluate_number(const Expr& e, const EvalEnv& env, Decimal& out) {
  return number(e, env, out);
}

namespace {
// The comparison `op` (lt, le, gt, ge, eq or ne) of two numbers.
[[gnu::always_inline]] inline bool compare(ExprOp op, const Decimal& a, const Decimal& b) {
  switch (op) {
    case ExprOp::eq:
      return a == b;
    case ExprOp::ne:
      return !(a == b);
    default: {
      // Same scale (the common case): the units compare as the numbers do.
      const std::strong_ordering c = a.scale == b.scale ? a.units <=> b.units : a <=> b;
      return op == ExprOp::lt   ? c < 0
             : op == ExprOp::le ? c <= 0
             : op == ExprOp::gt ? c > 0
                                : c >= 0;
    }
  }
}
}  // namespace

detail::FlatComparison detail::flatten(const Expr& e) {
  FlatComparison c;
  if (!e.program) return c;
  const NumericProgram& p = *e.program;
  if (p.shape != NumericProgram::Shape::var_literal &&
      p.shape != NumericProgram::Shape::sum_literal &&
      p.shape != NumericProgram::Shape::difference_literal)
    return c;
  c.shape = p.shape;
  c.op = e.op;
  c.x = p.x;
  c.y = p.y;
  c.constant = p.constant;
  return c;
}

EvalError detail::evaluate_flat(const FlatComparison& c, const EvalEnv& env, bool& out) {
  // `run`'s steps for these shapes: the same values, the same first error.
  if (c.shape == NumericProgram::Shape::var_literal) {
    const Value& a = lookup(env, c.x);
    if (!a.is_defined()) return EvalError::undefined;
    out = compare(c.op, a.as_number(), c.constant);
    return EvalError::none;
  }
  Decimal value;
  const bool sum = c.shape == NumericProgram::Shape::sum_literal;
  if (const EvalError err = sum_or_difference(env, sum, c.x, c.y, value); err != EvalError::none)
    return err;
  out = compare(c.op, value, c.constant);
  return EvalError::none;
}

namespace {
// `evaluate_bool` of every expression but the two shapes it runs itself: out of line, so that
// those need no stack frame.
[[gnu::noinline]] EvalError evaluate_bool_general(const Expr& e, const EvalEnv& env, bool& out) {
  if (e.program) {
    Decimal a;
    Decimal b;
    if (const EvalError err = detail::run(*e.program, env, a, b); err != EvalError::none)
      return err;
    out = compare(e.op, a, b);
    return EvalError::none;
  }
  const EvalResult r = evaluate(e, env);
  if (r.ok()) out = r.value.as_bool();
  return r.error;
}

// `evaluate_bool` of a `chain` comparison, out of line: the frame its loop needs is not built
// for the simplest comparisons.
[[gnu::noinline]] EvalError evaluate_chain(const Expr& e,
                                           const detail::NumericProgram& p,
                                           const EvalEnv& env,
                                           bool& out) {
  Decimal sum;
  if (const EvalError err = detail::chain_sum(p, env, sum); err != EvalError::none) return err;
  out = compare(e.op, sum, p.constant);
  return EvalError::none;
}
}  // namespace

EvalError evaluate_bool(const Expr& e, const EvalEnv& env, bool& out) {
  // `x OP c` (most guards, goals and basins) without a call, and `x + y - z ... OP c` (the
  // usual invariant) with one: `run`'s values and errors.
  const detail::NumericProgram* p = e.program.get();
  if (p != nullptr && p->shape == detail::NumericProgram::Shape::var_literal) {
    const Value& x = lookup(env, p->x);
    if (!x.is_defined()) return EvalError::undefined;
    out = compare(e.op, x.as_number(), p->constant);
    return EvalError::none;
  }
  if (p != nullptr && p->shape == detail::NumericProgram::Shape::chain)
    return evaluate_chain(e, *p, env, out);
  return evaluate_bool_general(e, env, out);
}

EvalResult evaluate(const Expr& e, const EvalEnv& env) {
  switch (e.op) {
    case ExprOp::lt:
    case ExprOp::le:
    case ExprOp::gt:
    case ExprOp::ge: {
      Decimal a;
      Decimal b;
      if (e.program) {
        if (const EvalError err = detail::run(*e.program, env, a, b); err != EvalError::none)
          return error(err);
      } else {
        if (const EvalError err = number(*e.args[0], env, a); err != EvalError::none)
          return error(err);
        if (const EvalError err = number(*e.args[1], env, b); err != EvalError::none)
          return error(err);
      }
      // Same scale (the common case): the units compare as the numbers do.
      const std::strong_ordering c = a.scale == b.scale ? a.units <=> b.units : a <=> b;
      const bool r = e.op == ExprOp::lt   ? c < 0
                     : e.op == ExprOp::le ? c <= 0
                     : e.op == ExprOp::gt ? c > 0
                                          : c >= 0;
      return ok(Value::boolean(r));
    }
    case ExprOp::eq:
    case ExprOp::ne:
      if (e.program) {
        Decimal a;
        Decimal b;
        if (const EvalError err = detail::run(*e.program, env, a, b); err != EvalError::none)
          return error(err);
        return ok(Value::boolean((a == b) == (e.op == ExprOp::eq)));
      }
      break;
    case ExprOp::literal:
      return ok(e.literal);
    case ExprOp::variable: {
      const Value& v = lookup(env, e.index);
      return v.is_defined() ? ok(v) : error(EvalError::undefined);
    }
    case ExprOp::old_variable: {
      const Value& v = (env.old != nullptr ? env.old : env.state)->get(e.index);
      return v.is_defined() ? ok(v) : error(EvalError::undefined);
    }
    case ExprOp::parameter:
      return ok(env.params[e.index]);
    case ExprOp::defined:
      return ok(Value::boolean(lookup(env, e.index).is_defined()));
    case ExprOp::logical_and:
    case ExprOp::logical_or:
    case ExprOp::implies: {
      EvalResult a = evaluate(*e.args[0], env);
      if (!a.ok()) return a;
      const bool lhs = a.value.as_bool();
      if (e.op == ExprOp::logical_and && !lhs) return ok(Value::boolean(false));
      if (e.op == ExprOp::logical_or && lhs) return ok(Value::boolean(true));
      if (e.op == ExprOp::implies && !lhs) return ok(Value::boolean(true));
      return evaluate(*e.args[1], env);
    }
    case ExprOp::ite: {
      EvalResult c = evaluate(*e.args[0], env);
      if (!c.ok()) return c;
      return at_type_scale(e, evaluate(*e.args[c.value.as_bool() ? 1 : 2], env));
    }
    case ExprOp::list: {
      Value::List items;
      items.reserve(e.args.size());
      for (const auto& a : e.args) {
        EvalResult r = evaluate(*a, env);
        if (!r.ok()) return r;
        items.push_back(std::move(r.value));
      }
      return ok(Value::list(std::move(items)));
    }
    case ExprOp::in_set: {
      EvalResult x = evaluate(*e.args[0], env);
      if (!x.ok()) return x;
      for (std::size_t i = 1; i < e.args.size(); ++i) {
        EvalResult r = evaluate(*e.args[i], env);
        if (!r.ok()) return r;
        if (values_equal(x.value, r.value)) return ok(Value::boolean(true));
      }
      return ok(Value::boolean(false));
    }
    default:
      break;
  }

  // The remaining operators are strict: every operand is evaluated, left to right.
  EvalResult a = evaluate(*e.args[0], env);
  if (!a.ok()) return a;
  switch (e.op) {
    case ExprOp::neg:
      return number_or_overflow(checked_neg(a.value.as_number()));
    case ExprOp::logical_not:
      return ok(Value::boolean(!a.value.as_bool()));
    case ExprOp::abs: {
      const Decimal& d = a.value.as_number();
      return d.units < 0 ? number_or_overflow(checked_neg(d)) : a;
    }
    case ExprOp::len:
      return ok(Value::integer(static_cast<std::int64_t>(a.value.as_list().size())));
    default:
      break;
  }
  EvalResult b = evaluate(*e.args[1], env);
  if (!b.ok()) return b;
  switch (e.op) {
    case ExprOp::add:
      return number_or_overflow(checked_add(a.value.as_number(), b.value.as_number()));
    case ExprOp::sub:
      return number_or_overflow(checked_sub(a.value.as_number(), b.value.as_number()));
    case ExprOp::mul:
      return number_or_overflow(checked_mul(a.value.as_number(), b.value.as_number()));
    case ExprOp::eq:
      return ok(Value::boolean(values_equal(a.value, b.value)));
    case ExprOp::ne:
      return ok(Value::boolean(!values_equal(a.value, b.value)));
    case ExprOp::lt:
      return ok(Value::boolean(a.value.as_number() < b.value.as_number()));
    case ExprOp::le:
      return ok(Value::boolean(a.value.as_number() <= b.value.as_number()));
    case ExprOp::gt:
      return ok(Value::boolean(a.value.as_number() > b.value.as_number()));
    case ExprOp::ge:
      return ok(Value::boolean(a.value.as_number() >= b.value.as_number()));
    case ExprOp::min:
      return at_type_scale(e, a.value.as_number() <= b.value.as_number() ? a : b);
    case ExprOp::max:
      return at_type_scale(e, a.value.as_number() >= b.value.as_number() ? a : b);
    case ExprOp::contains: {
      const auto& items = a.value.as_list();
      return ok(Value::boolean(std::any_of(
          items.begin(), items.end(), [&](const Value& v) { return values_equal(v, b.value); })));
    }
    default:
      break;
  }
  return error(EvalError::overflow);  // unreachable for a type-checked AST
}

namespace {

int precedence(ExprOp op) {
  switch (op) {
    case ExprOp::ite:
      return 0;
    case ExprOp::implies:
      return 1;
    case ExprOp::logical_or:
      return 2;
    case ExprOp::logical_and:
      return 3;
    case ExprOp::eq:
    case ExprOp::ne:
    case ExprOp::lt:
    case ExprOp::le:
    case ExprOp::gt:
    case ExprOp::ge:
    case ExprOp::in_set:
      return 4;
    case ExprOp::add:
    case ExprOp::sub:
      return 5;
    case ExprOp::mul:
      return 6;
    case ExprOp::neg:
    case ExprOp::logical_not:
      return 7;
    default:
      return 8;
  }
}

const char* symbol(ExprOp op) {
  switch (op) {
    case ExprOp::add:
      return "+";
    case ExprOp::sub:
      return "-";
    case ExprOp::mul:
      return "*";
    case ExprOp::eq:
      return "==";
    case ExprOp::ne:
      return "!=";
    case ExprOp::lt:
      return "<";
    case ExprOp::le:
      return "<=";
    case ExprOp::gt:
      return ">";
    case ExprOp::ge:
      return ">=";
    case ExprOp::logical_and:
      return "&&";
    case ExprOp::logical_or:
      return "||";
    case ExprOp::implies:
      return "->";
    default:
      return "?";
  }
}

std::string quote_literal(const Value& v) {
  if (v.kind() != Value::Kind::string) return v.to_string();
  std::string s = "'";
  for (char c : v.as_string()) {
    if (c == '\'' || c == '\\') s += '\\';
    s += c;
  }
  return s + "'";
}

std::string wrap(const Expr& child, int parent_prec, bool strict) {
  const std::string s = to_source(child);
  const int p = precedence(child.op);
  return (p < parent_prec || (strict && p == parent_prec)) ? "(" + s + ")" : s;
}

std::string join_args(const Expr& e, std::size_t from) {
  std::string s;
  for (std::size_t i = from; i < e.args.size(); ++i) {
    if (i > from) s += ", ";
    s += to_source(*e.args[i]);
  }
  return s;
}

}  // namespace

std::string to_source(const Expr& e) {
  const int p = precedence(e.op);
  switch (e.op) {
    case ExprOp::literal:
      return quote_literal(e.literal);
    case ExprOp::variable:
    case ExprOp::parameter:
      return e.name;
    case ExprOp::old_variable:
      return "old(" + e.name + ")";
    case ExprOp::defined:
      return "defined(" + e.name + ")";
    // A unary operator on the same operator needs no parentheses (`- -x`, `!!x`): printed
    // with them, a chain of N signs would nest 2N deep and exceed the parser's limit.
    case ExprOp::neg:
      return e.args[0]->op == ExprOp::neg ? "- " + to_source(*e.args[0])
                                          : "-" + wrap(*e.args[0], p, true);
    case ExprOp::logical_not:
      return e.args[0]->op == ExprOp::logical_not ? "!" + to_source(*e.args[0])
                                                  : "!" + wrap(*e.args[0], p, true);
    case ExprOp::ite:
      return "if " + to_source(*e.args[0]) + " then " + to_source(*e.args[1]) + " else " +
             to_source(*e.args[2]);
    case ExprOp::len:
      return "len(" + join_args(e, 0) + ")";
    case ExprOp::contains:
      return "contains(" + join_args(e, 0) + ")";
    case ExprOp::min:
      return "min(" + join_args(e, 0) + ")";
    case ExprOp::max:
      return "max(" + join_args(e, 0) + ")";
    case ExprOp::abs:
      return "abs(" + join_args(e, 0) + ")";
    case ExprOp::list:
      return "[" + join_args(e, 0) + "]";
    case ExprOp::in_set:
      return wrap(*e.args[0], p, true) + " in {" + join_args(e, 1) + "}";
    case ExprOp::implies:  // right-associative
      return wrap(*e.args[0], p, true) + " -> " + wrap(*e.args[1], p, false);
    default:
      // Comparisons do not chain, so both sides of one are strict.
      return wrap(*e.args[0], p, p == 4) + " " + symbol(e.op) + " " + wrap(*e.args[1], p, true);
  }
}

}  // namespace clampai::kernel
