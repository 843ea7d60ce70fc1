// The reasoning engine: beliefs, the causal graph, the goal distance, the valuation, saliency.
#include <catch2/catch.hpp>
#include <cmath>

#include "clampai/agent.hpp"
#include "clampai/driver/driver.hpp"
#include "clampai/kernel.hpp"

namespace ca = clampai::agent;
namespace ck = clampai::kernel;

namespace {

// build -> test -> deploy, and an independent `lint`; `deploy` writes the goal's variable.
const char* kPipeline = R"({
  "name": "pipeline", "goal": "deployed && instances >= 3",
  "variables": {
    "built": {"type": "bool", "initial": false}, "tested": {"type": "bool", "initial": false},
    "deployed": {"type": "bool", "initial": false},
    "instances": {"type": "int", "initial": 0, "min": 0, "max": 10},
    "linted": {"type": "bool", "initial": false}},
  "actions": [
    {"id": "build", "cost": 3, "effects": [{"variable": "built", "mode": "set", "value": "true"}]},
    {"id": "test", "cost": 2, "effects": [{"variable": "tested", "mode": "set", "value": "true"}]},
    {"id": "deploy", "cost": 5, "reversible": false, "effects": [
      {"variable": "deployed", "mode": "set", "value": "true"},
      {"variable": "instances", "mode": "set", "value": "1"}]},
    {"id": "scale", "cost": "1 * n", "parameters": {"n": {"type": "int", "min": 1, "max": 5, "default": 2}},
     "effects": [{"variable": "instances", "mode": "increment", "value": "n"}]},
    {"id": "lint", "cost": 1, "effects": [{"variable": "linted", "mode": "set", "value": "true"}]}],
  "invariants": [{"name": "cap", "check": "instances <= 8"}],
  "dependencies": {"test": ["build"], "deploy": ["test"], "scale": ["deploy"]},
  "budget": {"total": 40, "min_action_cost": 1}})";

