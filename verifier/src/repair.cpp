// Certified minimal repair. Two solvers over the same constraints:
// - l2: the constraints, with the state substituted, are linearised natively into a polyhedron
//   over the parameters; the exact projection (qp.cpp) is certified by KKT; the grid points
//   around it are tried nearest first; the kernel's own `decide` has the last word.
// - l1: the constraints are encoded in Z3 (the verifier's encoder) and Z3's optimizer finds the
//   exact optimum over the parameters' integer units. The same encoding, with one assumption
//   per constraint, yields the unsat core when no repair exists.
#include "clampai/verifier/repair.hpp"

#include <z3++.h>

#include <algorithm>
#include <numeric>
#include <queue>

#include "clampai/kernel/error.hpp"
#include "qp.hpp"
#include "step.hpp"
#include "watchdog.hpp"
#include "z3_encoder.hpp"

namespace clampai::verifier {

using detail::LinearConstraint;
using detail::Rational;
using detail::to_text;
using kernel::Action;
using kernel::Decimal;
using kernel::Decision;
using kernel::Expr;
using kernel::ExprOp;
using kernel::Proposal;
using kernel::ReasonCode;
using kernel::Situation;
using kernel::State;
using kernel::TaskModel;
using kernel::Value;
using kernel::VarId;

std::string_view to_string(RepairNorm norm) { return norm == RepairNorm::l1 ? "l1" : "l2"; }

std::string_view to_string(RepairStatus status) {
  static constexpr std::string_view kNames[] = {"approved", "repaired", "impossible", "unknown"};
  return kNames[static_cast<int>(status)];
}

namespace {

Rational q(const Decimal& d) { return Rational(d.units) / Rational(kernel::pow10(d.scale)); }

std::string alpha_text(const kernel::Invariant& inv) {
  return "barrier of `" + inv.name + "` (rate " + inv.barrier_rate->to_string() + ")";
}

// ---- the problem, shared by both solvers ----

struct Problem {
  const TaskModel& m;
  const Action& a;
  const Situation& s;
  std::vector<Rational> p;  // proposed values, natural units
  std::vector<Rational> w;  // weights
  std::vector<int> scale;   // of each parameter
  Proposal reference;       // the proposal with each parameter clamped into its bounds
  Decision reference_decision;
};

// h(s) for each invariant with a barrier rate, and (1 - α)·h(s): what h(s') must reach.
std::optional<Rational> barrier_floor(const Problem& pr, const kernel::Invariant& inv) {
  const kernel::EvalResult h =
      kernel::evaluate(*inv.barrier, kernel::EvalEnv{&pr.s.state, nullptr, &pr.s.state, nullptr});
  if (!h.ok()) return std::nullopt;
  return (Rational(1) - q(*inv.barrier_rate)) * q(h.value.as_number());
}

// Every barrier condition holds after `d` (approved) from the problem's state.
bool barriers_hold(const Problem& pr, const Decision& d, std::vector<std::string>* failed) {
  bool ok = true;
  for (const kernel::Invariant& inv : pr.m.invariants) {
    if (!inv.barrier) continue;
    const auto floor = barrier_floor(pr, inv);
    const kernel::EvalResult h = kernel::evaluate(
        *inv.barrier, kernel::EvalEnv{&pr.s.state, &d.changes, &pr.s.state, nullptr});
    if (!floor || !h.ok() || q(h.value.as_number()) < *floor) {
      ok = false;
      if (failed) failed->push_back(alpha_text(inv));
    }
  }
  return ok;
}

Proposal to_proposal(const Problem& pr, const std::vector<Rational>& x) {
  Proposal out{pr.reference.action, {}};
  for (std::size_t i = 0; i < x.size(); ++i) {
    const Rational units = x[i] * Rational(kernel::pow10(pr.scale[i]));
    out.params.push_back(Value::number(Decimal{units.numerator().convert_to<std::int64_t>(),
                                               static_cast<std::uint8_t>(pr.scale[i])}));
  }
  return out;
}

Rational distance(const Problem& pr, const std::vector<Rational>& x, RepairNorm norm) {
  Rational sum = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const Rational d = x[i] - pr.p[i];
    sum += pr.w[i] * (norm == RepairNorm::l1 ? (d < 0 ? Rational(-d) : d) : d * d);
  }
  return sum;
}

// ---- l2: the native linearisation ----

struct Affine {  // c + a·x
  Rational c;
  std::vector<Rational> a;
};

Affine operator-(Affine f) {
  f.c = -f.c;
  for (auto& x : f.a) x = -x;
  return f;
}

enum class Rel : std::uint8_t { le, lt, eq };

struct Atom {  // a·x (<=, <, ==) b
  std::string name;
  std::vector<Rational> a;
  Rational b;
  Rel rel = Rel::le;
};

Atom at_most(std::string name, const Affine& f, const Rational& bound) {
  return Atom{std::move(name), f.a, bound - f.c, Rel::le};
}

Atom at_least(std::string name, const Affine& f, const Rational& bound) {
  return at_most(std::move(name), -f, -bound);
}

struct NotLinear {
  std::string why;
};

class Linearizer {
 public:
  explicit Linearizer(const Problem& pr) : pr_(pr), n_(pr.p.size()) {
    post_.resize(pr.m.variables.size());
    dep_.assign(pr.m.variables.size(), false);
    for (const kernel::Effect& e : pr.a.effects) {
      const kernel::Variable& var = pr.m.variables[e.variable];
      const bool dependent = e.value && depends(*e.value, false);
      post_[e.variable].reset();
      dep_[e.variable] = dependent;
      if (!dependent || !var.type.is_numeric()) continue;
      const Value& old = pr.s.state.get(e.variable);
      if (old.kind() != Value::Kind::number) throw NotLinear{"`" + var.name + "` is undefined"};
      Affine v = affine(*e.value, false);
      const Rational x = q(old.as_number());
      switch (e.mode) {
        case kernel::EffectMode::set:
          break;
        case kernel::EffectMode::increment:
          v.c += x;
          break;
        case kernel::EffectMode::decrement:
          v = -v;
          v.c += x;
          break;
        case kernel::EffectMode::multiply:
          v.c *= x;
          for (auto& c : v.a) c *= x;
          break;
        default:
          throw NotLinear{"effect `" + std::string(kernel::to_string(e.mode)) + "` on `" +
                          var.name + "`"};
      }
      post_[e.variable] = std::move(v);
    }
  }

