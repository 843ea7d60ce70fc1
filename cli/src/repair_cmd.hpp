// `clampai repair SPEC`: the closest approvable parameters for a rejected action (private to the
// CLI).
#pragma once

#include <CLI/CLI.hpp>

namespace clampai::cli {

/// Registers the `repair` subcommand on `app` and returns it.
CLI::App* add_repair_command(CLI::App& app);

/// Runs the parsed `repair` subcommand and returns its exit code: 0 the proposal is approved as
/// it is or was repaired (with a certificate), 1 no repair exists (the conflicting constraints
/// are printed), 2 bad input, 3 the tool could not decide.
int run_repair_command();

}  // namespace clampai::cli
