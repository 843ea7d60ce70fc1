// Kernel throughput: evaluate, atomic execute with the in-memory trace and with a trace file,
// rollback, contention between threads, latency percentiles, state size, invariants.
#include <benchmark/benchmark.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

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

// The process's minor page faults so far (each a page of memory touched for the first time).
double minor_faults() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_minflt);
}

void BM_Kernel_ExecuteAtomic(benchmark::State& st) {
  SafetyKernel kernel(make_model(static_cast<int>(st.range(0)), 1));
  const Proposal p{0, {}};
  const double faults = minor_faults();
  for (auto _ : st) benchmark::DoNotOptimize(kernel.execute(p));
  // Pages first touched per step (the kernel's and its hasher's): the memory an everything-kept
  // run adds, which costs what BM_Machine_FreshPage measures per page.
  st.counters["faults_per_step"] =
      benchmark::Counter(minor_faults() - faults, benchmark::Counter::kAvgIterations);
}
// CPU time is the process's (the caller and the kernel's background hasher together); "Time"
// is the caller's wall time per execute.
BENCHMARK(BM_Kernel_ExecuteAtomic)->Arg(10)->Arg(1000)->Arg(10000)->MeasureProcessCPUTime();
// The caller's thread alone (CPU time): what an execute costs the thread that calls it.
BENCHMARK(BM_Kernel_ExecuteAtomic)->Name("BM_Kernel_ExecuteAtomicCaller")->Arg(10);

// The same with the memory of a long run bounded (KernelOptions::trace_window and undo_depth,
// 1,024 each): entries and undo records beyond them are dropped and their storage reused, so
// memory stops growing and a fresh process runs as fast as a warm one.
void BM_Kernel_ExecuteAtomicBounded(benchmark::State& st) {
  KernelOptions options;
  options.trace_window = 1024;
  options.undo_depth = 1024;
  SafetyKernel kernel(make_model(static_cast<int>(st.range(0)), 1), options);
  const Proposal p{0, {}};
  const double faults = minor_faults();
  for (auto _ : st) benchmark::DoNotOptimize(kernel.execute(p));
  st.counters["faults_per_step"] =
      benchmark::Counter(minor_faults() - faults, benchmark::Counter::kAvgIterations);
}

