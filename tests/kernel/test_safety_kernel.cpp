// SafetyKernel: the checks in order, reason codes, atomic commit, rollback, emergency escape.
#include <catch2/catch.hpp>

#include <array>
#include <limits>
#include <random>

#include "support.hpp"

using namespace clampai::kernel;
using clampai::test::model_from;

namespace {

const char* kCounter = R"J({
  "variables": {
    "n": {"type": "int", "initial": 0, "min": 0, "max": 100},
    "d": {"type": "decimal", "scale": 2, "initial": "1.00"},
    "tags": {"type": "list", "element": "string", "initial": [], "max_length": 2},
    "note": {"type": "string", "initial": "", "optional": true},
    "mode": {"type": "enum", "values": ["a", "b"], "initial": "a"}
  },
  "actions": [
    {"id": "inc", "cost": 1, "effects": [{"variable": "n", "mode": "increment", "value": 10}]},
    {"id": "dec", "cost": 1, "effects": [{"variable": "n", "mode": "decrement", "value": 10}]},
    {"id": "add", "cost": "0.5 * k", "parameters": {"k": {"type": "int", "min": 1, "max": 4}},
     "effects": [{"variable": "n", "mode": "increment", "value": "k"}]},
    {"id": "double", "cost": 1, "effects": [{"variable": "d", "mode": "multiply", "value": 2}]},
    {"id": "tag", "cost": 1, "effects": [{"variable": "tags", "mode": "append", "value": "'t'"}, {"variable": "mode", "mode": "set", "value": "'b'"}]},
    {"id": "untag", "cost": 1, "effects": [{"variable": "tags", "mode": "remove", "value": "'t'"}]},
    {"id": "forget", "cost": 1, "effects": [{"variable": "note", "mode": "delete"}]},
    {"id": "read_note", "cost": 1, "effects": [{"variable": "n", "mode": "set", "value": "len(tags) + (if note == '' then 1 else 2)"}]},
    {"id": "swap", "cost": 1, "requires": "n >= 10", "effects": [{"variable": "n", "mode": "set", "value": "n - 10"}, {"variable": "d", "mode": "increment", "value": "0.25"}]},
    {"id": "cheap", "cost": 0.001, "effects": []},
    {"id": "irreversible", "cost": 1, "reversible": false, "effects": [{"variable": "n", "mode": "increment", "value": 1}]},
    {"id": "after_inc", "cost": 1, "effects": []},
    {"id": "hover", "cost": 0, "effects": [{"variable": "mode", "mode": "set", "value": "'a'"}]}
  ],
  "invariants": [
    {"name": "n_small", "check": "n <= 50", "description": "n stays small", "suggestion": "decrement first"},
    {"name": "n_warn", "check": "n < 30", "enforcement": "monitoring"},
    {"name": "d_monotone", "check": "d >= old(d)"}
  ],
  "budget": {"total": 10, "min_action_cost": 0.5},
  "emergency_actions": ["hover"],
  "dependencies": {"after_inc": ["inc"]}
})J";

}  // namespace

TEST_CASE("SafetyKernel: an approved action commits charge, step, trace and state together",
          "[kernel][safety_kernel]") {
  SafetyKernel k(model_from(kCounter));
  const Outcome o = k.execute("inc");
  REQUIRE(o.decision.approved);
  REQUIRE(o.receipt.has_value());
  REQUIRE(k.state().get("n") == Value::integer(10));
  REQUIRE(k.budget().net() == 1000);
  REQUIRE(k.steps() == 1);
  REQUIRE(k.trace().size() == 2);
  REQUIRE(k.trace().back().action == "inc");
  REQUIRE(k.verify_trace().ok);
}

TEST_CASE("SafetyKernel: evaluate has no side effects", "[kernel][safety_kernel]") {
  SafetyKernel k(model_from(kCounter));
  for (int i = 0; i < 3; ++i) REQUIRE(k.evaluate("inc").approved);
  REQUIRE(k.state() == k.model().initial_state());
  REQUIRE(k.budget().gross() == 0);
  REQUIRE(k.steps() == 0);
  REQUIRE(k.trace().size() == 1);
}