  [[nodiscard]] bool dependent(VarId id) const { return dep_[id]; }
  [[nodiscard]] bool any_dependent() const {
    return std::find(dep_.begin(), dep_.end(), true) != dep_.end();
  }
  [[nodiscard]] const std::optional<Affine>& post(VarId id) const { return post_[id]; }

  // True iff the value of `e` may change with the parameters.
  bool depends(const Expr& e, bool post) const {
    switch (e.op) {
      case ExprOp::parameter:
        return true;
      case ExprOp::variable:
      case ExprOp::defined:
        return post && dep_[e.index];
      default:
        return std::any_of(
            e.args.begin(), e.args.end(), [&](const auto& x) { return depends(*x, post); });
    }
  }

  Affine affine(const Expr& e, bool post) const {
    if (!depends(e, post)) {
      const kernel::EvalResult r = eval(e, post);
      if (!r.ok() || r.value.kind() != Value::Kind::number)
        throw NotLinear{"`" + kernel::to_source(e) + "` cannot be evaluated"};
      return Affine{q(r.value.as_number()), std::vector<Rational>(n_)};
    }
    switch (e.op) {
      case ExprOp::parameter: {
        Affine out{0, std::vector<Rational>(n_)};
        out.a[e.index] = 1;
        return out;
      }
      case ExprOp::variable:
        if (post && post_[e.index]) return *post_[e.index];
        break;
      case ExprOp::neg:
        return -affine(*e.args[0], post);
      case ExprOp::add:
      case ExprOp::sub: {
        Affine x = affine(*e.args[0], post);
        const Affine y = affine(*e.args[1], post);
        const int sign = e.op == ExprOp::add ? 1 : -1;
        x.c += sign * y.c;
        for (std::size_t i = 0; i < n_; ++i) x.a[i] += sign * y.a[i];
        return x;
      }
      case ExprOp::mul: {
        const bool left_varies = depends(*e.args[0], post);
        if (left_varies && depends(*e.args[1], post)) break;
        Affine x = affine(*e.args[left_varies ? 0 : 1], post);
        const Affine k = affine(*e.args[left_varies ? 1 : 0], post);
        x.c *= k.c;
        for (auto& c : x.a) c *= k.c;
        return x;
      }
      case ExprOp::ite:
        if (!depends(*e.args[0], post))
          return affine(*e.args[truth(*e.args[0], post) ? 1 : 2], post);
        break;
      default:
        break;
    }
    throw NotLinear{"`" + kernel::to_source(e) + "` is not linear in the parameters"};
  }

  // Appends the atoms whose conjunction is `e` (negated: `!e`).
  void atoms(const Expr& e,
             bool post,
             bool negate,
             const std::string& name,
             std::vector<Atom>& out) const {
    if (!depends(e, post)) {
      if (truth(e, post) == negate) out.push_back(Atom{name, std::vector<Rational>(n_), -1});
      return;
    }
    switch (e.op) {
      case ExprOp::logical_not:
        return atoms(*e.args[0], post, !negate, name, out);
      case ExprOp::logical_and:
        if (!negate) {
          atoms(*e.args[0], post, false, name, out);
          return atoms(*e.args[1], post, false, name, out);
        }
        return either(*e.args[0], true, *e.args[1], true, post, name, out);
      case ExprOp::logical_or:
        if (negate) {
          atoms(*e.args[0], post, true, name, out);
          return atoms(*e.args[1], post, true, name, out);
        }
        return either(*e.args[0], false, *e.args[1], false, post, name, out);
      case ExprOp::implies:
        if (negate) {
          atoms(*e.args[0], post, false, name, out);
          return atoms(*e.args[1], post, true, name, out);
        }
        return either(*e.args[0], true, *e.args[1], false, post, name, out);
      case ExprOp::ite:
        if (!depends(*e.args[0], post))
          return atoms(*e.args[truth(*e.args[0], post) ? 1 : 2], post, negate, name, out);
        break;
      case ExprOp::le:
      case ExprOp::lt:
      case ExprOp::ge:
      case ExprOp::gt:
      case ExprOp::eq:
      case ExprOp::ne: {
        if (!e.args[0]->type.is_numeric()) break;
        ExprOp op = e.op;
        if (negate) {
          static constexpr std::pair<ExprOp, ExprOp> kFlip[] = {{ExprOp::le, ExprOp::gt},
                                                                {ExprOp::lt, ExprOp::ge},
                                                                {ExprOp::ge, ExprOp::lt},
                                                                {ExprOp::gt, ExprOp::le},
                                                                {ExprOp::eq, ExprOp::ne},
                                                                {ExprOp::ne, ExprOp::eq}};
          for (const auto& [from, to] : kFlip)
            if (from == op) {
              op = to;
              break;
            }
        }
        if (op == ExprOp::ne) break;
        Affine d = affine(*e.args[0], post);  // d = lhs - rhs
        const Affine r = affine(*e.args[1], post);
        d.c -= r.c;
        for (std::size_t i = 0; i < n_; ++i) d.a[i] -= r.a[i];
        if (op == ExprOp::ge || op == ExprOp::gt) d = -d;  // rhs - lhs <= 0
        const Rel rel = op == ExprOp::eq                         ? Rel::eq
                        : (op == ExprOp::lt || op == ExprOp::gt) ? Rel::lt
                                                                 : Rel::le;
        out.push_back(Atom{name, std::move(d.a), -d.c, rel});
        return;
      }
      default:
        break;
    }
    throw NotLinear{"`" + kernel::to_source(e) + "` is not a conjunction of linear comparisons"};
  }