// The machine's price of new memory: a 4 KiB page of fresh anonymous memory touched once (the
// page fault, the zeroing, and on a virtual machine whatever the host does to back it), then
// returned. Every byte a step keeps for ever costs its share of this.
void BM_Machine_FreshPage(benchmark::State& st) {
  constexpr std::size_t kPages = 4096;  // 16 MiB per mapping
  constexpr std::size_t kPage = 4096;
  for (auto _ : st) {
    st.PauseTiming();
    void* map =
        ::mmap(nullptr, kPages * kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (map == MAP_FAILED) {
      st.SkipWithError("mmap failed");
      break;
    }
    st.ResumeTiming();
    auto* bytes = static_cast<volatile char*>(map);
    for (std::size_t i = 0; i < kPages; ++i) bytes[i * kPage] = 1;
    st.PauseTiming();
    ::munmap(map, kPages * kPage);
    st.ResumeTiming();
  }
  st.SetItemsProcessed(static_cast<std::int64_t>(st.iterations() * kPages));
  st.counters["time_per_page"] =
      benchmark::Counter(static_cast<double>(st.iterations() * kPages),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_Machine_FreshPage)->UseRealTime();

BENCHMARK(BM_Kernel_ExecuteAtomicBounded)->Arg(10)->Arg(1000)->MeasureProcessCPUTime();
BENCHMARK(BM_Kernel_ExecuteAtomicBounded)->Name("BM_Kernel_ExecuteAtomicBoundedCaller")->Arg(10);

// The same with every entry hashed before execute returns (KernelOptions::defer_hash off): the
// work of a step on one thread.
void BM_Kernel_ExecuteAtomicHashNow(benchmark::State& st) {
  KernelOptions options;
  options.defer_hash = false;
  if (st.range(0) == 1) {
    options.trace_window = 1024;
    options.undo_depth = 1024;
  }
  SafetyKernel kernel(make_model(10, 1), options);
  const Proposal p{0, {}};
  for (auto _ : st) benchmark::DoNotOptimize(kernel.execute(p));
}
BENCHMARK(BM_Kernel_ExecuteAtomicHashNow)->ArgName("bounded")->Arg(0)->Arg(1);

// Atomic execute with the trace also written to a JSON Lines file through `TraceWriter`, under
// each flush policy. The file is in the temporary directory and removed afterwards.
void BM_Kernel_ExecuteAtomicTraceFile(benchmark::State& st, FlushPolicy policy) {
  const std::filesystem::path path = std::filesystem::temp_directory_path() /
                                     ("clampai_bench_kernel_" + std::to_string(::getpid()) + "_" +
                                      std::to_string(static_cast<int>(policy)) + ".jsonl");
  {
    KernelOptions options;
    options.writer = std::make_shared<TraceWriter>(path.string(), policy);
    SafetyKernel kernel(make_model(10, 1), options);
    const Proposal p{0, {}};
    for (auto _ : st) benchmark::DoNotOptimize(kernel.execute(p));
    options.writer->close();
  }
  std::filesystem::remove(path);
}
BENCHMARK_CAPTURE(BM_Kernel_ExecuteAtomicTraceFile, buffered, FlushPolicy::buffered);
BENCHMARK_CAPTURE(BM_Kernel_ExecuteAtomicTraceFile, flush, FlushPolicy::flush);
BENCHMARK_CAPTURE(BM_Kernel_ExecuteAtomicTraceFile, fsync, FlushPolicy::fsync);

// One execute followed by the rollback of that execution (T7), per iteration: the state and
// budget return to where they were, so every iteration does the same work.
void BM_Kernel_Rollback(benchmark::State& st) {
  SafetyKernel kernel(make_model(static_cast<int>(st.range(0)), 1));
  const Proposal p{0, {}};
  for (auto _ : st) {
    const Outcome executed = kernel.execute(p);
    benchmark::DoNotOptimize(kernel.rollback(*executed.receipt));
  }
}
BENCHMARK(BM_Kernel_Rollback)->Arg(10)->Arg(10000);

// Budget pools (docs/POOLS.md): an atomic execute whose charge must fit the task's budget and
// every level of a pool tree (`levels:3`: org <- team <- agent, the task in `agent`), against
// the same task with a flat budget (`levels:0`). Memory bounded as in
// BM_Kernel_ExecuteAtomicBounded (the same kernel options for both), so that the difference is
// the pools' locks, checks, charges and the entries' `pools` members.
void BM_Kernel_ExecuteAtomicPools(benchmark::State& st) {
  const int levels = static_cast<int>(st.range(0));
  TaskDecl t;
  t.variables.push_back(VariableDecl{"v0", Type::integer(), Value::integer(0)});
  ActionDecl a;
  a.id = "step";
  a.cost = "1";
  a.effects = {{"v0", EffectMode::increment, "1"}};
  t.actions.push_back(a);
  t.budget = BudgetDecl{Decimal{4000000000000, 0}, Decimal{1, 0}};
  KernelOptions options;
  options.trace_window = 1024;
  options.undo_depth = 1024;
  if (levels > 0) {
    std::vector<PoolDecl> pools;
    for (int i = 0; i < levels; ++i)
      pools.push_back(PoolDecl{"p" + std::to_string(i),
                               Decimal{4000000000000, 0},
                               i == 0 ? "" : "p" + std::to_string(i - 1)});
    options.pools = PoolTree::build(pools);
    t.budget.pool = "p" + std::to_string(levels - 1);
  }
  SafetyKernel kernel(build_model(t), options);
  const Proposal p{0, {}};
  std::int64_t approved = 0;
  for (auto _ : st) approved += kernel.execute(p).decision.approved ? 1 : 0;
  if (approved != static_cast<std::int64_t>(st.iterations()))
    st.SkipWithError("a commit was rejected");
}
BENCHMARK(BM_Kernel_ExecuteAtomicPools)->ArgName("levels")->Arg(0)->Arg(1)->Arg(3);

// Atomic execute from 1 and 2 threads on one shared kernel (its lock serialises the commits,
// T5), in bounded memory (as BM_Kernel_ExecuteAtomicBounded, so that page faults do not hide
// the scaling). `callers_hash:0`: the kernel's background thread hashes the entries (the
// default); `callers_hash:1`: KernelOptions::defer_hash off, each entry hashed before its
// execute returns, outside the lock, by whichever caller is hashing (the chain is serial; the
// decisions and commits of one thread overlap with the other's hashing). The kernel is created
// before the threads start and destroyed after they stop; items_per_second is the total over
// all threads.
std::unique_ptr<SafetyKernel> shared_kernel;

void make_shared_kernel(const benchmark::State& st) {
  KernelOptions options;
  options.defer_hash = st.range(0) == 0;
  options.trace_window = 1024;
  options.undo_depth = 1024;
  shared_kernel = std::make_unique<SafetyKernel>(make_model(10, 1), options);
}
void drop_shared_kernel(const benchmark::State&) { shared_kernel.reset(); }

void BM_Kernel_ExecuteAtomicThreads(benchmark::State& st) {
  SafetyKernel& kernel = *shared_kernel;
  const Proposal p{0, {}};
  for (auto _ : st) benchmark::DoNotOptimize(kernel.execute(p));
  st.SetItemsProcessed(st.iterations());
}
BENCHMARK(BM_Kernel_ExecuteAtomicThreads)
    ->Setup(make_shared_kernel)
    ->Teardown(drop_shared_kernel)
    ->ArgName("callers_hash")
    ->Arg(0)
    ->Arg(1)
    ->Threads(1)
    ->Threads(2)
    ->UseRealTime()
    ->MeasureProcessCPUTime();

// Separate kernels, one per thread (bounded as above, so that memory does not grow, and hashing
// each entry before execute returns): nothing is shared, so the throughput should scale with
// the threads up to the cores.
void BM_Kernel_ExecuteAtomicSeparate(benchmark::State& st) {
  KernelOptions options;
  options.defer_hash = false;  // each thread does all of its kernel's work: no hasher thread
  options.trace_window = 1024;
  options.undo_depth = 1024;
  SafetyKernel kernel(make_model(10, 1), options);
  const Proposal p{0, {}};
  for (auto _ : st) benchmark::DoNotOptimize(kernel.execute(p));
  st.SetItemsProcessed(st.iterations());
}
BENCHMARK(BM_Kernel_ExecuteAtomicSeparate)
    ->Threads(1)
    ->Threads(2)
    ->UseRealTime()
    ->MeasureProcessCPUTime();

// Latency percentiles of single calls: each call is timed with steady_clock (which adds one
// clock read, about 20 ns, to every sample), and p50/p99/max are reported as counters in ns.
void set_percentiles(benchmark::State& st, std::vector<std::int64_t>& ns) {
  if (ns.empty()) return;
  std::sort(ns.begin(), ns.end());
  auto at = [&](double q) {
    return static_cast<double>(
        ns[static_cast<std::size_t>(q * static_cast<double>(ns.size() - 1))]);
  };
  st.counters["p50_ns"] = at(0.50);
  st.counters["p99_ns"] = at(0.99);
  st.counters["max_ns"] = static_cast<double>(ns.back());
}

void BM_Kernel_EvaluateLatency(benchmark::State& st) {
  SafetyKernel kernel(make_model(10, static_cast<int>(st.range(0))));
  const Proposal p{0, {}};
  std::vector<std::int64_t> ns;
  ns.reserve(static_cast<std::size_t>(st.max_iterations));
  for (auto _ : st) {
    const auto t0 = std::chrono::steady_clock::now();
    benchmark::DoNotOptimize(kernel.evaluate(p));
    const auto t1 = std::chrono::steady_clock::now();
    ns.push_back(std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count());
  }
  set_percentiles(st, ns);
}
BENCHMARK(BM_Kernel_EvaluateLatency)->Arg(1)->Arg(100);

void BM_Kernel_ExecuteAtomicLatency(benchmark::State& st) {
  SafetyKernel kernel(make_model(10, 1));
  const Proposal p{0, {}};
  std::vector<std::int64_t> ns;
  ns.reserve(static_cast<std::size_t>(st.max_iterations));
  for (auto _ : st) {
    const auto t0 = std::chrono::steady_clock::now();
    benchmark::DoNotOptimize(kernel.execute(p));
    const auto t1 = std::chrono::steady_clock::now();
    ns.push_back(std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count());
  }
  set_percentiles(st, ns);
}
BENCHMARK(BM_Kernel_ExecuteAtomicLatency);

// Verifies the kernel's 1,001-entry trace as kept: each canonical line hashed as it is (no
// re-serialisation), the links and sequence checked; hashes on every core.
void BM_Trace_Verify(benchmark::State& st) {
  SafetyKernel kernel(make_model(10, 1));
  for (int i = 0; i < 1000; ++i) kernel.execute(Proposal{0, {}});
  for (auto _ : st) benchmark::DoNotOptimize(kernel.verify_trace());
  st.SetItemsProcessed(st.iterations() * static_cast<std::int64_t>(kernel.trace_length()));
}
BENCHMARK(BM_Trace_Verify)->UseRealTime();

// The same chain as parsed entries (`verify_chain`), which must re-serialise every entry to
// recompute its hash.
void BM_Trace_VerifyEntries(benchmark::State& st) {
  SafetyKernel kernel(make_model(10, 1));
  for (int i = 0; i < 1000; ++i) kernel.execute(Proposal{0, {}});
  const auto entries = kernel.trace();
  for (auto _ : st) benchmark::DoNotOptimize(verify_chain(entries, true));
  st.SetItemsProcessed(st.iterations() * static_cast<std::int64_t>(entries.size()));
}
BENCHMARK(BM_Trace_VerifyEntries)->UseRealTime();  // verify_chain hashes on several threads

// A trace file of N executed entries (plus the genesis) verified as `clampai trace verify` does
// (`verify_trace_file`): the file read in large pieces, each line read and hashed as it is, on
// every core. 100,000 entries (about 30 MB) show the throughput; 1,000 the fixed costs.
void BM_Trace_VerifyFile(benchmark::State& st) {
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() /
      ("clampai_bench_verify_" + std::to_string(::getpid()) + ".jsonl");
  {
    KernelOptions options;
    options.writer = std::make_shared<TraceWriter>(path.string(), FlushPolicy::buffered);
    options.trace_window = 1024;  // the file keeps every entry; memory stays bounded
    options.undo_depth = 1024;
    SafetyKernel kernel(make_model(10, 1), options);
    for (std::int64_t i = 0; i < st.range(0); ++i) kernel.execute(Proposal{0, {}});
    options.writer->close();
  }
  std::int64_t entries = 0;
  for (auto _ : st) {
    const TraceCheck check = verify_trace_file(path.string(), /*allow_unsealed=*/true);
    if (!check.ok) st.SkipWithError(check.message.c_str());
    entries += static_cast<std::int64_t>(check.entries);
  }
  st.SetItemsProcessed(entries);
  std::filesystem::remove(path);
}
BENCHMARK(BM_Trace_VerifyFile)
    ->Arg(1000)
    ->Arg(100000)
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

}  // namespace
