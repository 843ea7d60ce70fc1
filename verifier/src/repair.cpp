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
#include <array>
#include <functional>
#include <mutex>
#include <numeric>
#include <optional>
#include <queue>
#include <unordered_map>

#include "clampai/kernel/error.hpp"
#include "qp.hpp"
#include "repair_paths.hpp"
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
      kernel::evaluate(*inv.barrier, kernel::EvalEnv{&pr.s.state, {}, &pr.s.state, nullptr});
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
        *inv.barrier, kernel::EvalEnv{&pr.s.state, d.changes, &pr.s.state, nullptr});
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
std::string constraint_name(const Problem& pr, ReasonCode code, const std::string& subject) {
  switch (code) {
    case ReasonCode::below_min_cost:
      return "the minimum action cost (" + pr.m.format_amount(pr.m.budget.min_action_cost) + ")";
    case ReasonCode::budget_exceeded:
      return "the budget left (" + pr.m.format_amount(pr.s.budget.remaining()) + ")";
    case ReasonCode::step_limit:
      return "step_limit: the step limit " + std::to_string(pr.m.budget.step_limit);
    case ReasonCode::dependency_unmet:
      return "dependency_unmet: `" + subject + "`";
    case ReasonCode::requires_failed:
      return "`requires` of `" + pr.a.id + "`";
    case ReasonCode::bound_violated:
      return "bound of `" + subject + "`";
    case ReasonCode::invariant_violated:
      return "invariant `" + subject + "`";
    default:
      return "no arithmetic overflow";
  }
}

// The name of a constraint before the situation is known: a check of the step (named by
// `constraint_name` in the situation), or a fixed name.
struct Label {
  ReasonCode code = ReasonCode::invalid_parameter;
  std::string subject;
  std::string fixed;  // non-empty: the name
  [[nodiscard]] std::string name(const Problem& pr) const {
    return fixed.empty() ? constraint_name(pr, code, subject) : fixed;
  }
};
struct Labelled {
  Label label;
  z3::expr e;
};

