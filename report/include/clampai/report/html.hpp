// The HTML report: one self-contained page (styles, scripts and pictures inline; nothing
// fetched when it is opened) of a run's trace, or of the JSON report of `verify`, `compose` or
// `agent` (`clampai report ... --html OUT`, docs/REPORT.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace clampai::report {

/// Lays out a graph given in Graphviz's DOT language: its SVG, or nullopt when it cannot (then
/// the page draws the graph with its own simple layered layout).
using GraphLayout = std::function<std::optional<std::string>(const std::string& dot)>;

/// What an input of `clampai report` is.
enum class HtmlInput : std::uint8_t { trace, verify, compose, agent };
std::string_view to_string(HtmlInput kind);

/// Recognises an input (docs/REPORT.md): a file whose first line is a whole JSON object with
/// the members `seq` and `kind` is a trace (JSON Lines, read streaming at any length); any
/// other file is one JSON document, recognised by the members its schema requires: `verify`
/// (`spec`, `summary`, `facts`, `obligations`), `compose` (`manifest`, `summary`, `tasks`,
/// `obligations`) or `agent` (`spec`, `llm`, `termination`, `log`).
/// @throws FileError if it cannot be read; InvalidArgument naming the file and what it holds
/// if it is none of these (an error report, another command's report, not JSON).
HtmlInput recognise_input(const std::string& path);

struct HtmlOptions {
  /// A spec to replay the traces with (as `clampai trace verify --spec`); empty: none. With
  /// it, the page draws the budget (T1) and each comparison invariant's margin.
  std::string spec{};
  /// Graphviz, when it is there; else (empty, or nullopt) the built-in layout.
  GraphLayout layout{};
  /// The most points a run's charts draw: a longer trace is drawn in buckets of entries
  /// (each keeping its exact figures in the tables), so the page's size is bounded.
  std::size_t buckets = 240;
};

/// What was drawn.
struct HtmlResult {
  /// A trace's chain is broken or truncated, or its replay differs from it: the page says
  /// where (exit code 1 of `clampai report`).
  bool findings = false;
  /// What each input was, in order.
  std::vector<HtmlInput> kinds{};
};

/// Writes the page of `inputs` (each recognised by `recognise_input`), a section each.
/// @throws FileError, TraceError, SpecError or InvalidArgument naming the input at fault.
HtmlResult write_html(std::ostream& out,
                      const std::vector<std::string>& inputs,
                      const HtmlOptions& options);

}  // namespace clampai::report
