// The deterministic driver and the run loop.
#include <catch2/catch.hpp>

#include "../kernel/support.hpp"
#include "clampai/driver.hpp"

using namespace clampai::kernel;
using namespace clampai::driver;
using clampai::test::source_path;

TEST_CASE("Driver: the quick start reaches its goal in two steps", "[kernel][driver]") {
  SafetyKernel k(load_spec_file(source_path("examples/quickstart.json")));
  FirstApprovableDriver driver;
  const RunResult r = run(k, driver);
  REQUIRE(r.goal_reached);
  REQUIRE(r.termination == Termination::goal_reached);
  REQUIRE(r.actions == std::vector<std::string>{"process_batch", "process_batch"});
  REQUIRE(k.budget().net() == 4000);
}

TEST_CASE("Driver: the cloud deployment follows its dependencies", "[kernel][driver]") {
  SafetyKernel k(load_spec_file(source_path("examples/cloud_deploy.json")));
  FirstApprovableDriver driver;
  const RunResult r = run(k, driver);
  REQUIRE(r.goal_reached);
  REQUIRE(r.actions == std::vector<std::string>{"build", "test", "deploy", "scale_up"});
  REQUIRE(k.state().get("instances") == Value::integer(3));
  REQUIRE(k.emergency_steps() == 0);  // the driver never proposes the emergency action
}

TEST_CASE("Driver: the payments task tops up when the balance would go negative",
          "[kernel][driver]") {
  SafetyKernel k(load_spec_file(source_path("examples/payments.json")));
  FirstApprovableDriver driver;
  const RunResult r = run(k, driver);
  REQUIRE(r.goal_reached);
  REQUIRE(r.actions ==
          std::vector<std::string>{"pay_rent", "pay_supplier", "top_up", "pay_contractor"});
  REQUIRE(k.state().get("balance") ==
          Value::number(Decimal{451, 2}));  // 250 - 120.50 - 99.99 + 20 - 45
  REQUIRE(r.rejections_by_reason.at("invariant_violated") > 0);
}

TEST_CASE("Driver: runs stop at the budget, the step limit or the run's cap", "[kernel][driver]") {
  const char* spec = R"J({"variables": {"n": {"type": "int", "initial": 0}},
    "actions": [{"id": "a", "cost": 1, "effects": [{"variable": "n", "mode": "increment", "value": 1}]}],
    "goal": "n >= 1000", "budget": {"total": 5, "min_action_cost": 1}})J";
  {
    SafetyKernel k(load_spec(spec));
    FirstApprovableDriver driver;
    const RunResult r = run(k, driver);
    REQUIRE_FALSE(r.goal_reached);
    REQUIRE(r.termination == Termination::step_limit);
    REQUIRE(r.executed == 5);
    REQUIRE_FALSE(r.last_reasons.empty());
  }
  {
    SafetyKernel k(load_spec(spec));
    FirstApprovableDriver driver;
    RunOptions options;
    options.max_steps = 2;
    const RunResult r = run(k, driver, options);
    REQUIRE(r.termination == Termination::max_steps);
    REQUIRE(r.executed == 2);
  }
  {
    std::string s = spec;
    s.replace(s.find("\"cost\": 1"), 9, "\"cost\": 2");
    SafetyKernel k(load_spec(s));
    FirstApprovableDriver driver;
    const RunResult r = run(k, driver);
    REQUIRE(r.termination == Termination::budget_exhausted);
    REQUIRE(r.executed == 2);
  }
}

TEST_CASE("Driver: a task with nothing approvable stops and says why", "[kernel][driver]") {
  const char* spec = R"J({"variables": {"n": {"type": "int", "initial": 0}},
    "actions": [{"id": "a", "cost": 1, "requires": "n > 0", "effects": []}],
    "goal": "n > 0", "budget": {"total": 5, "min_action_cost": 1}})J";
  SafetyKernel k(load_spec(spec));
  FirstApprovableDriver driver;
  const RunResult r = run(k, driver);
  REQUIRE(r.termination == Termination::no_approvable_action);
  REQUIRE(r.last_reasons.at(0).code == ReasonCode::requires_failed);
}

TEST_CASE("Driver: default proposals take the default, else the minimum, else 0",
          "[kernel][driver]") {
  const auto model = load_spec(R"J({"variables": {},
    "actions": [{"id": "a", "cost": 1, "parameters": {"d": {"type": "int", "min": 1, "default": 3},
                                                      "m": {"type": "int", "min": 2}, "z": {"type": "int"}}, "effects": []}],
    "budget": {"total": 5, "min_action_cost": 1}})J");
  const Proposal p = default_proposal(*model, 0);
  REQUIRE(p.params == std::vector<Value>{Value::integer(3), Value::integer(2), Value::integer(0)});
}

namespace {

std::shared_ptr<const TaskModel> vessel() {
  return load_spec_file(source_path("examples/pressure_vessel.json"));
}

LookaheadOptions depth(unsigned k) {
  LookaheadOptions o;
  o.depth = k;
  return o;
}

}  // namespace

