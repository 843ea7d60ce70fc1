// Verifier throughput: obligations per second on synthetic specs of actions x invariants.
#include <benchmark/benchmark.h>

#include <string>

#include "clampai/kernel.hpp"
#include "clampai/verifier.hpp"

namespace {

using namespace clampai::kernel;

// As the `clampai` command does.
const int kTuned = (clampai::verifier::tune_allocator_for_solving(), 0);

// `n_actions` actions each adding to one of 20 counters, `n_invariants` linear invariants over
// pairs of counters; a mix of proved and refuted pairs, like a real spec.
std::shared_ptr<const TaskModel> make_model(int n_actions, int n_invariants) {
  TaskDecl t;
  constexpr int kVars = 20;
  for (int i = 0; i < kVars; ++i) {
    VariableDecl v{"c" + std::to_string(i), Type::integer(), Value::integer(0)};
    v.min = Decimal::integer(0);
    v.max = Decimal::integer(1000);
    t.variables.push_back(v);
  }
  for (int a = 0; a < n_actions; ++a) {
    ActionDecl act;
    act.id = "a" + std::to_string(a);
    act.cost = "1";
    const std::string target = "c" + std::to_string(a % kVars);
    act.guard = target + " < " + std::to_string(100 + a % 50);
    act.effects = {{target, EffectMode::increment, std::to_string(1 + a % 3)}};
    t.actions.push_back(act);
  }
  for (int i = 0; i < n_invariants; ++i) {
    InvariantDecl inv;
    inv.name = "i" + std::to_string(i);
    inv.expression = "c" + std::to_string(i % kVars) + " + c" +
                     std::to_string((i * 7 + 3) % kVars) + " <= " + std::to_string(150 + i);
    t.invariants.push_back(inv);
  }
  t.budget = BudgetDecl{Decimal{1000, 0}, Decimal{1, 0}};
  return build_model(t);
}

void BM_Verifier_Verify(benchmark::State& st) {
  const auto model = make_model(static_cast<int>(st.range(0)), static_cast<int>(st.range(1)));
  clampai::verifier::VerifyOptions options;
  options.jobs = static_cast<unsigned>(st.range(2));
  std::size_t obligations = 0;
  for (auto _ : st) {
    const auto report = clampai::verifier::verify(model, options);
    obligations = report.obligations.size();
    benchmark::DoNotOptimize(report.proved);
  }
  st.counters["obligations"] = static_cast<double>(obligations);
  st.counters["obligations/s"] =
      benchmark::Counter(static_cast<double>(obligations) * static_cast<double>(st.iterations()),
                         benchmark::Counter::kIsRate);
}
BENCHMARK(BM_Verifier_Verify)
    ->Args({10, 10, 1})
    ->Args({10, 10, 2})
    ->Args({100, 50, 1})
    ->Args({100, 50, 2})
    ->Args({1000, 100, 1})
    ->Args({1000, 100, 2})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
