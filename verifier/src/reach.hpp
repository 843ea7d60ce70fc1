// Bounded model checking from the initial state: is a refuted preservation pair reachable?
#pragma once

#include <memory>
#include <vector>

#include "clampai/verifier/verify.hpp"
#include "solving.hpp"

namespace clampai::verifier::detail {

/// Fills `reachability` of every refuted preservation obligation in `obligations`, searching
/// up to `depth` steps. Each step is the symbolic step (step.hpp): every check of the kernel's
/// decision, budget, step limit, dependencies and post-state bounds included, so the search
/// allows exactly the sequences the kernel approves. `unreachable` holds for the kernel;
/// `reachable` is only reported after the witness replays through the kernel's decision; a
/// witness that does not replay, an unencodable construct, a solver failure or a time limit
/// (each query's, or the run's deadline, also checked while the steps are built) is `unknown`.
void check_reachability(const std::shared_ptr<const kernel::TaskModel>& model,
                        std::vector<Obligation>& obligations,
                        unsigned depth,
                        const Limits& limits);

}  // namespace clampai::verifier::detail
