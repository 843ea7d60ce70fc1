// The `shadow` member of the run and agent reports (docs/CLI.md, "Shadow mode"): a run whose
// steps were followed whatever the kernel decided, and the steps it would have rejected.
#pragma once

#include <vector>

#include "clampai/driver/driver.hpp"

namespace clampai::report {

struct ShadowSection {
  bool on = false;  ///< the run was in shadow mode (`--shadow`)
  /// The steps the enforcing kernel would have rejected, in order.
  std::vector<driver::ShadowRejection> rejected{};
};

}  // namespace clampai::report