TEST_CASE("SafetyKernel: a blocking invariant rejects with its name, description and suggestion",
          "[kernel][safety_kernel]") {
  SafetyKernel k(model_from(kCounter));
  for (int i = 0; i < 5; ++i) REQUIRE(k.execute("inc").decision.approved);
  const Decision d = k.evaluate("inc");
  REQUIRE_FALSE(d.approved);
  REQUIRE(d.has(ReasonCode::invariant_violated, "n_small"));
  REQUIRE_THAT(
      d.reasons[0].message,
      Catch::Matchers::Contains("n stays small") && Catch::Matchers::Contains("decrement first"));
}

TEST_CASE("SafetyKernel: monitoring violations are reported on an approved verdict",
          "[kernel][safety_kernel]") {
  SafetyKernel k(model_from(kCounter));
  for (int i = 0; i < 2; ++i) k.execute("inc");
  const Decision d = k.evaluate("inc");  // n would be 30
  REQUIRE(d.approved);
  REQUIRE(d.warnings.size() == 1);
  REQUIRE(d.warnings[0].code == ReasonCode::monitoring_violated);
  REQUIRE(d.warnings[0].subject == "n_warn");
  const Outcome o = k.execute("inc");
  REQUIRE(o.decision.approved);
  REQUIRE(k.trace().back().warnings.size() == 1);
}

TEST_CASE("SafetyKernel: transition invariants compare with the pre-action state",
          "[kernel][safety_kernel]") {
  const char* spec = R"J({"variables": {"d": {"type": "decimal", "scale": 2, "initial": "1.00"}},
    "actions": [{"id": "down", "cost": 1, "effects": [{"variable": "d", "mode": "decrement", "value": "0.01"}]},
                {"id": "up", "cost": 1, "effects": [{"variable": "d", "mode": "increment", "value": "0.01"}]}],
    "invariants": [{"name": "d_monotone", "check": "d >= old(d)"}],
    "budget": {"total": 10, "min_action_cost": 1}})J";
  SafetyKernel k(model_from(spec));
  REQUIRE(k.evaluate("down").has(ReasonCode::invariant_violated, "d_monotone"));
  REQUIRE(k.evaluate("up").approved);
}

TEST_CASE("SafetyKernel: a verdict lists every failing check with its code",
          "[kernel][safety_kernel]") {
  const char* spec = R"J({"variables": {"n": {"type": "int", "initial": 0, "max": 5}},
    "actions": [{"id": "a", "cost": 3, "effects": []},
                {"id": "big", "cost": 100, "requires": "n > 0", "effects": [{"variable": "n", "mode": "increment", "value": 9}]},
                {"id": "b", "cost": 0.1, "effects": []}],
    "dependencies": {"big": ["a"]},
    "invariants": [{"name": "n_neg", "check": "n < 3"}],
    "budget": {"total": 10, "min_action_cost": 1}})J";
  SafetyKernel k(model_from(spec));
  const Decision d = k.evaluate("big");
  REQUIRE_FALSE(d.approved);
  std::vector<ReasonCode> codes;
  for (const auto& r : d.reasons) codes.push_back(r.code);
  REQUIRE(codes == std::vector<ReasonCode>{ReasonCode::budget_exceeded,
                                           ReasonCode::dependency_unmet,
                                           ReasonCode::requires_failed,
                                           ReasonCode::bound_violated,
                                           ReasonCode::invariant_violated});
  REQUIRE(k.evaluate("b").has(ReasonCode::below_min_cost));
  REQUIRE(k.evaluate("nope").has(ReasonCode::unknown_action));
}

TEST_CASE("SafetyKernel: parameters are checked, defaulted and drive the cost",
          "[kernel][safety_kernel]") {
  SafetyKernel k(model_from(kCounter));
  REQUIRE(k.evaluate("add").has(ReasonCode::invalid_parameter));  // no default
  REQUIRE(k.evaluate("add", {{"k", Value::integer(9)}}).has(ReasonCode::invalid_parameter));
  REQUIRE(
      k.evaluate("add", {{"k", Value::number(Decimal{15, 1})}}).has(ReasonCode::invalid_parameter));
  REQUIRE(k.evaluate("add", {{"j", Value::integer(1)}}).has(ReasonCode::invalid_parameter));
  const Decision d = k.evaluate("add", {{"k", Value::integer(3)}});
  REQUIRE(d.approved);
  REQUIRE(d.cost == 1500);  // 0.5 * 3 at budget scale 3
}

