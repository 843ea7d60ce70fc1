// `run` over a shared ledger: the run loop of driver.hpp for a `SharedKernel` (docs/LEDGER.md).
#pragma once

#include "clampai/driver/driver.hpp"
#include "clampai/kernel/ledger.hpp"

namespace clampai::driver {

/// Drives `kernel` with `driver` as `run` does a `SafetyKernel`: the driver chooses on the local
/// replica (the latest head this process knows), each choice is decided afresh and committed on
/// the ledger's latest head, and the run ends (goal, nothing approvable, budget, steps) only on a
/// head with nothing newer. `RunResult::actions` lists what this process committed, in order.
/// The driver's screened rejections are committed to the shared trace when the kernel records
/// rejections. With `options.recover`, when nothing is approvable on the latest head: this run's
/// last commit is rolled back if it is still the most recent action in effect in the shared
/// trace (and reversible), else the first approvable emergency action is taken and the run
/// stops; a rollback that another process's commit has buried is not attempted again.
RunResult run(kernel::SharedKernel& kernel, Driver& driver, const RunOptions& options = {});

}  // namespace clampai::driver
