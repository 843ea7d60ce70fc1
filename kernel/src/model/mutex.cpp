#include "clampai/kernel/mutex.hpp"

namespace clampai::kernel {
namespace {

// How many pauses a contended lock() spins before it sleeps: a few microseconds on current
// x86 cores (a pause is tens to a hundred-odd cycles), longer than a commit holds the lock and
// far shorter than a sleep and wake-up.
constexpr int kSpins = 128;

inline void pause() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

}  // namespace

void Mutex::lock_contended() noexcept {
  for (int i = 0; i < kSpins; ++i) {
    pause();
    int expected = 0;
    if (state_.load(std::memory_order_relaxed) == 0 &&
        state_.compare_exchange_weak(
            expected, 1, std::memory_order_acquire, std::memory_order_relaxed)) {
      return;
    }
  }
  // Marked as waited for, so that the holder's unlock wakes a sleeper; whoever takes the lock
  // this way leaves it marked (one wake-up too many at worst, never one too few).
  while (state_.exchange(2, std::memory_order_acquire) != 0) {
    state_.wait(2, std::memory_order_relaxed);
  }
}

}  // namespace clampai::kernel
