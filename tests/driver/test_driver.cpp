// The deterministic driver and the run loop.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <functional>
#include <thread>
#include <utility>

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

TEST_CASE("Driver: recovery's emergency action is decided once", "[kernel][driver]") {
  TaskDecl t = parse_spec(R"J({"variables": {"x": {"type": "int", "initial": 0},
                                 "safe": {"type": "bool", "initial": false}},
    "actions": [{"id": "burn", "cost": 1, "reversible": false, "requires": "x == 0",
                 "effects": [{"variable": "x", "mode": "set", "value": 1}]},
                {"id": "park", "cost": 0, "effects": [{"variable": "safe", "mode": "set", "value": true}]}],
    "emergency_actions": ["park"],
    "goal": "x == 2", "budget": {"total": 5, "min_action_cost": 1}})J");
  // A native invariant is checked on every decision's next state: `safe` is true only in
  // `park`'s, so the checks that see it count the decisions of `park`.
  int decisions_of_park = 0;
  InvariantDecl counter;
  counter.name = "counts_park";
  counter.predicate = [&](const State& s) {
    if (s.get("safe") == Value::boolean(true)) ++decisions_of_park;
    return true;
  };
  t.invariants.push_back(counter);
  for (const bool record : {false, true}) {
    decisions_of_park = 0;
    KernelOptions options;
    options.record_rejections = record;
    SafetyKernel k(build_model(t), options);
    FirstApprovableDriver driver;
    RunOptions run_options;
    run_options.recover = true;
    const RunResult r = run(k, driver, run_options);
    REQUIRE(r.termination == Termination::emergency_stop);
    REQUIRE(r.actions == std::vector<std::string>{"burn", "park"});
    CHECK(decisions_of_park == 1);
  }
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

namespace {

// `a` moves toward the goal while the gate is open; `close` shuts it, `noise` changes nothing
// `a` reads. Another committer commits them between the chooser's decision and the commit.
constexpr const char* kGateSpec = R"J({"variables": {"n": {"type": "int", "initial": 0},
    "open": {"type": "bool", "initial": true}, "m": {"type": "int", "initial": 0}},
  "actions": [
    {"id": "a", "cost": 1, "requires": "open",
     "effects": [{"variable": "n", "mode": "increment", "value": 1}]},
    {"id": "noise", "cost": 1, "effects": [{"variable": "m", "mode": "increment", "value": 1}]},
    {"id": "close", "cost": 1, "effects": [{"variable": "open", "mode": "set", "value": false}]}],
  "goal": "n >= 3", "budget": {"total": 100, "min_action_cost": 1}})J";

// The first approvable action; after choosing, `interfere` commits on the kernel elsewhere.
class InterferingDriver final : public Driver {
 public:
  explicit InterferingDriver(std::function<void()> interfere) : interfere_(std::move(interfere)) {}
  Choice next(const SafetyKernel& kernel) override {
    Choice c = inner_.next(kernel);
    if (c.proposal && interfere_) interfere_();
    return c;
  }

 private:
  FirstApprovableDriver inner_;
  std::function<void()> interfere_;
};

}  // namespace

