// Kernel throughput: evaluate, atomic execute with the in-memory trace, state size, invariants.
#include <benchmark/benchmark.h>

#include <string>

#include "clampai/kernel.hpp"

namespace {

using namespace clampai::kernel;

// A task with `n_vars` int variables, `n_invariants` blocking invariants over the first two,
// and one action that touches two variables. The budget never runs out during a benchmark.
std::shared_ptr<const TaskModel> make_model(int n_vars, int n_invariants) {
  TaskDecl t;
  for (int i = 0; i < n_vars; ++i)
    t.variables.push_back(
        VariableDecl{"v" + std::to_string(i), Type::integer(), Value::integer(0)});
  ActionDecl a;
  a.id = "step";
  a.cost = "1";
  a.effects = {{"v0", EffectMode::increment, "1"}, {"v1", EffectMode::decrement, "1"}};
  t.actions.push_back(a);
  for (int i = 0; i < n_invariants; ++i) {
    InvariantDecl inv;
    inv.name = "i" + std::to_string(i);
    inv.expression = "v0 + v1 <= " + std::to_string(10 + i);
    t.invariants.push_back(inv);
  }
  t.budget = BudgetDecl{Decimal{4000000000000, 0}, Decimal{1, 0}};
  return build_model(t);
}

void BM_Kernel_Evaluate(benchmark::State& st) {
  SafetyKernel kernel(make_model(static_cast<int>(st.range(0)), static_cast<int>(st.range(1))));
  const Proposal p{0, {}};
  for (auto _ : st) benchmark::DoNotOptimize(kernel.evaluate(p));
}
BENCHMARK(BM_Kernel_Evaluate)
    ->Args({10, 1})
    ->Args({10, 10})
    ->Args({10, 100})
    ->Args({1000, 1})
    ->Args({10000, 1});

void BM_Kernel_ExecuteAtomic(benchmark::State& st) {
  SafetyKernel kernel(make_model(static_cast<int>(st.range(0)), 1));
  const Proposal p{0, {}};
  for (auto _ : st) benchmark::DoNotOptimize(kernel.execute(p));
}
BENCHMARK(BM_Kernel_ExecuteAtomic)->Arg(10)->Arg(1000)->Arg(10000);

void BM_Trace_Verify(benchmark::State& st) {
  SafetyKernel kernel(make_model(10, 1));
  for (int i = 0; i < 1000; ++i) kernel.execute(Proposal{0, {}});
  const auto entries = kernel.trace();
  for (auto _ : st) benchmark::DoNotOptimize(verify_chain(entries, true));
  st.SetItemsProcessed(st.iterations() * static_cast<std::int64_t>(entries.size()));
}
BENCHMARK(BM_Trace_Verify);

}  // namespace
