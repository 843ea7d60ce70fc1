// The explicit lookahead engine: the example's depth-3 trap, dead ends, cheapest plans, and
// agreement with a naive depth-first enumeration over random specs.
#include <catch2/catch.hpp>
#include <functional>
#include <limits>
#include <random>

#include "../kernel/support.hpp"
#include "clampai/driver.hpp"
#include "clampai/kernel.hpp"
#include "lookahead_reference.hpp"
#include "random_basin_spec.hpp"

namespace {

using namespace clampai::kernel;
using namespace clampai::driver;
using clampai::test::check_against_bfs;
using clampai::test::Naive;
using clampai::test::NaiveBfs;
using clampai::test::param_vectors;

std::shared_ptr<const TaskModel> vessel() {
  return load_spec_file(clampai::test::source_path("examples/pressure_vessel.json"));
}

Proposal by_id(const TaskModel& m, const std::string& id, std::vector<Value> params = {}) {
  return Proposal{*m.find_action(id), std::move(params)};
}

std::vector<std::string> ids(const TaskModel& m, const Plan& p) {
  std::vector<std::string> out;
  for (const auto& s : p) out.push_back(m.actions[s.action].id);
  return out;
}

}  // namespace

TEST_CASE("lookahead finds the example's depth-3 trap that one step does not show",
          "[kernel][lookahead]") {
  const auto m = vessel();
  const Situation start = Situation::initial(*m);
  LookaheadOptions o;
  o.depth = 3;
  const LookaheadResult open = lookahead(*m, start, by_id(*m, "open_valve"), o);
  REQUIRE(open.decision.approved);
  CHECK(open.entered.empty());  // a one-step check sees nothing wrong
  REQUIRE(open.reachable_basin);
  CHECK(*open.reachable_basin == "overflow");
  CHECK(ids(*m, open.basin_witness) == std::vector<std::string>{"fill", "fill", "fill"});
  CHECK(open.trap());
  CHECK(open.complete);

  o.depth = 2;
  CHECK_FALSE(lookahead(*m, start, by_id(*m, "open_valve"), o).trap());

  o.depth = 3;
  const LookaheadResult top = lookahead(*m, start, by_id(*m, "top_up"), o);
  CHECK_FALSE(top.trap());
}

TEST_CASE("lookahead reports the kernel's rejection and nothing else", "[kernel][lookahead]") {
  const auto m = vessel();
  const LookaheadResult r = lookahead(*m, Situation::initial(*m), by_id(*m, "fill"));
  CHECK_FALSE(r.decision.approved);
  CHECK(r.decision.has(ReasonCode::requires_failed));
  CHECK_FALSE(r.trap());
  CHECK(r.situations == 0);
}

TEST_CASE("the cheapest plan to the goal, or none within the depth and budget",
          "[kernel][lookahead]") {
  const auto m = vessel();
  LookaheadOptions o;
  o.depth = 5;
  const LookaheadResult p = plan_to_goal(*m, Situation::initial(*m), o);
  REQUIRE(p.goal_reachable);
  CHECK(p.cheapest_cost == 7000);  // open, fill, close, top_up, top_up: 1 + 1 + 1 + 2 + 2
  CHECK(ids(*m, p.cheapest_plan) ==
        std::vector<std::string>{"open_valve", "fill", "close_valve", "top_up", "top_up"});
  o.depth = 4;  // four top-ups cost 8 and fit; the cheaper plan needs five steps
  const LookaheadResult q = plan_to_goal(*m, Situation::initial(*m), o);
  REQUIRE(q.goal_reachable);
  CHECK(q.cheapest_cost == 8000);
  o.depth = 3;
  CHECK_FALSE(plan_to_goal(*m, Situation::initial(*m), o).goal_reachable);
}

TEST_CASE("dead ends: a reachable non-goal state where nothing can be done",
          "[kernel][lookahead]") {
  const auto m = load_spec(R"J({"name": "t", "goal": "done",
    "variables": {"x": {"type": "int", "initial": 0, "min": 0, "max": 3},
                  "done": {"type": "bool", "initial": false}},
    "actions": [
      {"id": "inc", "cost": 1, "requires": "x < 3", "effects": [{"variable": "x", "mode": "increment", "value": "1"}]},
      {"id": "finish", "cost": 1, "requires": "x == 1", "effects": [{"variable": "done", "mode": "set", "value": "true"}]}],
    "budget": {"total": 10, "min_action_cost": 1}})J");
  LookaheadOptions o;
  o.depth = 3;
  const LookaheadResult r = lookahead(*m, Situation::initial(*m), by_id(*m, "inc"), o);
  REQUIRE(r.dead_end);  // x = 3: inc and finish are both refused
  CHECK(ids(*m, r.dead_end_witness) == std::vector<std::string>{"inc", "inc"});
  REQUIRE(r.goal_reachable);
  CHECK(ids(*m, r.cheapest_plan) == std::vector<std::string>{"finish"});
  CHECK(r.cheapest_cost == 1000);
}

