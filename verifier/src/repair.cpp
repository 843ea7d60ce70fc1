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
#include <optional>
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

// ---- l1 and unsat cores: Z3 ----

struct Z3Problem {
  z3::context ctx;
  // Deadlines (Z3's own `timeout` races in 4.8.12): a thread, started by the first solver call
  // (L2 makes none).
  std::optional<detail::Watchdog> deadlines;
  detail::Watchdog& watchdog() {
    if (!deadlines) deadlines.emplace(ctx);
    return *deadlines;
  }
  std::vector<std::pair<std::string, z3::expr>> constraints;  // named
  std::vector<z3::expr> given;                                // the state: not in any core
  std::vector<z3::expr> x;                                    // parameter units
  // For L2: the state as a substitution (pre symbol -> its value), the int64 range of each
  // parameter's units (in `given` too), the step's written values, and the blocking
  // invariants the encoder cannot read (when `encode` is asked to keep them).
  z3::expr_vector from{ctx}, to{ctx};
  std::vector<std::pair<std::string, z3::expr>> ranges;
  std::vector<z3::expr> post;
  std::vector<std::string> opaque;
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
// step's post-state. With `keep_opaque`, a blocking invariant the encoder cannot read is listed
// in `z.opaque` instead. @throws detail::Unsupported
void encode(const Problem& pr, Z3Problem& z, bool keep_opaque = false) {
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
  for (const auto& [id, value] : st.post) z.post.push_back(value);
  for (const detail::Check& c : st.checks) {
    if (!c.unsupported.empty()) {
      if (!keep_opaque || c.code != ReasonCode::invariant_violated)
        throw detail::Unsupported{c.unsupported};
      z.opaque.push_back(c.subject);
      continue;
    }
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
    z.ranges.emplace_back(
        "the int64 range of `" + par.name + "`'s units",
        enc.param_bounds(kernel::Parameter{par.name, par.type, {}, {}, {}}, z.x[i]));
    z.given.push_back(z.ranges.back().second);
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
      const z3::expr value = enc.constant(v, var.type);
      z.given.push_back(enc.pre(id) == value);
      z.from.push_back(enc.pre(id));
      z.to.push_back(value);
    } catch (const detail::Unsupported&) {
      // A variable of a type Z3 cannot hold is read by no encoded constraint (else the
      // encoding above would have failed).
    }
  }
}

// ---- l2: the symbolic step, linearised ----
//
// The constraints of `encode` (the checks of the symbolic step, the parameters' bounds, the
// barriers), with the state substituted and simplified by Z3, read as a conjunction of linear
// atoms over the parameters: nothing of the kernel's decision is re-read here.

enum class Rel : std::uint8_t { le, lt, eq };

struct Atom {  // a·x (<=, <, ==) b, x in natural units
  std::string name;
  std::vector<Rational> a;
  Rational b;
  Rel rel = Rel::le;
};

struct NotLinear {
  std::string why;
};

// c + a·X over the parameters' units X.
struct Affine {
  Rational c;
  std::vector<Rational> a;
};

class Linear {
 public:
  Linear(const Problem& pr, const Z3Problem& z) : pr_(pr), z_(z) {}

