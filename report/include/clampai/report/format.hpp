// Report formats and the report of a command that could not do its work (shared by the CLI,
// the server and the bindings).
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>

namespace clampai::report {

/// The output formats. `text` is for people; the others are for machines and CI.
enum class Format : std::uint8_t { text, json, sarif, junit };
std::string_view to_string(Format f);
/// `text`, `json`, `sarif` or `junit`; nothing for any other name.
std::optional<Format> parse_format(std::string_view name);

/// The release of the toolkit, as reports name it (`0.1.0`).
std::string_view tool_version();

/// A place in a file: line and column count from 1; 0 means unknown.
struct Location {
  std::string file{};
  std::uint32_t line = 0;
  std::uint32_t column = 0;
};

/// Why a command produced no results: bad input (a missing or invalid file, a bad option value)
/// or an internal error. Exit code 2 (DESIGN §4).
struct Failure {
  std::string command{};  // `verify`, `compose`, `trace verify`, ...
  std::string input{};    // the file named on the command line, if any
  std::string message{};  // the whole message, as the command prints it on stderr
  Location location{};    // where in which file the fault is, when known
  bool internal = false;  // a bug in clampai rather than bad input
  int exit_code = 2;
};

/// The position a message starts with, if it names one of `file` as `FILE: LINE:COLUMN: ...`
/// or `LINE:COLUMN: ...` (a JSON syntax error); otherwise only the file.
Location locate(const std::string& file, const std::string& message);

/// A report in `format` that carries `failure` instead of results, so CI shows the error:
/// JSON `{"command", "error": {...}, "exit_code"}` (the `error` object of the report schemas);
/// SARIF with an error-level tool execution notification and `executionSuccessful: false`;
/// JUnit a test case holding an `<error>`. Nothing for `text` (the message goes to stderr).
void write_failure(std::ostream& out, Format format, const Failure& failure);

}  // namespace clampai::report
