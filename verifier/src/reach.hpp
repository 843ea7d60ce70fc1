// Bounded model checking from the initial state: is a refuted preservation pair reachable?
#pragma once

#include <memory>
#include <vector>

#include "clampai/verifier/verify.hpp"

namespace clampai::verifier::detail {

/// Fills `reachability` of every refuted preservation obligation in `obligations`, searching
/// up to `depth` steps. Sound in both directions that it reports: `unreachable` holds for the
/// kernel too (the search allows every sequence the kernel could approve, ignoring budget,
/// step limit and dependencies, which only remove sequences); `reachable` is only reported
/// after the witness replays through a fresh kernel.
void check_reachability(const std::shared_ptr<const kernel::TaskModel>& model,
                        std::vector<Obligation>& obligations,
                        unsigned depth,
                        unsigned timeout_ms);

}  // namespace clampai::verifier::detail
