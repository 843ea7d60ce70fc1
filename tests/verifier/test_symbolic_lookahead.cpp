// The symbolic lookahead engine (Z3) against the explicit one: the same answers on random specs
// (the differential test), and answers where the explicit engine cannot enumerate.
#include <catch2/catch.hpp>
#include <random>

#include "../kernel/support.hpp"
#include "clampai/driver.hpp"
#include "clampai/verifier.hpp"
#include "random_basin_spec.hpp"

using namespace clampai;
using namespace clampai::kernel;
using namespace clampai::driver;

namespace {

std::vector<std::string> ids(const TaskModel& m, const Plan& p) {
  std::vector<std::string> out;
  for (const auto& s : p) out.push_back(m.actions[s.action].id);
  return out;
}

}  // namespace

TEST_CASE("Symbolic lookahead: the example's depth-3 trap, with the witness",
          "[verifier][lookahead]") {
  const auto m = load_spec_file(test::source_path("examples/pressure_vessel.json"));
  LookaheadOptions o;
  o.depth = 3;
  const auto r = verifier::symbolic_lookahead(
      *m, Situation::initial(*m), Proposal{*m->find_action("open_valve"), {}}, o);
  REQUIRE(r.complete);
  REQUIRE(r.decision.approved);
  CHECK(r.entered.empty());
  REQUIRE(r.reachable_basin);
  CHECK(*r.reachable_basin == "overflow");
  CHECK(ids(*m, r.basin_witness) == std::vector<std::string>{"fill", "fill", "fill"});
  // After open_valve the goal (6, sealed) is out of reach: 2 -> 4 closes at 4 at best.
  CHECK_FALSE(r.goal_reachable);
}

TEST_CASE("Symbolic lookahead: exact where the explicit engine cannot enumerate",
          "[verifier][lookahead]") {
  const auto m = load_spec(R"J({"variables": {"x": {"type": "int", "initial": 0, "min": 0}},
    "actions": [{"id": "add", "cost": 1,
                 "parameters": {"n": {"type": "int", "min": 0, "max": 1000000}},
                 "effects": [{"variable": "x", "mode": "increment", "value": "n"}]}],
    "capture_basins": [{"name": "exactly", "check": "x == 777777"}],
    "goal": "x >= 999999",
    "budget": {"total": 10, "min_action_cost": 1}})J");
  LookaheadOptions o;
  o.depth = 2;
  const Proposal p{0, {Value::integer(5)}};
  const auto explicit_answer = lookahead(*m, Situation::initial(*m), p, o);
  CHECK_FALSE(explicit_answer.complete);  // a million values per step
  const auto r = verifier::symbolic_lookahead(*m, Situation::initial(*m), p, o);
  REQUIRE(r.complete);
  REQUIRE(r.reachable_basin);
  REQUIRE(r.basin_witness.size() == 1);
  CHECK(r.basin_witness[0].params[0] == Value::integer(777772));
  REQUIRE(r.goal_reachable);
  CHECK(r.cheapest_cost == 1000);  // one more step, whatever its size
  CHECK_FALSE(r.dead_end);
}

TEST_CASE("Symbolic lookahead: a rejected proposal is only decided", "[verifier][lookahead]") {
  const auto m = load_spec_file(test::source_path("examples/pressure_vessel.json"));
  const auto r = verifier::symbolic_lookahead(
      *m, Situation::initial(*m), Proposal{*m->find_action("fill"), {}});
  CHECK_FALSE(r.decision.approved);
  CHECK_FALSE(r.reachable_basin);
  CHECK_FALSE(r.goal_reachable);
}

