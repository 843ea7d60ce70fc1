// `clampai serve` and `clampai mcp SPEC`: the kernel as a service (private to the CLI).
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace clampai::cli {

/// Registers the `serve` subcommand on `app` and returns it.
CLI::App* add_serve_command(CLI::App& app);

/// Whether `host` is a loopback address (127.x.x.x or ::1): the only one served without a token.
bool is_loopback(const std::string& host);

/// The bearer token in the file `path` (`--token-file`; trailing white space dropped).
/// @throws InvalidArgument if it is empty, shorter than 16 bytes or holds white space;
/// FileError if it cannot be read.
std::string read_token(const std::string& path);

/// Runs the parsed `serve` subcommand until SIGTERM or SIGINT, then seals every task's trace.
/// Returns 0, or 2 for bad input (a spec, the token file, an address, the data directory).
int run_serve_command();

}  // namespace clampai::cli
