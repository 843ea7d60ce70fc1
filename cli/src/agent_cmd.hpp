// `clampai agent SPEC --llm ...`: an LLM drives the task through the safety kernel (private to
// the CLI).
#pragma once

#include <CLI/CLI.hpp>

namespace clampai::cli {

/// Registers the `agent` subcommand on `app` and returns it.
CLI::App* add_agent_command(CLI::App& app);

/// Runs the parsed `agent` subcommand and returns its exit code: 0 the goal was reached, 1 it
/// was not, 2 bad input (a missing or invalid spec, an unknown `--llm`, a missing API key).
int run_agent_command();

}  // namespace clampai::cli