  // Appends the atoms whose conjunction is `f` (negated: `!f`), named `name`.
  void atoms(const z3::expr& f, bool negate, const std::string& name, std::vector<Atom>& out) {
    if (f.is_true() || f.is_false()) {
      if (f.is_true() == negate) out.push_back(Atom{name, zeros(), -1});  // 0 <= -1
      return;
    }
    if (!f.is_app()) throw not_linear(f, name);
    const Z3_decl_kind k = f.decl().decl_kind();
    switch (k) {
      case Z3_OP_NOT:
        return atoms(f.arg(0), !negate, name, out);
      case Z3_OP_AND:
      case Z3_OP_OR:
        if ((k == Z3_OP_AND) == negate)
          throw NotLinear{"a disjunction of conditions on the parameters (in " + name + ")"};
        for (unsigned i = 0; i < f.num_args(); ++i) atoms(f.arg(i), negate, name, out);
        return;
      case Z3_OP_LE:
      case Z3_OP_GE:
      case Z3_OP_LT:
      case Z3_OP_GT:
      case Z3_OP_EQ: {
        if (f.num_args() != 2 || !f.arg(0).is_arith()) throw not_linear(f, name);
        Z3_decl_kind op = k;
        if (negate) {
          static constexpr std::pair<Z3_decl_kind, Z3_decl_kind> kFlip[] = {{Z3_OP_LE, Z3_OP_GT},
                                                                            {Z3_OP_GE, Z3_OP_LT},
                                                                            {Z3_OP_LT, Z3_OP_GE},
                                                                            {Z3_OP_GT, Z3_OP_LE}};
          if (op == Z3_OP_EQ) throw NotLinear{"a disequality of the parameters (in " + name + ")"};
          for (const auto& [from, to] : kFlip)
            if (from == op) {
              op = to;
              break;
            }
        }
        Affine d = affine(f.arg(0), name);  // d = lhs - rhs
        const Affine r = affine(f.arg(1), name);
        d.c -= r.c;
        for (std::size_t i = 0; i < d.a.size(); ++i) d.a[i] -= r.a[i];
        if (op == Z3_OP_GE || op == Z3_OP_GT) {  // rhs - lhs <= 0
          d.c = -d.c;
          for (auto& x : d.a) x = -x;
        }
        const Rel rel = op == Z3_OP_EQ                       ? Rel::eq
                        : (op == Z3_OP_LT || op == Z3_OP_GT) ? Rel::lt
                                                             : Rel::le;
        // a·X = Σ a_i·10^s_i·x_i; then the row divided by its largest |a_i|, so that a
        // multiplier does not depend on the scale the encoder compared at (`x <= 0.9` has
        // multiplier λ whether it reads 100·x <= 90 or x <= 0.9).
        Rational top = 0;
        for (std::size_t i = 0; i < d.a.size(); ++i) {
          d.a[i] *= Rational(kernel::pow10(pr_.scale[i]));
          const Rational m = d.a[i] < 0 ? Rational(-d.a[i]) : d.a[i];
          if (m > top) top = m;
        }
        Rational b = -d.c;
        if (!top.is_zero()) {
          for (auto& x : d.a) x /= top;
          b /= top;
        }
        out.push_back(Atom{name, std::move(d.a), std::move(b), rel});
        return;
      }
      default:
        throw not_linear(f, name);
    }
  }

  // True iff `e` reads no symbol (no parameter, no state left unsubstituted).
  static bool ground(const z3::expr& e) {
    if (!e.is_app()) return false;
    if (e.num_args() == 0) return e.decl().decl_kind() != Z3_OP_UNINTERPRETED;
    for (unsigned i = 0; i < e.num_args(); ++i)
      if (!ground(e.arg(i))) return false;
    return true;
  }

 private:
  const Problem& pr_;
  const Z3Problem& z_;

  [[nodiscard]] std::vector<Rational> zeros() const { return std::vector<Rational>(z_.x.size()); }

  static NotLinear not_linear(const z3::expr& e, const std::string& name) {
    std::string text = e.to_string();
    if (text.size() > 120) text = text.substr(0, 117) + "...";
    return NotLinear{"`" + text +
                     "` is not a conjunction of linear comparisons of the "
                     "parameters (in " +
                     name + ")"};
  }

  static Rational numeral(const z3::expr& e) {
    const std::string text = Z3_get_numeral_string(e.ctx(), e);
    const auto slash = text.find('/');
    if (slash == std::string::npos) return Rational(Rational::Integer(text));
    return Rational(Rational::Integer(text.substr(0, slash))) /
           Rational(Rational::Integer(text.substr(slash + 1)));
  }

