// `clampai report INPUT... --html OUT`: one self-contained HTML page of traces and of the JSON
// reports of `verify`, `compose` and `agent` (private to the CLI).
#pragma once

#include <CLI/CLI.hpp>

namespace clampai::cli {

/// Registers the `report` subcommand on `app` and returns it.
CLI::App* add_report_command(CLI::App& app);

/// Runs the parsed `report` subcommand: writes the page to OUT (never over an existing file
/// without `--force`) and returns its exit code: 0 written, 1 written but a trace's chain is
/// broken or its replay differs (the page says where), 2 bad input (nothing written).
int run_report_command();

}  // namespace clampai::cli
