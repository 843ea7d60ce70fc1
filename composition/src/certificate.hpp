// Certificates (OC-2): the verdicts of a task's verification, keyed by the SHA-256 of its
// canonical model and sealed with a SHA-256 over their canonical JSON, so an edited
// certificate is detected and the task re-verified.
#pragma once

#include "clampai/composition/compose.hpp"

namespace clampai::composition {

/// The task's verification: from `options.cache_dir` when a valid certificate for its model
/// exists, otherwise by running the verifier (and storing a new certificate).
/// @throws Error if the cache directory cannot be written.
TaskResult certify(const TaskRef& task, const ComposeOptions& options);

}  // namespace clampai::composition
