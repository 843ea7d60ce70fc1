// `run --ledger 'postgresql://...?escrow=SLICE...'`: a run in escrow mode (private to the CLI;
// docs/LEDGER.md, "Escrow mode").
#pragma once

#include "ledger_cmd.hpp"

namespace clampai::cli {

/// Runs `args.spec` with the deterministic driver in escrow mode on the ledger `args.ledger`
/// (leasing slices of the task's budget, deciding locally); closes its lease at the end, so
/// that what it did not spend returns to the pool. Prints the run report, whose `actions` are
/// what this process committed. Returns 0 if the goal is reached, else 1.
int run_on_escrow(const LedgerRun& args);

}  // namespace clampai::cli
