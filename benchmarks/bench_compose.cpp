// Composition: a chain of N tasks checked cold (every task verified) and with every task's
// certificate cached (only the composition obligations checked). Includes loading the
// manifest and the specs, as `clampai compose` does.
#include <benchmark/benchmark.h>

#include <filesystem>

#include "chain_specs.hpp"
#include "clampai/composition/compose.hpp"
#include "clampai/verifier/tuning.hpp"

namespace {

namespace fs = std::filesystem;
namespace cc = clampai::composition;

// As the `clampai` command does.
const int kTuned = (clampai::verifier::tune_allocator_for_solving(), 0);

fs::path scratch(int n) {
  return fs::temp_directory_path() / ("clampai-bench-chain-" + std::to_string(n));
}

void BM_ComposeChainCold(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const std::string manifest = clampai::testing::write_chain(scratch(n), n);
  std::size_t obligations = 0;
  for (auto _ : state) {
    const cc::ComposeReport r = cc::compose(cc::load_manifest(manifest), {"", 2, 10000});
    if (r.exit_code() != 0) state.SkipWithError("the chain does not compose");
    obligations = r.obligations.size();
  }
  state.counters["tasks"] = n;
  state.counters["obligations"] = static_cast<double>(obligations);
}

void BM_ComposeChainCached(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const fs::path dir = scratch(n);
  const std::string manifest = clampai::testing::write_chain(dir, n);
  const std::string cache = (dir / "cache").string();
  fs::remove_all(cache);
  (void)cc::compose(cc::load_manifest(manifest), {cache, 2, 10000});  // fills the cache
  for (auto _ : state) {
    const cc::ComposeReport r = cc::compose(cc::load_manifest(manifest), {cache, 2, 10000});
    if (r.reused != static_cast<std::size_t>(n)) state.SkipWithError("certificates not reused");
  }
  state.counters["tasks"] = n;
}

}  // namespace

BENCHMARK(BM_ComposeChainCold)->Arg(10)->Arg(100)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_ComposeChainCached)->Arg(10)->Arg(100)->Unit(benchmark::kMillisecond)->UseRealTime();