TEST_CASE("SafetyKernel: effects read the pre-action state (parallel assignment)",
          "[kernel][safety_kernel]") {
  SafetyKernel k(model_from(kCounter));
  k.execute("inc");
  const Outcome o = k.execute("swap");
  REQUIRE(o.decision.approved);
  REQUIRE(k.state().get("n") == Value::integer(0));
  REQUIRE(k.state().get("d") == Value::number(Decimal{125, 2}));
}

TEST_CASE("SafetyKernel: every effect mode applies and list bounds hold",
          "[kernel][safety_kernel]") {
  SafetyKernel k(model_from(kCounter));
  REQUIRE(k.execute("double").decision.approved);
  REQUIRE(k.state().get("d") == Value::number(Decimal{200, 2}));
  REQUIRE(k.execute("tag").decision.approved);
  REQUIRE(k.execute("tag").decision.approved);
  REQUIRE(k.state().get("tags") == Value::list({Value::string("t"), Value::string("t")}));
  REQUIRE(k.evaluate("tag").has(ReasonCode::bound_violated, "tags"));
  REQUIRE(k.execute("untag").decision.approved);
  REQUIRE(k.state().get("tags") == Value::list({Value::string("t")}));
  REQUIRE(k.execute("read_note").decision.approved);
  REQUIRE(k.state().get("n") == Value::integer(2));
  REQUIRE(k.execute("forget").decision.approved);
  REQUIRE_FALSE(k.state().get("note").is_defined());
  // Reading a deleted variable is a rejection with its own code, not an exception.
  REQUIRE(k.evaluate("read_note").has(ReasonCode::undefined_value, "n"));
}

TEST_CASE("SafetyKernel: arithmetic overflow is a rejection with its own code",
          "[kernel][safety_kernel]") {
  const char* spec = R"J({"variables": {"n": {"type": "int", "initial": 9223372036854775800}},
    "actions": [{"id": "inc", "cost": 1, "effects": [{"variable": "n", "mode": "increment", "value": 100}]}],
    "budget": {"total": 10, "min_action_cost": 1}})J";
  SafetyKernel k(model_from(spec));
  const Decision d = k.evaluate("inc");
  REQUIRE(d.has(ReasonCode::overflow, "n"));
  REQUIRE(k.execute("inc").state == k.model().initial_state());
}

TEST_CASE("SafetyKernel: dependencies must complete first", "[kernel][safety_kernel]") {
  SafetyKernel k(model_from(kCounter));
  REQUIRE(k.evaluate("after_inc").has(ReasonCode::dependency_unmet, "inc"));
  const Outcome o = k.execute("inc");
  REQUIRE(k.evaluate("after_inc").approved);
  k.rollback(*o.receipt);  // undoing the dependency undoes its completion
  REQUIRE(k.evaluate("after_inc").has(ReasonCode::dependency_unmet, "inc"));
}

TEST_CASE("SafetyKernel: the step limit is floor(B / min cost) and stops execution",
          "[kernel][safety_kernel]") {
  const char* spec = R"J({"variables": {}, "actions": [{"id": "a", "cost": 0.1, "effects": []}],
    "budget": {"total": 0.3, "min_action_cost": 0.1}})J";
  SafetyKernel k(model_from(spec));
  REQUIRE(k.step_limit() == 3);  // exact: the Python reference computes 2
  for (int i = 0; i < 3; ++i) REQUIRE(k.execute("a").decision.approved);
  const Decision d = k.evaluate("a");
  REQUIRE(d.has(ReasonCode::step_limit));
  REQUIRE(d.has(ReasonCode::budget_exceeded));
}

TEST_CASE("SafetyKernel: declared max_steps lowers the step limit", "[kernel][safety_kernel]") {
  const char* spec = R"J({"variables": {}, "actions": [{"id": "a", "cost": 1, "effects": []}],
    "budget": {"total": 100, "min_action_cost": 1, "max_steps": 2}})J";
  SafetyKernel k(model_from(spec));
  k.execute("a");
  k.execute("a");
  REQUIRE(k.evaluate("a").has(ReasonCode::step_limit));
}

