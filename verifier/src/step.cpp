// The symbolic step: the checks of kernel/src/decision/decide.cpp (decide_at), in the same
// order, each a labelled term; the numbers 1-10 label the same checks in both files (decide_at's
// comment lists them, with their theorems and where the two differ). The budget arithmetic of
// the verifier lives here and only here.
#include "step.hpp"

#include <algorithm>

namespace clampai::verifier::detail {

using kernel::Action;
using kernel::ReasonCode;
using kernel::TaskModel;
using kernel::VarId;

SymSituation SymSituation::fresh(z3::context& ctx, const TaskModel& m, const std::string& prefix) {
  SymSituation s{
      ctx.int_const((prefix + "$net").c_str()), ctx.int_const((prefix + "$steps").c_str()), {}};
  for (const Action& a : m.actions)
    s.done.push_back(ctx.int_const((prefix + "$done." + a.id).c_str()));
  return s;
}

SymSituation SymSituation::of(z3::context& ctx, const kernel::Situation& s) {
  SymSituation out{
      ctx.int_val(s.budget.net()), ctx.int_val(static_cast<std::int64_t>(s.steps)), {}};
  for (const std::uint64_t c : s.completions)
    out.done.push_back(ctx.int_val(static_cast<std::int64_t>(c)));
  return out;
}

z3::expr SymSituation::well_formed(const TaskModel& m) const {
  z3::context& ctx = net.ctx();
  z3::expr ok = net >= 0 && net <= ctx.int_val(m.budget.total) && steps >= 0;
  for (const auto& d : done) ok = ok && d >= 0;
  return ok;
}

namespace {
const z3::expr& exact(const Check& c) {
  if (!c.unsupported.empty()) throw Unsupported{c.unsupported};
  return c.holds;
}
}  // namespace

z3::expr SymbolicStep::approved() const {
  z3::expr all = cost.ctx().bool_val(true);
  for (const Check& c : checks) all = all && exact(c);
  return all;
}

z3::expr SymbolicStep::approved_except(std::initializer_list<ReasonCode> skip) const {
  z3::expr all = cost.ctx().bool_val(true);
  for (const Check& c : checks) {
    if (std::find(skip.begin(), skip.end(), c.code) == skip.end()) all = all && exact(c);
  }
  return all;
}

z3::expr SymbolicStep::checks_of(ReasonCode code) const {
  z3::expr all = cost.ctx().bool_val(true);
  for (const Check& c : checks) {
    if (c.code == code) all = all && exact(c);
  }
  return all;
}

const Check* SymbolicStep::invariant(const std::string& name) const {
  for (const Check& c : checks) {
    if (c.code == ReasonCode::invariant_violated && c.subject == name) return &c;
  }
  for (const Check& c : warnings) {
    if (c.subject == name) return &c;
  }
  return nullptr;
}

z3::expr SymbolicStep::value_after(Encoder& enc, VarId id) const {
  for (auto it = post.rbegin(); it != post.rend(); ++it) {
    if (it->first == id) return it->second;
  }
  return enc.pre(id);
}

SymbolicStep symbolic_step(Encoder& enc, const SymSituation& pre, std::size_t index) {
  const TaskModel& m = enc.model();
  const Action& a = m.actions.at(index);
  z3::context& ctx = enc.ctx();
  const z3::expr yes = ctx.bool_val(true);
  SymbolicStep st{index, {}, {}, {}, ctx.int_val(a.cost), {}, pre};
  z3::expr gate = yes;  // the checks so far that stop the kernel hold
  auto check = [&](ReasonCode code, std::string subject, const z3::expr& holds) {
    st.checks.push_back(Check{code, std::move(subject), holds, gate});
  };

  // 1. Parameters: the first out of its bounds stops the kernel (check_param).
  for (std::size_t i = 0; i < a.parameters.size(); ++i) {
    st.params.push_back(enc.param(a, i));
    const z3::expr ok = enc.param_bounds(a.parameters[i], st.params.back());
    check(ReasonCode::invalid_parameter, a.parameters[i].name, ok);
    gate = gate && ok;
  }
  // 2. The cost: a cost expression that overflows (or is finer than the budget's scale) stops.
  if (a.cost_expr) {
    z3::expr ok = yes;
    st.cost = enc.cost_units(a, ok);
    check(ReasonCode::overflow, a.id, ok);
    gate = gate && ok;
  }
  // 3. Check 0: minimum cost; 4. check 1: budget (BudgetController::can_afford); 5. check 2:
  // step limit; 6. dependencies. Emergency actions are exempt from all but the budget (T8).
  if (!a.emergency)
    check(ReasonCode::below_min_cost, a.id, st.cost >= ctx.int_val(m.budget.min_action_cost));
  check(ReasonCode::budget_exceeded,
        a.id,
        st.cost >= 0 && st.cost <= ctx.int_val(m.budget.total) - pre.net);
  if (!a.emergency) {
    check(ReasonCode::step_limit, a.id, pre.steps < ctx.int_val(m.budget.step_limit));
    for (const std::size_t dep : a.dependencies)
      check(ReasonCode::dependency_unmet, m.actions[dep].id, pre.done.at(dep) > 0);
  }
  // 7. The guard on the pre-state; an evaluation error fails it.
  if (a.guard) {
    const z3::expr g = enc.encode_bool(*a.guard, nullptr, &a);
    check(ReasonCode::requires_failed, a.id, g && enc.take_ranges());
  }
  // 8. Effects, each on the pre-state; one that cannot be computed skips bounds and invariants.
  z3::expr simulated = yes;
  for (const kernel::Effect& e : a.effects) {
    z3::expr computed = yes;
    const z3::expr value = enc.effect(a, e, computed);
    check(ReasonCode::overflow, m.variables[e.variable].name, computed);
    simulated = simulated && computed;
    st.post.emplace_back(e.variable, value);
  }
  gate = gate && simulated;
  // 9. The declared bounds of each written variable.
  for (const auto& [id, value] : st.post)
    check(ReasonCode::bound_violated, m.variables[id].name, enc.declared_bounds(id, value));
  // 10. Invariants on the post-state (old(x) reads the pre-state); evaluation errors fail.
  for (const kernel::Invariant& inv : m.invariants) {
    z3::expr holds = ctx.bool_const((enc.prefix() + "$opaque." + a.id + "." + inv.name).c_str());
    std::string unsupported;
    if (!inv.expr) {
      unsupported = "opaque predicate: " +
                    (inv.opaque_reason.empty()
                         ? "the native (C++) invariant `" + inv.name + "` cannot be reasoned about"
                         : "invariant `" + inv.name + "`: " + inv.opaque_reason);
    } else {
      try {
        holds = enc.encode_bool(*inv.expr, &st.post, &a);
        holds = holds && enc.take_ranges();
      } catch (const Unsupported& u) {
        unsupported = u.reason;
      }
    }
    Check c{inv.enforcement == kernel::Enforcement::blocking ? ReasonCode::invariant_violated
                                                             : ReasonCode::monitoring_violated,
            inv.name,
            holds,
            gate,
            std::move(unsupported)};
    (c.code == ReasonCode::invariant_violated ? st.checks : st.warnings).push_back(std::move(c));
  }

  // The situation after an approved step (kernel::advance).
  st.next.net = pre.net + st.cost;
  if (!a.emergency) st.next.steps = pre.steps + 1;
  st.next.done.at(index) = pre.done.at(index) + 1;
  return st;
}

namespace {
// `next` (with the state of `next_enc`) equals `from`, whose state is `value(id)`.
template <typename Value>
z3::expr equal_situations(const TaskModel& m,
                          const SymSituation& from,
                          const Value& value,
                          Encoder& next_enc,
                          const SymSituation& next) {
  z3::expr all = next.net == from.net && next.steps == from.steps;
  for (std::size_t a = 0; a < m.actions.size(); ++a) all = all && next.done[a] == from.done[a];
  for (VarId id = 0; id < m.variables.size(); ++id) all = all && next_enc.pre(id) == value(id);
  return all;
}
}  // namespace

z3::expr successor(Encoder& enc,
                   const SymbolicStep& step,
                   Encoder& next_enc,
                   const SymSituation& next) {
  return equal_situations(
      enc.model(), step.next, [&](VarId id) { return step.value_after(enc, id); }, next_enc, next);
}

z3::expr unchanged(Encoder& enc,
                   const SymSituation& pre,
                   Encoder& next_enc,
                   const SymSituation& next) {
  return equal_situations(
      enc.model(), pre, [&](VarId id) { return enc.pre(id); }, next_enc, next);
}

}  // namespace clampai::verifier::detail
