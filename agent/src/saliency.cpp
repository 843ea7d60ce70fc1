// Saliency: the variables the prompt shows, from what the expressions read and write.
#include "clampai/agent/saliency.hpp"

#include <algorithm>

#include "valuation_internal.hpp"

namespace clampai::agent {

namespace {

void mark(const kernel::ExprPtr& e, std::vector<bool>& seen) {
  if (e) kernel::collect_variables(*e, seen);
}

}  // namespace

Saliency::Saliency(const kernel::TaskModel& model, SaliencyOptions options)
    : model_(&model), options_(options) {
  const std::size_t n = model.variables.size();
  always_.assign(n, false);
  mark(model.goal, always_);
  for (const auto& inv : model.invariants) {
    std::vector<bool> r(n, false);
    mark(inv.expr, r);
    r.resize(n, false);
    std::vector<kernel::VarId> ids;
    for (std::size_t v = 0; v < n; ++v) {
      if (r[v]) {
        ids.push_back(static_cast<kernel::VarId>(v));
        always_[v] = true;
      }
    }
    inv_vars_.push_back(std::move(ids));
  }
  always_.resize(n, false);
  for (const auto& a : model.actions) {
    std::vector<bool> r(n, false);
    mark(a.guard, r);
    mark(a.cost_expr, r);
    for (const auto& e : a.effects) {
      r.resize(std::max(r.size(), n), false);
      r[e.variable] = true;
      mark(e.value, r);
    }
    r.resize(n, false);
    std::vector<kernel::VarId> ids;
    for (std::size_t v = 0; v < n; ++v)
      if (r[v]) ids.push_back(static_cast<kernel::VarId>(v));
    action_vars_.push_back(std::move(ids));
  }
}

Salience Saliency::select(const kernel::Situation& situation,
                          std::span<const Candidate> offered,
                          const Valuator& valuator) const {
  const kernel::TaskModel& m = *model_;
  const std::size_t n = m.variables.size();
  std::vector<bool> relevant = always_;
  for (const Candidate& c : offered) {
    for (kernel::VarId v : action_vars_[c.action]) relevant[v] = true;
  }

  Salience out;
  std::vector<bool> near(n, false);
  const auto flag = [&](kernel::VarId v, std::string why) {
    if (near[v]) return;
    near[v] = true;
    out.near_boundary.emplace_back(v, std::move(why));
  };
  // What the offered default proposals would violate, read once from their reasons.
  std::vector<char> violated(m.invariants.size(), 0), crossed(n, 0);
  for (const Candidate& c : offered) {
    for (const kernel::Reason& r : c.decision.reasons) {
      if (r.code == kernel::ReasonCode::invariant_violated) {
        for (std::size_t i = 0; i < m.invariants.size(); ++i)
          if (m.invariants[i].name == r.subject) violated[i] = 1;
      } else if (r.code == kernel::ReasonCode::bound_violated) {
        if (const auto id = m.schema->find(r.subject)) crossed[*id] = 1;
      }
    }
  }
  // Invariants: tight now, violated or tight after an offered action, or a few more steps like
  // one of them from the boundary. Only actions that write what an invariant reads move it.
  for (std::size_t i = 0; i < m.invariants.size(); ++i) {
    if (inv_vars_[i].empty()) continue;
    const double now = valuator.slack(i, situation.state);
    bool tight = now < options_.boundary_slack || violated[i] != 0;
    for (const Candidate& c : offered) {
      if (tight) break;
      if (!c.decision.approved || c.decision.changes.empty()) continue;
      const auto& guards = valuator.guards(c.action);
      if (std::find(guards.begin(), guards.end(), i) == guards.end()) continue;
      const double after = valuator.slack(i, situation.state, c.decision.changes);
      tight = after < options_.boundary_slack ||
              (after < now && now <= options_.boundary_steps * (now - after));
    }
    if (tight)
      for (kernel::VarId v : inv_vars_[i]) flag(v, "invariant `" + m.invariants[i].name + "`");
  }
  // Bounds: within a share of the range, or crossed by an offered action.
  for (std::size_t v = 0; v < n; ++v) {
    const kernel::Variable& var = m.variables[v];
    if (crossed[v] != 0) flag(static_cast<kernel::VarId>(v), "a bound of `" + var.name + "`");
    if (!var.min || !var.max) continue;
    const kernel::Value& value = situation.state.get(static_cast<kernel::VarId>(v));
    if (value.kind() != kernel::Value::Kind::number) continue;
    const double x = detail::to_double(value.as_number());
    const double lo = detail::to_double(*var.min), hi = detail::to_double(*var.max);
    const double band = (hi - lo) * options_.boundary_slack;
    if (x - lo < band) flag(static_cast<kernel::VarId>(v), "bound min " + var.min->to_string());
    if (hi - x < band) flag(static_cast<kernel::VarId>(v), "bound max " + var.max->to_string());
  }

  for (const auto& [v, why] : out.near_boundary) out.variables.push_back(v);
  for (std::size_t v = 0; v < n; ++v) {
    if (!relevant[v] || near[v]) continue;
    if (out.variables.size() < std::max(options_.max_variables, out.near_boundary.size()))
      out.variables.push_back(static_cast<kernel::VarId>(v));
    else
      ++out.hidden;
  }
  return out;
}

}  // namespace clampai::agent
