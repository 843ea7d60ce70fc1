// kernel::parallel_for, the thread fan-out the libraries share.
#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
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
