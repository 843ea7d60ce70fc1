// A long run in bounded memory (issue 15): N atomic executes (default 10 million) on a kernel
// whose trace window and undo depth are bounded, under an address-space limit, checking that
// the resident memory at the end is within 16 MiB of what it was after a tenth of the steps.
//
// Usage: long_run [STEPS] [LIMIT_MB]   (defaults 10000000 and 512)
// Exit 0 on success; 1 with a message naming what failed.
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "clampai/kernel.hpp"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;  // the sanitizers reserve terabytes of address space
#else
constexpr bool kSanitized = false;
#endif

namespace {

using namespace clampai::kernel;

long resident_kb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

}  // namespace

int main(int argc, char** argv) {
  const unsigned long long steps = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 10'000'000ULL;
  const unsigned long long limit_mb = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 512ULL;
  if (steps < 1000 || limit_mb == 0) {
    std::fprintf(stderr, "long_run: STEPS must be at least 1000 and LIMIT_MB positive\n");
    return 2;
  }
  if (!kSanitized) {
    const rlimit limit{limit_mb << 20, limit_mb << 20};
    if (setrlimit(RLIMIT_AS, &limit) != 0) {
      std::perror("long_run: setrlimit");
      return 1;
    }
  }
  TaskDecl t;
  t.variables.push_back(VariableDecl{"v0", Type::integer(), Value::integer(0)});
  t.variables.push_back(VariableDecl{"v1", Type::integer(), Value::integer(0)});
  ActionDecl a;
  a.id = "step";
  a.cost = "1";
  a.effects = {{"v0", EffectMode::increment, "1"}, {"v1", EffectMode::decrement, "1"}};
  t.actions.push_back(a);
  InvariantDecl inv;
  inv.name = "balanced";
  inv.expression = "v0 + v1 == 0";
  t.invariants.push_back(inv);
  t.budget = BudgetDecl{Decimal{4000000000000, 0}, Decimal{1, 0}};
  KernelOptions options;
  options.trace_window = 4096;
  options.undo_depth = 4096;
  SafetyKernel kernel(build_model(t), options);
  const Proposal p{0, {}};
  const auto start = std::chrono::steady_clock::now();
  long early_kb = 0;
  const unsigned long long checkpoint = steps / 10;  // memory is measured after a tenth
  for (unsigned long long i = 0; i < steps; ++i) {
    if (!kernel.execute(p).receipt) {
      std::fprintf(stderr, "long_run: step %llu was rejected\n", i);
      return 1;
    }
    if (i == checkpoint) early_kb = resident_kb();
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const long final_kb = resident_kb();
  const TraceCheck check = kernel.verify_trace();
  std::printf(
      "long_run: %llu steps in %.1f s (%.0f k steps/s); peak resident memory %ld KiB after "
      "%llu steps, %ld KiB at the end; trace window %s\n",
      steps,
      seconds,
      static_cast<double>(steps) / seconds / 1e3,
      early_kb,
      checkpoint,
      final_kb,
      check.message.c_str());
  if (!check.ok) return 1;
  if (kernel.steps() != steps || kernel.trace_length() != steps + 1) {
    std::fprintf(stderr, "long_run: the kernel counted other steps\n");
    return 1;
  }
  // Bounded: the run's last nine tenths added no more than 16 MiB (noise of the allocator).
  // Not under a sanitizer: AddressSanitizer keeps freed memory in quarantine (256 MiB).
  if (!kSanitized && early_kb > 0 && final_kb - early_kb > 16 * 1024) {
    std::fprintf(stderr,
                 "long_run: memory grew by %ld KiB after the first %llu steps\n",
                 final_kb - early_kb,
                 checkpoint);
    return 1;
  }
  return 0;
}