TEST_CASE("parameters are enumerated within their bounds, or the answer says it is incomplete",
          "[kernel][lookahead]") {
  auto spec = [](const std::string& max) {
    return load_spec(R"J({"name": "p", "goal": "x == 7",
      "variables": {"x": {"type": "int", "initial": 0, "min": 0, "max": 100}},
      "actions": [{"id": "add", "cost": 1, "parameters": {"n": {"type": "int", "min": 1, "max": )J" +
                     max + R"J(}},
        "effects": [{"variable": "x", "mode": "increment", "value": "n"}]}],
      "budget": {"total": 10, "min_action_cost": 1}})J");
  };
  LookaheadOptions o;
  o.depth = 2;
  const auto small = spec("5");
  const LookaheadResult r = plan_to_goal(*small, Situation::initial(*small), o);
  REQUIRE(r.goal_reachable);
  CHECK(r.complete);
  CHECK(r.cheapest_plan.size() == 2);  // 7 = 2 + 5 at best
  const auto big = spec("1000");
  const LookaheadResult b = plan_to_goal(*big, Situation::initial(*big), o);
  CHECK_FALSE(b.complete);
  CHECK_THAT(b.incomplete_reason, Catch::Contains("`add`"));
}

TEST_CASE("parameters at the int64 edge are enumerated by count, and the search ends",
          "[kernel][lookahead]") {
  // A loop `u <= max; ++u` never ends at max = 2^63 - 1: it wraps around.
  const auto m =
      load_spec(R"J({"name": "edge", "goal": "x == 9223372036854775807 && y < -9223372036854775806",
    "variables": {"x": {"type": "int", "initial": 0}, "y": {"type": "int", "initial": 0}},
    "actions": [
      {"id": "hi", "cost": 1, "parameters": {"n": {"type": "int", "min": 9223372036854775804, "max": 9223372036854775807}},
       "effects": [{"variable": "x", "mode": "set", "value": "n"}]},
      {"id": "lo", "cost": 1, "parameters": {"n": {"type": "int", "min": -9223372036854775808, "max": -9223372036854775805}},
       "effects": [{"variable": "y", "mode": "set", "value": "n"}]}],
    "budget": {"total": 10, "min_action_cost": 1}})J");
  LookaheadOptions o;
  o.depth = 2;
  const LookaheadResult r = plan_to_goal(*m, Situation::initial(*m), o);
  REQUIRE(r.complete);
  REQUIRE(r.goal_reachable);
  REQUIRE(r.cheapest_plan.size() == 2);
  // 4 + 4 vectors a step; after two steps: hi twice (4), lo twice (4), one of each (16).
  CHECK(r.situations == 1 + 8 + (4 + 4 + 16));
  const std::int64_t top = std::numeric_limits<std::int64_t>::max();
  CHECK((r.cheapest_plan[0].params[0] == Value::integer(top) ||
         r.cheapest_plan[1].params[0] == Value::integer(top)));
  // The whole int64 range is more than `max_param_values`: incomplete, and it says so at once.
  const auto wide = load_spec(R"J({"name": "wide", "goal": "x == 1",
    "variables": {"x": {"type": "int", "initial": 0}},
    "actions": [{"id": "any", "cost": 1, "parameters": {"n": {"type": "int", "min": -9223372036854775808, "max": 9223372036854775807}},
       "effects": [{"variable": "x", "mode": "set", "value": "n"}]}],
    "budget": {"total": 10, "min_action_cost": 1}})J");
  const LookaheadResult w = plan_to_goal(*wide, Situation::initial(*wide), o);
  CHECK_FALSE(w.complete);
  CHECK_THAT(w.incomplete_reason, Catch::Contains("more than 64 values"));
}

