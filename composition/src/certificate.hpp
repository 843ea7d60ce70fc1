// Certificates (OC-2): the verdicts of a task's verification, keyed by the SHA-256 of its
// canonical model and sealed over their canonical JSON: with HMAC-SHA-256 under the cache key
// when one is set (a forger without the key cannot seal), else with a plain SHA-256 (an edited
// or corrupt certificate is detected). A certificate that fails its seal is not reused: the task
// is verified again.
#pragma once

#include "clampai/composition/compose.hpp"

namespace clampai::composition {

/// The task's verification: from `options.cache_dir` when a valid certificate for its model
/// exists, otherwise by running the verifier (and storing a new certificate).
/// @throws Error if the cache directory cannot be written.
TaskResult certify(const TaskRef& task, const ComposeOptions& options);

}  // namespace clampai::composition