 private:
  const Problem& pr_;
  std::size_t n_;
  std::vector<std::optional<Affine>> post_;
  std::vector<bool> dep_;

  kernel::EvalResult eval(const Expr& e, bool post) const {
    // Only for expressions that do not depend on the parameters: the reference proposal's
    // values then stand for every proposal's.
    return kernel::evaluate(e,
                            kernel::EvalEnv{&pr_.s.state,
                                            post ? &pr_.reference_decision.changes : nullptr,
                                            &pr_.s.state,
                                            pr_.reference.params.data()});
  }

  bool truth(const Expr& e, bool post) const {
    const kernel::EvalResult r = eval(e, post);
    if (!r.ok()) throw NotLinear{"`" + kernel::to_source(e) + "` cannot be evaluated"};
    return r.value.as_bool();
  }

  // (x, negated if nx) or (y, negated if ny), when one side does not depend on the parameters.
  void either(const Expr& x,
              bool nx,
              const Expr& y,
              bool ny,
              bool post,
              const std::string& name,
              std::vector<Atom>& out) const {
    if (!depends(x, post)) {
      if (truth(x, post) != nx) return;
      return atoms(y, post, ny, name, out);
    }
    if (!depends(y, post)) {
      if (truth(y, post) != ny) return;
      return atoms(x, post, nx, name, out);
    }
    throw NotLinear{"a disjunction of conditions on the parameters (in " + name + ")"};
  }
};

// The constraints as atoms over the parameters (natural units). @throws NotLinear
std::vector<Atom> linearise(const Problem& pr) {
  const Linearizer lin(pr);
  std::vector<Atom> out;
  const std::size_t n = pr.p.size();
  for (std::size_t i = 0; i < n; ++i) {
    const kernel::Parameter& par = pr.a.parameters[i];
    Affine x{0, std::vector<Rational>(n)};
    x.a[i] = 1;
    if (par.min)
      out.push_back(
          at_least("parameter `" + par.name + "` >= " + par.min->to_string(), x, q(*par.min)));
    if (par.max)
      out.push_back(
          at_most("parameter `" + par.name + "` <= " + par.max->to_string(), x, q(*par.max)));
  }
  if (pr.a.guard) lin.atoms(*pr.a.guard, false, false, "`requires` of `" + pr.a.id + "`", out);
  const Rational budget_unit = Rational(1) / Rational(kernel::pow10(pr.m.budget.scale));
  const Rational left = Rational(pr.s.budget.remaining()) * budget_unit;
  if (pr.a.cost_expr) {
    const Affine c = lin.affine(*pr.a.cost_expr, false);
    out.push_back(
        at_most("the budget left (" + pr.m.format_amount(pr.s.budget.remaining()) + ")", c, left));
    const kernel::Amount least = pr.a.emergency ? 0 : pr.m.budget.min_action_cost;  // >= 0
    out.push_back(at_least("the minimum action cost (" + pr.m.format_amount(least) + ")",
                           c,
                           Rational(least) * budget_unit));
  }
  // Variables the effects write: their bounds after the step.
  std::vector<bool> written(pr.m.variables.size(), false);
  for (const kernel::Effect& e : pr.a.effects) written[e.variable] = true;
  for (VarId id = 0; id < written.size(); ++id) {
    if (!written[id]) continue;
    const kernel::Variable& var = pr.m.variables[id];
    if (!lin.dependent(id)) continue;  // decided with the reference proposal below
    if (!var.type.is_numeric() || !lin.post(id)) {
      if (var.max_length) throw NotLinear{"the length of `" + var.name + "`"};
      continue;
    }
    const Affine& v = *lin.post(id);
    if (var.min)
      out.push_back(
          at_least("bound `" + var.name + "` >= " + var.min->to_string(), v, q(*var.min)));
    if (var.max)
      out.push_back(at_most("bound `" + var.name + "` <= " + var.max->to_string(), v, q(*var.max)));
  }
  // What the reference proposal shows about checks no parameter changes.
  // (Only a variable's own failure: an overflowing cost, whose subject is the action, may
  // depend on the parameters, and the kernel's final check covers it.)
  for (const kernel::Reason& r : pr.reference_decision.reasons) {
    if (r.code == ReasonCode::bound_violated || r.code == ReasonCode::overflow ||
        r.code == ReasonCode::undefined_value) {
      const auto id = pr.m.schema->find(r.subject);
      if (id && written[*id] && !lin.dependent(*id))
        out.push_back(Atom{r.code == ReasonCode::bound_violated ? "bound of `" + r.subject + "`"
                                                                : std::string(to_string(r.code)),
                           std::vector<Rational>(n),
                           -1});
    }
  }
  for (const kernel::Invariant& inv : pr.m.invariants) {
    if (inv.enforcement != kernel::Enforcement::blocking) continue;
    const std::string name = "invariant `" + inv.name + "`";
    if (!inv.expr) {
      if (lin.any_dependent()) throw NotLinear{"the native predicate of " + name};
      if (pr.reference_decision.has(ReasonCode::invariant_violated, inv.name))
        out.push_back(Atom{name, std::vector<Rational>(n), -1});
      continue;
    }
    lin.atoms(*inv.expr, true, false, name, out);
    if (inv.barrier) {
      const auto floor = barrier_floor(pr, inv);
      if (!floor) throw NotLinear{"h of `" + inv.name + "` cannot be evaluated"};
      out.push_back(at_least(alpha_text(inv), lin.affine(*inv.barrier, true), *floor));
    }
  }
  return out;
}

// ---- l1 and unsat cores: Z3 ----

struct Z3Problem {
  z3::context ctx;
  detail::Watchdog watchdog{ctx};  // deadlines (Z3's own `timeout` races in 4.8.12)
  std::vector<std::pair<std::string, z3::expr>> constraints;  // named
  std::vector<z3::expr> given;                                // the state: not in any core
  std::vector<z3::expr> x;                                    // parameter units
};

// The name of a check of the symbolic step in unsat cores and binding sets.
std::string constraint_name(const Problem& pr, const detail::Check& c) {
  switch (c.code) {
    case ReasonCode::below_min_cost:
      return "the minimum action cost (" + pr.m.format_amount(pr.m.budget.min_action_cost) + ")";
    case ReasonCode::budget_exceeded:
      return "the budget left (" + pr.m.format_amount(pr.s.budget.remaining()) + ")";
    case ReasonCode::step_limit:
      return "step_limit: the step limit " + std::to_string(pr.m.budget.step_limit);
    case ReasonCode::dependency_unmet:
      return "dependency_unmet: `" + c.subject + "`";
    case ReasonCode::requires_failed:
      return "`requires` of `" + pr.a.id + "`";
    case ReasonCode::bound_violated:
      return "bound of `" + c.subject + "`";
    case ReasonCode::invariant_violated:
      return "invariant `" + c.subject + "`";
    default:
      return "no arithmetic overflow";
  }
}

// Every constraint: the checks of the symbolic step (the kernel's decision in the situation,
// step.hpp), named; a parameter's bounds one constraint per side; the barriers (CBF) on the
// step's post-state. @throws detail::Unsupported
void encode(const Problem& pr, Z3Problem& z) {
  detail::Encoder enc(z.ctx, pr.m);
  const Action& a = pr.a;
  auto add = [&](std::string name, const z3::expr& e) {
    for (auto& [n, c] : z.constraints) {
      if (n == name) {  // several checks under one name (the overflows): one constraint
        c = c && e;
        return;
      }
    }
    z.constraints.emplace_back(std::move(name), e);
  };
  const detail::SymbolicStep st =
      detail::symbolic_step(enc, detail::SymSituation::of(z.ctx, pr.s), pr.reference.action);
  z.x = st.params;
  for (const detail::Check& c : st.checks) {
    if (!c.unsupported.empty()) throw detail::Unsupported{c.unsupported};
    if (c.code != ReasonCode::invalid_parameter) {
      add(constraint_name(pr, c), c.holds);
      continue;
    }
    // A parameter: its declared bounds, one named constraint each; the int64 range of its
    // units is its type, not a constraint to relax.
    const std::size_t i = static_cast<std::size_t>(
        std::find_if(a.parameters.begin(),
                     a.parameters.end(),
                     [&](const kernel::Parameter& par) { return par.name == c.subject; }) -
        a.parameters.begin());
    const kernel::Parameter& par = a.parameters[i];
    z.given.push_back(enc.param_bounds(kernel::Parameter{par.name, par.type, {}, {}, {}}, z.x[i]));
    if (par.min)
      add("parameter `" + par.name + "` >= " + par.min->to_string(),
          z.x[i] >= z.ctx.int_val(par.min->rescaled(par.type.scale())->units));
    if (par.max)
      add("parameter `" + par.name + "` <= " + par.max->to_string(),
          z.x[i] <= z.ctx.int_val(par.max->rescaled(par.type.scale())->units));
  }
  for (const kernel::Invariant& inv : pr.m.invariants) {
    if (inv.enforcement != kernel::Enforcement::blocking || !inv.barrier) continue;
    const auto floor = barrier_floor(pr, inv);
    if (!floor) throw detail::Unsupported{"h of `" + inv.name + "` cannot be evaluated"};
    const detail::Term h = enc.encode_numeric(*inv.barrier, &st.post, &a);
    // h.e / 10^scale >= num / den  <=>  h.e·den >= num·10^scale
    const auto num = floor->numerator() * boost::multiprecision::cpp_int(kernel::pow10(h.scale));
    const auto den = floor->denominator();
    add(alpha_text(inv),
        h.e * z.ctx.int_val(den.str().c_str()) >= z.ctx.int_val(num.str().c_str()) &&
            enc.take_ranges());
  }
  // The state is given: every variable any constraint could read holds its value.
  for (VarId id = 0; id < pr.m.variables.size(); ++id) {
    const kernel::Variable& var = pr.m.variables[id];
    const Value& v = pr.s.state.get(id);
    if (var.optional || !v.is_defined()) continue;
    try {
      z.given.push_back(enc.pre(id) == enc.constant(v, var.type));
    } catch (const detail::Unsupported&) {
      // A variable of a type Z3 cannot hold is read by no encoded constraint (else the
      // encoding above would have failed).
    }
  }
}

// The constraints that cannot all hold, minimised by deletion; empty if they can (or unknown).
std::vector<std::string> conflict(Z3Problem& z,
                                  unsigned timeout_ms,
                                  bool* unknown,
                                  const std::optional<z3::expr>& also = std::nullopt) {
  z3::solver solver(z.ctx);
  for (const auto& g : z.given) solver.add(g);
  if (also) solver.add(*also);
  std::vector<z3::expr> flags;
  for (std::size_t i = 0; i < z.constraints.size(); ++i) {
    // `!` cannot start an identifier: no state variable can have this name.
    flags.push_back(z.ctx.bool_const(("!flag." + std::to_string(i)).c_str()));
    solver.add(z3::implies(flags.back(), z.constraints[i].second));
  }
  auto check = [&](const std::vector<std::size_t>& on) {
    z3::expr_vector assumptions(z.ctx);
    for (std::size_t i : on) assumptions.push_back(flags[i]);
    return z.watchdog.run(timeout_ms, [&] { return solver.check(assumptions); });
  };
  std::vector<std::size_t> all(z.constraints.size());
  std::iota(all.begin(), all.end(), 0);
  const z3::check_result r = check(all);
  *unknown = r == z3::unknown;
  if (r != z3::unsat) return {};
  std::vector<std::size_t> core;
  for (const auto& c : solver.unsat_core())
    core.push_back(static_cast<std::size_t>(std::stoul(c.decl().name().str().substr(6))));
  std::sort(core.begin(), core.end());
  for (std::size_t k = 0; k < core.size();) {  // drop what the conflict does not need
    std::vector<std::size_t> rest = core;
    rest.erase(rest.begin() + static_cast<std::ptrdiff_t>(k));
    if (check(rest) == z3::unsat) {
      core = std::move(rest);
    } else {
      ++k;
    }
  }
  std::vector<std::string> names;
  for (std::size_t i : core) names.push_back(z.constraints[i].first);
  return names;
}

// Z3's exact L1 optimum over the parameters' units, or nullopt (unsat or unknown).
std::optional<std::vector<Rational>> solve_l1(const Problem& pr,
                                              Z3Problem& z,
                                              unsigned ms,
                                              std::vector<std::string>* binding) {
  z3::optimize opt(z.ctx);
  for (const auto& g : z.given) opt.add(g);
  for (const auto& [name, c] : z.constraints) opt.add(c);
  // Σ w_i·|x_i - p_i| in natural units. With X_i the units of x_i and P_i = pn/pd the units of
  // p_i, |x_i - p_i| = |X_i·pd - pn| / (10^scale·pd): integer terms with rational coefficients,
  // made integers by their common denominator (the same positive factor for every term).
  std::vector<Rational> units_p;  // P_i
  std::vector<Rational> coef;     // w_i / (10^scale·pd)
  boost::multiprecision::cpp_int common = 1;
  for (std::size_t i = 0; i < z.x.size(); ++i) {
    units_p.push_back(pr.p[i] * Rational(kernel::pow10(pr.scale[i])));
    coef.push_back(pr.w[i] /
                   (Rational(kernel::pow10(pr.scale[i])) * Rational(units_p.back().denominator())));
    common = boost::multiprecision::lcm(common, coef.back().denominator());
  }
  z3::expr objective = z.ctx.int_val(0);
  z3::expr distances = z.ctx.bool_val(true);  // d_i >= |X_i·pd - pn|
  for (std::size_t i = 0; i < z.x.size(); ++i) {
    const z3::expr diff = z.x[i] * z.ctx.int_val(units_p[i].denominator().str().c_str()) -
                          z.ctx.int_val(units_p[i].numerator().str().c_str());
    const z3::expr d = z.ctx.int_const(("!distance." + std::to_string(i)).c_str());
    distances = distances && d >= diff && d >= -diff;
    const auto c = (coef[i] * Rational(common)).numerator();
    objective = objective + z.ctx.int_val(c.str().c_str()) * d;
  }
  opt.add(distances);
  opt.minimize(objective);
  if (z.watchdog.run(ms, [&] { return opt.check(); }) != z3::sat) return std::nullopt;
  const z3::model model = opt.get_model();
  std::vector<Rational> x;
  for (std::size_t i = 0; i < z.x.size(); ++i) {
    const std::int64_t units = model.eval(z.x[i], true).get_numeral_int64();
    x.push_back(Rational(units) / Rational(kernel::pow10(pr.scale[i])));
  }
  if (binding) {  // why not closer: the core of the constraints with "objective < optimum"
    bool unknown = false;
    *binding = conflict(z, ms, &unknown, distances && objective < model.eval(objective, true));
  }
  return x;
}

bool atoms_hold(const std::vector<Atom>& atoms, const std::vector<Rational>& x) {
  for (const Atom& at : atoms) {
    Rational v = 0;
    for (std::size_t i = 0; i < x.size(); ++i)
      if (!at.a[i].is_zero()) v += at.a[i] * x[i];
    const bool ok = at.rel == Rel::eq ? v == at.b : at.rel == Rel::lt ? v < at.b : v <= at.b;
    if (!ok) return false;
  }
  return true;
}

// Finishes a result for the values `x`: the kernel's decision, the barriers, the distance.
void certify(const Problem& pr, const std::vector<Rational>& x, RepairResult& out) {
  out.repaired = to_proposal(pr, x);
  out.decision = kernel::decide(pr.m, pr.s, out.repaired);
  out.certificate.kernel_approved = out.decision.approved;
  out.certificate.feasible = out.decision.approved && barriers_hold(pr, out.decision, nullptr);
  out.certificate.distance = to_text(distance(pr, x, out.norm));
}

// ---- the steps of repair() ----

// The problem: the proposal in natural units, the weights, the reference proposal (clamped into
// the bounds and onto the grid) and the kernel's decision on it. @throws InvalidArgument
Problem make_problem(const TaskModel& model,
                     const Situation& situation,
                     const Proposal& proposal,
                     const RepairOptions& options) {
  const Action& a = model.actions.at(proposal.action);
  Problem pr{model, a, situation, {}, {}, {}, Proposal{proposal.action, {}}, {}};
  if (proposal.params.size() != a.parameters.size())
    throw InvalidArgument("repair: `" + a.id + "` takes " + std::to_string(a.parameters.size()) +
                          " parameters, got " + std::to_string(proposal.params.size()));
  for (std::size_t i = 0; i < a.parameters.size(); ++i) {
    const kernel::Parameter& par = a.parameters[i];
    const Value& v = proposal.params[i];
    if (v.kind() != Value::Kind::number)
      throw InvalidArgument("repair: parameter `" + par.name + "` is not a number");
    pr.p.push_back(q(v.as_number()));
    pr.scale.push_back(par.type.scale());
    auto w = options.weights.find(par.name);
    const Rational wi = w == options.weights.end() ? Rational(1) : q(w->second);
    if (wi <= 0) throw InvalidArgument("repair: the weight of `" + par.name + "` is not positive");
    pr.w.push_back(wi);
    Decimal d = v.as_number();
    if (par.min && d < *par.min) d = *par.min;
    if (par.max && d > *par.max) d = *par.max;
    const Rational units = q(d) * Rational(kernel::pow10(par.type.scale()));
    const auto whole = units.numerator() / units.denominator();
    pr.reference.params.push_back(Value::number(
        Decimal{whole.convert_to<std::int64_t>(), static_cast<std::uint8_t>(par.type.scale())}));
  }
  for (const auto& [name, w] : options.weights) {
    if (std::none_of(a.parameters.begin(), a.parameters.end(), [&n = name](const auto& par) {
          return par.name == n;
        }))
      throw InvalidArgument("repair: `" + a.id + "` has no parameter `" + name + "` to weigh");
  }
  pr.reference_decision = kernel::decide(model, situation, pr.reference);
  return pr;
}

// The proposal needs no repair: the kernel approves it and its barriers hold.
bool approved_as_is(const Problem& pr, const Proposal& proposal, RepairResult& out) {
  if (!out.original.approved || !barriers_hold(pr, out.original, nullptr)) return false;
  out.status = RepairStatus::approved;
  out.repaired = proposal;
  out.decision = out.original;
  out.certificate.method = "the kernel approves the proposal as it is";
  out.certificate.feasible = out.certificate.kernel_approved = out.certificate.optimal = true;
  out.certificate.distance = "0";
  out.certificate.lower_bound = "0";
  return true;
}

// Checks no parameter can change (the step limit, dependencies): impossible at once. The
// reference proposal (in bounds) has every check run; an out-of-bounds proposal stops at its
// parameters.
bool impossible_at_once(const Problem& pr, RepairResult& out) {
  for (const kernel::Reason& r : pr.reference_decision.reasons) {
    if (r.code != ReasonCode::step_limit && r.code != ReasonCode::dependency_unmet &&
        r.code != ReasonCode::unknown_action)
      continue;
    out.status = RepairStatus::impossible;
    for (const kernel::Reason& x : pr.reference_decision.reasons) {
      if (x.code == ReasonCode::step_limit || x.code == ReasonCode::dependency_unmet)
        out.conflict.push_back(std::string(to_string(x.code)) + ": " + x.message);
    }
    out.reason = "no parameter values can help: " + r.message;
    return true;
  }
  return false;
}

// Exact weighted L1 with Z3 over the symbolic step, or the unsat core of its constraints.
void repair_l1(const Problem& pr,
               const RepairOptions& options,
               const std::string& why_not_l2,
               RepairResult& out) {
  out.certificate = RepairCertificate{};
  Z3Problem z;
  try {
    encode(pr, z);
  } catch (const detail::Unsupported& u) {
    out.status = RepairStatus::unknown;
    out.reason = (why_not_l2.empty() ? "" : why_not_l2 + "; ") +
                 "outside what the repair models: " + u.reason;
    return;
  }
  bool unknown = false;
  out.conflict = conflict(z, options.timeout_ms, &unknown);
  if (!out.conflict.empty()) {
    out.status = RepairStatus::impossible;
    out.reason = "no parameter values satisfy these constraints together";
    return;
  }
  if (unknown) {
    out.status = RepairStatus::unknown;
    out.reason = "Z3 could not decide within " + std::to_string(options.timeout_ms) + " ms";
    return;
  }
  out.norm = RepairNorm::l1;
  const auto x = solve_l1(pr, z, options.timeout_ms, &out.certificate.binding);
  if (!x) {
    out.status = RepairStatus::unknown;
    out.reason =
        "Z3's optimizer gave no answer within " + std::to_string(options.timeout_ms) + " ms";
    return;
  }
  out.certificate.method =
      (why_not_l2.empty() ? "" : why_not_l2 + ": ") +
      "Z3 optimizer, weighted L1 over the parameters' integer units (exact for a linear "
      "objective)";
  out.certificate.optimal = true;
  certify(pr, *x, out);
  out.certificate.lower_bound = out.certificate.distance;
  if (out.certificate.feasible) {
    out.status = RepairStatus::repaired;
  } else {
    out.status = RepairStatus::unknown;
    out.reason = "the solver's answer is not approved by the kernel (a modelling gap)";
  }
}

// On the parameters' grids a·x moves in steps of g (the gcd of the a_i·step_i), so a strict
// a·x < b is exactly a·x <= the largest multiple of g below b: the polyhedron then holds every
// feasible grid point and no other.
void tighten_strict(const Problem& pr, std::vector<Atom>& atoms) {
  for (Atom& at : atoms) {
    if (at.rel != Rel::lt) continue;
    std::optional<Rational> g;
    for (std::size_t i = 0; i < at.a.size(); ++i) {
      if (at.a[i].is_zero()) continue;
      const Rational term = at.a[i] / Rational(kernel::pow10(pr.scale[i]));
      const Rational t = term < 0 ? -term : term;
      g = g ? Rational(boost::multiprecision::gcd(g->numerator() * t.denominator(),
                                                  t.numerator() * g->denominator())) /
                  Rational(g->denominator() * t.denominator())
            : t;
    }
    if (!g) {  // 0 < b
      if (!(Rational(0) < at.b)) at.b = -1;
    } else {
      const Rational k = at.b / *g;                        // the largest integer strictly below k
      const auto whole = k.numerator() / k.denominator();  // toward zero
      Rational below(whole);
      if (!(below < k)) below -= 1;
      at.b = below * *g;
    }
    at.rel = Rel::le;
  }
}

// The grid around a continuous point: each coordinate off its grid is rounded to its nearer
// neighbour (`base`) or, at a known extra cost, to the farther one (`offs`, cheapest first).
struct Grid {
  struct Off {
    std::size_t i;
    Rational far, extra;
  };
  std::vector<Rational> base;
  std::vector<Off> offs;
};

Grid grid_around(const Problem& pr, const detail::Projection& point) {
  const detail::Projection* proj = &point;
  const std::size_t n = pr.p.size();
  std::vector<Rational> base(n);
  using Off = Grid::Off;
  std::vector<Off> offs;
  for (std::size_t i = 0; i < n; ++i) {
    const Rational step = Rational(1) / Rational(kernel::pow10(pr.scale[i]));
    const Rational units = proj->x[i] / step;
    const auto whole = units.numerator() / units.denominator();  // toward zero
    Rational down = Rational(whole) * step;
    if (down > proj->x[i]) down -= step;
    if (down == proj->x[i]) {
      base[i] = down;
      continue;
    }
    const Rational up = down + step;
    auto cost = [&](const Rational& v) { return pr.w[i] * (v - pr.p[i]) * (v - pr.p[i]); };
    const bool down_nearer = cost(down) <= cost(up);
    base[i] = down_nearer ? down : up;
    const Rational far = down_nearer ? up : down;
    offs.push_back(Off{i, far, cost(far) - cost(base[i])});
  }
  std::sort(offs.begin(), offs.end(), [](const Off& x, const Off& y) { return x.extra < y.extra; });
  return Grid{std::move(base), std::move(offs)};
}

// Many coordinates off the grid: round each away from the proposal (into the polyhedron, by
// stationarity the active constraints' normals point toward the proposal), then bring
// coordinates back toward it one at a time while that stays feasible.
std::optional<std::vector<Rational>> round_away_then_back(const Problem& pr,
                                                          const std::vector<Atom>& atoms,
                                                          const detail::Projection& proj,
                                                          const Grid& g) {
  std::vector<Rational> x = g.base;
  for (const Grid::Off& o : g.offs) {
    const Rational& near = g.base[o.i];
    const bool near_is_away =
        (near - pr.p[o.i]) * (proj.x[o.i] - pr.p[o.i]) >= 0 &&
        (near - pr.p[o.i]) * (near - pr.p[o.i]) >= (o.far - pr.p[o.i]) * (o.far - pr.p[o.i]);
    x[o.i] = near_is_away ? near : o.far;
  }
  if (!atoms_hold(atoms, x)) return std::nullopt;
  for (bool improved = true; improved;) {
    improved = false;
    for (const Grid::Off& o : g.offs) {
      const Rational other = x[o.i] == o.far ? g.base[o.i] : o.far;
      std::vector<Rational> y = x;
      y[o.i] = other;
      if (distance(pr, y, RepairNorm::l2) < distance(pr, x, RepairNorm::l2) &&
          atoms_hold(atoms, y)) {
        x = std::move(y);
        improved = true;
      }
    }
  }
  return x;
}

// The nearest feasible grid point around the continuous L2 optimum `proj`, certified by the
// kernel; false if none of the candidates tried is. The sets of coordinates rounded "far" are
// enumerated in order of their extra cost (best first).
bool round_to_grid(const Problem& pr,
                   const std::vector<Atom>& atoms,
                   const detail::Projection& proj,
                   RepairResult& out) {
  const std::size_t n = pr.p.size();
  const Grid grid = grid_around(pr, proj);
  const std::vector<Rational>& base = grid.base;
  const std::vector<Grid::Off>& offs = grid.offs;
  using Entry = std::pair<Rational, std::vector<std::size_t>>;  // extra cost, indices into offs
  auto later = [](const Entry& x, const Entry& y) { return x.first > y.first; };
  std::priority_queue<Entry, std::vector<Entry>, decltype(later)> queue(later);
  queue.push(Entry{0, {}});
  auto accept = [&](const std::vector<Rational>& x, bool optimal) {
    if (!atoms_hold(atoms, x)) return false;
    RepairResult trial = out;
    certify(pr, x, trial);
    if (!trial.certificate.feasible) return false;
    out = std::move(trial);
    out.status = RepairStatus::repaired;
    out.certificate.optimal = optimal;
    out.certificate.method =
        "exact active-set projection (weighted L2), KKT-certified in rational arithmetic; the "
        "nearest feasible grid point around it";
    return true;
  };
  const bool exact_on_grid = offs.empty() || n == 1;
  constexpr std::size_t kMaxCandidates = 256;
  for (std::size_t tried = 0; !queue.empty() && tried < kMaxCandidates; ++tried) {
    const Entry e = queue.top();
    queue.pop();
    // Successors: with the largest index l, add l + 1, or replace l by l + 1.
    const std::size_t next = e.second.empty() ? 0 : e.second.back() + 1;
    if (next < offs.size()) {
      auto add = e.second;
      add.push_back(next);
      queue.push(Entry{e.first + offs[next].extra, std::move(add)});
      if (!e.second.empty()) {
        auto swap = e.second;
        swap.back() = next;
        queue.push(
            Entry{e.first - offs[e.second.back()].extra + offs[next].extra, std::move(swap)});
      }
    }
    std::vector<Rational> x = base;
    for (std::size_t k : e.second) x[offs[k].i] = offs[k].far;
    if (accept(x, exact_on_grid)) return true;
  }
  const auto x = round_away_then_back(pr, atoms, proj, grid);
  return x && accept(*x, false);
}

// The weighted L2 projection onto the linearised constraints, rounded to the grid; Z3's exact
// L1 when the constraints are not a polyhedron or no grid point nearby is feasible.
void repair_l2(const Problem& pr, const RepairOptions& options, RepairResult& out) {
  std::vector<Atom> atoms;
  try {
    atoms = linearise(pr);
  } catch (const NotLinear& n) {
    repair_l1(pr, options, "L2 needs a polyhedron, but " + n.why, out);
    return;
  }
  tighten_strict(pr, atoms);
  std::vector<LinearConstraint> cs;
  for (const Atom& at : atoms) cs.push_back(LinearConstraint{at.a, at.b, at.rel == Rel::eq});
  const auto proj = detail::project(pr.p, pr.w, cs);
  if (!proj) {  // empty (or degenerate): Z3 decides, and names the conflict
    repair_l1(pr, options, "the L2 projection found no point", out);
    return;
  }
  out.certificate.lower_bound = to_text(proj->objective);
  for (std::size_t j = 0; j < proj->active.size(); ++j) {
    out.certificate.multipliers.emplace_back(atoms[proj->active[j]].name,
                                             to_text(2 * proj->multipliers[j]));
    const std::string& name = atoms[proj->active[j]].name;
    if (std::find(out.certificate.binding.begin(), out.certificate.binding.end(), name) ==
        out.certificate.binding.end())
      out.certificate.binding.push_back(name);  // a constraint may be several linear pieces
  }
  if (round_to_grid(pr, atoms, *proj, out)) return;
  repair_l1(pr, options, "no grid point next to the L2 optimum is feasible", out);
}

}  // namespace

RepairResult repair(const TaskModel& model,
                    const Situation& situation,
                    const Proposal& proposal,
                    const RepairOptions& options) {
  RepairResult out;
  const Action& a = model.actions.at(proposal.action);
  out.original = kernel::decide(model, situation, proposal);
  bool all_integers = true;
  for (const kernel::Parameter& par : a.parameters)
    all_integers = all_integers && par.type.scale() == 0;
  out.norm = options.norm.value_or(all_integers ? RepairNorm::l1 : RepairNorm::l2);
  const Problem pr = make_problem(model, situation, proposal, options);
  if (approved_as_is(pr, proposal, out) || impossible_at_once(pr, out)) return out;
  try {
    if (out.norm == RepairNorm::l1) {
      repair_l1(pr, options, "", out);
    } else {
      repair_l2(pr, options, out);
    }
  } catch (const z3::exception& e) {
    out.status = RepairStatus::unknown;  // a solver failure decides nothing
    out.reason = std::string("the solver failed: ") + e.msg();
  }
  return out;
}

}  // namespace clampai::verifier
