// Naive references for the explicit lookahead engine's property tests: a depth-first
// enumeration without memoisation, and a breadth-first search that compares situations exactly
// (a linear scan). Shared by the engine's tests and its white-box test with colliding keys.
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstddef>
#include <optional>
#include <vector>

#include "clampai/driver/lookahead.hpp"
#include "clampai/kernel.hpp"

namespace clampai::test {

using namespace clampai::kernel;
using namespace clampai::driver;

// Every parameter vector of action `a` (its parameters are bounded and small here).
inline std::vector<std::vector<Value>> param_vectors(const Action& a) {
  std::vector<std::vector<Value>> out{{}};
  for (const Parameter& p : a.parameters) {
    std::vector<std::vector<Value>> next;
    for (const auto& prefix : out) {
      const std::int64_t count = p.max->units - p.min->units + 1;
      for (std::int64_t k = 0; k < count; ++k) {
        auto v = prefix;
        v.push_back(Value::integer(p.min->units + k));
        next.push_back(v);
      }
    }
    out = next;
  }
  return out;
}

// The naive reference: depth-first over every approvable step, no memoisation.
struct Naive {
  const TaskModel& m;
  std::optional<Amount> cheapest;  // cost of the cheapest goal within the depth
  bool basin = false;

  static bool holds(const ExprPtr& e, const State& s) {
    const EvalResult r = evaluate(*e, EvalEnv{&s, {}, &s, nullptr});
    return r.ok() && r.value.as_bool();
  }
  void walk(const Situation& s, Amount spent, unsigned depth_left, bool root) {
    if (m.goal && holds(m.goal, s.state)) {
      if (!cheapest || spent < *cheapest) cheapest = spent;
      return;
    }
    bool in_basin = false;
    for (const auto& b : m.basins) {
      const EvalResult r = evaluate(*b.expr, EvalEnv{&s.state, {}, &s.state, nullptr});
      in_basin = in_basin || !r.ok() || r.value.as_bool();
    }
    if (in_basin && !root) {
      basin = true;
      return;
    }
    if (depth_left == 0) return;
    for (std::size_t a = 0; a < m.actions.size(); ++a) {
      for (const auto& params : param_vectors(m.actions[a])) {
        const Decision d = decide(m, s, Proposal{a, params});
        if (d.approved) walk(advance(m, s, d), spent + d.cost, depth_left - 1, false);
      }
    }
  }
};

// Exactly the same situation (what the engine's memoisation must tell apart).
inline bool same_situation(const Situation& a, const Situation& b) {
  return a.state == b.state && a.budget.net() == b.budget.net() &&
         a.budget.gross() == b.budget.gross() && a.steps == b.steps &&
         a.emergency_steps == b.emergency_steps && a.completions == b.completions;
}

inline bool same_plan(const Plan& a, const Plan& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].action != b[i].action || a[i].params != b[i].params || a[i].cost != b[i].cost)
      return false;
  return true;
}

// The second naive reference: breadth-first over every situation, each step decided by the
// kernel, a situation added only if no known one is exactly equal (a linear scan), in the
// engine's order (actions, then parameter vectors, in the model's order). What it finds is
// what the engine must find, situation for situation: the count, the first basin, dead end
// and cheapest goal, and the plans to them, step for step.
struct NaiveBfs {
  const TaskModel& m;
  bool basins;  // lookahead (stops at basins, looks for dead ends) or plan_to_goal
  unsigned depth;
  std::vector<Situation> seen{};
  std::vector<std::size_t> parent{};
  std::vector<PlannedStep> step{};
  std::vector<unsigned> level{};
  std::optional<std::size_t> basin{}, dead_end{}, goal{};

  static bool holds(const ExprPtr& e, const State& s) {
    const EvalResult r = evaluate(*e, EvalEnv{&s, {}, &s, nullptr});
    return r.ok() && r.value.as_bool();
  }
  Plan plan_to(std::size_t i) const {
    Plan p;
    for (; i != 0; i = parent[i]) p.insert(p.begin(), step[i]);
    return p;
  }
  void run(const Situation& root) {
    seen = {root};
    parent = {0};
    step = {PlannedStep{}};
    level = {0};
    for (std::size_t i = 0; i < seen.size(); ++i) {
      const Situation s = seen[i];
      if (m.goal && holds(m.goal, s.state)) {
        if (!goal || s.budget.net() < seen[*goal].budget.net()) goal = i;
        continue;
      }
      bool in_basin = false;
      for (const auto& b : m.basins) {
        const EvalResult r = evaluate(*b.expr, EvalEnv{&s.state, {}, &s.state, nullptr});
        in_basin = in_basin || !r.ok() || r.value.as_bool();
      }
      if (basins && in_basin && level[i] > 0) {
        if (!basin) basin = i;
        continue;
      }
      if (!basins && level[i] >= depth) continue;
      bool progress = false;
      for (std::size_t a = 0; a < m.actions.size(); ++a) {
        for (const auto& params : param_vectors(m.actions[a])) {
          const Decision d = decide(m, s, Proposal{a, params});
          if (!d.approved) continue;
          progress = progress || !m.actions[a].emergency;
          if (level[i] >= depth) continue;
          const Situation next = advance(m, s, d);
          if (std::any_of(seen.begin(), seen.end(), [&](const Situation& k) {
                return same_situation(k, next);
              }))
            continue;
          seen.push_back(next);
          parent.push_back(i);
          step.push_back(PlannedStep{a, params, d.cost});
          level.push_back(level[i] + 1);
        }
      }
      if (basins && !progress && !dead_end) dead_end = i;
    }
  }
};

inline void check_against_bfs(const TaskModel& m, const LookaheadResult& r, const NaiveBfs& n) {
  REQUIRE(r.complete);
  CHECK(r.situations == n.seen.size());
  CHECK(r.goal_reachable == n.goal.has_value());
  if (n.goal) {
    CHECK(r.cheapest_cost == n.seen[*n.goal].budget.net() - n.seen[0].budget.net());
    CHECK(same_plan(r.cheapest_plan, n.plan_to(*n.goal)));
  }
  if (!n.basins) return;
  CHECK(r.reachable_basin.has_value() == n.basin.has_value());
  if (n.basin) {
    CHECK(*r.reachable_basin == m.basin_of(n.seen[*n.basin].state)->name);
    CHECK(same_plan(r.basin_witness, n.plan_to(*n.basin)));
  }
  CHECK(r.dead_end == n.dead_end.has_value());
  if (n.dead_end) CHECK(same_plan(r.dead_end_witness, n.plan_to(*n.dead_end)));
}

}  // namespace clampai::test
