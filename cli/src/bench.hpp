// `clampai bench SPEC`: how fast the kernel decides on the user's own spec (private to the CLI).
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace clampai::cli {

/// Registers the `bench` subcommand on `app` and returns it. Its `--format` option writes
/// `format_out` (shared with the other subcommands); the rest of its arguments are kept here
/// until `run_bench_command` runs. Requires `format_out` to outlive the parse and the run.
/// No formal counterpart: this measures, it decides nothing.
CLI::App* add_bench_command(CLI::App& app, std::string& format_out);

/// Runs the parsed `bench` subcommand: loads the spec, measures `evaluate` then atomic
/// `execute` for the requested duration, and prints decisions per second and latency
/// percentiles (text or JSON) on stdout, with a progress line on stderr when it is a terminal.
/// Returns 0, or 2 (after printing `clampai: error: SPEC: …` on stderr) if the spec cannot be
/// loaded or its initial state is refused. Requires `add_bench_command`'s subcommand to have
/// been parsed.
/// @throws std::exception only for failures outside the library (allocation, I/O on stdout).
int run_bench_command();

}  // namespace clampai::cli
