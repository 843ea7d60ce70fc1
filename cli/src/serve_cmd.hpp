// `clampai serve` and `clampai mcp SPEC`: the kernel as a service (private to the CLI).
#pragma once

#include <CLI/CLI.hpp>

namespace clampai::cli {

/// Registers the `serve` subcommand on `app` and returns it.
CLI::App* add_serve_command(CLI::App& app);

/// Runs the parsed `serve` subcommand until SIGTERM or SIGINT, then seals every task's trace.
/// Returns 0, or 2 for bad input (a spec, the token file, an address, the data directory).
int run_serve_command();

}  // namespace clampai::cli