  Affine affine(const z3::expr& e, const std::string& name) {
    Affine out{0, zeros()};
    if (e.is_numeral()) {
      out.c = numeral(e);
      return out;
    }
    if (!e.is_app()) throw not_linear(e, name);
    switch (e.decl().decl_kind()) {
      case Z3_OP_UNINTERPRETED:
        for (std::size_t i = 0; i < z_.x.size(); ++i) {
          if (z3::eq(e, z_.x[i])) {
            out.a[i] = 1;
            return out;
          }
        }
        throw NotLinear{"`" + e.to_string() + "` is not fixed by the state (in " + name + ")"};
      case Z3_OP_ADD:
      case Z3_OP_SUB:
        for (unsigned j = 0; j < e.num_args(); ++j) {
          const Affine t = affine(e.arg(j), name);
          const int sign = e.decl().decl_kind() == Z3_OP_SUB && j > 0 ? -1 : 1;
          out.c += sign * t.c;
          for (std::size_t i = 0; i < out.a.size(); ++i) out.a[i] += sign * t.a[i];
        }
        return out;
      case Z3_OP_UMINUS: {
        out = affine(e.arg(0), name);
        out.c = -out.c;
        for (auto& x : out.a) x = -x;
        return out;
      }
      case Z3_OP_TO_REAL:
        return affine(e.arg(0), name);
      case Z3_OP_MUL: {
        out.c = 1;
        bool varies = false;
        for (unsigned j = 0; j < e.num_args(); ++j) {
          const Affine t = affine(e.arg(j), name);
          const bool t_varies =
              std::any_of(t.a.begin(), t.a.end(), [](const Rational& x) { return !x.is_zero(); });
          if (varies && t_varies) throw not_linear(e, name);
          if (t_varies) {
            for (std::size_t i = 0; i < out.a.size(); ++i) out.a[i] = out.c * t.a[i];
          } else {
            for (auto& x : out.a) x *= t.c;
          }
          out.c *= t.c;
          varies = varies || t_varies;
        }
        return out;
      }
      default:
        throw not_linear(e, name);
    }
  }
};

// Drops the inequalities every point of the parameters' declared box satisfies (the int64 range
// of an intermediate result, mostly): the polyhedron stays the same, the projection gets
// smaller. The parameters' own bounds stay.
void drop_redundant(const Problem& pr, std::vector<Atom>& atoms) {
  std::vector<Rational> lo, hi;
  for (const kernel::Parameter& par : pr.a.parameters) {
    if (!par.min || !par.max) return;  // an unbounded box: nothing is implied by it
    lo.push_back(q(*par.min));
    hi.push_back(q(*par.max));
  }
  std::vector<Atom> kept;
  for (Atom& at : atoms) {
    bool redundant = at.rel != Rel::eq && at.name.rfind("parameter `", 0) != 0;
    if (redundant) {
      Rational top = 0;  // max of a·x over the box
      for (std::size_t i = 0; i < at.a.size(); ++i) {
        if (at.a[i].is_zero()) continue;
        top += at.a[i] * (at.a[i] < 0 ? lo[i] : hi[i]);
      }
      redundant = at.rel == Rel::lt ? top < at.b : top <= at.b;
    }
    if (!redundant) kept.push_back(std::move(at));
  }
  atoms = std::move(kept);
}

// The constraints as atoms over the parameters (natural units). @throws NotLinear
std::vector<Atom> linearise(const Problem& pr) {
  Z3Problem z;
  try {
    encode(pr, z, true);
  } catch (const detail::Unsupported& u) {
    throw NotLinear{u.reason};
  }
  Linear lin(pr, z);
  std::vector<Atom> out;
  auto fixed = [&](z3::expr e) {  // the state substituted (substitute is not const)
    return e.substitute(z.from, z.to).simplify();
  };
  auto add = [&](const std::string& name, const z3::expr& c) {
    lin.atoms(fixed(c), false, name, out);
  };
  for (const auto& [name, c] : z.ranges) add(name, c);
  for (const auto& [name, c] : z.constraints) add(name, c);
  drop_redundant(pr, out);
  // An invariant the encoder cannot read (a native predicate): the reference proposal's
  // decision stands for every proposal's, if the post-state does not depend on the parameters.
  for (const std::string& inv : z.opaque) {
    const std::string name = "invariant `" + inv + "`";
    for (const z3::expr& v : z.post) {
      if (!Linear::ground(fixed(v))) throw NotLinear{"the native predicate of " + name};
    }
    if (pr.reference_decision.has(ReasonCode::invariant_violated, inv))
      out.push_back(Atom{name, std::vector<Rational>(pr.p.size()), -1});
  }
  return out;
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
    return z.watchdog().run(timeout_ms, [&] { return solver.check(assumptions); });
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
  if (z.watchdog().run(ms, [&] { return opt.check(); }) != z3::sat) return std::nullopt;
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