TEST_CASE("the explicit engine agrees with a naive enumeration on random specs",
          "[kernel][lookahead][property]") {
  std::mt19937_64 rng(20261122);
  int compared = 0;
  for (int i = 0; i < 300; ++i) {
    const auto m = clampai::test::random_basin_spec(rng);
    if (!m) continue;
    for (std::size_t a = 0; a < m->actions.size(); ++a) {
      const Situation start = Situation::initial(*m);
      const Proposal p{a, param_vectors(m->actions[a]).back()};
      const Decision d = decide(*m, start, p);
      if (!d.approved) continue;
      LookaheadOptions o;
      o.depth = 3;
      const LookaheadResult r = lookahead(*m, start, p, o);
      REQUIRE(r.complete);
      Naive naive{*m, std::nullopt, false};
      naive.walk(advance(*m, start, d), 0, 3, true);
      INFO("spec " << i << ", action " << m->actions[a].id);
      CHECK(r.reachable_basin.has_value() == naive.basin);
      CHECK(r.goal_reachable == naive.cheapest.has_value());
      if (naive.cheapest) CHECK(r.cheapest_cost == *naive.cheapest);
      ++compared;
    }
  }
  CHECK(compared > 100);
}

TEST_CASE(
    "lookahead: wide parameter products are refused without overflow, and an incomplete "
    "search reports no dead end it did not see",
    "[kernel][lookahead]") {
  const auto m = load_spec(R"J({"variables": {"x": {"type": "int", "initial": 0, "min": 0}},
    "actions": [{"id": "add", "cost": 1,
                 "parameters": {"a": {"type": "int", "min": 0, "max": 3},
                                "n": {"type": "int", "min": 0, "max": 4611686018427387903}},
                 "effects": [{"variable": "x", "mode": "increment", "value": "a"}]},
                {"id": "nudge", "cost": 1, "effects": [{"variable": "x", "mode": "increment", "value": "1"}]}],
    "capture_basins": [{"name": "far", "check": "x >= 100"}],
    "budget": {"total": 10, "min_action_cost": 1}})J");
  LookaheadOptions o;
  o.depth = 2;
  // 4 * 2^62 parameter vectors: wraps to 0 in 64 bits; must be refused, quickly.
  const LookaheadResult r = lookahead(*m, Situation::initial(*m), Proposal{1, {}}, o);
  CHECK_FALSE(r.complete);
  CHECK(r.incomplete_reason.find("span more than") != std::string::npos);
  CHECK_FALSE(r.dead_end);  // `add` was not enumerated: it may well be approvable
}

TEST_CASE("a search past its deadline stops at once, incomplete, and claims no dead end",
          "[kernel][lookahead]") {
  const auto m = vessel();
  const Situation start = Situation::initial(*m);
  LookaheadOptions o;
  o.depth = 8;
  o.deadline = std::chrono::steady_clock::now() - std::chrono::seconds(1);  // already passed
  const LookaheadResult r = lookahead(*m, start, by_id(*m, "open_valve"), o);
  REQUIRE(r.decision.approved);  // the proposal itself is decided, whatever the time
  CHECK_FALSE(r.complete);
  CHECK_THAT(r.incomplete_reason, Catch::Contains("search budget exhausted"));
  CHECK_FALSE(r.dead_end);
  CHECK(r.situations == 1);  // only the root: nothing was expanded
  const LookaheadResult p = plan_to_goal(*m, start, o);
  CHECK_FALSE(p.complete);
  CHECK_FALSE(p.goal_reachable);

  // Without the deadline the same search completes (the limit, not the model, stopped it).
  o.deadline = std::chrono::steady_clock::time_point::max();
  o.depth = 3;
  CHECK(lookahead(*m, start, by_id(*m, "open_valve"), o).complete);
}

TEST_CASE("the situation limit is the search's memory bound and says so", "[kernel][lookahead]") {
  const auto m = vessel();
  LookaheadOptions o;
  o.depth = 6;
  o.max_situations = 3;
  const LookaheadResult r = plan_to_goal(*m, Situation::initial(*m), o);
  CHECK_FALSE(r.complete);
  CHECK(r.situations <= 3);
  CHECK_THAT(r.incomplete_reason, Catch::Contains("search budget exhausted"));
}

TEST_CASE("a long search reports its progress in situations explored", "[kernel][lookahead]") {
  // Five counters, one action each: about 6,000 situations within 12 steps.
  std::string vars, actions;
  for (const char* v : {"a", "b", "c", "d", "e"}) {
    vars += std::string(vars.empty() ? "" : ", ") + "\"" + v +
            "\": {\"type\": \"int\", \"initial\": 0, \"min\": 0, \"max\": 50}";
    actions += std::string(actions.empty() ? "" : ", ") + "{\"id\": \"inc_" + v +
               "\", \"cost\": 1, \"effects\": [{\"variable\": \"" + v +
               "\", \"mode\": \"increment\", \"value\": \"1\"}]}";
  }
  const auto m = load_spec("{\"name\": \"counters\", \"goal\": \"a == 50\", \"variables\": {" +
                           vars + "}, \"actions\": [" + actions +
                           "], \"budget\": {\"total\": 100, \"min_action_cost\": 1}}");
  LookaheadOptions o;
  o.depth = 12;
  std::vector<std::size_t> reported;
  o.progress = [&reported](std::size_t n) { reported.push_back(n); };
  const LookaheadResult r = plan_to_goal(*m, Situation::initial(*m), o);
  REQUIRE(r.situations >= 2048);  // a search long enough to report
  REQUIRE_FALSE(reported.empty());
  CHECK(std::is_sorted(reported.begin(), reported.end()));
  CHECK(reported.back() <= r.situations);
}

