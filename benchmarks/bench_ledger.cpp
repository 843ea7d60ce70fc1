// The shared-ledger protocol's own cost, without a database (docs/LEDGER.md): SharedKernel's
// execute on a memory ledger (decide on the replica, build and hash the entry, compare-and-set,
// replay it into the replica) beside SafetyKernel::execute, and with 2 kernels alternating on
// one ledger (each commit also replays the other's entry). The file ledger (flock, append,
// flush) for comparison. PostgreSQL: scripts/bench-ledger.sh (processes), and here with
// DATABASE_URL set (`scripts/with-postgres.sh build/.../bench_ledger`): one commit under a
// 3-level budget-pool tree (task -> team -> org, every level's row locked and charged in the
// commit's transaction) beside a flat budget; and the same in process (a PoolTree).
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include "clampai/kernel.hpp"
#include "clampai/ledger/ledger.hpp"

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

// ---- budget pools: a commit under a 3-level tree against a flat budget ----

// A counter task named `name`, in pool `pool` (none if empty), with a budget no run exhausts.
std::shared_ptr<const TaskModel> pool_model(const std::string& name, const std::string& pool) {
  return load_spec(R"J({"name": ")J" + name +
                   R"J(", "variables": {"n": {"type": "int", "initial": 0}},
    "actions": [{"id": "inc", "cost": 1, "effects": [{"variable": "n", "mode": "increment", "value": 1}]}],
    "budget": {"total": 4000000000, "min_action_cost": 1)J" +
                   (pool.empty() ? std::string() : R"J(, "pool": ")J" + pool + "\"") + "}}");
}

const char* const kPools =
    R"J({"pools": {"org": {"total": 4000000000}, "team": {"total": 4000000000, "parent": "org"},
    "squad": {"total": 4000000000, "parent": "team"}}})J";

// In process, the same commit is bench_kernel's BM_Kernel_ExecuteAtomicPools.

// On PostgreSQL (DATABASE_URL): SharedKernel::execute, one process, each run on a fresh task.
void BM_Pools_Postgres(benchmark::State& st) {
  const char* url = std::getenv("DATABASE_URL");
  if (url == nullptr) {
    st.SkipWithError("DATABASE_URL is not set: run me through scripts/with-postgres.sh");
    return;
  }
  static std::atomic<int> runs{0};
  const bool pooled = st.range(0) != 0;
  if (pooled) (void)clampai::ledger::apply_pools(url, parse_pools(kPools));
  const std::string task = "bench-pools-" + std::to_string(::getpid()) + "-" +
                           std::to_string(runs.fetch_add(1)) + (pooled ? "-3" : "-flat");
  const auto model = pool_model(task, pooled ? "squad" : "");
  SharedKernel kernel(model, clampai::ledger::open_ledger(url, task));
  const Proposal p{0, {}};
  for (auto _ : st) benchmark::DoNotOptimize(kernel.execute(p));
}
BENCHMARK(BM_Pools_Postgres)->ArgName("levels3")->Arg(0)->Arg(1)->UseRealTime();

}  // namespace
