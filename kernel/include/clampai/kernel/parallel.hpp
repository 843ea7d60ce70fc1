// The one thread fan-out of the project: independent items handed out to a few worker threads.
// Internal to ClampAI's libraries (the kernel, the verifier, composition), which share it; not
// part of the API promised to users.
#pragma once

#include <cstddef>
#include <functional>

namespace clampai::kernel {

/// How many workers parallel_for uses for `n_items` items and `jobs` requested threads: at
/// least 1, at most `jobs` and `n_items`.
[[nodiscard]] unsigned parallel_workers(std::size_t n_items, unsigned jobs);

/// Calls `fn(item, worker)` once for every item in [0, n_items), on at most
/// parallel_workers(n_items, jobs) threads: the calling thread is worker 0, the others are
/// helper threads started on first use and kept for the process (a helper busy elsewhere, or
/// not yet scheduled, takes no item: the caller never waits for one to start). `worker` <
/// parallel_workers(...) names the thread for this call (per-worker state, such as a solver, is
/// indexed by it). Items are handed out in increasing order, one at a time, to whichever worker
/// is free. If `fn` throws, no further item is started, and the first exception is rethrown
/// once every worker has stopped. Safe to call from several threads at once, and from `fn`,
/// and in a child of `fork()` (which starts helpers of its own); but an item must not fork (the
/// child would wait for its parent's helpers).
void parallel_for(std::size_t n_items,
                  unsigned jobs,
                  const std::function<void(std::size_t item, unsigned worker)>& fn);

}  // namespace clampai::kernel
