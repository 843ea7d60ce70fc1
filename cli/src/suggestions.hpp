// Did-you-mean messages for command-line mistakes (unknown commands, options and values).
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace clampai::cli {

/// After CLI11 refused `argv`: a one-line message naming an unknown subcommand, an unknown
/// option, or a value outside an option's choices, with the closest valid spelling; "" when
/// the mistake is none of those (CLI11's own message is then shown).
std::string parse_error_hint(const CLI::App& app, int argc, char** argv);

}  // namespace clampai::cli
