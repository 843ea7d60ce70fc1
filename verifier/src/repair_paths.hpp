// White-box: how `repair` reads the L2 constraints, for the tests that compare the two ways.
#pragma once

#include <cstdint>

#include "clampai/verifier/repair.hpp"

namespace clampai::verifier::detail {

/// `cached`: from the action's template, built once per model with the situation symbolic and
/// evaluated on the concrete one (the default); a fresh Z3 context where the template does not
/// apply. `fresh`: always a fresh Z3 context (the step simplified on the concrete situation).
enum class L2Source : std::uint8_t { cached, fresh };

/// `repair` with the L2 constraints read from `source`. `*from_template`, if given, is set to
/// whether they came from the template.
RepairResult repair_with(const kernel::TaskModel& model,
                         const kernel::Situation& situation,
                         const kernel::Proposal& proposal,
                         const RepairOptions& options,
                         L2Source source,
                         bool* from_template = nullptr);

}  // namespace clampai::verifier::detail
