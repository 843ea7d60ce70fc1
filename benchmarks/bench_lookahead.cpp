// Lookahead (explicit engine): depth 1 to 5 with 2 to 8 candidate actions. The spec: four
// bounded counters, N actions each incrementing one of them under a guard, one blocking
// invariant, a capture basin and a goal that are out of reach, so every search is exhaustive.
#include <benchmark/benchmark.h>

#include <string>

#include "clampai/driver.hpp"
#include "clampai/kernel.hpp"

namespace {

using namespace clampai::kernel;
using namespace clampai::driver;

std::shared_ptr<const TaskModel> make_model(int n_actions) {
  TaskDecl t;
  t.name = "lookahead";
  for (int i = 0; i < 4; ++i) {
    VariableDecl v{"c" + std::to_string(i), Type::integer(), Value::integer(0)};
    v.min = Decimal::integer(0);
    v.max = Decimal::integer(100);
    t.variables.push_back(v);
  }
  for (int a = 0; a < n_actions; ++a) {
    ActionDecl act;
    act.id = "a" + std::to_string(a);
    act.cost = "1";
    const std::string c = "c" + std::to_string(a % 4);
    act.guard = c + " < 90";
    act.effects = {{c, EffectMode::increment, std::to_string(1 + a / 4)}};
    t.actions.push_back(act);
  }
  t.invariants.push_back(InvariantDecl{"sum", "c0 + c1 + c2 + c3 <= 400"});
  t.basins.push_back(BasinDecl{"far", "c0 >= 50"});
  t.goal = "c3 >= 60";
  t.budget = BudgetDecl{Decimal{1000, 0}, Decimal{1, 0}};
  return build_model(t);
}

void BM_Lookahead(benchmark::State& st) {
  const auto model = make_model(static_cast<int>(st.range(1)));
  const Situation start = Situation::initial(*model);
  LookaheadOptions o;
  o.depth = static_cast<unsigned>(st.range(0));
  std::size_t situations = 0;
  for (auto _ : st) {
    const LookaheadResult r = lookahead(*model, start, Proposal{0, {}}, o);
    situations = r.situations;
    benchmark::DoNotOptimize(r.trap());
  }
  st.counters["situations"] = static_cast<double>(situations);
}
BENCHMARK(BM_Lookahead)->ArgsProduct({{1, 2, 3, 4, 5}, {2, 4, 8}})->Unit(benchmark::kMicrosecond);

}  // namespace
