// `run` over a shared ledger: the one run loop (driver.cpp) on a SharedCommitter.
#include "clampai/driver/shared_run.hpp"

namespace clampai::driver {

RunResult run(kernel::SharedKernel& shared, Driver& driver, const RunOptions& options) {
  SharedCommitter committer(shared);
  return run(committer, driver, options);
}

}  // namespace clampai::driver
