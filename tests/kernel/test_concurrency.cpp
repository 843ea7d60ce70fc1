// Many threads against one kernel: T1 holds, the trace verifies and replays to the final state.
#include <catch2/catch.hpp>
#include <random>
#include <thread>

#include "support.hpp"

using namespace clampai::kernel;

TEST_CASE("Concurrency: many threads never break T1, and the trace replays",
          "[kernel][concurrency]") {
  const char* spec = R"J({"variables": {"n": {"type": "int", "initial": 0, "min": 0, "max": 400},
                                        "m": {"type": "int", "initial": 0}},
    "actions": [{"id": "inc", "cost": 1.5, "effects": [{"variable": "n", "mode": "increment", "value": 3}]},
                {"id": "dec", "cost": 1, "effects": [{"variable": "n", "mode": "decrement", "value": 2}]},
                {"id": "both", "cost": 2, "effects": [{"variable": "n", "mode": "increment", "value": 1}, {"variable": "m", "mode": "increment", "value": 1}]}],
    "invariants": [{"name": "cap", "check": "n + m <= 300"}],
    "budget": {"total": 2000, "min_action_cost": 1}})J";
  const std::string path = clampai::test::temp_file("concurrency.jsonl");
  const auto model = load_spec(spec);
  KernelOptions options;
  options.writer = std::make_shared<TraceWriter>(path, FlushPolicy::buffered);
  options.record_rejections = true;
  SafetyKernel kernel(model, options);
  std::atomic<bool> violated{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(static_cast<unsigned>(t));
      const char* ids[] = {"inc", "dec", "both"};
      for (int i = 0; i < 1500; ++i) {
        kernel.execute(ids[rng() % 3]);
        const auto b = kernel.budget();
        if (b.net() > b.total() || b.net() < 0) violated = true;
        if (rng() % 50 == 0) (void)kernel.evaluate("inc");
      }
    });
  }
  for (auto& th : threads) th.join();
  REQUIRE_FALSE(violated);
  REQUIRE(kernel.budget().net() <= kernel.budget().total());
  REQUIRE(kernel.steps() > 500);  // the threads did commit, concurrently
  kernel.seal();
  const TraceCheck check = verify_trace_file(path);
  INFO(check.message);
  REQUIRE(check.ok);
  State final_state = model->initial_state();
  REQUIRE_FALSE(replay_trace(model, read_trace_file(path), &final_state).has_value());
  REQUIRE(final_state == kernel.state());
  std::remove(path.c_str());
}
