// `clampai gateway SPEC [options] -- COMMAND [ARGS...]` (docs/GATEWAY.md).
#pragma once

#include <CLI/CLI.hpp>

namespace clampai::server {
struct GatewayOptions;
}

namespace clampai::cli {

/// Adds the options of the upstream MCP server's process to `cmd`, into `options`:
/// `--upstream-timeout-ms`, `--clear-env` and `--env NAME=VALUE` (repeatable). The one
/// definition of them, for `gateway` and `agent --upstream`.
void add_upstream_options(CLI::App* cmd, server::GatewayOptions& options);

/// Registers the `gateway` subcommand on `app` and returns it.
CLI::App* add_gateway_command(CLI::App& app);

/// Runs the parsed `gateway` subcommand: serves the client on stdin/stdout until stdin ends
/// (0), or writes the starting bindings with `--print-bindings`. Returns 2 for a bad spec or
/// bad options, 1 if the upstream could not be started.
int run_gateway_command();

}  // namespace clampai::cli