TEST_CASE(
    "the explicit engine finds exactly the situations, dead ends, basins and plans of a naive "
    "breadth-first search, on random specs",
    "[kernel][lookahead][property]") {
  // The engine skips the kernel's decision on a step that leads to a known situation (it adds
  // nothing) unless a dead end may rest on it; a wrong skip would lose a situation or a dead
  // end, a wrong match would merge two situations: the counts and witnesses here would differ.
  std::mt19937_64 rng(20261127);
  int compared = 0, dead_ends = 0, basins = 0;
  for (int i = 0; i < 400; ++i) {
    const auto m = clampai::test::random_basin_spec(rng);
    if (!m) continue;
    const Situation start = Situation::initial(*m);
    for (std::size_t a = 0; a < m->actions.size(); ++a) {
      const Proposal p{a, param_vectors(m->actions[a]).back()};
      const Decision d = decide(*m, start, p);
      if (!d.approved) continue;
      LookaheadOptions o;
      o.depth = 3;
      INFO("spec " << i << ", action " << m->actions[a].id);
      NaiveBfs look{*m, true, o.depth};
      look.run(advance(*m, start, d));
      check_against_bfs(*m, lookahead(*m, start, p, o), look);
      dead_ends += look.dead_end ? 1 : 0;
      basins += look.basin ? 1 : 0;
      ++compared;
    }
    LookaheadOptions o;
    o.depth = 3;
    NaiveBfs plan{*m, false, o.depth};
    plan.run(start);
    INFO("spec " << i << ", plan to the goal");
    check_against_bfs(*m, plan_to_goal(*m, start, o), plan);
  }
  CHECK(compared > 150);
  CHECK(dead_ends > 10);  // the seeded specs reach every kind of answer
  CHECK(basins > 10);
}

TEST_CASE("preview_into gives the cost and changes of every approved decision",
          "[kernel][lookahead][property]") {
  // What a search uses to skip the decision of a step to a known situation: it must be what
  // the kernel would record if it approved the step (a random walk's situations).
  std::mt19937_64 rng(20261128);
  int approved = 0, failed = 0;
  for (int i = 0; i < 300; ++i) {
    const auto m = clampai::test::random_basin_spec(rng);
    if (!m) continue;
    Situation s = Situation::initial(*m);
    for (int step = 0; step < 6; ++step) {
      std::vector<Decision> ok;
      for (std::size_t a = 0; a < m->actions.size(); ++a) {
        for (const auto& params : param_vectors(m->actions[a])) {
          const Proposal p{a, params};
          const Decision d = decide(*m, s, p);
          Amount cost = -1;
          Changes changes;
          const bool previewed = preview_into(*m, s.state, p, cost, changes);
          if (!previewed) {
            CHECK_FALSE(d.approved);  // only a proposal the kernel rejects has no preview
            ++failed;
            continue;
          }
          if (!d.approved) continue;
          ++approved;
          CHECK(cost == d.cost);
          REQUIRE(changes.size() == d.changes.size());
          for (std::size_t k = 0; k < changes.size(); ++k) {
            CHECK(changes[k].first == d.changes[k].first);
            CHECK(changes[k].second == d.changes[k].second);
            CHECK(changes[k].second.to_string() == d.changes[k].second.to_string());  // scale
          }
          ok.push_back(d);
        }
      }
      if (ok.empty()) break;
      s = advance(*m, s, ok[rng() % ok.size()]);
    }
  }
  CHECK(approved > 1000);
  // An unknown action and a wrong parameter count have no preview.
  const auto m = vessel();
  Amount cost = 0;
  Changes changes;
  CHECK_FALSE(preview_into(*m, m->initial_state(), Proposal{m->actions.size(), {}}, cost, changes));
  CHECK_FALSE(preview_into(*m,
                           m->initial_state(),
                           Proposal{0, std::vector<Value>(9, Value::integer(1))},
                           cost,
                           changes));
  // Nor an effect or a cost that overflows: the kernel rejects both, for that reason.
  const auto edge = load_spec(R"J({"name": "edge",
    "variables": {"x": {"type": "int", "initial": 9223372036854775807}},
    "actions": [{"id": "inc", "cost": 1, "effects": [{"variable": "x", "mode": "increment", "value": "1"}]},
                {"id": "pay", "cost": "n * 9223372036854775807",
                 "parameters": {"n": {"type": "int", "min": 0, "max": 2}}, "effects": []}],
    "budget": {"total": 10, "min_action_cost": 1}})J");
  const Situation start = Situation::initial(*edge);
  CHECK_FALSE(preview_into(*edge, start.state, Proposal{0, {}}, cost, changes));
  CHECK(decide(*edge, start, Proposal{0, {}}).has(ReasonCode::overflow, "x"));
  const Proposal pay{1, {Value::integer(2)}};
  CHECK_FALSE(preview_into(*edge, start.state, pay, cost, changes));
  CHECK(decide(*edge, start, pay).has(ReasonCode::overflow, "pay"));
  // A preview says nothing of approval: a free `pay` is below the minimum cost, yet previewed.
  const Proposal free{1, {Value::integer(0)}};
  REQUIRE(preview_into(*edge, start.state, free, cost, changes));
  CHECK(cost == 0);
  CHECK(changes.empty());
  CHECK_FALSE(decide(*edge, start, free).approved);
}

