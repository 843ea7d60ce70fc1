// The agent loop's own overhead per step with the mock LLM (issue 17): 50 actions, 20
// variables, a goal far away, so every step offers all 50 actions, values them, and (for
// `AskLlm`) writes the prompt and reads the mock's tool call; the kernel's execute is included.
#include <benchmark/benchmark.h>

#include <string>

#include "clampai/agent.hpp"
#include "clampai/kernel.hpp"

namespace ca = clampai::agent;
namespace ck = clampai::kernel;

namespace {

// Action a<i> increments v<i % 20> (cost 1); 5 blocking invariants v<k> <= 10^9; goal
// v0 >= 10^6; budget 200 (the T2 bound: 200 steps). The same task as
// reference_agent_bench.py.
std::shared_ptr<const ck::TaskModel> task() {
  std::string s = R"({"name": "bench", "goal": "v0 >= 1000000", "variables": {)";
  for (int v = 0; v < 20; ++v)
    s += (v ? ", " : "") + std::string("\"v") + std::to_string(v) +
         R"(": {"type": "int", "initial": 0})";
  s += R"(}, "actions": [)";
  for (int a = 0; a < 50; ++a)
    s += (a ? ", " : "") + std::string(R"({"id": "a)") + std::to_string(a) +
         R"(", "cost": 1, "effects": [{"variable": "v)" + std::to_string(a % 20) +
         R"(", "mode": "increment", "value": "1"}]})";
  s += R"(], "invariants": [)";
  for (int k = 0; k < 5; ++k)
    s += (k ? ", " : "") + std::string(R"({"name": "cap)") + std::to_string(k) +
         R"(", "check": "v)" + std::to_string(k) + R"( <= 1000000000"})";
  s += R"(], "budget": {"total": 200, "min_action_cost": 1}})";
  return ck::load_spec(s);
}

void run_steps(benchmark::State& st, bool skip_dominant) {
  const auto m = task();
  std::uint64_t steps = 0;
  for (auto _ : st) {
    st.PauseTiming();
    ck::KernelOptions ko;
    ko.trace_window = 1024;
    ko.undo_depth = 16;
    auto kernel = std::make_unique<ck::SafetyKernel>(m, ko);
    ca::MockLlm llm;
    ca::OrchestratorOptions options;
    options.skip_dominant = skip_dominant;
    options.repair_timeout_ms = 0;
    options.stuck_patience = 1000;  // the goal is out of reach: run to the T2 bound
    auto o = std::make_unique<ca::Orchestrator>(*kernel, llm, options);
    st.ResumeTiming();
    const ca::OrchestratorResult r = o->run();
    benchmark::DoNotOptimize(r.steps);
    steps += r.steps;
    st.PauseTiming();
    o.reset();
    kernel.reset();
    st.ResumeTiming();
  }
  st.counters["steps"] = benchmark::Counter(static_cast<double>(steps));
  st.counters["per_step"] = benchmark::Counter(
      static_cast<double>(steps), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

// The default loop: the dominant-action rule skips the LLM when one action clearly wins.
void BM_Agent_Step(benchmark::State& st) { run_steps(st, true); }
// Every step asks the mock: the prompt, the tools and the answer's parsing are all paid.
void BM_Agent_StepAskLlm(benchmark::State& st) { run_steps(st, false); }

}  // namespace

BENCHMARK(BM_Agent_Step)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Agent_StepAskLlm)->Unit(benchmark::kMillisecond);
BENCHMARK_MAIN();
