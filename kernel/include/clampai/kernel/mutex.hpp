#pragma once
// The kernel's lock: a mutex that spins briefly before it sleeps.
//
// A kernel's critical sections are short (a commit is a few hundred nanoseconds), so a thread
// that finds the lock held usually gets it sooner by waiting on the core than by sleeping: a
// `std::mutex` sleeps in the operating system at once, and waking it costs microseconds (more
// on a virtual machine), longer than the commit it waited for. This lock retries for a bounded
// number of pauses, then sleeps (C++20 atomic wait, a futex on Linux), so a holder that was
// descheduled or that hashes a long backlog costs its waiters sleep, not spinning.
//
// Three states (as in Drepper's "Futexes Are Tricky"): 0 free, 1 held, 2 held and perhaps
// waited for; unlock wakes a sleeper only from 2, so an uncontended lock never enters the
// operating system.

#include <atomic>

namespace clampai::kernel {

class Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void lock() noexcept {
    int expected = 0;
    if (!state_.compare_exchange_strong(
            expected, 1, std::memory_order_acquire, std::memory_order_relaxed)) {
      lock_contended();
    }
  }
  [[nodiscard]] bool try_lock() noexcept {
    int expected = 0;
    return state_.compare_exchange_strong(
        expected, 1, std::memory_order_acquire, std::memory_order_relaxed);
  }
  void unlock() noexcept {
    if (state_.exchange(0, std::memory_order_release) == 2) state_.notify_one();
  }

 private:
  void lock_contended() noexcept;

  std::atomic<int> state_{0};
};

}  // namespace clampai::kernel