// A guard is consulted once per decision that approves a non-emergency action (by `decide`,
// `evaluate` and a commit's own decision): counting its calls for `a` counts the decisions
// of `a`. Before the step took the chooser's decision, every approved step was decided twice.
TEST_CASE("run: an approved step is decided once unless the head moved",
          "[kernel][driver][concurrency]") {
  const auto model = load_spec(kGateSpec);
  std::atomic<int> decisions_of_a{0};
  const auto counting = [&](const Situation&, const Proposal& p, const Decision&) {
    if (p.action == 0) decisions_of_a.fetch_add(1, std::memory_order_relaxed);
    return std::optional<Reason>{};
  };
  SECTION("local kernel, nothing committed in between: one decision per step") {
    KernelOptions options;
    options.guard = counting;
    SafetyKernel k(model, options);
    InterferingDriver driver(nullptr);
    const RunResult r = run(k, driver);
    REQUIRE(r.goal_reached);
    REQUIRE(r.executed == 3);
    CHECK(decisions_of_a.load() == 3);
  }
  SECTION("local kernel, another thread commits in between: decided afresh, twice per step") {
    KernelOptions options;
    options.guard = counting;
    SafetyKernel k(model, options);
    InterferingDriver driver([&] { std::thread([&] { (void)k.execute("noise"); }).join(); });
    const RunResult r = run(k, driver);
    REQUIRE(r.goal_reached);
    REQUIRE(r.executed == 3);
    CHECK(decisions_of_a.load() == 6);
    CHECK(k.state().get("m") == Value::integer(3));
  }
  SECTION("local kernel: a decision made on an older head is never committed") {
    SafetyKernel k(model);
    bool closed = false;
    InterferingDriver driver([&] {
      if (!std::exchange(closed, true))
        std::thread([&] { REQUIRE(k.execute("close").receipt); }).join();
    });
    RunOptions run_options;
    run_options.max_steps = 2;  // the chooser goes on with `noise`
    const RunResult r = run(k, driver, run_options);
    // `a` was approved while open, refused at commit on the head `close` made.
    REQUIRE_FALSE(r.goal_reached);
    REQUIRE(std::count(r.actions.begin(), r.actions.end(), "a") == 0);
    REQUIRE(r.rejections_by_reason.at("requires_failed") >= 1);
    REQUIRE(k.state().get("n") == Value::integer(0));
  }
  SECTION("shared ledger, nothing committed in between: one decision per step") {
    SharedOptions options;
    options.guard = counting;
    SharedKernel k(model, std::make_shared<MemoryLedger>(), options);
    InterferingDriver driver(nullptr);
    const RunResult r = run(k, driver);
    REQUIRE(r.goal_reached);
    CHECK(decisions_of_a.load() == 3);
    CHECK(k.stats().conflicts == 0);
  }
  SECTION("shared ledger, another kernel commits in between: decided afresh, twice per step") {
    const auto ledger = std::make_shared<MemoryLedger>();
    SharedOptions options;
    options.guard = counting;
    SharedKernel k(model, ledger, options);
    SharedKernel other(model, ledger->share());
    InterferingDriver driver([&] { REQUIRE(other.execute("noise").receipt); });
    const RunResult r = run(k, driver);
    REQUIRE(r.goal_reached);
    CHECK(decisions_of_a.load() == 6);
    CHECK(k.stats().conflicts == 3);
  }
  SECTION("shared ledger: a decision made on an older head is never committed") {
    const auto ledger = std::make_shared<MemoryLedger>();
    SharedKernel k(model, ledger);
    SharedKernel other(model, ledger->share());
    bool closed = false;
    InterferingDriver driver([&] {
      if (!std::exchange(closed, true)) REQUIRE(other.execute("close").receipt);
    });
    RunOptions run_options;
    run_options.max_steps = 2;  // the chooser goes on with `noise`
    const RunResult r = run(k, driver, run_options);
    REQUIRE_FALSE(r.goal_reached);
    REQUIRE(std::count(r.actions.begin(), r.actions.end(), "a") == 0);
    REQUIRE(r.rejections_by_reason.at("requires_failed") >= 1);
    REQUIRE(k.local().state().get("n") == Value::integer(0));
  }
}

TEST_CASE("step: one step by id, as front ends call it", "[kernel][driver]") {
  const auto model = load_spec(kGateSpec);
  KernelOptions options;
  options.record_rejections = true;
  SafetyKernel k(model, options);
  LocalCommitter committer(k);
  const StepResult done = step(committer, "a", {});
  REQUIRE(done.kind == StepOutcome::committed);
  REQUIRE(done.committed());
  REQUIRE(done.outcome.receipt);
  REQUIRE(to_string(done.kind) == "committed");
  const StepResult unknown = step(committer, "nope", {});
  REQUIRE(unknown.kind == StepOutcome::rejected);
  REQUIRE(unknown.outcome.decision.reasons.at(0).code == ReasonCode::unknown_action);
  REQUIRE(k.trace().back().kind == EntryKind::rejected);  // recorded as given
  REQUIRE(k.trace().back().action == "nope");
  // A decision of another kernel is decided afresh on this one.
  SafetyKernel closed(model);
  (void)closed.execute("close");
  REQUIRE_FALSE(closed.decide(default_proposal(*model, 0)).decision().approved);
  REQUIRE(step(committer, closed.decide(default_proposal(*model, 0))).committed());
  LocalCommitter closed_committer(closed);
  const StepResult refused = step(closed_committer, k.decide(default_proposal(*model, 0)));
  REQUIRE(refused.kind == StepOutcome::rejected);
  REQUIRE(closed.state().get("n") == Value::integer(0));
}
