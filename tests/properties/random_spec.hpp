// Seeded random task specs and proposals for the property tests.
#pragma once

#include <memory>
#include <random>
#include <string>

#include "clampai/kernel.hpp"

namespace clampai::test {

/// A random, valid task whose initial state satisfies its blocking invariants. Variables are
/// ints (bounded and not), a decimal, a list and an optional string; actions use every effect
/// mode, some with parameters, guards and dependencies; the last action is a zero-cost
/// emergency no-op.
std::shared_ptr<const kernel::TaskModel> random_model(std::mt19937_64& rng);

/// A random proposal for `model`: mostly valid, sometimes with out-of-bounds parameters.
kernel::Proposal random_proposal(const kernel::TaskModel& model, std::mt19937_64& rng);

/// True iff every blocking invariant and every bound holds in `state` (T3's property).
bool satisfies_blocking(const kernel::TaskModel& model, const kernel::State& state);

}  // namespace clampai::test
