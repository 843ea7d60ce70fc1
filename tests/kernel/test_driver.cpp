// The deterministic driver and the run loop.
#include <catch2/catch.hpp>

#include "support.hpp"

using namespace clampai::kernel;
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
