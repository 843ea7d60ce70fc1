// The abort path of CLAMPAI_ALWAYS_ASSERT: the kernel fails closed.
#include "clampai/kernel/assert.hpp"

#include <cstdio>
#include <cstdlib>

namespace clampai::detail {

void assertion_failed(const char* expr, const char* file, int line) noexcept {
  std::fprintf(stderr, "clampai: internal invariant violated: %s (%s:%d)\n", expr, file, line);
  std::abort();
}

}  // namespace clampai::detail
