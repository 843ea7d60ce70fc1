// Regression tests of issue 14 ("never a wrong verdict"): each was a wrong, crashing or
// needlessly unknown verdict before every verifier path was built on the symbolic step.
#include <catch2/catch.hpp>

#include "../kernel/support.hpp"
#include "clampai/verifier.hpp"
#include "find_obligation.hpp"

using namespace clampai;
using clampai::test::find;

namespace {

kernel::Decision decide_in(const std::shared_ptr<const kernel::TaskModel>& m,
                           const std::vector<std::pair<std::string, kernel::Value>>& values,
                           const std::string& action) {
  std::vector<std::pair<kernel::VarId, kernel::Value>> changes;
  for (const auto& [name, v] : values) changes.emplace_back(*m->schema->find(name), v);
  kernel::Situation s = kernel::Situation::initial(*m);
  s.state = s.state.with(changes);
  return kernel::decide(*m, s, kernel::Proposal{*m->find_action(action), {}});
}

}  // namespace

TEST_CASE("Verdicts: a value copied from an enumeration's subset keeps its value, not its index",
          "[verifier][issue14]") {
  // shade's values are a subset of color's in another order: 'red' is shade's second value and
  // color's first. Copying the index would make `color := shade` unable to produce 'red'.
  const auto m = test::model_from(R"J({
    "variables": {
      "color": {"type": "enum", "values": ["red", "green", "blue"], "initial": "green"},
      "shade": {"type": "enum", "values": ["green", "red"], "initial": "green"}},
    "actions": [
      {"id": "copy", "cost": 1, "effects": [{"variable": "color", "mode": "set", "value": "shade"}]},
      {"id": "redden", "cost": 1, "effects": [{"variable": "shade", "mode": "set", "value": "'red'"}]}],
    "invariants": [{"name": "not_red", "check": "color != 'red'"}],
    "budget": {"total": 10, "min_action_cost": 1}})J");
  verifier::VerifyOptions options;
  options.depth = 3;
  const auto r = verifier::verify(m, options);
  const auto& o = find(r, "preservation:copy:not_red");
  REQUIRE(o.verdict == verifier::VerdictKind::refuted);  // the kernel blocks copy when shade = red
  REQUIRE(o.reachability.status == verifier::Reachability::Status::reachable);
  REQUIRE(o.reachability.witness.front().first == "redden");
  REQUIRE(decide_in(m, {{"shade", kernel::Value::string("red")}}, "copy")
              .has(kernel::ReasonCode::invariant_violated, "not_red"));
}

TEST_CASE("Verdicts: an `if` over two enumerations compared with a literal is encoded",
          "[verifier][issue14]") {
  const auto m = test::model_from(R"J({
    "variables": {
      "flag": {"type": "bool", "initial": false},
      "color": {"type": "enum", "values": ["red", "green", "blue"], "initial": "green"},
      "shade": {"type": "enum", "values": ["green", "red"], "initial": "green"}},
    "actions": [{"id": "toggle", "cost": 1, "effects": [{"variable": "flag", "mode": "set", "value": "!flag"}]}],
    "invariants": [{"name": "greenish", "check": "(if flag then shade else color) == 'green' && shade == color"}],
    "budget": {"total": 10, "min_action_cost": 1}})J");
  verifier::Report r;
  REQUIRE_NOTHROW(r = verifier::verify(m));  // was a Z3 sort error (exit 2)
  const auto& o = find(r, "preservation:toggle:greenish");
  REQUIRE(o.verdict == verifier::VerdictKind::proved);  // both are green whenever it holds
  REQUIRE(find(r, "base:greenish").verdict == verifier::VerdictKind::proved);
}

TEST_CASE("Verdicts: a literal that overflows only at an `if`'s joined scale overflows for both",
          "[verifier][issue14]") {
  // 922337203685477581 fits an int but not a decimal(1): the `if` joins its branches at scale 1.
  const auto m = test::model_from(R"J({
    "variables": {"flag": {"type": "bool", "initial": false}, "x": {"type": "int", "initial": 0}},
    "actions": [{"id": "boom", "cost": 1,
      "requires": "(if flag then 922337203685477581 else 0.5) + 0 > 1",
      "effects": [{"variable": "x", "mode": "set", "value": "5"}]}],
    "invariants": [{"name": "small", "check": "x <= 3"}],
    "budget": {"total": 10, "min_action_cost": 1}})J");
  // The kernel cannot evaluate the guard when flag holds (and it is false otherwise) ...
  const auto d = decide_in(m, {{"flag", kernel::Value::boolean(true)}}, "boom");
  REQUIRE_FALSE(d.approved);
  REQUIRE(d.has(kernel::ReasonCode::requires_failed, "boom"));
  // ... so the verifier's proof (the action is never enabled) is the kernel's behaviour.
  const auto r = verifier::verify(m);
  REQUIRE(find(r, "preservation:boom:small").verdict == verifier::VerdictKind::proved);
}

