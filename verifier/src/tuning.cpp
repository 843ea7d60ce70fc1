#include "clampai/verifier/tuning.hpp"

#if __has_include(<malloc.h>)
#include <malloc.h>
#endif

namespace clampai::verifier {

void tune_allocator_for_solving() noexcept {
#if defined(__GLIBC__) && defined(M_MMAP_THRESHOLD) && defined(M_TRIM_THRESHOLD)
  mallopt(M_MMAP_THRESHOLD, 32 * 1024 * 1024);
  mallopt(M_TRIM_THRESHOLD, 256 * 1024 * 1024);
#endif
}

}  // namespace clampai::verifier
