#include "clampai/kernel/parallel.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

namespace clampai::kernel {

unsigned parallel_workers(std::size_t n_items, unsigned jobs) {
  return static_cast<unsigned>(std::max<std::size_t>(1, std::min<std::size_t>(jobs, n_items)));
}

void parallel_for(std::size_t n_items,
                  unsigned jobs,
                  const std::function<void(std::size_t item, unsigned worker)>& fn) {
  std::atomic<std::size_t> next{0};
  std::atomic<bool> failed{false};
  std::mutex mutex;
  std::exception_ptr error;
  auto work = [&](unsigned worker) {
    while (!failed.load(std::memory_order_relaxed)) {
      const std::size_t item = next.fetch_add(1, std::memory_order_relaxed);
      if (item >= n_items) return;
      try {
        fn(item, worker);
      } catch (...) {
        const std::lock_guard lock(mutex);
        if (!error) error = std::current_exception();
        failed = true;
      }
    }
  };
  const unsigned workers = parallel_workers(n_items, jobs);
  std::vector<std::thread> threads;
  threads.reserve(workers - 1);
  for (unsigned w = 1; w < workers; ++w) {
    try {
      threads.emplace_back(work, w);
    } catch (const std::system_error&) {
      break;  // no more threads to be had: the workers started take every item
    }
  }
  work(0);
  for (auto& t : threads) t.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace clampai::kernel