TEST_CASE(
    "SafetyKernel: an emergency action works with the budget spent and at the step limit (T8)",
    "[kernel][safety_kernel]") {
  SafetyKernel k(model_from(kCounter));
  for (int i = 0; i < 5; ++i) k.execute("tag"), k.execute("untag");
  REQUIRE(k.budget().remaining() == 0);
  REQUIRE(k.evaluate("inc").has(ReasonCode::budget_exceeded));
  const Outcome o = k.execute("hover");
  REQUIRE(o.decision.approved);
  REQUIRE(k.emergency_steps() == 1);
  REQUIRE(k.steps() == 10);
  REQUIRE(k.state().get("mode") == Value::string("a"));
}

TEST_CASE("SafetyKernel: a rejection changes nothing, and is traced only when asked",
          "[kernel][safety_kernel]") {
  KernelOptions options;
  options.record_rejections = true;
  SafetyKernel k(model_from(kCounter), options);
  const Outcome o = k.execute("dec");  // n would go below its minimum
  REQUIRE_FALSE(o.decision.approved);
  REQUIRE(o.decision.has(ReasonCode::bound_violated, "n"));
  REQUIRE_FALSE(o.receipt.has_value());
  REQUIRE(k.state() == k.model().initial_state());
  REQUIRE(k.budget().gross() == 0);
  REQUIRE(k.steps() == 0);
  REQUIRE(k.trace().size() == 2);
  REQUIRE(k.trace().back().kind == EntryKind::rejected);
  REQUIRE(k.trace().back().reasons[0].code == ReasonCode::bound_violated);
  k.execute("no_such_action");
  REQUIRE(k.trace().back().reasons[0].code == ReasonCode::unknown_action);
  SafetyKernel quiet(model_from(kCounter));
  quiet.execute("dec");
  REQUIRE(quiet.trace().size() == 1);
}

TEST_CASE("SafetyKernel: rollback restores the exact state, refunds once and is traced",
          "[kernel][safety_kernel]") {
  SafetyKernel k(model_from(kCounter));
  const State s0 = k.state();
  const Outcome a = k.execute("tag");
  const State s1 = k.state();
  const Outcome b = k.execute("inc");
  REQUIRE_THROWS_WITH(k.rollback(*a.receipt), Catch::Matchers::Contains("not the one it produced"));
  const Outcome rb = k.rollback(*b.receipt);
  REQUIRE(rb.state == s1);
  REQUIRE(k.budget().net() == 1000);
  REQUIRE(k.budget().gross() == 2000);  // T4: gross never decreases
  REQUIRE(k.steps() == 2);              // T2 is not loosened
  REQUIRE(k.trace().back().kind == EntryKind::rolled_back);
  REQUIRE_THROWS_WITH(k.rollback(*b.receipt), Catch::Matchers::Contains("cannot roll back"));
  k.rollback(*a.receipt);
  REQUIRE(k.state() == s0);
  REQUIRE(k.budget().net() == 0);
  REQUIRE_THROWS_WITH(k.rollback(*a.receipt), Catch::Matchers::Contains("nothing to roll back"));
  const Outcome c = k.execute("irreversible");
  REQUIRE_THROWS_WITH(k.rollback(*c.receipt), Catch::Matchers::Contains("irreversible"));
  REQUIRE(k.verify_trace().ok);
}

TEST_CASE("SafetyKernel: refuses an initial state that violates a blocking invariant",
          "[kernel][safety_kernel]") {
  const char* spec = R"J({"variables": {"n": {"type": "int", "initial": 5}}, "actions": [],
    "invariants": [{"name": "small", "check": "n < 3"}], "budget": {"total": 1, "min_action_cost": 1}})J";
  REQUIRE_THROWS_WITH(SafetyKernel(model_from(spec)),
                      Catch::Matchers::Contains("initial state violates blocking invariant `small` "
                                                "(invariants[0], line 2, column 20)"));
}

