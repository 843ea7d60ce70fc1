// `clampai evaluate SPEC --action A`: one decision of the kernel, nothing committed (private to
// the CLI).
#pragma once

#include <CLI/CLI.hpp>

namespace clampai::cli {

/// Registers the `evaluate` subcommand on `app` and returns it.
CLI::App* add_evaluate_command(CLI::App& app);

/// Runs the parsed `evaluate` subcommand and returns its exit code: 0 approved, 1 rejected,
/// 2 bad input (an unknown spec, action, option or state).
int run_evaluate_command();

}  // namespace clampai::cli
