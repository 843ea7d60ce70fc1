// A per-context deadline for solver checks. Z3 4.8.12's own `timeout` parameter runs on a
// timer thread pool with a known race (Z3 PR #5371) that crashed our sanitizer builds; this
// watchdog interrupts the context instead (Z3_interrupt acts only while a check is running).
#pragma once

#include <z3++.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>

namespace clampai::verifier::detail {

/// Sets Z3's memory limit for every context of the process, once (solving.hpp).
void limit_solver_memory();

class Watchdog {
 public:
  /// Also sets the memory limit: every context that solves has a watchdog.
  explicit Watchdog(z3::context& ctx) : ctx_(ctx), thread_([this] { loop(); }) {
    limit_solver_memory();
  }
  ~Watchdog() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  /// Runs `check` with a deadline of `ms` milliseconds; returns its result. A check that runs
  /// past the deadline is interrupted and returns unknown; `timed_out()` then says so.
  template <typename Check>
  z3::check_result run(unsigned ms, Check check) {
    {
      std::lock_guard lock(mutex_);
      deadline_ = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
      fired_ = false;
    }
    cv_.notify_all();
    const z3::check_result r = check();
    std::lock_guard lock(mutex_);
    deadline_.reset();
    return r;
  }

  [[nodiscard]] bool timed_out() {
    std::lock_guard lock(mutex_);
    return fired_;
  }

 private:
  void loop() {
    std::unique_lock lock(mutex_);
    while (!stop_) {
      if (!deadline_) {
        cv_.wait(lock);
        continue;
      }
      const auto deadline = *deadline_;
      if (cv_.wait_until(lock, deadline) == std::cv_status::timeout && deadline_ == deadline) {
        fired_ = true;
        ctx_.interrupt();  // under the lock: the check cannot have been disarmed meanwhile
        deadline_.reset();
      }
    }
  }

  z3::context& ctx_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::optional<std::chrono::steady_clock::time_point> deadline_;
  bool fired_ = false;
  bool stop_ = false;
  std::thread thread_;  // last: started after every other member is initialised
};

}  // namespace clampai::verifier::detail