TEST_CASE("SafetyKernel: native predicates are enforced, and a throwing one fails closed",
          "[kernel][safety_kernel]") {
  TaskDecl t;
  t.variables.push_back(VariableDecl{"n", Type::integer(), Value::integer(0)});
  t.actions.push_back(
      ActionDecl{"inc", "", "", "1", true, {}, "", {EffectDecl{"n", EffectMode::increment, "1"}}});
  t.actions.push_back(
      ActionDecl{"jump", "", "", "1", true, {}, "", {EffectDecl{"n", EffectMode::set, "7"}}});
  InvariantDecl even;
  even.name = "not_three";
  even.predicate = [](const State& s) { return !(s.get("n") == Value::integer(3)); };
  InvariantDecl thrower;
  thrower.name = "no_seven";
  thrower.predicate = [](const State& s) {
    if (s.get("n") == Value::integer(7)) throw std::runtime_error("boom");
    return true;
  };
  t.invariants = {even, thrower};
  t.budget = BudgetDecl{Decimal{10, 0}, Decimal{1, 0}};
  SafetyKernel k(build_model(t));
  REQUIRE(k.execute("inc").decision.approved);
  REQUIRE(k.execute("inc").decision.approved);
  REQUIRE(k.evaluate("inc").has(ReasonCode::invariant_violated, "not_three"));
  const Decision d = k.evaluate("jump");
  REQUIRE(d.has(ReasonCode::invariant_error, "no_seven"));
  REQUIRE_THAT(d.reasons[0].message, Catch::Matchers::Contains("threw: boom"));
}

TEST_CASE("SafetyKernel: a native goal is checked by goal_reached, and a throwing one fails closed",
          "[kernel][safety_kernel]") {
  TaskDecl t;
  t.variables.push_back(VariableDecl{"n", Type::integer(), Value::integer(0)});
  t.actions.push_back(
      ActionDecl{"inc", "", "", "1", true, {}, "", {EffectDecl{"n", EffectMode::increment, "1"}}});
  t.goal_predicate = [](const State& s) {
    if (s.get("n") == Value::integer(3)) throw std::runtime_error("boom");
    return s.get("n") == Value::integer(2);
  };
  t.budget = BudgetDecl{Decimal{10, 0}, Decimal{1, 0}};
  const auto model = build_model(t);
  REQUIRE(model->goal == nullptr);
  SafetyKernel k(model);
  REQUIRE_FALSE(k.goal_reached());
  k.execute("inc");
  k.execute("inc");
  REQUIRE(k.goal_reached());
  k.execute("inc");
  REQUIRE_FALSE(k.goal_reached());  // it threw
  t.goal_predicate = nullptr;
  REQUIRE(build_model(t)->digest != model->digest);
}

TEST_CASE("SafetyKernel: nothing executes after the seal", "[kernel][safety_kernel]") {
  SafetyKernel k(model_from(kCounter));
  k.execute("inc");
  const TraceEntry seal = k.seal();
  REQUIRE(seal.kind == EntryKind::sealed);
  REQUIRE(seal.state == state_digest(k.state()));
  REQUIRE_THROWS_WITH(k.execute("inc"), Catch::Matchers::Contains("sealed"));
  REQUIRE_THROWS_AS(k.seal(), clampai::InvalidArgument);
  REQUIRE(verify_chain(k.trace()).ok);
}

