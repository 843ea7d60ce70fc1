// The Z3 encoding of expressions and effects: numbers as exact scaled integers, the same
// representation the kernel computes with, so the two interpretations agree.
#include "z3_encoder.hpp"

#include <algorithm>
#include <atomic>
#include <limits>

namespace clampai::verifier::detail {

using kernel::Action;
using kernel::Expr;
using kernel::ExprOp;
using kernel::Type;
using kernel::Value;
using kernel::VarId;

namespace {
z3::expr int64_range(z3::context& ctx, const z3::expr& x) {
  return x >= ctx.int_val(std::numeric_limits<std::int64_t>::min()) &&
         x <= ctx.int_val(std::numeric_limits<std::int64_t>::max());
}
std::int64_t units_at(const kernel::Decimal& d, int scale) { return d.rescaled(scale)->units; }

// True iff `e` produces enumeration values (or lists of them): an enumeration, or an `if`
// choosing among them (the type of an `if` over two different enumerations is `string`).
bool yields_codes(const Expr& e) {
  const Type& t =
      e.type.kind() == Type::Kind::list && e.type.element() != nullptr ? *e.type.element() : e.type;
  if (t.kind() == Type::Kind::enumeration) return true;
  return e.op == ExprOp::ite && (yields_codes(*e.args[1]) || yields_codes(*e.args[2]));
}

// The scale of a term of type `t`: a number's, or the elements' of a list of numbers.
int units_scale(const Type& t) {
  if (t.kind() == Type::Kind::list) return t.element() != nullptr ? t.element()->scale() : 0;
  return t.scale();
}

// The type both sides of a comparison of lists are converted to: numbers at the finer scale of
// the two, enumeration values as codes if either side holds them.
Type common_list_type(const Type& a, const Type& b) {
  const Type* x = a.element();
  const Type* y = b.element();
  if (x == nullptr || y == nullptr) return x != nullptr ? a : b;
  if (x->is_numeric() && y->is_numeric())
    return Type::list(Type::decimal(std::max(x->scale(), y->scale())));
  return x->kind() == Type::Kind::enumeration || y->kind() != Type::Kind::enumeration ? a : b;
}

// `a && b`, leaving out a side that is the literal `true` (the terms the solver sees stay those
// of the encodings that do not convert anything).
z3::expr both(const z3::expr& a, const z3::expr& b) {
  if (a.is_true()) return b;
  if (b.is_true()) return a;
  return a && b;
}

// Terms of different sorts cannot meet in one Z3 operation: an honest `unknown`, never a Z3
// sort error.
void same_sort(const z3::expr& a, const z3::expr& b, const char* what) {
  if (!z3::eq(a.get_sort(), b.get_sort()))
    throw Unsupported{std::string("unsupported construct: ") + what +
                      " mixes enumeration values with other strings"};
}
}  // namespace

std::int64_t EnumCodes::of(const std::string& value) {
  const auto [it, added] = codes_.emplace(value, static_cast<std::int64_t>(values_.size()));
  if (added) values_.push_back(value);
  return it->second;
}

const std::string& EnumCodes::value(std::int64_t code) const {
  return values_.at(static_cast<std::size_t>(code));
}

Encoder::Encoder(z3::context& ctx,
                 const kernel::TaskModel& model,
                 std::string prefix,
                 std::shared_ptr<EnumCodes> codes)
    : ctx_(ctx),
      model_(model),
      prefix_(std::move(prefix)),
      codes_(codes ? std::move(codes) : std::make_shared<EnumCodes>()),
      pre_(model.variables.size()) {}

z3::sort Encoder::sort_of(const Type& t) {
  switch (t.kind()) {
    case Type::Kind::boolean:
      return ctx_.bool_sort();
    case Type::Kind::integer:
    case Type::Kind::decimal:
    case Type::Kind::enumeration:
      return ctx_.int_sort();
    case Type::Kind::string:
      return ctx_.string_sort();
    case Type::Kind::list: {
      // A list is a Z3 sequence of its elements (numbers as scaled integers, enumeration values
      // as codes).
      if (t.element() == nullptr) break;
      z3::sort element = sort_of(*t.element());
      return ctx_.seq_sort(element);
    }
  }
  throw Unsupported{"unsupported construct: an empty list of unknown type"};
}

z3::sort Encoder::sort_as(const Type& t, bool codes) {
  if (!codes) return sort_of(t);
  if (t.kind() == Type::Kind::string) return ctx_.int_sort();
  if (t.kind() == Type::Kind::list && t.element() != nullptr &&
      t.element()->kind() == Type::Kind::string) {
    z3::sort element = ctx_.int_sort();
    return ctx_.seq_sort(element);
  }
  return sort_of(t);
}

z3::expr Encoder::empty_list(const z3::sort& s) {
  const Z3_ast r = Z3_mk_seq_empty(ctx_, s);
  ctx_.check_error();
  return z3::expr(ctx_, r);
}

namespace {
std::atomic<std::uint64_t> recfun_names{0};  // Z3 merges recursive functions of one name
}

z3::expr Encoder::rescaled_items(const z3::expr& s, int k) {
  const std::string key = "rescaled." + std::to_string(k);
  auto it = recfuns_.find(key);
  if (it == recfuns_.end()) {
    z3::sort element = ctx_.int_sort();
    const z3::sort seq = ctx_.seq_sort(element);
    const std::string name = "clampai$" + key + "." + std::to_string(recfun_names++);
    const z3::func_decl f = ctx_.recfun(name.c_str(), seq, seq);
    const z3::expr x = ctx_.constant("s", seq);
    z3::expr_vector args(ctx_);
    args.push_back(x);
    const z3::expr head = (x.nth(ctx_.int_val(0)) * ctx_.int_val(kernel::pow10(k))).unit();
    const z3::expr tail = x.extract(ctx_.int_val(1), x.length() - 1);
    ctx_.recdef(f, args, z3::ite(x.length() == 0, x, z3::concat(head, f(tail))));
    it = recfuns_.emplace(key, f).first;
  }
  return it->second(s);
}

z3::expr Encoder::all_items(const z3::expr& s,
                            const std::string& key,
                            const std::function<z3::expr(const z3::expr&)>& test) {
  auto it = recfuns_.find(key);
  if (it == recfuns_.end()) {
    const z3::sort seq = s.get_sort();
    const std::string name = "clampai$" + key + "." + std::to_string(recfun_names++);
    const z3::func_decl f = ctx_.recfun(name.c_str(), seq, ctx_.bool_sort());
    const z3::expr x = ctx_.constant("s", seq);
    z3::expr_vector args(ctx_);
    args.push_back(x);
    const z3::expr tail = x.extract(ctx_.int_val(1), x.length() - 1);
    // An `ite` on the length, not a disjunction: Z3 unfolds the cases of an `ite`.
    ctx_.recdef(
        f,
        args,
        z3::ite(x.length() == 0, ctx_.bool_val(true), test(x.nth(ctx_.int_val(0))) && f(tail)));
    it = recfuns_.emplace(key, f).first;
  }
  return it->second(s);
}

z3::expr Encoder::convert(
    const Expr& e, const Env& env, const Type& to, bool codes, z3::expr* fits) {
  if (to.kind() == Type::Kind::list) {
    if (to.element() == nullptr)
      throw Unsupported{"unsupported construct: an empty list of unknown type"};
    const Type& el = *to.element();
    if (e.op == ExprOp::list) {
      // Item by item: the kernel keeps each item's own value, and a write rescales each.
      z3::expr out = empty_list(sort_as(to, codes));
      for (const auto& item : e.args)
        out = z3::concat(out, convert(*item, env, el, codes, fits).unit());
      return out;
    }
    if (e.op == ExprOp::ite) {
      // The kernel evaluates one branch (lazily: the other's range conditions hold only when it
      // is taken) and converts what it chose.
      const z3::expr c = encode(*e.args[0], env, false).e;
      z3::expr fa = ctx_.bool_val(true);
      z3::expr fb = ctx_.bool_val(true);
      std::size_t mark = ranges_.size();
      const z3::expr a = convert(*e.args[1], env, to, codes, fits != nullptr ? &fa : nullptr);
      only_if(mark, c);
      mark = ranges_.size();
      const z3::expr b = convert(*e.args[2], env, to, codes, fits != nullptr ? &fb : nullptr);
      only_if(mark, !c);
      if (fits != nullptr && !(fa.is_true() && fb.is_true()))
        *fits = both(*fits, z3::ite(c, fa, fb));
      return z3::ite(c, a, b);
    }
    // A list held by a variable (or written by an earlier effect): its elements at its scale.
    const Term t = encode(e, env, codes || el.kind() == Type::Kind::enumeration);
    if (!z3::eq(t.e.get_sort(), sort_as(to, codes)))
      throw Unsupported{"unsupported construct: a list of " + e.type.to_string() + " where a " +
                        to.to_string() + " is expected"};
    if (!el.is_numeric() || t.scale == el.scale()) return t.e;
    if (t.scale > el.scale())
      throw Unsupported{"unsupported construct: a value finer than what receives it"};
    const z3::expr out = rescaled_items(t.e, el.scale() - t.scale);
    if (fits != nullptr)
      *fits = both(
          *fits, all_items(out, "int64", [&](const z3::expr& x) { return int64_range(ctx_, x); }));
    return out;
  }
  if (to.is_numeric()) {
    const Term t = encode(e, env, false);
    if (t.scale > to.scale())
      throw Unsupported{"unsupported construct: a value finer than what receives it"};
    const z3::expr out = align(t, to.scale());
    if (fits != nullptr) *fits = both(*fits, int64_range(ctx_, out));
    return out;
  }
  const bool as_codes = codes || to.kind() == Type::Kind::enumeration || yields_codes(e);
  const z3::expr out = encode(e, env, as_codes).e;
  if (!z3::eq(out.get_sort(), sort_as(to, as_codes)))
    throw Unsupported{"unsupported construct: a value of " + e.type.to_string() + " where a " +
                      to.to_string() + " is expected (enumeration values and other strings)"};
  return out;
}

Term Encoder::ranged(Term t) {
  ranges_.push_back(int64_range(ctx_, t.e));
  return t;
}

void Encoder::only_if(std::size_t mark, const z3::expr& taken) {
  if (ranges_.size() == mark) return;
  z3::expr all = ctx_.bool_val(true);
  for (std::size_t i = mark; i < ranges_.size(); ++i) all = all && ranges_[i];
  ranges_.erase(ranges_.begin() + static_cast<std::ptrdiff_t>(mark), ranges_.end());
  ranges_.push_back(z3::implies(taken, all));
}

z3::expr Encoder::take_ranges() {
  z3::expr all = ctx_.bool_val(true);
  for (const auto& r : ranges_) all = all && r;
  ranges_.clear();
  return all;
}

Term Encoder::encode_term(const Expr& e) {
  return encode(e, Env{nullptr, nullptr}, yields_codes(e));
}

z3::expr Encoder::pre(VarId id) {
  const kernel::Variable& v = model_.variables[id];
  if (v.optional) throw Unsupported{"unsupported construct: optional variable `" + v.name + "`"};
  if (!pre_[id]) pre_[id] = ctx_.constant((prefix_ + v.name).c_str(), sort_of(v.type));
  return *pre_[id];
}

z3::expr Encoder::param(const Action& action, std::size_t i) {
  return ctx_.int_const((prefix_ + "param." + action.id + "." + action.parameters[i].name).c_str());
}

z3::expr Encoder::bounds(VarId id, const z3::expr& x) {
  const kernel::Variable& v = model_.variables[id];
  if (v.type.kind() == Type::Kind::enumeration) {
    z3::expr any = ctx_.bool_val(false);
    for (const std::string& value : v.type.enum_values())
      any = any || x == ctx_.int_val(codes_->of(value));
    return any;
  }
  if (v.type.kind() == Type::Kind::list) {
    z3::expr c = v.max_length ? x.length() <= ctx_.int_val(*v.max_length) : ctx_.bool_val(true);
    if (v.type.element()->kind() == Type::Kind::enumeration) {
      // Every element is a value of the enumeration (as a scalar of it is, above).
      const std::vector<std::string>& values = v.type.element()->enum_values();
      std::string key = "enum";
      for (const std::string& value : values) key += "." + std::to_string(codes_->of(value));
      c = c && all_items(x, key, [&](const z3::expr& item) {
            z3::expr any = ctx_.bool_val(false);
            for (const std::string& value : values)
              any = any || item == ctx_.int_val(codes_->of(value));
            return any;
          });
    } else if (v.type.element()->is_numeric()) {
      // Every element is a number the kernel can hold.
      c = c && all_items(x, "int64", [&](const z3::expr& item) { return int64_range(ctx_, item); });
    }
    return c;
  }
  if (!v.type.is_numeric()) return ctx_.bool_val(true);
  z3::expr c = int64_range(ctx_, x);
  if (v.min) c = c && x >= ctx_.int_val(units_at(*v.min, v.type.scale()));
  if (v.max) c = c && x <= ctx_.int_val(units_at(*v.max, v.type.scale()));
  return c;
}

z3::expr Encoder::declared_bounds(VarId id, const z3::expr& x) {
  const kernel::Variable& v = model_.variables[id];
  if (v.type.kind() == Type::Kind::list)
    return v.max_length ? x.length() <= ctx_.int_val(*v.max_length) : ctx_.bool_val(true);
  if (!v.type.is_numeric()) return ctx_.bool_val(true);
  z3::expr c = ctx_.bool_val(true);
  if (v.min) c = c && x >= ctx_.int_val(units_at(*v.min, v.type.scale()));
  if (v.max) c = c && x <= ctx_.int_val(units_at(*v.max, v.type.scale()));
  return c;
}

z3::expr Encoder::param_bounds(const kernel::Parameter& p, const z3::expr& x) {
  z3::expr c = int64_range(ctx_, x);
  if (p.min) c = c && x >= ctx_.int_val(units_at(*p.min, p.type.scale()));
  if (p.max) c = c && x <= ctx_.int_val(units_at(*p.max, p.type.scale()));
  return c;
}

z3::expr Encoder::align(const Term& t, int scale) {
  if (t.scale == scale) return t.e;
  return t.e * ctx_.int_val(kernel::pow10(scale - t.scale));
}

z3::expr Encoder::effect(const Action& action, const kernel::Effect& eff, z3::expr& computed) {
  const Env env{nullptr, &action};
  const kernel::Variable& var = model_.variables[eff.variable];
  const z3::expr old = pre(eff.variable);
  z3::expr value = old;
  // The written value converted to the variable's type fits int64 (the kernel's normalise).
  z3::expr fits = ctx_.bool_val(true);
  try {
    switch (eff.mode) {
      case kernel::EffectMode::set:
        value = convert(*eff.value, env, var.type, false, &fits);
        same_sort(value, old, "an assignment");
        break;
      case kernel::EffectMode::append:
        value = z3::concat(old, convert(*eff.value, env, *var.type.element(), false, &fits).unit());
        break;
      case kernel::EffectMode::remove: {
        // The first element equal to the value is removed; none: unchanged (as the kernel).
        // The old elements are the variable's, already at its scale: nothing to rescale.
        const z3::expr unit = convert(*eff.value, env, *var.type.element(), false, nullptr).unit();
        const z3::expr at = z3::indexof(old, unit, ctx_.int_val(0));
        value = z3::ite(at >= 0,
                        z3::concat(old.extract(ctx_.int_val(0), at),
                                   old.extract(at + 1, old.length() - at - 1)),
                        old);
        break;
      }
      case kernel::EffectMode::increment:
      case kernel::EffectMode::decrement: {
        const z3::expr v = align(encode(*eff.value, env, false), var.type.scale());
        value = eff.mode == kernel::EffectMode::increment ? old + v : old - v;
        break;
      }
      case kernel::EffectMode::multiply:  // an int factor (the loader's rule): the scale stays
        if (eff.value->op != ExprOp::literal) nonlinear_ = true;
        value = old * encode(*eff.value, env, false).e;
        break;
      default:
        throw Unsupported{"unsupported construct: effect `" +
                          std::string(kernel::to_string(eff.mode)) + "`"};
    }
  } catch (const Unsupported&) {
    ranges_.clear();
    throw;
  }
  // The intermediate results of the value expression, then the written value itself.
  computed = take_ranges();
  if (!fits.is_true()) computed = computed && fits;
  if (var.type.is_numeric() && eff.mode != kernel::EffectMode::set)
    computed = computed && int64_range(ctx_, value);
  return value;
}

z3::expr Encoder::encode_bool(const Expr& e,
                              const std::vector<std::pair<VarId, z3::expr>>* post,
                              const Action* action) {
  try {
    return encode(e, Env{post, action}, false).e;
  } catch (const Unsupported&) {
    ranges_.clear();  // nothing of a failed encoding may constrain the next one
    throw;
  }
}
Term Encoder::encode_numeric(const Expr& e,
                             const std::vector<std::pair<VarId, z3::expr>>* post,
                             const Action* action) {
  try {
    return encode(e, Env{post, action}, false);
  } catch (const Unsupported&) {
    ranges_.clear();
    throw;
  }
}

z3::expr Encoder::cost_units(const Action& action, z3::expr& side) {
  if (!action.cost_expr) return ctx_.int_val(action.cost);
  const int bs = model_.budget.scale;
  const Term t = encode_numeric(*action.cost_expr, nullptr, &action);
  side = side && take_ranges();  // the cost expression is evaluated without an overflow
  if (t.scale <= bs) {
    const z3::expr units = t.e * ctx_.int_val(kernel::pow10(bs - t.scale));
    side = side && int64_range(ctx_, units);  // Decimal::rescaled fails outside int64
    return units;
  }
  const z3::expr k = ctx_.int_val(kernel::pow10(t.scale - bs));
  side = side && z3::mod(t.e, k) == 0;
  return t.e / k;
}

z3::expr Encoder::constant(const Value& v, const Type& type) {
  switch (type.kind()) {
    case Type::Kind::boolean:
      return ctx_.bool_val(v.as_bool());
    case Type::Kind::integer:
    case Type::Kind::decimal: {
      const auto at = v.as_number().rescaled(type.scale());
      if (!at) throw Unsupported{"a value finer than its variable's scale"};
      return ctx_.int_val(at->units);
    }
    case Type::Kind::enumeration:
      if (!type.has_enum_value(v.as_string())) throw Unsupported{"a value outside its enumeration"};
      return ctx_.int_val(codes_->of(v.as_string()));
    case Type::Kind::string:
      return ctx_.string_val(v.as_string());
    case Type::Kind::list: {
      z3::expr out = empty_list(sort_of(type));
      for (const Value& item : v.as_list())
        out = z3::concat(out, constant(item, *type.element()).unit());
      return out;
    }
  }
  throw Unsupported{"unsupported construct: a value of this type"};
}

Term Encoder::encode(const Expr& e, const Env& env, bool codes) {
  auto numeric = [&](std::size_t i) { return encode(*e.args[i], env, false); };
  auto equal = [&](const Expr& a, const Expr& b) -> z3::expr {
    if (a.type.is_numeric()) {
      const Term x = encode(a, env, false);
      const Term y = encode(b, env, false);
      const int s = std::max(x.scale, y.scale);
      return align(x, s) == align(y, s);
    }
    if (a.type.kind() == Type::Kind::list) {
      // The kernel compares the elements by value: both sides converted to one list type.
      const Type to = common_list_type(a.type, b.type);
      const z3::expr x = convert(a, env, to, false, nullptr);
      const z3::expr y = convert(b, env, to, false, nullptr);
      same_sort(x, y, "a comparison");
      return x == y;
    }
    if (yields_codes(a) || yields_codes(b)) {
      // Enumeration values of any enumeration, and string literals, as their codes.
      const z3::expr x = encode(a, env, true).e;
      const z3::expr y = encode(b, env, true).e;
      same_sort(x, y, "a comparison");
      return x == y;
    }
    const z3::expr x = encode(a, env, false).e;
    const z3::expr y = encode(b, env, false).e;
    same_sort(x, y, "a comparison");
    return x == y;
  };

  switch (e.op) {
    case ExprOp::literal:
      switch (e.literal.kind()) {
        case Value::Kind::boolean:
          return Term{ctx_.bool_val(e.literal.as_bool()), 0};
        case Value::Kind::number:
          return Term{ctx_.int_val(e.literal.as_number().units), e.literal.as_number().scale};
        case Value::Kind::string: {
          if (codes) return Term{ctx_.int_val(codes_->of(e.literal.as_string())), 0};
          return Term{ctx_.string_val(e.literal.as_string()), 0};
        }
        default:
          throw Unsupported{"unsupported construct: a literal of this kind"};
      }
    case ExprOp::variable: {
      if (env.post != nullptr) {
        // The last write wins, as in the kernel (effects apply in order).
        for (auto it = env.post->rbegin(); it != env.post->rend(); ++it) {
          if (it->first == e.index) return Term{it->second, units_scale(e.type)};
        }
      }
      return Term{pre(e.index), units_scale(e.type)};
    }
    case ExprOp::old_variable:
      return Term{pre(e.index), units_scale(e.type)};
    case ExprOp::parameter:
      return Term{param(*env.action, e.index), e.type.scale()};
    case ExprOp::neg: {
      const Term a = numeric(0);
      return ranged(Term{-a.e, a.scale});
    }
    case ExprOp::add:
    case ExprOp::sub: {
      const Term a = numeric(0);
      const Term b = numeric(1);
      const int s = std::max(a.scale, b.scale);
      return ranged(
          Term{e.op == ExprOp::add ? align(a, s) + align(b, s) : align(a, s) - align(b, s), s});
    }
    case ExprOp::mul: {
      if (e.args[0]->op != ExprOp::literal && e.args[1]->op != ExprOp::literal) nonlinear_ = true;
      const Term a = numeric(0);
      const Term b = numeric(1);
      return ranged(Term{a.e * b.e, a.scale + b.scale});
    }
    case ExprOp::lt:
    case ExprOp::le:
    case ExprOp::gt:
    case ExprOp::ge: {
      const Term a = numeric(0);
      const Term b = numeric(1);
      const int s = std::max(a.scale, b.scale);
      const z3::expr x = align(a, s);
      const z3::expr y = align(b, s);
      switch (e.op) {
        case ExprOp::lt:
          return Term{x < y, 0};
        case ExprOp::le:
          return Term{x <= y, 0};
        case ExprOp::gt:
          return Term{x > y, 0};
        default:
          return Term{x >= y, 0};
      }
    }
    case ExprOp::eq:
      return Term{equal(*e.args[0], *e.args[1]), 0};
    case ExprOp::ne:
      return Term{!equal(*e.args[0], *e.args[1]), 0};
    // The kernel evaluates `in`, `&&`, `||`, `->` and `if` lazily: an operand it does not need
    // is not evaluated, so its range conditions (no int64 overflow) hold only when it is needed.
    case ExprOp::in_set: {
      z3::expr any = ctx_.bool_val(false);
      for (std::size_t i = 1; i < e.args.size(); ++i) {
        const std::size_t mark = ranges_.size();
        const z3::expr eq = equal(*e.args[0], *e.args[i]);
        only_if(mark, !any);  // the i-th item is compared only if no earlier one matched
        any = any || eq;
      }
      return Term{any, 0};
    }
    case ExprOp::logical_and:
    case ExprOp::logical_or:
    case ExprOp::implies: {
      const z3::expr a = encode(*e.args[0], env, false).e;
      const std::size_t mark = ranges_.size();
      const z3::expr b = encode(*e.args[1], env, false).e;
      only_if(mark, e.op == ExprOp::logical_or ? !a : a);
      if (e.op == ExprOp::logical_and) return Term{a && b, 0};
      if (e.op == ExprOp::logical_or) return Term{a || b, 0};
      return Term{z3::implies(a, b), 0};
    }
    case ExprOp::logical_not:
      return Term{!encode(*e.args[0], env, false).e, 0};
    case ExprOp::ite: {
      if (e.type.kind() == Type::Kind::list)
        return Term{convert(e, env, e.type, codes, nullptr), units_scale(e.type)};
      const z3::expr c = encode(*e.args[0], env, false).e;
      const bool branch_codes = codes || yields_codes(e);
      std::size_t mark = ranges_.size();
      const Term a = encode(*e.args[1], env, branch_codes);
      only_if(mark, c);
      mark = ranges_.size();
      const Term b = encode(*e.args[2], env, branch_codes);
      only_if(mark, !c);
      if (e.type.is_numeric()) {
        // The kernel brings the chosen branch to the `if`'s (joined) scale: a branch that fits
        // at its own scale but not at the joined one overflows.
        const int s = e.type.scale();
        return ranged(Term{z3::ite(c, align(a, s), align(b, s)), s});
      }
      same_sort(a.e, b.e, "an `if`");
      return Term{z3::ite(c, a.e, b.e), 0};
    }
    case ExprOp::min:
    case ExprOp::max: {
      const int s = e.type.scale();
      const z3::expr a = align(numeric(0), s);
      const z3::expr b = align(numeric(1), s);
      // The kernel brings the chosen operand to the joined scale (an overflow if it does not
      // fit there), as for `if`.
      return ranged(Term{e.op == ExprOp::min ? z3::ite(a <= b, a, b) : z3::ite(a >= b, a, b), s});
    }
    case ExprOp::abs: {
      const Term a = numeric(0);
      return ranged(Term{z3::ite(a.e < 0, -a.e, a.e), a.scale});
    }
    case ExprOp::defined:
      if (!model_.variables[e.index].optional) return Term{ctx_.bool_val(true), 0};
      throw Unsupported{"unsupported construct: optional variable `" + e.name + "`"};
    case ExprOp::len:
      return Term{encode(*e.args[0], env, false).e.length(), 0};
    case ExprOp::contains: {
      const Expr& list = *e.args[0];
      if (list.type.element() == nullptr) return Term{ctx_.bool_val(false), 0};  // contains([], v)
      if (list.type.element()->is_numeric()) {
        // By value (as the kernel): the value at the list's scale; a finer value is in the list
        // only if it has no digits past that scale.
        const Term l = encode(list, env, false);
        const Term x = encode(*e.args[1], env, false);
        if (x.scale <= l.scale) return Term{l.e.contains(align(x, l.scale).unit()), 0};
        const z3::expr k = ctx_.int_val(kernel::pow10(x.scale - l.scale));
        return Term{z3::mod(x.e, k) == 0 && l.e.contains((x.e / k).unit()), 0};
      }
      const bool as_codes = yields_codes(list) || yields_codes(*e.args[1]);
      const z3::expr l = encode(list, env, as_codes).e;
      const z3::expr x = encode(*e.args[1], env, as_codes).e;
      z3::sort item = x.get_sort();
      if (!z3::eq(l.get_sort(), ctx_.seq_sort(item)))
        throw Unsupported{
            "unsupported construct: `contains` mixes enumeration values with other strings"};
      return Term{l.contains(x.unit()), 0};
    }
    case ExprOp::list:
      return Term{convert(e, env, e.type, codes, nullptr), units_scale(e.type)};
  }
  throw Unsupported{"unsupported construct"};
}

Value Encoder::value_of(const z3::model& m, const z3::expr& symbol, const Type& type) {
  const z3::expr v = m.eval(symbol, true);
  switch (type.kind()) {
    case Type::Kind::boolean:
      return Value::boolean(v.is_true());
    case Type::Kind::integer:
    case Type::Kind::decimal:
      return Value::number(
          kernel::Decimal{v.get_numeral_int64(), static_cast<std::uint8_t>(type.scale())});
    case Type::Kind::enumeration:
      return Value::string(codes_->value(v.get_numeral_int64()));
    case Type::Kind::string:
      return Value::string(v.get_string());
    case Type::Kind::list: {
      const std::int64_t n = m.eval(symbol.length(), true).get_numeral_int64();
      Value::List items;
      for (std::int64_t i = 0; i < n; ++i)
        items.push_back(value_of(m, m.eval(symbol.nth(ctx_.int_val(i)), true), *type.element()));
      return Value::list(std::move(items));
    }
  }
  return Value();
}

}  // namespace clampai::verifier::detail
