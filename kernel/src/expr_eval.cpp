// Concrete evaluation of expressions: the kernel's interpretation of the AST.
#include <algorithm>

#include "clampai/kernel/expr.hpp"

namespace clampai::kernel {
namespace {

EvalResult error(EvalError e) { return EvalResult{Value(), e}; }
EvalResult ok(Value v) { return EvalResult{std::move(v), EvalError::none}; }
EvalResult number_or_overflow(const std::optional<Decimal>& d) {
  return d ? ok(Value::number(*d)) : error(EvalError::overflow);
}

const Value& lookup(const EvalEnv& env, VarId id) {
  if (env.overlay != nullptr) {
    // Later entries win; overlays hold the few variables one action writes.
    for (auto it = env.overlay->rbegin(); it != env.overlay->rend(); ++it) {
      if (it->first == id) return it->second;
    }
  }
  return env.state->get(id);
}

bool values_equal(const Value& a, const Value& b) { return a == b; }

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

EvalResult evaluate(const Expr& e, const EvalEnv& env) {
  switch (e.op) {
    case ExprOp::lt:
    case ExprOp::le:
    case ExprOp::gt:
    case ExprOp::ge: {
      Decimal a;
      Decimal b;
      if (const EvalError err = number(*e.args[0], env, a); err != EvalError::none)
        return error(err);
      if (const EvalError err = number(*e.args[1], env, b); err != EvalError::none)
        return error(err);
      const bool r = e.op == ExprOp::lt   ? a < b
                     : e.op == ExprOp::le ? a <= b
                     : e.op == ExprOp::gt ? a > b
                                          : a >= b;
      return ok(Value::boolean(r));
    }
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
      return evaluate(*e.args[c.value.as_bool() ? 1 : 2], env);
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
      return a.value.as_number() <= b.value.as_number() ? a : b;
    case ExprOp::max:
      return a.value.as_number() >= b.value.as_number() ? a : b;
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
    case ExprOp::neg:
      return "-" + wrap(*e.args[0], p, true);
    case ExprOp::logical_not:
      return "!" + wrap(*e.args[0], p, true);
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
