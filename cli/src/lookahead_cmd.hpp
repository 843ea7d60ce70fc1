// `clampai lookahead SPEC`: what lies k steps ahead of a proposed action (private to the CLI).
#pragma once

#include <CLI/CLI.hpp>

namespace clampai::cli {

/// Registers the `lookahead` subcommand on `app` and returns it.
CLI::App* add_lookahead_command(CLI::App& app);

/// Runs the parsed `lookahead` subcommand and returns its exit code: 0 no trap, 1 a trap (the
/// proposal enters a capture basin or one is reachable) or the kernel rejects the proposal,
/// 2 bad input, 3 no trap found but the search was incomplete.
int run_lookahead_command();

}  // namespace clampai::cli