TEST_CASE("a thread's next search rewrites the states of its last, whatever the model",
          "[kernel][lookahead]") {
  // The workspace keeps small states from one search to the next and rewrites them in place:
  // searches of models of other sizes (2, 3 and 40 variables) in between, and a search within
  // a search's progress callback (its own workspace), change nothing in a search's answer.
  std::mt19937_64 rng(20261130);
  std::shared_ptr<const TaskModel> small;
  while (!small) small = clampai::test::random_basin_spec(rng);
  std::string vars;
  for (int i = 0; i < 40; ++i)
    vars += std::string(i ? ", " : "") + "\"v" + std::to_string(i) +
            "\": {\"type\": \"int\", \"initial\": 0, \"min\": 0, \"max\": 9}";
  const auto wide = load_spec(R"J({"name": "wide", "goal": "v39 == 3", "variables": {)J" + vars +
                              R"J(}, "actions": [
      {"id": "a", "cost": 1, "effects": [{"variable": "v0", "mode": "increment", "value": "1"}]},
      {"id": "z", "cost": 1, "effects": [{"variable": "v39", "mode": "increment", "value": "1"}]}],
    "budget": {"total": 20, "min_action_cost": 1}})J");
  const auto m = vessel();
  LookaheadOptions o;
  o.depth = 3;
  auto answer = [&](const TaskModel& model) {
    const LookaheadResult r = plan_to_goal(model, Situation::initial(model), o);
    return std::to_string(r.situations) + " " + describe_plan(model, r.cheapest_plan);
  };
  const std::string first_small = answer(*small);
  const std::string first_vessel = answer(*m);
  const std::string first_wide = answer(*wide);
  CHECK(first_wide == "10 z, z, z");  // 1 + 2 + 3 + 4 situations (multisets of a and z)
  for (int round = 0; round < 3; ++round) {
    CHECK(answer(*wide) == first_wide);
    CHECK(answer(*small) == first_small);
    CHECK(answer(*m) == first_vessel);
  }
  std::vector<std::string> nested;
  LookaheadOptions outer = o;
  outer.depth = 12;
  outer.progress = [&](std::size_t) { nested.push_back(answer(*small)); };
  std::string counters;
  for (const char* v : {"a", "b", "c", "d", "e"})
    counters += std::string(counters.empty() ? "" : ", ") + "{\"id\": \"inc_" + v +
                "\", \"cost\": 1, \"effects\": [{\"variable\": \"" + v +
                "\", \"mode\": \"increment\", \"value\": \"1\"}]}";
  const auto five = load_spec(
      R"J({"name": "five", "goal": "a == 50", "variables": {"a": {"type": "int", "initial": 0},
      "b": {"type": "int", "initial": 0}, "c": {"type": "int", "initial": 0},
      "d": {"type": "int", "initial": 0}, "e": {"type": "int", "initial": 0}}, "actions": [)J" +
      counters + R"J(], "budget": {"total": 100, "min_action_cost": 1}})J");
  const LookaheadResult big = plan_to_goal(*five, Situation::initial(*five), outer);
  CHECK(big.situations == 6188);  // every multiset of at most 12 of the 5 steps
  REQUIRE_FALSE(nested.empty());
  for (const std::string& n : nested) CHECK(n == first_small);
  CHECK(answer(*five) == answer(*five));
}
