// `clampai mcp SPEC`: a Model Context Protocol server on stdio (private to the CLI).
#pragma once

#include <CLI/CLI.hpp>

namespace clampai::cli {

/// Registers the `mcp` subcommand on `app` and returns it.
CLI::App* add_mcp_command(CLI::App& app);

/// Serves the parsed `mcp` subcommand's task on stdin/stdout until stdin ends. Returns 0, or 2
/// for a bad spec.
int run_mcp_command();

}  // namespace clampai::cli