TEST_CASE("Symbolic and explicit lookahead agree on every answer over random specs",
          "[verifier][lookahead][properties]") {
  std::mt19937_64 rng(20261123);
  int compared = 0, traps = 0, dead_ends = 0, goals = 0;
  for (int i = 0; i < 120; ++i) {
    const auto m = test::random_basin_spec(rng);
    if (!m) continue;
    const Situation start = Situation::initial(*m);
    for (std::size_t a = 0; a < m->actions.size(); ++a) {
      Proposal p{a, {}};
      for (const Parameter& par : m->actions[a].parameters)
        p.params.push_back(Value::number(*par.max));
      if (!decide(*m, start, p).approved) continue;
      LookaheadOptions o;
      o.depth = static_cast<unsigned>(1 + rng() % 3);
      const LookaheadResult x = lookahead(*m, start, p, o);
      const LookaheadResult z = verifier::symbolic_lookahead(*m, start, p, o);
      INFO("spec " << i << ", action " << m->actions[a].id << ", depth " << o.depth);
      REQUIRE(x.complete);
      REQUIRE(z.complete);
      CHECK(x.entered == z.entered);
      CHECK(x.reachable_basin.has_value() == z.reachable_basin.has_value());
      CHECK(x.basin_witness.size() == z.basin_witness.size());  // both shortest
      CHECK(x.dead_end == z.dead_end);
      CHECK(x.dead_end_witness.size() == z.dead_end_witness.size());
      CHECK(x.goal_reachable == z.goal_reachable);
      if (x.goal_reachable) CHECK(x.cheapest_cost == z.cheapest_cost);
      traps += x.reachable_basin ? 1 : 0;
      dead_ends += x.dead_end ? 1 : 0;
      goals += x.goal_reachable ? 1 : 0;
      ++compared;
    }
  }
  CHECK(compared > 60);
  CHECK(traps > 5);  // every answer is exercised both ways
  CHECK(dead_ends > 5);
  CHECK(goals > 5);
}

TEST_CASE("Symbolic lookahead: operands the kernel does not evaluate cannot overflow",
          "[verifier][lookahead]") {
  // `x * 2^62` overflows for x >= 2, but the kernel only evaluates it when `x == 2` is false.
  const auto m =
      load_spec(R"J({"variables": {"x": {"type": "int", "initial": 0, "min": 0, "max": 10}},
    "actions": [{"id": "inc", "cost": 1, "effects": [{"variable": "x", "mode": "increment", "value": "1"}]}],
    "goal": "x == 2 || x * 4611686018427387904 < 0",
    "capture_basins": [{"name": "over", "check": "x >= 3"}],
    "budget": {"total": 10, "min_action_cost": 1}})J");
  LookaheadOptions o;
  o.depth = 2;
  const Proposal p{0, {}};
  const auto x = lookahead(*m, Situation::initial(*m), p, o);
  const auto z = verifier::symbolic_lookahead(*m, Situation::initial(*m), p, o);
  REQUIRE(z.complete);
  CHECK_FALSE(x.trap());
  CHECK_FALSE(z.trap());
  CHECK(x.goal_reachable);
  CHECK(z.goal_reachable);
  CHECK(z.cheapest_cost == x.cheapest_cost);
}

TEST_CASE("Symbolic lookahead: a variable Z3 cannot hold makes the answer incomplete, not a crash",
          "[verifier][lookahead]") {
  const auto m =
      load_spec(R"J({"variables": {"x": {"type": "int", "initial": 0, "min": 0, "max": 10},
      "tag": {"type": "int", "optional": true}},
    "actions": [{"id": "inc", "cost": 1, "effects": [{"variable": "x", "mode": "increment", "value": "1"}]}],
    "goal": "x == 3", "capture_basins": [{"name": "over", "check": "x >= 5"}],
    "budget": {"total": 10, "min_action_cost": 1}})J");
  const auto z = verifier::symbolic_lookahead(*m, Situation::initial(*m), Proposal{0, {}});
  CHECK_FALSE(z.complete);
  CHECK(z.incomplete_reason.find("outside what the symbolic engine models") != std::string::npos);
}

TEST_CASE("Lookahead: a goal state is never a trap, even inside a basin", "[verifier][lookahead]") {
  const auto m =
      load_spec(R"J({"variables": {"x": {"type": "int", "initial": 1, "min": 0, "max": 10}},
    "actions": [{"id": "inc", "cost": 1, "effects": [{"variable": "x", "mode": "increment", "value": "1"}]}],
    "goal": "x >= 3", "capture_basins": [{"name": "high", "check": "x >= 3"}],
    "budget": {"total": 10, "min_action_cost": 1}})J");
  Situation two = Situation::initial(*m);
  two.state = two.state.with({{0, Value::integer(2)}});
  const auto x = lookahead(*m, two, Proposal{0, {}});
  const auto z = verifier::symbolic_lookahead(*m, two, Proposal{0, {}});
  CHECK(x.entered.empty());
  CHECK(z.entered.empty());
  CHECK_FALSE(x.trap());
  CHECK_FALSE(z.trap());
  KernelOptions options;
  options.guard = lookahead_guard(m, LookaheadOptions{});
  SafetyKernel k(m, options);
  FirstApprovableDriver driver;
  CHECK(run(k, driver).goal_reached);
}
