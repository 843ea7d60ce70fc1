// The kernel's store: what is not inline in store.hpp.
#include "store.hpp"

namespace clampai::kernel {

std::atomic<bool> detail::test_no_background_hasher{false};
std::atomic<std::uint64_t> detail::test_lines_rendered_ahead{0};

}  // namespace clampai::kernel
