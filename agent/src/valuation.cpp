// The five-dimension valuation and the dominant-action rule.
#include "clampai/agent/valuation.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <deque>
#include <limits>

#include "valuation_internal.hpp"

namespace clampai::agent {

namespace {

// Variables an action's effects write.
std::vector<bool> writes_of(const kernel::TaskModel& m, const kernel::Action& a) {
  std::vector<bool> w(m.variables.size(), false);
  for (const auto& e : a.effects) w[e.variable] = true;
  return w;
}

std::vector<bool> reads_of(const kernel::TaskModel& m, const kernel::ExprPtr& e) {
  std::vector<bool> r(m.variables.size(), false);
  if (e) kernel::collect_variables(*e, r);
  r.resize(m.variables.size(), false);
  return r;
}

bool intersects(const std::vector<bool>& a, const std::vector<bool>& b) {
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i)
    if (a[i] && b[i]) return true;
  return false;
}

// Appends `x` as a whole percentage.
void percent(std::string& out, double x) {
  char buf[32];
  const auto r =
      std::to_chars(buf, buf + sizeof buf, std::round(x * 100.0), std::chars_format::fixed, 0);
  out.append(buf, r.ptr);
  out += '%';
}

// Appends a hint, separated from the one before.
std::string& hint_sep(std::string& h) {
  if (!h.empty()) h += "; ";
  return h;
}

}  // namespace

Valuator::Valuator(std::shared_ptr<const kernel::TaskModel> model, ValuationWeights weights)
    : model_(std::move(model)),
      weights_(weights),
      graph_(*model_),
      goal_(*model_, model_->goal, false, model_->initial_state()) {
  const kernel::TaskModel& m = *model_;
  goal_initial_ = goal_(m.initial_state());
  for (const auto& inv : m.invariants) {
    if (inv.expr && inv.enforcement == kernel::Enforcement::blocking)
      slack_.emplace_back(std::in_place, m, inv.expr, true, m.initial_state());
    else
      slack_.emplace_back(std::nullopt);
  }
  const std::vector<bool> goal_reads = reads_of(m, m.goal);
  std::vector<bool> goal_writer(m.actions.size(), false);
  for (std::size_t a = 0; a < m.actions.size(); ++a) {
    const auto w = writes_of(m, m.actions[a]);
    goal_writer[a] = intersects(w, goal_reads);
    std::vector<std::size_t> g;
    for (std::size_t i = 0; i < m.invariants.size(); ++i)
      if (slack_[i] && intersects(w, reads_of(m, m.invariants[i].expr))) g.push_back(i);
    guards_.push_back(std::move(g));
  }
  // Breadth-first from each action along "is a dependency of" to the nearest goal writer.
  unlock_distance_.assign(m.actions.size(), -1);
  unlocks_.assign(m.actions.size(), 0);
  std::vector<std::vector<std::size_t>> dependents(m.actions.size());
  for (std::size_t a = 0; a < m.actions.size(); ++a)
    for (std::size_t d : m.actions[a].dependencies) dependents[d].push_back(a);
  for (std::size_t a = 0; a < m.actions.size(); ++a) {
    std::vector<int> dist(m.actions.size(), -1);
    std::deque<std::size_t> queue{a};
    dist[a] = 0;
    while (!queue.empty()) {
      const std::size_t v = queue.front();
      queue.pop_front();
      if (v != a && goal_writer[v]) {
        unlock_distance_[a] = dist[v];
        unlocks_[a] = v;
        break;
      }
      for (std::size_t t : dependents[v]) {
        if (dist[t] < 0) {
          dist[t] = dist[v] + 1;
          queue.push_back(t);
        }
      }
    }
  }
}

double Valuator::goal_distance(const kernel::State& state) const {
  if (!model_->goal) return 0.0;
  if (model_->goal_holds(state)) return 0.0;
  return std::max(goal_(state), 1e-12);  // not reached: never exactly 0
}

double Valuator::goal_progress(const kernel::State& state) const {
  if (!model_->goal) return 0.0;
  if (model_->goal_holds(state)) return 1.0;
  if (!(goal_initial_ > 0)) return 0.0;
  return std::clamp(1.0 - goal_(state) / goal_initial_, 0.0, 1.0);
}

double Valuator::slack(std::size_t invariant, const kernel::State& state) const {
  const auto& d = slack_.at(invariant);
  return d ? (*d)(state) : std::numeric_limits<double>::infinity();
}

double Valuator::slack(std::size_t invariant,
                       const kernel::State& state,
                       kernel::ChangeSpan changes) const {
  const auto& d = slack_.at(invariant);
  return d ? (*d)(state, changes) : std::numeric_limits<double>::infinity();
}