std::vector<ca::Candidate> candidates(const ck::TaskModel& m, const ck::Situation& s) {
  std::vector<ca::Candidate> out;
  for (std::size_t a = 0; a < m.actions.size(); ++a) {
    ca::Candidate c;
    c.action = a;
    c.proposal = clampai::driver::default_proposal(m, a);
    c.decision = ck::decide(m, s, c.proposal);
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace

TEST_CASE("Belief: Bayesian updates move the mean and shrink the variance", "[agent][beliefs]") {
  ca::Belief b = ca::Belief::prior(1, 1);
  REQUIRE(b.mean() == Approx(0.5));
  REQUIRE(b.variance() == Approx(1.0 / 12.0));
  b.observe(true);
  REQUIRE(b.alpha == Approx(2.0));
  REQUIRE(b.mean() == Approx(2.0 / 3.0));
  const double v = b.variance();
  for (int i = 0; i < 10; ++i) b.observe(true);
  REQUIRE(b.variance() < v);
  REQUIRE(b.lower_bound() < b.mean());
  REQUIRE(b.upper_bound() > b.mean());
  REQUIRE(b.lower_bound() >= 0.0);
  REQUIRE(b.upper_bound() <= 1.0);
  REQUIRE(b.confidence() > 0.5);
  REQUIRE_THROWS_AS(ca::Belief::prior(0, 1), clampai::InvalidArgument);
}

TEST_CASE("Belief: decay lets recent failures overturn an old streak", "[agent][beliefs]") {
  ca::Belief stationary = ca::Belief::prior(1, 1), decaying = stationary;
  for (int i = 0; i < 50; ++i) {
    stationary.observe(true, 1.0);
    decaying.observe(true, 0.8);
  }
  for (int i = 0; i < 5; ++i) {
    stationary.observe(false, 1.0);
    decaying.observe(false, 0.8);
  }
  REQUIRE(stationary.mean() > 0.85);
  REQUIRE(decaying.mean() < 0.6);
  // The decayed evidence never falls below the prior.
  REQUIRE(decaying.alpha >= decaying.prior_alpha);
}

TEST_CASE("Beliefs: the seed's cost tiers and gated authorisation", "[agent][beliefs]") {
  REQUIRE(ca::cost_tier(0.01, true) == ca::CostTier::explore);
  REQUIRE(ca::cost_tier(0.05, true) == ca::CostTier::cautious);
  REQUIRE(ca::cost_tier(0.01, false) == ca::CostTier::guarded);
  REQUIRE(ca::cost_tier(0.2, true) == ca::CostTier::guarded);
  REQUIRE(ca::cost_tier(0.5, true) == ca::CostTier::gated);
  REQUIRE(ca::tier_prior(ca::CostTier::explore, 0.01).mean() == Approx(0.75));
  // Guarded: Beta(1, 1 + K r) with K = 5: r = 0.2 gives Beta(1, 2).
  REQUIRE(ca::tier_prior(ca::CostTier::guarded, 0.2).mean() == Approx(1.0 / 3.0));
  REQUIRE(ca::tier_prior(ca::CostTier::gated, 0.5).mean() < 0.001);

  const auto m = ck::load_spec(R"({"variables": {"x": {"type": "int", "initial": 0}},
    "actions": [{"id": "cheap", "cost": 1, "effects": []}, {"id": "big", "cost": 50, "effects": []}],
    "budget": {"total": 100, "min_action_cost": 1}})");
  ca::BeliefState beliefs(*m);
  REQUIRE(beliefs.tier(0) == ca::CostTier::explore);
  REQUIRE(beliefs.tier(1) == ca::CostTier::gated);
  REQUIRE(beliefs[1].mean() < 0.001);
  beliefs.observe(1, true);  // a gated action that succeeds is authorised
  REQUIRE(beliefs.authorised(1));
  REQUIRE(beliefs[1].mean() > 0.3);
  REQUIRE_THROWS_WITH(ca::BeliefState(*m, 0.0), Catch::Contains("decay"));
}

TEST_CASE("CausalGraph: readiness, blockers and a critical path that works", "[agent][graph]") {
  const auto m = ck::load_spec(kPipeline);
  const ca::CausalGraph g(*m);
  std::vector<std::uint64_t> done(m->actions.size(), 0);
  REQUIRE(g.ready(0, done));   // build
  REQUIRE(!g.ready(1, done));  // test needs build
  REQUIRE(g.blockers(2, done) == std::vector<std::size_t>{1});
  REQUIRE(g.dependents(0) == std::vector<std::size_t>{1, 2, 3});
  // The heaviest chain of work left: build (3) -> test (2) -> deploy (5) -> scale (2).
  REQUIRE(g.critical_path(done) == std::vector<std::size_t>{0, 1, 2, 3});
  done[0] = 1;
  REQUIRE(g.ready(1, done));
  REQUIRE(g.critical_path(done) == std::vector<std::size_t>{1, 2, 3});
  done[1] = done[2] = done[3] = 1;
  REQUIRE(g.critical_path(done).empty());
}

TEST_CASE("Distance: a linear goal measures how much of the way is left", "[agent][valuation]") {
  const auto m = ck::load_spec(R"({"goal": "x >= 10 && y <= 0",
    "variables": {"x": {"type": "int", "initial": 0}, "y": {"type": "int", "initial": 4}},
    "actions": [], "budget": {"total": 1, "min_action_cost": 1}})");
  const ca::Distance d(*m, m->goal, false, m->initial_state());
  const ck::State s0 = m->initial_state();
  REQUIRE(d(s0) == Approx(2.0));  // each atom weighs 1 where the task starts
  REQUIRE(d(s0.with(0, ck::Value::integer(5))) == Approx(1.5));
  REQUIRE(d(s0.with({{0, ck::Value::integer(10)}, {1, ck::Value::integer(0)}})) == Approx(0.0));
  // The negation: how far from violating `x >= 10 && y <= 0`.
  const ca::Distance n(*m, m->goal, true, m->initial_state());
  REQUIRE(n(s0) == Approx(0.0));
}

