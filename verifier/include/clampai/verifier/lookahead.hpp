// k-step lookahead, symbolic engine: the same four answers as the kernel's explicit engine
// (clampai/kernel/lookahead.hpp), by bounded model checking in Z3. Parameters are symbols, so
// no domain is enumerated: it is exact for wide parameter ranges where the explicit engine
// must give up, and it is the oracle the explicit engine is tested against.
#pragma once

#include "clampai/driver/lookahead.hpp"
#include "clampai/kernel/model.hpp"
#include "clampai/kernel/safety_kernel.hpp"

namespace clampai::verifier {

/// Looks ahead of `proposal` in `situation` like `kernel::lookahead`, with the same semantics:
/// the search stops at the goal and (after the proposal) at capture basins, emergency actions
/// count as steps but never as progress, a dead end is a non-goal state where no non-emergency
/// action is approvable for any parameter values. Every witness is replayed through the
/// kernel's `decide` before it is returned. `situations` is 0. The answer is marked incomplete
/// (with the reason) if Z3 does not decide within `timeout_ms` per query, or the model uses a
/// construct the encoder does not translate (optional variables, native predicates).
driver::LookaheadResult symbolic_lookahead(const kernel::TaskModel& model,
                                           const kernel::Situation& situation,
                                           const kernel::Proposal& proposal,
                                           const driver::LookaheadOptions& options = {},
                                           unsigned timeout_ms = 10000);

}  // namespace clampai::verifier