double weighted_value(const ActionValue& v, const ValuationWeights& w) {
  return w.progress * v.expected_progress + w.information * v.information_gain -
         w.cost * v.cost_ratio - w.risk * v.risk - w.opportunity * v.opportunity_cost;
}

std::vector<ActionValue> Valuator::value(const kernel::Situation& situation,
                                         std::span<const Candidate> candidates,
                                         const BeliefState& beliefs,
                                         bool with_hints) const {
  const kernel::TaskModel& m = *model_;
  const double left =
      std::max(detail::amount_to_double(m, situation.budget.remaining()),
               std::max(detail::amount_to_double(m, m.budget.min_action_cost), 1e-9));
  const double progress_now = goal_progress(situation.state);
  const double distance_now = m.goal ? goal_(situation.state) : 0.0;
  std::vector<ActionValue> out;
  out.reserve(candidates.size());
  for (const Candidate& c : candidates) {
    const kernel::Action& a = m.actions[c.action];
    const Belief& b = beliefs[c.action];
    ActionValue v;
    v.action = c.action;
    v.approvable = c.decision.approved;
    if (!c.decision.approved && !c.decision.reasons.empty())
      v.rejected_by = c.decision.reasons.front().code;

    if (c.decision.approved) {
      // The state after, as an overlay of the decision's changes (no state is built).
      const double after = m.goal ? goal_(situation.state, c.decision.changes) : 0.0;
      if (distance_now > 0) v.closure = after == 0.0 ? 1.0 : (distance_now - after) / distance_now;
      for (std::size_t i : guards_[c.action])
        v.proximity = std::max(v.proximity,
                               1.0 - std::min(1.0, slack(i, situation.state, c.decision.changes)));
    }
    // Signed: an action that widens the distance to the goal loses value.
    double reach = std::max(-1.0, v.closure);
    if (unlock_distance_[c.action] > 0 && situation.completions[c.action] == 0 &&
        situation.completions[unlocks_[c.action]] == 0) {
      const double unlock = std::pow(0.5, unlock_distance_[c.action]);
      if (unlock > reach) {
        reach = unlock;
        v.unlocks = unlocks_[c.action];
      }
    }
    v.expected_progress = b.mean() * reach;
    v.information_gain = 4.0 * b.variance();
    v.cost_ratio = detail::amount_to_double(m, c.decision.cost) / left;
    double base = 0.05 + (a.reversible ? 0.0 : 0.1) + 0.3 * v.proximity;
    if (!c.decision.approved) base = std::max(base, 0.6);
    v.risk = base * (2.0 - b.confidence());
    v.opportunity_cost = v.cost_ratio * (1.0 - progress_now);
    v.value = weighted_value(v, weights_);
    if (with_hints) v.hint = hint(v);
    out.push_back(std::move(v));
  }
  return out;
}

std::string Valuator::hint(const ActionValue& v) const {
  const kernel::TaskModel& m = *model_;
  std::string h;
  if (v.unlocks) hint_sep(h) += "unlocks `" + m.actions[*v.unlocks].id + "`";
  if (v.closure > 0) {
    hint_sep(h) += "closes ";
    percent(h, v.closure);
    h += " of the distance to the goal";
  }
  if (v.closure < 0) hint_sep(h) += "moves away from the goal";
  if (v.information_gain > 0.2) hint_sep(h) += "uncertain: worth learning about";
  if (v.cost_ratio > 0.3) {
    hint_sep(h) += "expensive: ";
    percent(h, v.cost_ratio);
    h += " of the budget left";
  }
  if (v.proximity > 0.8) hint_sep(h) += "comes close to an invariant's boundary";
  if (v.rejected_by) {
    hint_sep(h) += "the kernel rejects its default parameters: ";
    h += kernel::to_string(*v.rejected_by);
  }
  if (h.empty()) h = "moderate across all dimensions";
  return h;
}

std::optional<std::size_t> dominant(std::span<const ActionValue> values,
                                    const DominanceRule& rule) {
  std::optional<std::size_t> best, second;
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (!best || values[i].value > values[*best].value) {
      second = best;
      best = i;
    } else if (!second || values[i].value > values[*second].value) {
      second = i;
    }
  }
  if (!best || !values[*best].approvable) return std::nullopt;
  if (!second) return best;
  if (values[*best].value < rule.min_value) return std::nullopt;
  if (values[*best].value - values[*second].value >= rule.margin) return best;
  return std::nullopt;
}

}  // namespace clampai::agent
