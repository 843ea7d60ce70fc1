// Repair: parameters x constraints from 1x1 to 16x32. The spec: P decimal parameters, C
// variables each set by the action to a fixed linear form of the parameters, and C blocking
// invariants bounding them; the proposal violates several, so every repair projects onto a
// face of the polyhedron. L2 (the native projection with its KKT certificate and the kernel's
// approval) is the default for decimal parameters; L1 (Z3's optimizer) is measured beside it.
#include <benchmark/benchmark.h>

#include <random>
#include <string>

#include "clampai/kernel.hpp"
#include "clampai/verifier.hpp"

namespace {

using namespace clampai::kernel;
namespace cv = clampai::verifier;

std::shared_ptr<const TaskModel> make_model(int params, int constraints) {
  std::mt19937_64 rng(static_cast<std::uint64_t>(params * 1000 + constraints));
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  TaskDecl t;
  t.name = "repair";
  ActionDecl act;
  act.id = "adjust";
  act.cost = "1";
  for (int i = 0; i < params; ++i) {
    ParameterDecl p{"p" + std::to_string(i), Type::decimal(2)};
    p.min = Decimal{-10000, 2};
    p.max = Decimal{10000, 2};
    act.parameters.push_back(p);
  }
  for (int j = 0; j < constraints; ++j) {
    const std::string v = "v" + std::to_string(j);
    t.variables.push_back(VariableDecl{v, Type::decimal(2), Value::number(Decimal{0, 2})});
    std::string form = "0";
    for (int i = 0; i < params; ++i) {
      // Each form has positive weight on its "own" parameter, so the polyhedron is bounded
      // around the origin in that direction and the proposal (every parameter 50) breaks it.
      const int c = i == j % params ? pick(1, 3) : pick(0, 1);
      if (c != 0) form += " + " + std::to_string(c) + " * p" + std::to_string(i);
    }
    act.effects.push_back({v, EffectMode::set, form});
    t.invariants.push_back(
        InvariantDecl{"cap" + std::to_string(j), v + " <= " + std::to_string(pick(20, 60))});
  }
  t.actions.push_back(act);
  t.budget = BudgetDecl{Decimal{1000, 0}, Decimal{1, 0}};
  return build_model(t);
}

void BM_Repair(benchmark::State& st, cv::RepairNorm norm) {
  const auto model = make_model(static_cast<int>(st.range(0)), static_cast<int>(st.range(1)));
  const Situation start = Situation::initial(*model);
  Proposal p{
      0,
      std::vector<Value>(static_cast<std::size_t>(st.range(0)), Value::number(Decimal{5000, 2}))};
  cv::RepairOptions o;
  o.norm = norm;
  std::size_t binding = 0;
  bool certified = false;
  std::string why;
  for (auto _ : st) {
    const cv::RepairResult r = cv::repair(*model, start, p, o);
    binding = r.certificate.binding.size();
    certified = r.status == cv::RepairStatus::repaired && r.certificate.feasible;
    why = std::string(cv::to_string(r.status)) + ": " + r.reason;
    benchmark::DoNotOptimize(r.repaired.params.data());
  }
  if (!certified) st.SkipWithError(("the repair was not certified (" + why + ")").c_str());
  st.counters["binding"] = static_cast<double>(binding);
}

void BM_RepairL2(benchmark::State& st) { BM_Repair(st, cv::RepairNorm::l2); }
void BM_RepairL1(benchmark::State& st) { BM_Repair(st, cv::RepairNorm::l1); }

BENCHMARK(BM_RepairL2)
    ->Args({1, 1})
    ->Args({2, 4})
    ->Args({4, 8})
    ->Args({8, 16})
    ->Args({16, 32})
    ->Unit(benchmark::kMicrosecond);
// L1 stops at 8x16: at 16x32 Z3's optimizer does not finish within the 10 s default timeout
// (BENCHMARKS.md).
BENCHMARK(BM_RepairL1)
    ->Args({1, 1})
    ->Args({2, 4})
    ->Args({4, 8})
    ->Args({8, 16})
    ->Unit(benchmark::kMicrosecond);

}  // namespace

int main(int argc, char** argv) {
  clampai::verifier::tune_allocator_for_solving();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
