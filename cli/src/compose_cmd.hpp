// `clampai compose MANIFEST`: compositional checks for CI (private to the CLI).
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace clampai::cli {

/// Registers the `compose` subcommand on `app` and returns it; its arguments are kept here
/// until `run_compose_command` runs.
CLI::App* add_compose_command(CLI::App& app);

/// Runs the parsed `compose` subcommand: loads the manifest and every spec it names, verifies
/// the tasks (reusing certificates from `--cache`), checks the composition obligations and
/// prints the report (text, json, sarif or junit) on stdout, or with `--graph dot` only the
/// composition graph. Returns the exit code of DESIGN §4 (2, after a message on stderr, for a
/// manifest or spec that cannot be loaded).
int run_compose_command();

}  // namespace clampai::cli