TEST_CASE("Kernel guard: the lookahead rejects a trap with its witness, atomically",
          "[kernel][driver][lookahead]") {
  const auto m = vessel();
  KernelOptions options;
  options.guard = lookahead_guard(m, depth(3));
  options.record_rejections = true;
  SafetyKernel k(m, options);

  const Decision d = k.evaluate("open_valve");
  REQUIRE_FALSE(d.approved);
  REQUIRE(d.reasons.size() == 1);
  CHECK(d.has(ReasonCode::lookahead_trap, "overflow"));
  CHECK(d.reasons[0].message ==
        "capture basin `overflow` is reachable within 3 steps after `open_valve`: fill, fill, "
        "fill");
  CHECK(to_string(ReasonCode::lookahead_trap) == "lookahead_trap");

  const Situation before = k.situation();
  const Outcome o = k.execute("open_valve");
  REQUIRE_FALSE(o.decision.approved);
  CHECK_FALSE(o.receipt);
  CHECK(k.state() == before.state);  // T5: the veto changes nothing
  CHECK(k.steps() == 0);
  CHECK(k.budget().net() == 0);

  CHECK(k.evaluate("top_up").approved);  // a safe action passes the guard
  REQUIRE(k.execute("top_up").decision.approved);

  // The recorded veto replays: the replaying kernel has no guard, and a rejection is inert.
  k.seal();
  State final_state = m->initial_state();
  CHECK_FALSE(replay_trace(m, k.trace(), &final_state));
  CHECK(final_state == k.state());
}

TEST_CASE(
    "Kernel guard: a shallower lookahead does not see the trap; basins entered directly "
    "are named",
    "[kernel][driver][lookahead]") {
  const auto m = vessel();
  {
    KernelOptions options;
    options.guard = lookahead_guard(m, depth(2));
    SafetyKernel k(m, options);
    CHECK(k.evaluate("open_valve").approved);
  }
  const auto direct = load_spec(R"J({"variables": {"x": {"type": "int", "initial": 0}},
    "actions": [{"id": "jump", "cost": 1, "effects": [{"variable": "x", "mode": "set", "value": 9}]},
                {"id": "stop", "cost": 0, "effects": []}],
    "emergency_actions": ["stop"],
    "capture_basins": [{"name": "deep", "check": "x >= 5"}],
    "budget": {"total": 5, "min_action_cost": 1}})J");
  KernelOptions options;
  options.guard = lookahead_guard(direct, depth(0));
  SafetyKernel k(direct, options);
  const Decision d = k.evaluate("jump");
  REQUIRE(d.has(ReasonCode::lookahead_trap, "deep"));
  CHECK(d.reasons[0].message == "`jump` enters capture basin `deep`");
  REQUIRE(k.execute("jump").decision.approved == false);
  // Emergency actions are never vetoed.
  CHECK(k.evaluate("stop").approved);
}

TEST_CASE(
    "Driver: with the lookahead guard the vessel is filled safely; without it, it is "
    "trapped",
    "[kernel][driver][lookahead]") {
  const auto m = vessel();
  {
    SafetyKernel k(m);
    FirstApprovableDriver driver;
    const RunResult r = run(k, driver);
    CHECK_FALSE(r.goal_reached);
    CHECK(r.termination == Termination::no_approvable_action);
    CHECK(k.state().get("level") == Value::integer(10));
  }
  KernelOptions options;
  options.guard = lookahead_guard(m, depth(3));
  SafetyKernel k(m, options);
  FirstApprovableDriver driver;
  const RunResult r = run(k, driver);
  REQUIRE(r.goal_reached);
  CHECK(r.actions == std::vector<std::string>{"top_up", "top_up", "top_up", "top_up"});
  CHECK(r.rejections_by_reason.at("lookahead_trap") == 1);
}

TEST_CASE("Driver: recovery rolls back out of a dead end and does not retry what it undid",
          "[kernel][driver]") {
  SafetyKernel k(vessel());
  FirstApprovableDriver driver;
  RunOptions options;
  options.recover = true;
  const RunResult r = run(k, driver, options);
  REQUIRE(r.goal_reached);
  CHECK(r.rollbacks == 3);
  CHECK(r.emergencies == 0);
  CHECK(r.recovery ==
        std::vector<std::string>{"rolled back `fill`", "rolled back `fill`", "rolled back `fill`"});
  CHECK(r.actions ==
        std::vector<std::string>{
            "open_valve", "fill", "fill", "fill", "fill", "close_valve", "top_up", "top_up"});
  CHECK(k.state().get("level") == Value::integer(6));
  CHECK(k.steps() == 8);  // rollbacks never give steps back (T2)
}