// The constraints of a repair of `action` over its symbolic step from `pre`, unnamed and
// unmerged, in the order of the kernel's checks: a parameter's bounds one constraint per side,
// the barriers (CBF) on the step's post-state, `h(s') >= floor(inv, h)`. With `keep_opaque`, a
// blocking invariant the encoder cannot read is listed in `opaque` instead.
// @throws detail::Unsupported
struct StepConstraints {
  std::vector<std::pair<std::string, z3::expr>> ranges;  // the int64 range of each parameter
  std::vector<Labelled> items;
  std::vector<z3::expr> x, post;
  std::vector<std::string> opaque;
};
using FloorOf = std::function<z3::expr(const kernel::Invariant&, const detail::Term& h)>;
StepConstraints step_constraints(detail::Encoder& enc,
                                 const TaskModel& m,
                                 std::size_t action,
                                 const detail::SymSituation& pre,
                                 bool keep_opaque,
                                 const FloorOf& floor_of) {
  z3::context& ctx = pre.net.ctx();
  const Action& a = m.actions[action];
  StepConstraints out;
  const detail::SymbolicStep st = detail::symbolic_step(enc, pre, action);
  out.x = st.params;
  for (const auto& [id, value] : st.post) out.post.push_back(value);
  for (const detail::Check& c : st.checks) {
    if (!c.unsupported.empty()) {
      if (!keep_opaque || c.code != ReasonCode::invariant_violated)
        throw detail::Unsupported{c.unsupported};
      out.opaque.push_back(c.subject);
      continue;
    }
    if (c.code != ReasonCode::invalid_parameter) {
      out.items.push_back(Labelled{Label{c.code, c.subject, {}}, c.holds});
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
    out.ranges.emplace_back(
        "the int64 range of `" + par.name + "`'s units",
        enc.param_bounds(kernel::Parameter{par.name, par.type, {}, {}, {}}, out.x[i]));
    if (par.min)
      out.items.push_back(
          Labelled{Label{c.code, {}, "parameter `" + par.name + "` >= " + par.min->to_string()},
                   out.x[i] >= ctx.int_val(par.min->rescaled(par.type.scale())->units)});
    if (par.max)
      out.items.push_back(
          Labelled{Label{c.code, {}, "parameter `" + par.name + "` <= " + par.max->to_string()},
                   out.x[i] <= ctx.int_val(par.max->rescaled(par.type.scale())->units)});
  }
  for (const kernel::Invariant& inv : m.invariants) {
    if (inv.enforcement != kernel::Enforcement::blocking || !inv.barrier) continue;
    const detail::Term h = enc.encode_numeric(*inv.barrier, &st.post, &a);
    const z3::expr at_least = floor_of(inv, h);
    out.items.push_back(Labelled{Label{ReasonCode::invariant_violated, {}, alpha_text(inv)},
                                 at_least && enc.take_ranges()});
  }
  return out;
}

// Every constraint of the repair in the problem's situation, named and merged by name (the
// overflows share one), and the state as given. @throws detail::Unsupported
void encode(const Problem& pr, Z3Problem& z, bool keep_opaque = false) {
  detail::Encoder enc(z.ctx, pr.m);
  StepConstraints sc = step_constraints(
      enc,
      pr.m,
      pr.reference.action,
      detail::SymSituation::of(z.ctx, pr.s),
      keep_opaque,
      [&](const kernel::Invariant& inv, const detail::Term& h) {
        const auto floor = barrier_floor(pr, inv);
        if (!floor) throw detail::Unsupported{"h of `" + inv.name + "` cannot be evaluated"};
        // h.e / 10^scale >= num / den  <=>  h.e·den >= num·10^scale
        const auto num =
            floor->numerator() * boost::multiprecision::cpp_int(kernel::pow10(h.scale));
        const auto den = floor->denominator();
        return h.e * z.ctx.int_val(den.str().c_str()) >= z.ctx.int_val(num.str().c_str());
      });
  z.x = sc.x;
  z.post = std::move(sc.post);
  z.opaque = std::move(sc.opaque);
  for (auto& r : sc.ranges) {
    z.given.push_back(r.second);
    z.ranges.push_back(std::move(r));
  }
  for (const Labelled& l : sc.items) {
    std::string name = l.label.name(pr);
    auto same = std::find_if(
        z.constraints.begin(), z.constraints.end(), [&](const auto& c) { return c.first == name; });
    if (same != z.constraints.end()) {
      same->second = same->second && l.e;  // several checks under one name (the overflows)
    } else {
      z.constraints.emplace_back(std::move(name), l.e);
    }
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

// The value of a numeral.
Rational numeral(const z3::expr& e) {
  const std::string text = Z3_get_numeral_string(e.ctx(), e);
  const auto slash = text.find('/');
  if (slash == std::string::npos) return Rational(Rational::Integer(text));
  return Rational(Rational::Integer(text.substr(0, slash))) /
         Rational(Rational::Integer(text.substr(slash + 1)));
}

// The comparison that holds iff `op` does not (not for ==).
Z3_decl_kind negated(Z3_decl_kind op) {
  switch (op) {
    case Z3_OP_LE:
      return Z3_OP_GT;
    case Z3_OP_GE:
      return Z3_OP_LT;
    case Z3_OP_LT:
      return Z3_OP_GE;
    default:
      return Z3_OP_LE;  // of >
  }
}

// The atom `d op 0` (op one of <=, >=, <, >, ==; d = lhs - rhs over the parameters' units) in
// natural units, as `a·x (<=, <, ==) b` with the row divided by its largest |a_i|, so that a
// multiplier does not depend on the scale the encoder compared at (`x <= 0.9` has multiplier λ
// whether it reads 100·x <= 90 or x <= 0.9). A comparison of one parameter is tightened to its
// grid (`2·X <= 5` is `X <= 2`; `2·X == 5` is false), as Z3's simplifier does: the same atom
// whether it was read off a formula simplified on the concrete state or evaluated from one
// simplified on the symbolic state.
Atom make_atom(const Problem& pr, const std::string& name, Affine d, Z3_decl_kind op) {
  if (op == Z3_OP_GE || op == Z3_OP_GT) {  // rhs - lhs <= 0
    d.c = -d.c;
    for (auto& x : d.a) x = -x;
  }
  const Rel rel = op == Z3_OP_EQ ? Rel::eq : (op == Z3_OP_LT || op == Z3_OP_GT) ? Rel::lt : Rel::le;
  std::size_t nonzero = 0, k = 0;
  for (std::size_t i = 0; i < d.a.size(); ++i) {
    if (!d.a[i].is_zero()) {
      ++nonzero;
      k = i;
    }
  }
  if (nonzero == 1 && rel != Rel::lt) {
    const Rational bound = -d.c / d.a[k];                        // X_k (<=, >=, ==) bound
    const auto whole = bound.numerator() / bound.denominator();  // toward zero
    Rational down(whole);
    if (down > bound) down -= 1;
    if (rel == Rel::eq && down != bound)
      return Atom{name, std::vector<Rational>(d.a.size()), -1};  // 0 <= -1
    const bool upper = d.a[k] > 0 || rel == Rel::eq;
    const Rational tight = upper || down == bound ? down : down + 1;
    d.a[k] = upper ? 1 : -1;
    d.c = upper ? Rational(-tight) : tight;
  }
  // a·X = Σ a_i·10^s_i·x_i.
  Rational top = 0;
  for (std::size_t i = 0; i < d.a.size(); ++i) {
    d.a[i] *= Rational(kernel::pow10(pr.scale[i]));
    const Rational m = d.a[i] < 0 ? Rational(-d.a[i]) : d.a[i];
    if (m > top) top = m;
  }
  Rational b = -d.c;
  if (!top.is_zero()) {
    for (auto& x : d.a) x /= top;
    b /= top;
  }
  return Atom{name, std::move(d.a), std::move(b), rel};
}

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
        if (negate && k == Z3_OP_EQ)
          throw NotLinear{"a disequality of the parameters (in " + name + ")"};
        const Z3_decl_kind op = negate ? negated(k) : k;
        Affine d = affine(f.arg(0), name);  // d = lhs - rhs
        const Affine r = affine(f.arg(1), name);
        d.c -= r.c;
        for (std::size_t i = 0; i < d.a.size(); ++i) d.a[i] -= r.a[i];
        out.push_back(make_atom(pr_, name, std::move(d), op));
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

// The parameters' declared box, if every parameter has both bounds.
struct Box {
  std::vector<Rational> lo, hi;
};
std::optional<Box> box_of(const Problem& pr) {
  Box box;
  for (const kernel::Parameter& par : pr.a.parameters) {
    if (!par.min || !par.max) return std::nullopt;
    box.lo.push_back(q(*par.min));
    box.hi.push_back(q(*par.max));
  }
  return box;
}

// True iff every point of `box` satisfies the inequality `at` (the int64 range of an
// intermediate result, mostly). A parameter's own bounds are never implied.
bool implied(const Box& box, const Atom& at) {
  if (at.rel == Rel::eq || at.name.rfind("parameter `", 0) == 0) return false;
  Rational top = 0;  // max of a·x over the box
  for (std::size_t i = 0; i < at.a.size(); ++i) {
    if (at.a[i].is_zero()) continue;
    top += at.a[i] * (at.a[i] < 0 ? box.lo[i] : box.hi[i]);
  }
  return at.rel == Rel::lt ? top < at.b : top <= at.b;
}

// Drops the inequalities every point of the parameters' declared box satisfies: the polyhedron
// stays the same, the projection gets smaller. The parameters' own bounds stay.
void drop_redundant(const Problem& pr, std::vector<Atom>& atoms) {
  const auto box = box_of(pr);
  if (!box) return;  // an unbounded box: nothing is implied by it
  std::erase_if(atoms, [&](const Atom& at) { return implied(*box, at); });
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

// ---- l2 without a Z3 call per repair: each action's constraints built once per model ----
//
// The constraints of `step_constraints` on the symbolic step from a symbolic situation (the
// state, the spend, the counters and the barriers' floors left as symbols), simplified once by
// Z3 and compiled: the boolean structure over the parameters, and each comparison as an affine
// form in the parameters' units whose coefficients and constant are terms of the situation. A
// repair evaluates those terms on its situation (exact rationals, Z3's arithmetic) and reads
// the atoms `linearise` would, without a Z3 context. What does not compile (a product of
// parameters, a parameter under a division or in a condition, a symbol the evaluator cannot
// hold) leaves the action to `linearise`, and so does a situation where a term cannot be
// evaluated or a check fails whatever the parameters.

struct Uncompiled {};

// A term of the situation; a bool is 0 or 1.
enum class Op : std::uint8_t {
  num,
  symbol,
  add,
  sub,
  neg,
  mul,
  div,
  idiv,
  mod,
  to_int,
  ite,
  eq,
  le,
  lt,
  ge,
  gt,
  and_,
  or_,
  not_,
  implies,
  xor_
};
struct Node {
  Op op = Op::num;
  std::vector<std::uint32_t> args{};  // earlier nodes
  Rational value{};                   // num
  std::uint32_t symbol = 0;           // symbol: the index into ActionTemplate::symbols
};

// What a symbol of the situation reads.
struct Symbol {
  enum class Kind : std::uint8_t { variable, net, steps, done, floor } kind = Kind::variable;
  std::size_t index = 0;  // the variable, the action (done) or the invariant (floor)
  int scale = 0;          // floor: the scale of h's term
  std::map<std::string, std::int64_t> codes{};  // an enumeration variable: its values' codes
};

// The boolean structure of a constraint over the parameters.
struct Formula {
  enum class Kind : std::uint8_t { constant, atom, and_, or_, not_, ite } kind = Kind::constant;
  std::vector<std::uint32_t> args{};  // formulas: and_, or_, not_, ite (then, else)
  std::uint32_t term = 0;             // constant: its node; ite: the condition's; atom: c
  Z3_decl_kind op = Z3_OP_LE;         // atom: c + Σ coef_i·X_i op 0
  std::vector<std::int64_t> coef{};   // atom: each parameter's coefficient node (-1: none)
  /// atom (itself, negated): reads no symbol and is implied by the parameters' box, so that
  /// `drop_redundant` would drop it in every situation.
  std::array<bool, 2> implied{};
};

struct ActionTemplate {
  bool compiled = false;
  std::vector<Node> nodes{};  // each after its arguments
  std::vector<Symbol> symbols{};
  std::vector<Formula> formulas{};
  std::vector<std::pair<std::string, std::uint32_t>> ranges{};  // the parameters' int64 ranges
  std::vector<std::pair<Label, std::uint32_t>> items{};         // every other constraint
};

class Compiler {
 public:
  Compiler(ActionTemplate& t,
           std::vector<z3::expr> x,
           std::unordered_map<unsigned, std::uint32_t> symbols)
      : t_(t), x_(std::move(x)), symbols_(std::move(symbols)) {}

  std::uint32_t formula(const z3::expr& f) {
    Formula out;
    if (!has_param(f)) {
      out.term = term(f);
      return add(std::move(out));
    }
    if (!f.is_app()) throw Uncompiled{};
    const Z3_decl_kind k = f.decl().decl_kind();
    switch (k) {
      case Z3_OP_NOT:
        out.kind = Formula::Kind::not_;
        out.args.push_back(formula(f.arg(0)));
        return add(std::move(out));
      case Z3_OP_AND:
      case Z3_OP_OR:
        out.kind = k == Z3_OP_AND ? Formula::Kind::and_ : Formula::Kind::or_;
        for (unsigned i = 0; i < f.num_args(); ++i) out.args.push_back(formula(f.arg(i)));
        return add(std::move(out));
      case Z3_OP_ITE:
        if (has_param(f.arg(0))) throw Uncompiled{};
        out.kind = Formula::Kind::ite;
        out.term = term(f.arg(0));
        out.args = {formula(f.arg(1)), formula(f.arg(2))};
        return add(std::move(out));
      case Z3_OP_LE:
      case Z3_OP_GE:
      case Z3_OP_LT:
      case Z3_OP_GT:
      case Z3_OP_EQ: {
        if (f.num_args() != 2 || !f.arg(0).is_arith()) throw Uncompiled{};
        const Sym l = affine(f.arg(0));
        const Sym r = affine(f.arg(1));
        out.kind = Formula::Kind::atom;
        out.op = k;
        out.term = term(l.c - r.c);
        for (std::size_t i = 0; i < x_.size(); ++i) {
          if (!l.a[i] && !r.a[i]) {
            out.coef.push_back(-1);
          } else {
            out.coef.push_back(term(!r.a[i] ? *l.a[i] : !l.a[i] ? -*r.a[i] : *l.a[i] - *r.a[i]));
          }
        }
        return add(std::move(out));
      }
      default:
        throw Uncompiled{};
    }
  }

 private:
  ActionTemplate& t_;
  std::vector<z3::expr> x_;
  std::unordered_map<unsigned, std::uint32_t> symbols_;  // AST id -> symbol
  std::unordered_map<unsigned, bool> reads_param_;       // AST id -> reads a parameter
  std::unordered_map<unsigned, std::uint32_t> node_of_;  // AST id -> node
  std::vector<z3::expr> keep_;  // every term in the maps, alive so that no id is reused

  // c + Σ a_i·X_i, the terms free of parameters.
  struct Sym {
    z3::expr c;
    std::vector<std::optional<z3::expr>> a;
  };

  std::uint32_t add(Formula f) {
    t_.formulas.push_back(std::move(f));
    return static_cast<std::uint32_t>(t_.formulas.size() - 1);
  }

  std::optional<std::size_t> param_of(const z3::expr& e) const {
    for (std::size_t i = 0; i < x_.size(); ++i)
      if (z3::eq(e, x_[i])) return i;
    return std::nullopt;
  }

  bool has_param(const z3::expr& e) {
    const auto it = reads_param_.find(e.id());
    if (it != reads_param_.end()) return it->second;
    bool reads = false;
    if (e.is_app()) {
      if (e.num_args() == 0) {
        reads = param_of(e).has_value();
      } else {
        for (unsigned i = 0; i < e.num_args() && !reads; ++i) reads = has_param(e.arg(i));
      }
    } else {
      reads = true;  // a quantifier or a bound variable: not a term of the situation
    }
    keep_.push_back(e);
    reads_param_.emplace(e.id(), reads);
    return reads;
  }

  Sym affine(const z3::expr& e) {
    z3::context& ctx = e.ctx();
    Sym out{ctx.int_val(0), std::vector<std::optional<z3::expr>>(x_.size())};
    if (!has_param(e)) {
      out.c = e;
      return out;
    }
    if (const auto i = param_of(e)) {
      out.a[*i] = ctx.int_val(1);
      return out;
    }
    if (!e.is_app()) throw Uncompiled{};
    auto scaled = [&](const z3::expr& k, Sym s) {
      s.c = k * s.c;
      for (auto& a : s.a)
        if (a) a = k * *a;
      return s;
    };
    switch (e.decl().decl_kind()) {
      case Z3_OP_ADD:
      case Z3_OP_SUB:
        for (unsigned j = 0; j < e.num_args(); ++j) {
          Sym t = affine(e.arg(j));
          if (e.decl().decl_kind() == Z3_OP_SUB && j > 0) t = scaled(ctx.int_val(-1), std::move(t));
          out.c = out.c + t.c;
          for (std::size_t i = 0; i < x_.size(); ++i)
            if (t.a[i]) out.a[i] = out.a[i] ? *out.a[i] + *t.a[i] : *t.a[i];
        }
        return out;
      case Z3_OP_UMINUS:
        return scaled(ctx.int_val(-1), affine(e.arg(0)));
      case Z3_OP_TO_REAL:
        return affine(e.arg(0));
      case Z3_OP_MUL: {
        std::optional<unsigned> varying;
        z3::expr k = ctx.int_val(1);
        for (unsigned j = 0; j < e.num_args(); ++j) {
          if (has_param(e.arg(j))) {
            if (varying) throw Uncompiled{};  // a product of parameters
            varying = j;
          } else {
            k = k * e.arg(j);
          }
        }
        return scaled(k, affine(e.arg(*varying)));
      }
      case Z3_OP_ITE: {
        if (has_param(e.arg(0))) throw Uncompiled{};
        const Sym t = affine(e.arg(1));
        const Sym f = affine(e.arg(2));
        out.c = z3::ite(e.arg(0), t.c, f.c);
        for (std::size_t i = 0; i < x_.size(); ++i) {
          if (t.a[i] || f.a[i])
            out.a[i] = z3::ite(
                e.arg(0), t.a[i] ? *t.a[i] : ctx.int_val(0), f.a[i] ? *f.a[i] : ctx.int_val(0));
        }
        return out;
      }
      default:
        throw Uncompiled{};
    }
  }

  // A term free of parameters.
  std::uint32_t term(const z3::expr& e) {
    if (const auto it = node_of_.find(e.id()); it != node_of_.end()) return it->second;
    Node n;
    if (e.is_numeral()) {
      n.value = numeral(e);
    } else if (e.is_true() || e.is_false()) {
      n.value = e.is_true() ? 1 : 0;
    } else if (e.is_app() && e.num_args() == 0) {
      const auto s = symbols_.find(e.id());
      if (s == symbols_.end()) throw Uncompiled{};
      n.op = Op::symbol;
      n.symbol = s->second;
    } else if (e.is_app()) {
      static const std::pair<Z3_decl_kind, Op> kOps[] = {{Z3_OP_ADD, Op::add},
                                                         {Z3_OP_SUB, Op::sub},
                                                         {Z3_OP_UMINUS, Op::neg},
                                                         {Z3_OP_MUL, Op::mul},
                                                         {Z3_OP_DIV, Op::div},
                                                         {Z3_OP_IDIV, Op::idiv},
                                                         {Z3_OP_MOD, Op::mod},
                                                         {Z3_OP_TO_INT, Op::to_int},
                                                         {Z3_OP_ITE, Op::ite},
                                                         {Z3_OP_EQ, Op::eq},
                                                         {Z3_OP_LE, Op::le},
                                                         {Z3_OP_LT, Op::lt},
                                                         {Z3_OP_GE, Op::ge},
                                                         {Z3_OP_GT, Op::gt},
                                                         {Z3_OP_AND, Op::and_},
                                                         {Z3_OP_OR, Op::or_},
                                                         {Z3_OP_NOT, Op::not_},
                                                         {Z3_OP_IMPLIES, Op::implies},
                                                         {Z3_OP_XOR, Op::xor_}};
      const Z3_decl_kind k = e.decl().decl_kind();
      if (k == Z3_OP_TO_REAL) return term(e.arg(0));
      const auto op = std::find_if(
          std::begin(kOps), std::end(kOps), [&](const auto& p) { return p.first == k; });
      if (op == std::end(kOps)) throw Uncompiled{};
      if (k == Z3_OP_EQ && !(e.arg(0).is_arith() || e.arg(0).is_bool())) throw Uncompiled{};
      n.op = op->second;
      for (unsigned i = 0; i < e.num_args(); ++i) n.args.push_back(term(e.arg(i)));
    } else {
      throw Uncompiled{};
    }
    t_.nodes.push_back(std::move(n));
    const auto id = static_cast<std::uint32_t>(t_.nodes.size() - 1);
    keep_.push_back(e);
    node_of_.emplace(e.id(), id);
    return id;
  }
};

void mark_implied(ActionTemplate& t,
                  const TaskModel& m,
                  std::size_t action,
                  const std::vector<bool>& keep);

// The template of `model.actions[action]`; `compiled` false if it does not compile.
ActionTemplate compile_template(const TaskModel& m, std::size_t action) {
  ActionTemplate t;
  try {
    z3::context ctx;
    detail::Encoder enc(ctx, m);
    const detail::SymSituation pre = detail::SymSituation::fresh(ctx, m, "");
    std::unordered_map<unsigned, std::uint32_t> symbols;
    auto symbol = [&](const z3::expr& e, Symbol s) {
      t.symbols.push_back(std::move(s));
      symbols.emplace(e.id(), static_cast<std::uint32_t>(t.symbols.size() - 1));
    };
    std::vector<z3::expr> keep;  // the floors' symbols
    StepConstraints sc = step_constraints(
        enc, m, action, pre, true, [&](const kernel::Invariant& inv, const detail::Term& h) {
          const auto k = static_cast<std::size_t>(&inv - m.invariants.data());
          const z3::expr floor = ctx.real_const(("!floor." + std::to_string(k)).c_str());
          keep.push_back(floor);
          symbol(floor, Symbol{Symbol::Kind::floor, k, h.scale, {}});
          return z3::to_real(h.e) >= floor;
        });
    if (!sc.opaque.empty()) return t;
    symbol(pre.net, Symbol{Symbol::Kind::net, 0, 0, {}});
    symbol(pre.steps, Symbol{Symbol::Kind::steps, 0, 0, {}});
    for (std::size_t a = 0; a < pre.done.size(); ++a)
      symbol(pre.done[a], Symbol{Symbol::Kind::done, a, 0, {}});
    for (VarId id = 0; id < m.variables.size(); ++id) {
      const kernel::Variable& var = m.variables[id];
      const kernel::Type::Kind kind = var.type.kind();
      if (var.optional || kind == kernel::Type::Kind::string || kind == kernel::Type::Kind::list)
        continue;  // not a symbol a term can read here
      const z3::expr v = enc.pre(id);
      if (std::any_of(sc.x.begin(), sc.x.end(), [&](const z3::expr& x) { return z3::eq(x, v); }))
        return t;  // a variable named like a parameter's symbol
      Symbol s{Symbol::Kind::variable, id, var.type.scale(), {}};
      if (kind == kernel::Type::Kind::enumeration)
        for (const std::string& value : var.type.enum_values())
          s.codes.emplace(value, enc.codes()->of(value));
      symbol(v, std::move(s));
    }
    Compiler c(t, sc.x, std::move(symbols));
    for (const auto& [name, e] : sc.ranges) t.ranges.emplace_back(name, c.formula(e.simplify()));
    std::vector<bool> bounds;  // formulas of a parameter's bounds
    for (const Labelled& l : sc.items) {
      t.items.emplace_back(l.label, c.formula(l.e.simplify()));
      bounds.resize(t.formulas.size(), l.label.fixed.rfind("parameter `", 0) == 0);
    }
    bounds.resize(t.formulas.size(), false);
    mark_implied(t, m, action, bounds);
    t.compiled = true;
  } catch (const Uncompiled&) {
    t = ActionTemplate{};
  } catch (const detail::Unsupported&) {
    t = ActionTemplate{};
  } catch (const z3::exception&) {
    t = ActionTemplate{};
  }
  return t;
}

// The templates of the models repaired so far, by the model's digest (its canonical form) and
// the action: built once, shared read-only by every repair and thread.
std::shared_ptr<const ActionTemplate> template_of(const TaskModel& m, std::size_t action) {
  static std::mutex mutex;
  static std::map<std::pair<std::string, std::size_t>, std::shared_ptr<const ActionTemplate>> cache;
  constexpr std::size_t kMaxTemplates = 1024;
  const auto key = std::make_pair(m.digest, action);
  {
    const std::lock_guard lock(mutex);
    if (const auto it = cache.find(key); it != cache.end()) return it->second;
  }
  auto built = std::make_shared<const ActionTemplate>(compile_template(m, action));
  const std::lock_guard lock(mutex);
  if (cache.size() >= kMaxTemplates) cache.clear();
  return cache.emplace(key, std::move(built)).first->second;
}

Rational floor_of(const Rational& r) {
  const auto whole = r.numerator() / r.denominator();  // toward zero
  Rational down(whole);
  if (down > r) down -= 1;
  return down;
}

// The template's terms on the problem's situation; nullopt where a term has no value (a
// division by zero) or a symbol cannot be read.
class Evaluation {
 public:
  Evaluation(const ActionTemplate& t, const Problem& pr) : t_(t), pr_(pr) {}

  // The atoms of the problem's constraints (as `linearise`), or nullopt: leave it to
  // `linearise`.
  std::optional<std::vector<Atom>> atoms() {
    values();
    std::vector<std::pair<std::string, std::vector<Atom>>> named;
    for (const auto& [name, f] : t_.ranges) {
      named.emplace_back(name, std::vector<Atom>{});
      if (!walk(f, false, named.back().first, named.back().second)) return std::nullopt;
    }
    for (const auto& [label, f] : t_.items) {
      std::string name = label.name(pr_);
      auto same = std::find_if(named.begin() + static_cast<std::ptrdiff_t>(t_.ranges.size()),
                               named.end(),
                               [&](const auto& n) { return n.first == name; });
      if (same == named.end()) {
        named.emplace_back(std::move(name), std::vector<Atom>{});
        same = named.end() - 1;
      }
      if (!walk(f, false, same->first, same->second)) return std::nullopt;
    }
    std::vector<Atom> out;
    for (auto& [name, atoms] : named)
      for (Atom& a : atoms) out.push_back(std::move(a));
    return out;
  }

 private:
  const ActionTemplate& t_;
  const Problem& pr_;
  std::vector<std::optional<Rational>> v_;

  std::optional<Rational> symbol(const Symbol& s) const {
    switch (s.kind) {
      case Symbol::Kind::net:
        return Rational(pr_.s.budget.net());
      case Symbol::Kind::steps:
        return Rational(pr_.s.steps);
      case Symbol::Kind::done:
        if (s.index >= pr_.s.completions.size()) return std::nullopt;
        return Rational(pr_.s.completions[s.index]);
      case Symbol::Kind::floor: {
        const auto f = barrier_floor(pr_, pr_.m.invariants[s.index]);
        if (!f) return std::nullopt;
        return *f * Rational(kernel::pow10(s.scale));
      }
      case Symbol::Kind::variable:
        break;
    }
    const Value& v = pr_.s.state.get(s.index);
    if (!v.is_defined()) return std::nullopt;
    switch (v.kind()) {
      case Value::Kind::boolean:
        return Rational(v.as_bool() ? 1 : 0);
      case Value::Kind::number: {
        const auto at = v.as_number().rescaled(s.scale);
        if (!at) return std::nullopt;
        return Rational(at->units);
      }
      case Value::Kind::string: {
        const auto code = s.codes.find(v.as_string());
        if (code == s.codes.end()) return std::nullopt;
        return Rational(code->second);
      }
      default:
        return std::nullopt;
    }
  }

 public:
  // The value of every node (nullopt: none).
  const std::vector<std::optional<Rational>>& values() {
    v_.assign(t_.nodes.size(), std::nullopt);
    for (std::size_t i = 0; i < t_.nodes.size(); ++i) {
      const Node& n = t_.nodes[i];
      if (n.op == Op::num) {
        v_[i] = n.value;
        continue;
      }
      if (n.op == Op::symbol) {
        v_[i] = symbol(t_.symbols[n.symbol]);
        continue;
      }
      if (n.op == Op::ite) {  // only the branch taken needs a value
        const auto& c = v_[n.args[0]];
        if (c) v_[i] = v_[n.args[c->is_zero() ? 2 : 1]];
        continue;
      }
      std::vector<Rational> a;
      bool ok = true;
      for (std::uint32_t j : n.args) {
        if (!v_[j]) {
          ok = false;
          break;
        }
        a.push_back(*v_[j]);
      }
      if (!ok || a.empty()) continue;
      v_[i] = apply(n.op, a);
    }
    return v_;
  }

 private:
  static Rational truth(bool b) { return b ? 1 : 0; }

  static std::optional<Rational> apply(Op op, const std::vector<Rational>& a) {
    Rational r = a[0];
    switch (op) {
      case Op::add:
        for (std::size_t j = 1; j < a.size(); ++j) r += a[j];
        return r;
      case Op::sub:
        for (std::size_t j = 1; j < a.size(); ++j) r -= a[j];
        return r;
      case Op::neg:
        return -r;
      case Op::mul:
        for (std::size_t j = 1; j < a.size(); ++j) r *= a[j];
        return r;
      case Op::div:
        if (a.size() != 2 || a[1].is_zero()) return std::nullopt;
        return a[0] / a[1];
      case Op::idiv:
      case Op::mod: {  // SMT-LIB: a = b·q + r with 0 <= r < |b|
        if (a.size() != 2 || a[1].is_zero()) return std::nullopt;
        const Rational q = a[1] > 0 ? floor_of(a[0] / a[1]) : -floor_of(a[0] / -a[1]);
        return op == Op::idiv ? q : a[0] - a[1] * q;
      }
      case Op::to_int:
        return floor_of(r);
      case Op::eq:
        return truth(a.size() == 2 && a[0] == a[1]);
      case Op::le:
        return truth(a.size() == 2 && a[0] <= a[1]);
      case Op::lt:
        return truth(a.size() == 2 && a[0] < a[1]);
      case Op::ge:
        return truth(a.size() == 2 && a[0] >= a[1]);
      case Op::gt:
        return truth(a.size() == 2 && a[0] > a[1]);
      case Op::and_:
        return truth(
            std::all_of(a.begin(), a.end(), [](const Rational& x) { return !x.is_zero(); }));
      case Op::or_:
        return truth(
            std::any_of(a.begin(), a.end(), [](const Rational& x) { return !x.is_zero(); }));
      case Op::not_:
        return truth(r.is_zero());
      case Op::implies:
        return truth(a.size() == 2 && (a[0].is_zero() || !a[1].is_zero()));
      case Op::xor_:
        return truth(a.size() == 2 && a[0].is_zero() != a[1].is_zero());
      default:
        return std::nullopt;
    }
  }

  // Appends the atoms of formula `f` (negated: `!f`) as `Linear::atoms` reads them from the
  // formula simplified on the concrete situation; false: leave it to `linearise` (a check that
  // fails whatever the parameters, a disjunction, a disequality, a term without a value).
  bool walk(std::uint32_t f, bool negate, const std::string& name, std::vector<Atom>& out) {
    const Formula& fm = t_.formulas[f];
    switch (fm.kind) {
      case Formula::Kind::constant: {
        const auto& v = v_[fm.term];
        return v && v->is_zero() == negate;  // holds: no atom
      }
      case Formula::Kind::not_:
        return walk(fm.args[0], !negate, name, out);
      case Formula::Kind::ite: {
        const auto& c = v_[fm.term];
        return c && walk(fm.args[c->is_zero() ? 1 : 0], negate, name, out);
      }
      case Formula::Kind::and_:
      case Formula::Kind::or_: {
        if ((fm.kind == Formula::Kind::and_) != negate) {
          for (std::uint32_t g : fm.args)
            if (!walk(g, negate, name, out)) return false;
          return true;
        }
        // A disjunction: linear if every disjunct but one is false here, and none holds.
        std::optional<std::uint32_t> open;
        for (std::uint32_t g : fm.args) {
          const Formula& d = t_.formulas[g];
          if (d.kind != Formula::Kind::constant) {
            if (open) return false;
            open = g;
            continue;
          }
          const auto& v = v_[d.term];
          if (!v) return false;
          if (v->is_zero() == negate) return true;  // this disjunct holds: so does the whole
        }
        return open && walk(*open, negate, name, out);
      }
      case Formula::Kind::atom: {
        if (fm.implied[negate ? 1 : 0]) return true;
        if (negate && fm.op == Z3_OP_EQ) return false;
        const Z3_decl_kind op = negate ? negated(fm.op) : fm.op;
        if (!v_[fm.term]) return false;
        Affine d{*v_[fm.term], std::vector<Rational>(fm.coef.size())};
        bool varies = false;
        for (std::size_t i = 0; i < fm.coef.size(); ++i) {
          if (fm.coef[i] < 0) continue;
          const auto& a = v_[static_cast<std::size_t>(fm.coef[i])];
          if (!a) return false;
          d.a[i] = *a;
          varies = varies || !a->is_zero();
        }
        if (!varies) {  // c op 0, whatever the parameters
          const Rational& c = d.c;
          return op == Z3_OP_LE   ? c <= 0
                 : op == Z3_OP_LT ? c < 0
                 : op == Z3_OP_GE ? c >= 0
                 : op == Z3_OP_GT ? c > 0
                                  : c.is_zero();
        }
        out.push_back(make_atom(pr_, name, std::move(d), op));
        return true;
      }
    }
    return false;
  }
};

// Marks the atoms that read no symbol and are implied by the parameters' box (the int64 ranges
// of intermediate results, mostly), so that no repair evaluates them. `keep[f]`: formula `f` is
// part of a parameter's bound (never dropped).
void mark_implied(ActionTemplate& t,
                  const TaskModel& m,
                  std::size_t action,
                  const std::vector<bool>& keep) {
  const Situation s0 = Situation::initial(m);
  Problem pr{m, m.actions[action], s0, {}, {}, {}, Proposal{action, {}}, {}};
  for (const kernel::Parameter& par : pr.a.parameters) pr.scale.push_back(par.type.scale());
  const auto box = box_of(pr);
  if (!box) return;
  std::vector<bool> ground(t.nodes.size());
  for (std::size_t i = 0; i < t.nodes.size(); ++i) {
    const Node& n = t.nodes[i];
    ground[i] =
        n.op != Op::symbol &&
        std::all_of(n.args.begin(), n.args.end(), [&](std::uint32_t a) { return ground[a]; });
  }
  Evaluation evaluation(t, pr);
  const auto& v = evaluation.values();
  for (std::size_t f = 0; f < t.formulas.size(); ++f) {
    Formula& fm = t.formulas[f];
    if (fm.kind != Formula::Kind::atom || keep[f] || !ground[fm.term] || !v[fm.term]) continue;
    Affine d{*v[fm.term], std::vector<Rational>(fm.coef.size())};
    bool varies = false, known = true;
    for (std::size_t i = 0; i < fm.coef.size() && known; ++i) {
      if (fm.coef[i] < 0) continue;
      const auto c = static_cast<std::size_t>(fm.coef[i]);
      known = ground[c] && v[c];
      if (known) {
        d.a[i] = *v[c];
        varies = varies || !d.a[i].is_zero();
      }
    }
    if (!known || !varies) continue;
    fm.implied[0] = implied(*box, make_atom(pr, "", d, fm.op));
    if (fm.op != Z3_OP_EQ) fm.implied[1] = implied(*box, make_atom(pr, "", d, negated(fm.op)));
  }
}

// The atoms of `linearise` from the action's template, or nullopt (then `linearise`).
std::optional<std::vector<Atom>> linearise_cached(const Problem& pr) {
  const auto t = template_of(pr.m, pr.reference.action);
  if (!t->compiled) return std::nullopt;
  auto atoms = Evaluation(*t, pr).atoms();
  if (atoms) drop_redundant(pr, *atoms);
  return atoms;
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

// Drops an atom equal to an earlier one of the same constraint (Z3's simplifier drops a
// repeated conjunct; a template's terms can become equal only on the concrete situation).
void drop_repeated(std::vector<Atom>& atoms) {
  std::vector<Atom> kept;
  for (Atom& at : atoms) {
    if (std::none_of(kept.begin(), kept.end(), [&](const Atom& k) {
          return k.name == at.name && k.rel == at.rel && k.b == at.b && k.a == at.a;
        }))
      kept.push_back(std::move(at));
  }
  atoms = std::move(kept);
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
void repair_l2(const Problem& pr,
               const RepairOptions& options,
               detail::L2Source source,
               bool* from_template,
               RepairResult& out) {
  std::optional<std::vector<Atom>> cached;
  if (source == detail::L2Source::cached) cached = linearise_cached(pr);
  if (from_template) *from_template = cached.has_value();
  std::vector<Atom> atoms;
  if (cached) {
    atoms = std::move(*cached);
  } else {
    try {
      atoms = linearise(pr);
    } catch (const NotLinear& n) {
      repair_l1(pr, options, "L2 needs a polyhedron, but " + n.why, out);
      return;
    }
  }
  tighten_strict(pr, atoms);
  drop_repeated(atoms);
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
  return detail::repair_with(model, situation, proposal, options, detail::L2Source::cached);
}

RepairResult detail::repair_with(const TaskModel& model,
                                 const Situation& situation,
                                 const Proposal& proposal,
                                 const RepairOptions& options,
                                 L2Source source,
                                 bool* from_template) {
  if (from_template) *from_template = false;
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
      repair_l2(pr, options, source, from_template, out);
    }
  } catch (const z3::exception& e) {
    out.status = RepairStatus::unknown;  // a solver failure decides nothing
    out.reason = std::string("the solver failed: ") + e.msg();
  }
  return out;
}

}  // namespace clampai::verifier
