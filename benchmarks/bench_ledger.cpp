// The shared-ledger protocol's own cost, without a database (docs/LEDGER.md): SharedKernel's
// execute on a memory ledger (decide on the replica, build and hash the entry, compare-and-set,
// replay it into the replica) beside SafetyKernel::execute, and with 2 kernels alternating on
// one ledger (each commit also replays the other's entry). The file ledger (flock, append,
// flush) for comparison. PostgreSQL: scripts/bench-ledger.sh.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>

#include "clampai/kernel.hpp"

namespace {

using namespace clampai::kernel;

std::shared_ptr<const TaskModel> counter_model() {
  return load_spec(R"J({"name": "bench", "variables": {"n": {"type": "int", "initial": 0},
    "m": {"type": "int", "initial": 0}},
    "actions": [{"id": "inc", "cost": 1, "effects": [{"variable": "n", "mode": "increment", "value": 1},
                                                    {"variable": "m", "mode": "decrement", "value": 1}]}],
    "invariants": [{"name": "sum", "check": "n + m == 0"}],
    "budget": {"total": 4000000000, "min_action_cost": 1}})J");
}

void BM_Ledger_SafetyKernelExecute(benchmark::State& st) {
  KernelOptions o;
  o.trace_window = 1;
  o.undo_depth = 1024;
  SafetyKernel kernel(counter_model(), o);
  const Proposal p{0, {}};
  for (auto _ : st) benchmark::DoNotOptimize(kernel.execute(p));
}
BENCHMARK(BM_Ledger_SafetyKernelExecute);

void BM_Ledger_SharedExecuteMemory(benchmark::State& st) {
  SharedKernel kernel(counter_model(), std::make_shared<MemoryLedger>());
  const Proposal p{0, {}};
  for (auto _ : st) benchmark::DoNotOptimize(kernel.execute(p));
}
BENCHMARK(BM_Ledger_SharedExecuteMemory);

// Two kernels on one ledger, alternating: every commit first loses a compare-and-set to the
// other kernel's last entry, replays it, and decides again.
void BM_Ledger_SharedExecuteMemoryTwoAlternating(benchmark::State& st) {
  auto ledger = std::make_shared<MemoryLedger>();
  SharedKernel a(counter_model(), ledger->share());
  SharedKernel b(counter_model(), ledger->share());
  const Proposal p{0, {}};
  bool turn = false;
  for (auto _ : st) {
    benchmark::DoNotOptimize((turn ? a : b).execute(p));
    turn = !turn;
  }
  st.counters["conflicts_per_commit"] =
      static_cast<double>(a.stats().conflicts + b.stats().conflicts) /
      static_cast<double>(a.stats().commits + b.stats().commits);
}
BENCHMARK(BM_Ledger_SharedExecuteMemoryTwoAlternating);

void BM_Ledger_SharedExecuteFile(benchmark::State& st) {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("clampai-bench-ledger-" + std::to_string(::getpid()) + ".jsonl"))
                               .string();
  std::filesystem::remove(path);
  {
    SharedKernel kernel(counter_model(), std::make_shared<FileLedger>(path));
    const Proposal p{0, {}};
    for (auto _ : st) benchmark::DoNotOptimize(kernel.execute(p));
  }
  std::filesystem::remove(path);
}
BENCHMARK(BM_Ledger_SharedExecuteFile)->UseRealTime();

}  // namespace