TEST_CASE(
    "Verdicts: --depth reports the refuted base case of an initial state that breaks an "
    "invariant",
    "[verifier][issue14][reach]") {
  const auto m = test::model_from(R"J({
    "variables": {"n": {"type": "int", "initial": 5}},
    "actions": [{"id": "up", "cost": 1, "effects": [{"variable": "n", "mode": "increment", "value": 1}]}],
    "invariants": [{"name": "small", "check": "n < 3"}],
    "budget": {"total": 5, "min_action_cost": 1}})J");
  verifier::VerifyOptions options;
  options.depth = 3;
  verifier::Report r;
  REQUIRE_NOTHROW(r = verifier::verify(m, options));  // was InvalidArgument (exit 2)
  REQUIRE(find(r, "base:small").verdict == verifier::VerdictKind::refuted);
  const auto& o = find(r, "preservation:up:small");
  REQUIRE(o.verdict == verifier::VerdictKind::refuted);
  // From the initial state the kernel already blocks `up`: reachable in 0 steps.
  REQUIRE(o.reachability.status == verifier::Reachability::Status::reachable);
  REQUIRE(r.exit_code() == 1);
}

TEST_CASE("Verdicts: the bounded search counts the budget, the step limit and post-state bounds",
          "[verifier][issue14][reach]") {
  // `jump` is not inductive for `cap`, and is blocked only once x >= 2 — which needs two `inc`,
  // more than the budget (one step) or z's bound (inc also increments z, whose max is 1)
  // allows.
  auto spec = [](const std::string& z, const std::string& budget) {
    return R"J({"variables": {"x": {"type": "int", "initial": 0}, "z": )J" + z +
           R"J(, "y": {"type": "int", "initial": 0}},
      "actions": [
        {"id": "inc", "cost": 1, "effects": [{"variable": "x", "mode": "increment", "value": 1},
                                             {"variable": "z", "mode": "increment", "value": 1}]},
        {"id": "jump", "cost": 1, "requires": "x >= 2", "effects": [{"variable": "y", "mode": "set", "value": "100"}]}],
      "invariants": [{"name": "cap", "check": "y <= 50"}],
      "budget": )J" +
           budget + "}";
  };
  const std::string free_x = R"({"type": "int", "initial": 0})";
  const std::string bounded_x = R"({"type": "int", "initial": 0, "max": 1})";
  for (const std::string& text : {spec(free_x, R"({"total": 1, "min_action_cost": 1})"),
                                  spec(bounded_x, R"({"total": 10, "min_action_cost": 1})"),
                                  spec(free_x, R"({"total": 10, "min_action_cost": 1})")}) {
    INFO(text);
    verifier::VerifyOptions options;
    options.depth = 4;
    const auto r = verifier::verify(test::model_from(text), options);
    const auto& o = find(r, "preservation:jump:cap");
    REQUIRE(o.verdict == verifier::VerdictKind::refuted);
    INFO(o.reachability.reason);
    // Only without either limit can two `inc` reach x = 2.
    const bool limited = text.find(R"("total": 1,)") != std::string::npos ||
                         text.find(R"("max": 1)") != std::string::npos;
    REQUIRE(o.reachability.status == (limited ? verifier::Reachability::Status::unreachable
                                              : verifier::Reachability::Status::reachable));
  }
}

TEST_CASE("Verdicts: the symbolic lookahead reaches a goal through an enumeration's subset",
          "[verifier][issue14][lookahead]") {
  const auto m = test::model_from(R"J({
    "goal": {"description": "red", "check": "color == 'red'"},
    "variables": {
      "color": {"type": "enum", "values": ["red", "green", "blue"], "initial": "green"},
      "shade": {"type": "enum", "values": ["green", "red"], "initial": "green"}},
    "actions": [
      {"id": "copy", "cost": 1, "effects": [{"variable": "color", "mode": "set", "value": "shade"}]},
      {"id": "redden", "cost": 1, "effects": [{"variable": "shade", "mode": "set", "value": "'red'"}]}],
    "invariants": [],
    "budget": {"total": 10, "min_action_cost": 1}})J");
  clampai::driver::LookaheadOptions options;
  options.depth = 2;
  const auto r = verifier::symbolic_lookahead(
      *m, kernel::Situation::initial(*m), kernel::Proposal{*m->find_action("redden"), {}}, options);
  REQUIRE(r.complete);
  REQUIRE(r.goal_reachable);  // was missed: `copy` moved shade's index, not its value
  REQUIRE(r.cheapest_plan.size() == 1);
  REQUIRE(m->actions[r.cheapest_plan[0].action].id == "copy");
}

TEST_CASE("Verdicts: repair finds the value an enumeration's subset provides",
          "[verifier][issue14][repair]") {
  const auto m = test::model_from(R"J({
    "variables": {
      "color": {"type": "enum", "values": ["red", "green", "blue"], "initial": "blue"},
      "shade": {"type": "enum", "values": ["green", "red"], "initial": "red"}},
    "actions": [{"id": "paint", "cost": 1,
      "parameters": {"k": {"type": "int", "min": 0, "max": 1}},
      "effects": [{"variable": "color", "mode": "set", "value": "if k == 0 then shade else 'green'"}]}],
    "invariants": [{"name": "not_green", "check": "color != 'green'"}],
    "budget": {"total": 10, "min_action_cost": 1}})J");
  const kernel::Proposal p{0, {kernel::Value::integer(1)}};
  const auto r = verifier::repair(*m, kernel::Situation::initial(*m), p);
  // k = 0 copies shade's value, 'red' (was NO REPAIR: the encoder copied its index, 'green').
  REQUIRE(r.status == verifier::RepairStatus::repaired);
  REQUIRE(r.repaired.params[0].to_string() == "0");
  REQUIRE(r.decision.approved);
}
