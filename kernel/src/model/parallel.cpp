#include "clampai/kernel/parallel.hpp"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <system_error>
#include <thread>

namespace clampai::kernel {
namespace {

// Helper threads started on first use and kept for the process: a call hands its items out one
// at a time to the calling thread and to the helpers, and the caller waits only for the items a
// helper took. A helper the system has not run yet takes none, so on a busy machine the caller
// never waits for one to be scheduled (with a thread started per call it did: milliseconds for
// work of a fraction of that), and no thread is created per call. Calls from several threads
// at once, and calls made by an item, are safe: the helpers help the call posted last, and
// each caller runs whatever items of its own nobody took.
class Helpers {
 public:
  static constexpr unsigned kMaxHelpers = 63;

  // Never destroyed: the helpers wait for work until the process ends. A child of fork()
  // gets a fresh set: the parent's helper threads do not exist in it, and one of them may have
  // held the lock at the fork (the old set is left untouched, and leaked).
  static Helpers& get() {
    static std::once_flag once;
    std::call_once(once, [] {
      current() = new Helpers();
      (void)::pthread_atfork(nullptr, nullptr, [] { current() = new Helpers(); });
    });
    return *current();
  }

  void run(std::size_t n,
           unsigned workers,
           const std::function<void(std::size_t item, unsigned worker)>& fn) {
    auto job = std::make_shared<Job>();
    job->n = n;
    job->workers = workers;
    job->fn = &fn;
    if (workers > 1 && n > 1 && start(workers - 1)) {
      const std::lock_guard lock(mutex_);
      job_ = job;
      ++posted_;
      wake_.notify_all();
    }
    work(*job, 0);
    {
      std::unique_lock lock(job->mutex);
      job->finished.wait(lock, [&] { return job->running == 0; });
    }
    {
      const std::lock_guard lock(mutex_);
      if (job_ == job) job_.reset();
    }
    std::exception_ptr error;
    {
      // Taken out of the job: the exception is released by this thread, not by the helper
      // that happens to drop the job last (that release is not ordered for TSan).
      const std::lock_guard lock(job->mutex);
      error = std::move(job->error);
    }
    if (error) std::rethrow_exception(error);
  }

 private:
  struct Job {
    std::size_t n = 0;
    unsigned workers = 1;
    const std::function<void(std::size_t, unsigned)>* fn = nullptr;  // called for items taken
    std::atomic<std::size_t> next{0};                                // the next item to take
    std::atomic<unsigned> joined{1};  // worker indices given out (the caller is 0)
    std::atomic<bool> failed{false};  // an item threw: no further item starts
    std::mutex mutex;
    std::condition_variable finished;
    unsigned running = 0;      // helpers taking items (under `mutex`)
    std::exception_ptr error;  // the first one (under `mutex`)
  };

  Helpers() = default;

  // Written by get()'s first call and, in a child of fork() (where only the forking thread
  // runs), by the fork handler.
  static Helpers*& current() {
    static Helpers* helpers = nullptr;
    return helpers;
  }

  // Whether there are helpers, `wanted` of them started by now if the system allows.
  bool start(unsigned wanted) {
    const std::lock_guard lock(mutex_);
    wanted = std::min(wanted, kMaxHelpers);
    while (started_ < wanted) {
      try {
        std::thread([this] { help(); }).detach();
        ++started_;
      } catch (const std::system_error&) {
        break;  // no more threads to be had: the callers run what they would have
      }
    }
    return started_ > 0;
  }

  // A helper: joins the call posted last (if it still wants workers), then waits for the next.
  [[noreturn]] void help() {
    std::uint64_t seen = 0;
    for (;;) {
      std::shared_ptr<Job> job;
      {
        std::unique_lock lock(mutex_);
        wake_.wait(lock, [&] { return posted_ != seen; });
        seen = posted_;
        job = job_;
      }
      if (!job) continue;
      {
        const std::lock_guard lock(job->mutex);
        ++job->running;
      }
      const unsigned worker = job->joined.fetch_add(1);
      if (worker < job->workers) work(*job, worker);
      const std::lock_guard lock(job->mutex);
      if (--job->running == 0) job->finished.notify_all();
    }
  }

  // Takes and runs items of `job` as `worker` until none is left or one threw.
  static void work(Job& job, unsigned worker) {
    while (!job.failed.load(std::memory_order_relaxed)) {
      const std::size_t item = job.next.fetch_add(1);
      if (item >= job.n) return;
      try {
        (*job.fn)(item, worker);
      } catch (...) {
        const std::lock_guard lock(job.mutex);
        if (!job.error) job.error = std::current_exception();
        job.failed = true;
      }
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  std::shared_ptr<Job> job_;  // the call posted last, while its caller runs it
  std::uint64_t posted_ = 0;
  unsigned started_ = 0;
};

}  // namespace

unsigned parallel_workers(std::size_t n_items, unsigned jobs) {
  return static_cast<unsigned>(std::max<std::size_t>(1, std::min<std::size_t>(jobs, n_items)));
}

void parallel_for(std::size_t n_items,
                  unsigned jobs,
                  const std::function<void(std::size_t item, unsigned worker)>& fn) {
  Helpers::get().run(n_items, parallel_workers(n_items, jobs), fn);
}

}  // namespace clampai::kernel