TEST_CASE("Driver: recovery takes one emergency action when nothing can be rolled back",
          "[kernel][driver]") {
  const auto m = load_spec(R"J({"variables": {"x": {"type": "int", "initial": 0},
                                 "safe": {"type": "bool", "initial": false}},
    "actions": [{"id": "burn", "cost": 1, "reversible": false, "requires": "x == 0",
                 "effects": [{"variable": "x", "mode": "set", "value": 1}]},
                {"id": "park", "cost": 0, "effects": [{"variable": "safe", "mode": "set", "value": true}]}],
    "emergency_actions": ["park"],
    "goal": "x == 2", "budget": {"total": 5, "min_action_cost": 1}})J");
  SafetyKernel k(m);
  FirstApprovableDriver driver;
  RunOptions options;
  options.recover = true;
  const RunResult r = run(k, driver, options);
  CHECK_FALSE(r.goal_reached);
  CHECK(r.termination == Termination::emergency_stop);
  CHECK(r.rollbacks == 0);
  CHECK(r.emergencies == 1);
  CHECK(r.actions == std::vector<std::string>{"burn", "park"});
  CHECK(k.state().get("safe") == Value::boolean(true));
  CHECK(to_string(Termination::emergency_stop) == "emergency_stop");
}

namespace {

// Always proposes the same action, whatever the kernel says.
class Stubborn final : public Driver {
 public:
  explicit Stubborn(std::vector<std::size_t> script) : script_(std::move(script)) {}
  Choice next(const SafetyKernel&) override {
    Choice c;
    if (at_ < script_.size()) c.proposal = Proposal{script_[at_], {}};
    if (at_ + 1 < script_.size()) ++at_;
    return c;
  }

 private:
  std::vector<std::size_t> script_;
  std::size_t at_ = 0;
};

// Proposes each action of the script once, then nothing.
class Scripted final : public Driver {
 public:
  explicit Scripted(std::vector<std::size_t> script) : script_(std::move(script)) {}
  Choice next(const SafetyKernel&) override {
    Choice c;
    if (at_ < script_.size()) c.proposal = Proposal{script_[at_++], {}};
    return c;
  }

 private:
  std::vector<std::size_t> script_;
  std::size_t at_ = 0;
};

}  // namespace

TEST_CASE("Driver: a proposal the kernel keeps refusing at execute ends the run",
          "[kernel][driver]") {
  const auto m = load_spec(R"J({"variables": {"x": {"type": "int", "initial": 0}},
    "actions": [{"id": "bad", "cost": 1, "requires": "x > 5", "effects": []}],
    "goal": "x == 1", "budget": {"total": 5, "min_action_cost": 1}})J");
  SafetyKernel k(m);
  Stubborn driver({0});
  const RunResult r = run(k, driver);  // returning at all is the point
  CHECK(r.termination == Termination::no_approvable_action);
  CHECK(r.executed == 0);
  REQUIRE_FALSE(r.last_reasons.empty());
  CHECK(r.last_reasons[0].code == ReasonCode::requires_failed);
}

TEST_CASE("Driver: recovery does not roll back past an emergency action the driver committed",
          "[kernel][driver]") {
  const auto m = load_spec(R"J({"variables": {"x": {"type": "int", "initial": 0}},
    "actions": [{"id": "act", "cost": 1, "effects": [{"variable": "x", "mode": "increment", "value": 1}]},
                {"id": "halt", "cost": 0, "effects": []}],
    "emergency_actions": ["halt"],
    "goal": "x == 5", "budget": {"total": 5, "min_action_cost": 1}})J");
  SafetyKernel k(m);
  Scripted driver({0, 1});
  RunOptions options;
  options.recover = true;
  RunResult r;
  REQUIRE_NOTHROW(r = run(k, driver, options));
  CHECK(r.rollbacks == 0);
  CHECK(r.termination == Termination::emergency_stop);
  CHECK(k.state().get("x") == Value::integer(1));
}

TEST_CASE("run: rejections screened by the driver are recorded when asked",
          "[kernel][driver][trace]") {
  // `never` comes first, so the driver screens it out before choosing `inc`.
  const auto model = load_spec(R"({"variables": {"n": {"type": "int", "initial": 0}},
    "actions": [{"id": "never", "cost": 1, "requires": "n < 0"},
                {"id": "inc", "cost": 1, "effects": [{"variable": "n", "mode": "increment", "value": 1}]}],
    "budget": {"total": 10, "min_action_cost": 1}})");
  for (bool record : {false, true}) {
    KernelOptions options;
    options.record_rejections = record;
    SafetyKernel k(model, options);
    FirstApprovableDriver driver;
    RunOptions run_options;
    run_options.max_steps = 2;
    const RunResult r = run(k, driver, run_options);
    REQUIRE(r.rejected == 2);  // `never`, once per step
    std::size_t rejected = 0;
    for (const auto& e : k.trace()) rejected += e.kind == EntryKind::rejected;
    REQUIRE(rejected == (record ? 2 : 0));
    REQUIRE(k.verify_trace().ok);
    REQUIRE_FALSE(replay_trace(model, k.trace()).has_value());
  }
}
