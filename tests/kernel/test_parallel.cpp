// kernel::parallel_for, the thread fan-out the libraries share.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "clampai/kernel/parallel.hpp"

using clampai::kernel::parallel_for;
using clampai::kernel::parallel_workers;

TEST_CASE("parallel_for runs every item once, on at most the workers asked for", "[parallel]") {
  CHECK(parallel_workers(0, 4) == 1);
  CHECK(parallel_workers(10, 0) == 1);
  CHECK(parallel_workers(3, 8) == 3);
  CHECK(parallel_workers(100, 4) == 4);
  for (unsigned jobs : {1U, 2U, 4U, 16U}) {
    constexpr std::size_t kN = 1000;
    std::vector<std::atomic<int>> runs(kN);
    std::vector<std::thread::id> by_worker(parallel_workers(kN, jobs));
    std::atomic<bool> consistent{true};
    parallel_for(kN, jobs, [&](std::size_t i, unsigned w) {
      ++runs[i];
      if (w >= by_worker.size()) {
        consistent = false;
        return;
      }
      // A worker index names one thread: only that thread writes its slot.
      if (by_worker[w] == std::thread::id{}) by_worker[w] = std::this_thread::get_id();
      if (by_worker[w] != std::this_thread::get_id()) consistent = false;
    });
    CHECK(consistent);
    CHECK(std::all_of(runs.begin(), runs.end(), [](const auto& r) { return r == 1; }));
    // The caller is worker 0 (when it got an item before the others took them all).
    CHECK((by_worker[0] == std::thread::id{} || by_worker[0] == std::this_thread::get_id()));
  }
  bool called = false;
  parallel_for(0, 4, [&](std::size_t, unsigned) { called = true; });
  CHECK_FALSE(called);
}

TEST_CASE("parallel_for rethrows the first exception and starts nothing after it", "[parallel]") {
  std::atomic<std::size_t> started{0};
  CHECK_THROWS_WITH(parallel_for(100000,
                                 1,
                                 [&](std::size_t i, unsigned) {
                                   ++started;
                                   if (i == 10) throw std::runtime_error("item 10");
                                 }),
                    "item 10");
  CHECK(started == 11);  // one worker: in order, nothing after the failure
  std::atomic<std::size_t> many{0};
  CHECK_THROWS_AS(parallel_for(100000,
                               4,
                               [&](std::size_t, unsigned) {
                                 ++many;
                                 throw std::logic_error("each");
                               }),
                  std::logic_error);
  CHECK(many <= 4);  // each worker fails on its first item and stops
}

TEST_CASE("parallel_for from several threads at once, and from inside an item", "[parallel]") {
  // The helper threads are shared: concurrent and nested calls each run every item once, and
  // a worker index is never given to two threads within one call.
  constexpr std::size_t kOuter = 64;
  constexpr std::size_t kInner = 200;
  auto nested = [&](std::vector<std::atomic<int>>& runs, std::atomic<bool>& consistent) {
    parallel_for(kOuter, 4, [&](std::size_t i, unsigned outer_worker) {
      std::vector<std::thread::id> by_worker(parallel_workers(kInner, 3));
      std::mutex m;
      parallel_for(kInner, 3, [&](std::size_t j, unsigned w) {
        ++runs[i * kInner + j];
        const std::lock_guard lock(m);
        if (by_worker[w] == std::thread::id{}) by_worker[w] = std::this_thread::get_id();
        if (by_worker[w] != std::this_thread::get_id()) consistent = false;
      });
      if (outer_worker >= 4) consistent = false;
    });
  };
  std::vector<std::atomic<int>> a(kOuter * kInner);
  std::vector<std::atomic<int>> b(kOuter * kInner);
  std::atomic<bool> consistent{true};
  std::thread other([&] { nested(b, consistent); });
  nested(a, consistent);
  other.join();
  CHECK(consistent);
  CHECK(std::all_of(a.begin(), a.end(), [](const auto& r) { return r == 1; }));
  CHECK(std::all_of(b.begin(), b.end(), [](const auto& r) { return r == 1; }));
}

// Not under the sanitizers: TSan cannot start threads after a multi-threaded fork, and GCC 12's
// ASan allocator is not locked across fork(), so a child forked while a parent's helper frees
// its job can wait for ever on the allocator's lock (seen once in CI, under load).
#if !defined(__SANITIZE_THREAD__) && !defined(__SANITIZE_ADDRESS__)
TEST_CASE("parallel_for in a child of fork() has helper threads of its own", "[parallel]") {
  // The parent's helpers exist (started by this call) and do not exist in the child: a child
  // that counted on them would run every item on its own thread, so an item that waits for
  // another worker would wait for ever (the alarm then ends the child, and the test fails).
  parallel_for(8, 4, [](std::size_t, unsigned) {});
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::alarm(30);
    std::atomic<bool> second_ran{false};
    std::atomic<int> runs{0};
    parallel_for(2, 2, [&](std::size_t item, unsigned) {
      if (item == 1) {
        second_ran = true;
      } else {
        while (!second_ran) std::this_thread::yield();  // needs a second worker
      }
      ++runs;
    });
    ::_exit(runs == 2 ? 0 : 1);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}
#endif