// The kernel reads the simplest comparisons (`x OP c`, `x + y OP c`, `x - y OP c`) from a flat
// array of its own; `decide` on the model reads them through the expression. Random models of
// many such invariants (scales mixed, literals at the int64 edge, a variable that an action
// deletes) and random states: both decide exactly alike, every reason and warning included.
TEST_CASE("SafetyKernel: flat invariants decide as the model's expressions do", "[kernel]") {
  std::mt19937_64 rng(20261127);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const std::vector<std::string> names{"a", "b", "c2", "d4", "opt"};
  const std::vector<std::string> ops{" < ", " <= ", " > ", " >= ", " == ", " != "};
  const std::vector<std::string> literals{"0",
                                          "3",
                                          "-2.5",
                                          "0.0001",
                                          "9223372036854775807",
                                          "-9223372036854775807",
                                          "92233720368547758.07"};
  auto units = [&]() -> std::int64_t {
    constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
    switch (pick(0, 5)) {
      case 0:
        return kMax - pick(0, 2);
      case 1:
        return -kMax + pick(0, 2);
      default:
        return pick(-40, 40);
    }
  };
  int flat_shapes = 0;
  for (int trial = 0; trial < 60; ++trial) {
    TaskDecl t;
    t.name = "flat";
    t.variables.push_back(VariableDecl{"a", Type::integer(), Value::integer(0)});
    t.variables.push_back(VariableDecl{"b", Type::integer(), Value::integer(0)});
    t.variables.push_back(VariableDecl{"c2", Type::decimal(2), Value::number(Decimal{0, 2})});
    t.variables.push_back(VariableDecl{"d4", Type::decimal(4), Value::number(Decimal{0, 4})});
    VariableDecl opt{"opt", Type::integer(), Value::integer(0)};
    opt.optional = true;
    t.variables.push_back(opt);
    ActionDecl step;
    step.id = "step";
    step.cost = "1";
    step.effects = {{"a", EffectMode::increment, "1"}, {"c2", EffectMode::decrement, "0.5"}};
    ActionDecl drop;
    drop.id = "drop";
    drop.cost = "1";
    drop.effects = {{"opt", EffectMode::del, ""}, {"b", EffectMode::set, "b + 2"}};
    t.actions = {step, drop};
    for (int i = 0, n = pick(1, 40); i < n; ++i) {
      InvariantDecl inv;
      inv.name = "i" + std::to_string(i);
      std::string lhs = names[pick(0, 4)];
      if (pick(0, 2) > 0) lhs += (pick(0, 1) ? " + " : " - ") + names[pick(0, 4)];
      const int op = pick(0, 5);
      const int literal = pick(0, 6);
      inv.expression = lhs + ops[op] + literals[literal];
      // The initial state (every variable 0) must satisfy the blocking ones.
      const int sign = literal == 0 ? 0 : literal == 2 || literal == 5 ? -1 : 1;
      const bool holds_at_zero =
          std::array<bool, 6>{sign > 0, sign >= 0, sign < 0, sign <= 0, sign == 0, sign != 0}[op];
      inv.enforcement =
          !holds_at_zero || pick(0, 3) == 0 ? Enforcement::monitoring : Enforcement::blocking;
      t.invariants.push_back(inv);
    }
    t.budget = BudgetDecl{Decimal{1000, 0}, Decimal{1, 0}};
    const auto model = build_model(t);
    const SafetyKernel kernel(model);
    for (const Invariant& inv : model->invariants)
      if (inv.expr && inv.expr->program) ++flat_shapes;
    for (int k = 0; k < 40; ++k) {
      State state = model->initial_state().with({{0, Value::integer(units())},
                                                 {1, Value::integer(units())},
                                                 {2, Value::number(Decimal{units(), 2})},
                                                 {3, Value::number(Decimal{units(), 4})},
                                                 {4, Value::integer(units())}});
      if (pick(0, 3) == 0) state = state.with(4, Value());  // already deleted
      Situation s = Situation::initial(*model);
      s.state = state;
      for (std::size_t action = 0; action < model->actions.size(); ++action) {
        const Proposal p{action, {}};
        const Decision flat = kernel.evaluate_in(state, p);
        const Decision plain = decide(*model, s, p);
        INFO("trial " << trial << ", action " << action);
        REQUIRE(flat.approved == plain.approved);
        REQUIRE(flat.reasons.size() == plain.reasons.size());
        for (std::size_t r = 0; r < flat.reasons.size(); ++r) {
          CHECK(flat.reasons[r].code == plain.reasons[r].code);
          CHECK(flat.reasons[r].subject == plain.reasons[r].subject);
          CHECK(flat.reasons[r].message == plain.reasons[r].message);
        }
        REQUIRE(flat.warnings.size() == plain.warnings.size());
        for (std::size_t r = 0; r < flat.warnings.size(); ++r)
          CHECK(flat.warnings[r].message == plain.warnings[r].message);
      }
    }
  }
  CHECK(flat_shapes > 500);  // most of them are compiled comparisons
}
