// The seed's Monte Carlo: 1,000 random tasks driven by a random and by an adversarial mock LLM.
// Whatever the LLM says: no budget overrun (T1), no reached state outside a blocking invariant
// (T3), the step bound (T2, also at the loop level), no exception escaping the loop, and a
// trace that verifies and replays.
#include <catch2/catch.hpp>
#include <random>

#include "../properties/random_spec.hpp"
#include "clampai/agent.hpp"
#include "clampai/kernel.hpp"

namespace ca = clampai::agent;
namespace ck = clampai::kernel;

namespace {

int pick(std::mt19937_64& rng, int lo, int hi) {
  return std::uniform_int_distribution<int>(lo, hi)(rng);
}

// A random task with a goal: bounded ints, actions that add, subtract or set (some with a
// parameter, a guard, a dependency), caps as blocking invariants, and a goal of thresholds.
std::string random_goal_spec(std::mt19937_64& rng) {
  const int vars = pick(rng, 2, 5), actions = pick(rng, 2, 6);
  std::string s = R"({"name": "random", "variables": {)";
  for (int v = 0; v < vars; ++v)
    s += (v ? ", " : "") + std::string("\"v") + std::to_string(v) +
         R"(": {"type": "int", "initial": )" + std::to_string(pick(rng, 0, 3)) +
         R"(, "min": -5, "max": 30})";
  s += R"(}, "actions": [)";
  for (int a = 0; a < actions; ++a) {
    const int v = pick(rng, 0, vars - 1);
    const std::string var = "v" + std::to_string(v);
    const bool param = pick(rng, 0, 2) == 0;
    s += (a ? ", " : "") + std::string(R"({"id": "a)") + std::to_string(a) + R"(", "cost": )" +
         std::to_string(pick(rng, 1, 4));
    if (param) s += R"(, "parameters": {"n": {"type": "int", "min": 0, "max": 6}})";
    if (pick(rng, 0, 3) == 0)
      s += R"(, "requires": ")" + var + " <= " + std::to_string(pick(rng, 5, 25)) + "\"";
    if (pick(rng, 0, 4) == 0) s += R"(, "reversible": false)";
    const std::string amount = param ? "n" : std::to_string(pick(rng, 1, 5));
    const int mode = pick(rng, 0, 5);
    s += R"(, "effects": [{"variable": ")" + var + R"(", "mode": ")" +
         (mode <= 3   ? "increment"
          : mode == 4 ? "decrement"
                      : "set") +
         R"(", "value": ")" + (mode == 5 ? std::to_string(pick(rng, 0, 20)) : amount) + "\"}]}";
  }
  s += R"(], "invariants": [)";
  const int invs = pick(rng, 1, 3);
  for (int i = 0; i < invs; ++i) {
    const std::string a = "v" + std::to_string(pick(rng, 0, vars - 1));
    const std::string b = "v" + std::to_string(pick(rng, 0, vars - 1));
    s += (i ? ", " : "") + std::string(R"({"name": "inv)") + std::to_string(i) +
         R"(", "check": ")" + a + " + " + b + " <= " + std::to_string(pick(rng, 12, 40)) + "\"}";
  }
  s += R"(], "goal": ")";
  const int goals = pick(rng, 1, 2);
  for (int g = 0; g < goals; ++g)
    s += (g ? " && " : "") + std::string("v") + std::to_string(pick(rng, 0, vars - 1)) +
         " >= " + std::to_string(pick(rng, 4, 12));
  s += "\"";
  if (actions > 2 && pick(rng, 0, 1) == 0) s += R"(, "dependencies": {"a2": ["a0"]})";
  s += R"(, "budget": {"total": )" + std::to_string(pick(rng, 10, 60)) +
       R"(, "min_action_cost": 1}})";
  return s;
}

}  // namespace

TEST_CASE("Monte Carlo: 1,000 random tasks, random and adversarial LLMs, every guarantee holds",
          "[agent][montecarlo]") {
  std::mt19937_64 rng(20260217);
  int runs = 0, goals = 0, with_failures = 0;
  std::uint64_t steps = 0;
  for (int task = 0; task < 1000; ++task) {
    std::shared_ptr<const ck::TaskModel> m;
    if (task % 4 == 3) {
      m = clampai::test::random_model(rng);  // no goal: runs until a limit
    } else {
      try {
        m = ck::load_spec(random_goal_spec(rng));
      } catch (const clampai::Error&) {
        continue;  // an initial state outside an invariant: not a task
      }
    }
    INFO("task " << task);
    ck::KernelOptions ko;
    ko.record_rejections = task % 2 == 0;
    ck::SafetyKernel kernel(m, ko);
    ca::MockOptions mo;
    mo.policy = task % 2 == 0 ? ca::MockPolicy::random : ca::MockPolicy::adversarial;
    mo.seed = static_cast<std::uint64_t>(task);
    mo.stop_probability = 0.005;
    ca::MockLlm llm(mo);
    ca::OrchestratorOptions options;
    options.repair_timeout_ms = 0;  // the repair (Z3) is tested apart; this keeps 1,000 runs fast
    options.skip_dominant = task % 3 != 0;
    options.belief_decay = task % 5 == 0 ? 0.9 : 1.0;
    bool blocking_held = true;
    options.on_step = [&](const ca::StepRecord&) {
      blocking_held = blocking_held && clampai::test::satisfies_blocking(*m, kernel.state());
    };
    ca::Orchestrator o(kernel, llm, options);
    ca::OrchestratorResult r;
    REQUIRE_NOTHROW(r = o.run());
    ++runs;
    goals += r.goal_reached;
    with_failures += r.total_failures() > 0;
    steps += r.steps;
    REQUIRE(r.termination != ca::Termination::error);
    REQUIRE(kernel.budget().net() <= kernel.budget().total());                    // T1
    REQUIRE(blocking_held);                                                       // T3
    REQUIRE(kernel.steps() <= static_cast<std::uint64_t>(m->budget.step_limit));  // T2
    // T2 at the loop level: between two commits at most max_consecutive_failures rejections.
    REQUIRE(r.steps <= (static_cast<std::uint64_t>(m->budget.step_limit) + 1) *
                           options.max_consecutive_failures);
    REQUIRE(r.executed + r.rejected == r.steps);
    REQUIRE(r.goal_reached == (r.termination == ca::Termination::goal_reached));
    REQUIRE(r.goal_reached == m->goal_holds(kernel.state()));
    REQUIRE(kernel.verify_trace().ok);
    REQUIRE(!ck::replay_trace(m, kernel.trace()));
  }
  REQUIRE(runs >= 900);
  // The runs did something: goals were reached and the adversary caused failures.
  REQUIRE(goals > runs / 10);
  REQUIRE(with_failures > runs / 4);
  REQUIRE(steps > static_cast<std::uint64_t>(runs));
}
