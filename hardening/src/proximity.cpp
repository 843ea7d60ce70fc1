// Linear forms of invariant comparisons, their margins and the exact steps to the boundary.
#include "clampai/hardening/proximity.hpp"

#include <map>

#include "clampai/kernel/expr.hpp"

namespace clampai::hardening {
namespace {

namespace ck = clampai::kernel;
using ck::Decimal;
using ck::Expr;
using ck::ExprOp;

// c0 + sum(coeff[x] * x), exact; nullopt when not linear or on overflow.
struct Linear {
  Decimal constant{};
  std::map<ck::VarId, Decimal> coeff{};
};

std::optional<Linear> scaled(Linear l, Decimal k) {
  auto c = ck::checked_mul(l.constant, k);
  if (!c) return std::nullopt;
  l.constant = *c;
  for (auto& [v, a] : l.coeff) {
    auto x = ck::checked_mul(a, k);
    if (!x) return std::nullopt;
    a = *x;
  }
  return l;
}

std::optional<Linear> sum(Linear a, const Linear& b, bool subtract) {
  auto c =
      subtract ? ck::checked_sub(a.constant, b.constant) : ck::checked_add(a.constant, b.constant);
  if (!c) return std::nullopt;
  a.constant = *c;
  for (const auto& [v, k] : b.coeff) {
    auto x = subtract ? ck::checked_sub(a.coeff[v], k) : ck::checked_add(a.coeff[v], k);
    if (!x) return std::nullopt;
    a.coeff[v] = *x;
  }
  return a;
}

std::optional<Linear> linear(const Expr& e) {
  switch (e.op) {
    case ExprOp::literal:
      if (e.literal.kind() != ck::Value::Kind::number) return std::nullopt;
      return Linear{e.literal.as_number(), {}};
    case ExprOp::variable:
      if (!e.type.is_numeric()) return std::nullopt;
      return Linear{Decimal{}, {{e.index, Decimal::integer(1)}}};
    case ExprOp::neg: {
      auto a = linear(*e.args[0]);
      return a ? scaled(*a, Decimal::integer(-1)) : std::nullopt;
    }
    case ExprOp::add:
    case ExprOp::sub: {
      auto a = linear(*e.args[0]);
      auto b = linear(*e.args[1]);
      if (!a || !b) return std::nullopt;
      return sum(*a, *b, e.op == ExprOp::sub);
    }
    case ExprOp::mul: {
      auto a = linear(*e.args[0]);
      auto b = linear(*e.args[1]);
      if (!a || !b) return std::nullopt;
      if (b->coeff.empty()) return scaled(*a, b->constant);
      if (a->coeff.empty()) return scaled(*b, a->constant);
      return std::nullopt;
    }
    default:
      return std::nullopt;
  }
}

void conjuncts(const ck::ExprPtr& e, std::vector<ck::ExprPtr>& out) {
  if (e->op == ExprOp::logical_and) {
    for (const auto& a : e->args) conjuncts(a, out);
  } else {
    out.push_back(e);
  }
}

bool reads_state(const Expr& e) {
  if (e.op == ExprOp::variable || e.op == ExprOp::old_variable || e.op == ExprOp::defined)
    return true;
  for (const auto& a : e.args)
    if (reads_state(*a)) return true;
  return false;
}

void parameters_read(const Expr& e, std::vector<std::uint32_t>& out) {
  if (e.op == ExprOp::parameter) out.push_back(e.index);
  for (const auto& a : e.args) parameters_read(*a, out);
}

// The constant amount an effect changes its variable by, or why it is not constant.
std::optional<Decimal> effect_delta(const ck::Action& a,
                                    const ck::Effect& eff,
                                    const ck::State& state,
                                    std::string& why) {
  if (eff.mode != ck::EffectMode::increment && eff.mode != ck::EffectMode::decrement) {
    why = "`" + std::string(ck::to_string(eff.mode)) + "` is not a constant step";
    return std::nullopt;
  }
  if (reads_state(*eff.value)) {
    why = "its step reads the state";
    return std::nullopt;
  }
  std::vector<std::uint32_t> ps;
  parameters_read(*eff.value, ps);
  std::vector<ck::Value> params(a.parameters.size());
  for (std::size_t i = 0; i < a.parameters.size(); ++i) {
    if (a.parameters[i].default_value)
      params[i] = ck::Value::number(*a.parameters[i].default_value);
  }
  for (std::uint32_t p : ps) {
    if (!a.parameters[p].default_value) {
      why = "its step depends on parameter `" + a.parameters[p].name + "`, which has no default";
      return std::nullopt;
    }
  }
  const ck::EvalEnv env{&state, {}, nullptr, params.data()};
  const ck::EvalResult r = ck::evaluate(*eff.value, env);
  if (!r.ok() || r.value.kind() != ck::Value::Kind::number) {
    why = "its step cannot be evaluated";
    return std::nullopt;
  }
  if (eff.mode == ck::EffectMode::increment) return r.value.as_number();
  return ck::checked_neg(r.value.as_number());
}

// floor(a / b) for a >= 0, b > 0, exact at their common scale.
std::optional<std::int64_t> floor_div(Decimal a, Decimal b, bool ceiling) {
  const int scale = std::max(a.scale, b.scale);
  const auto ra = a.rescaled(scale);
  const auto rb = b.rescaled(scale);
  if (!ra || !rb || rb->units <= 0 || ra->units < 0) return std::nullopt;
  const __int128 x = ra->units;
  const __int128 y = rb->units;
  const __int128 q = ceiling ? (x + y - 1) / y : x / y;
  if (q > INT64_MAX) return std::nullopt;
  return static_cast<std::int64_t>(q);
}

}  // namespace

std::vector<BoundaryProximity> boundary_proximity(const ck::TaskModel& model,
                                                  const ck::State& state) {
  std::vector<BoundaryProximity> out;
  for (const ck::Invariant& inv : model.invariants) {
    if (!inv.expr || inv.transition) continue;
    std::vector<ck::ExprPtr> parts;
    conjuncts(inv.expr, parts);
    for (const ck::ExprPtr& c : parts) {
      const bool upper = c->op == ExprOp::le || c->op == ExprOp::lt;
      const bool lower = c->op == ExprOp::ge || c->op == ExprOp::gt;
      if (!upper && !lower) continue;
      auto lhs = linear(*c->args[0]);
      auto rhs = linear(*c->args[1]);
      if (!lhs || !rhs) continue;
      auto margin = upper ? sum(*rhs, *lhs, true) : sum(*lhs, *rhs, true);
      if (!margin) continue;
      // The margin in `state`.
      std::optional<Decimal> slack = margin->constant;
      for (const auto& [v, k] : margin->coeff) {
        const ck::Value& x = state.get(v);
        if (!slack || x.kind() != ck::Value::Kind::number) {
          slack = std::nullopt;
          break;
        }
        auto term = ck::checked_mul(k, x.as_number());
        slack = term ? ck::checked_add(*slack, *term) : std::nullopt;
      }
      if (!slack) continue;
      BoundaryProximity b;
      b.invariant = inv.name;
      b.boundary = ck::to_source(*c);
      b.slack = *slack;
      b.strict = c->op == ExprOp::lt || c->op == ExprOp::gt;
      for (const ck::Action& a : model.actions) {
        Approach ap;
        ap.action = a.id;
        std::optional<Decimal> delta = Decimal{};
        for (const ck::Effect& eff : a.effects) {
          const auto k = margin->coeff.find(eff.variable);
          if (k == margin->coeff.end() || k->second.units == 0) continue;
          const auto d = effect_delta(a, eff, state, ap.note);
          if (!d) {
            ap.note = "`" + model.variables[eff.variable].name + "`: " + ap.note;
            delta = std::nullopt;
            break;
          }
          auto term = ck::checked_mul(k->second, *d);
          delta = term ? ck::checked_add(*delta, *term) : std::nullopt;
          if (!delta) {
            ap.note = "the step overflows";
            break;
          }
        }
        ap.delta = delta;
        if (delta && delta->units < 0) {
          if ((b.strict && b.slack.units <= 0) || (!b.strict && b.slack.units < 0)) {
            ap.steps = 0;
          } else {
            ap.steps = floor_div(b.slack, *ck::checked_neg(*delta), b.strict);
            if (ap.steps && b.strict) *ap.steps -= 1;
          }
        }
        b.actions.push_back(std::move(ap));
      }
      out.push_back(std::move(b));
    }
  }
  return out;
}

}  // namespace clampai::hardening