TEST_CASE("Valuator: progress comes from the goal expression, and prerequisites unlock it",
          "[agent][valuation]") {
  const auto m = ck::load_spec(kPipeline);
  const ca::Valuator val(m);
  ca::BeliefState beliefs(*m);
  ck::Situation s = ck::Situation::initial(*m);
  const auto cands = candidates(*m, s);
  const auto values = val.value(s, cands, beliefs);
  // build unlocks deploy two steps later: 0.5^2; lint does nothing for the goal.
  REQUIRE(values[0].expected_progress == Approx(beliefs[0].mean() * 0.25));
  REQUIRE(values[0].hint.find("unlocks `deploy`") != std::string::npos);
  REQUIRE(values[4].expected_progress == Approx(0.0));
  REQUIRE(values[0].value > values[4].value - 1.0);  // both finite
  for (const auto& v : values) REQUIRE(v.value == Approx(ca::weighted_value(v, val.weights())));
  // Deploy (its dependencies ignored by `decide`? no: rejected) closes nothing yet.
  REQUIRE(!values[2].approvable);
  REQUIRE(values[2].risk >= 0.6);
  // After deploying by hand, scale closes 2 of the remaining 2 instances.
  s.state = s.state.with({{2, ck::Value::boolean(true)}, {3, ck::Value::integer(1)}});
  s.completions = {1, 1, 1, 0, 0};
  const auto after = val.value(s, candidates(*m, s), beliefs);
  REQUIRE(after[3].approvable);
  REQUIRE(after[3].closure == Approx(1.0));  // 1 + 2 = 3 instances: the goal
  REQUIRE(val.goal_progress(s.state) > 0.0);
  REQUIRE(val.goal_progress(m->initial_state()) == Approx(0.0));
}

TEST_CASE("Valuation: the dominant-action rule", "[agent][valuation]") {
  std::vector<ca::ActionValue> v(2);
  v[0].value = 0.9;
  v[0].approvable = true;
  v[1].value = 0.5;
  v[1].approvable = true;
  REQUIRE(ca::dominant(v) == std::optional<std::size_t>(0));
  v[1].value = 0.8;  // within the margin: the LLM chooses
  REQUIRE(!ca::dominant(v));
  v[1].value = -1.0;
  v[0].value = 0.01;  // below the minimum value
  REQUIRE(!ca::dominant(v));
  v.resize(1);
  REQUIRE(ca::dominant(v) == std::optional<std::size_t>(0));  // a lone approvable action
  v[0].approvable = false;
  REQUIRE(!ca::dominant(v));
}

TEST_CASE("Saliency: only what the offered actions, goal and invariants touch, and the boundary",
          "[agent][saliency]") {
  const auto m = ck::load_spec(R"({"goal": "done",
    "variables": {"done": {"type": "bool", "initial": false},
                  "load": {"type": "int", "initial": 9},
                  "noise": {"type": "int", "initial": 0},
                  "spare": {"type": "int", "initial": 0}},
    "actions": [{"id": "work", "cost": 1, "effects": [{"variable": "load", "mode": "increment", "value": "1"}]},
                {"id": "finish", "cost": 1, "effects": [{"variable": "done", "mode": "set", "value": "true"}]},
                {"id": "fiddle", "cost": 1, "effects": [{"variable": "spare", "mode": "increment", "value": "1"}]}],
    "invariants": [{"name": "cap", "check": "load <= 10"}],
    "budget": {"total": 10, "min_action_cost": 1}})");
  const ca::Valuator val(m);
  const ca::Saliency sal(*m);
  const ck::Situation s = ck::Situation::initial(*m);
  auto cands = candidates(*m, s);
  cands.pop_back();  // `fiddle` is not offered
  const ca::Salience out = sal.select(s, cands, val);
  const auto shown = [&](ck::VarId v) {
    return std::find(out.variables.begin(), out.variables.end(), v) != out.variables.end();
  };
  REQUIRE(shown(0));   // the goal's
  REQUIRE(shown(1));   // written by `work`, read by `cap`
  REQUIRE(!shown(2));  // nothing reads or writes it
  REQUIRE(!shown(3));  // only `fiddle`, not offered
  // load = 9 of cap 10: `work` takes it to the boundary.
  REQUIRE(out.near_boundary.size() == 1);
  REQUIRE(out.near_boundary[0].first == 1);
  REQUIRE(out.variables.front() == 1);
}
