// Assertions for broken internal invariants: the kernel fails closed by aborting.
#pragma once

namespace clampai::detail {
[[noreturn]] void assertion_failed(const char* expr, const char* file, int line) noexcept;
}  // namespace clampai::detail

/// Aborts with a message if `cond` is false, in every build type (safety-relevant checks).
#define CLAMPAI_ALWAYS_ASSERT(cond) \
  ((cond) ? static_cast<void>(0) : ::clampai::detail::assertion_failed(#cond, __FILE__, __LINE__))

#ifdef NDEBUG
#define CLAMPAI_ASSERT(cond) static_cast<void>(0)
#else
/// Aborts with a message if `cond` is false, in debug builds only.
#define CLAMPAI_ASSERT(cond) CLAMPAI_ALWAYS_ASSERT(cond)
#endif
