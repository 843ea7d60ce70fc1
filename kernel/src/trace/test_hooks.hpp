// Hooks for white-box tests of the kernel (internal to the kernel library; never set outside
// tests): they make the background hasher's timing-dependent paths run at known points.
#pragma once

#include <atomic>
#include <cstdint>

namespace clampai::kernel::detail {

/// When set, kernels made afterwards start no background hasher: the lines wait until a reader,
/// a full queue (1,024 lines) or the committer hashes them, and a committer that finds 512
/// waiting renders its line itself; so each of these paths runs at a known step.
extern std::atomic<bool> test_no_background_hasher;

/// How many lines committers have rendered themselves because the hasher lagged (every kernel).
extern std::atomic<std::uint64_t> test_lines_rendered_ahead;

}  // namespace clampai::kernel::detail
