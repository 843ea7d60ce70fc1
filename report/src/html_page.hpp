// The HTML report's private pieces: escaping, SVG charts and graphs, shared by the page's
// sections (html.cpp: the page, verify, compose, agent; html_run.cpp: a run's trace).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "clampai/kernel/model.hpp"
#include "clampai/report/html.hpp"

namespace clampai::report::html {

/// Text for HTML character data and attribute values (report/encode.hpp's XML escaper).
std::string esc(std::string_view s);
/// A number for SVG coordinates and labels: at most two decimals, no trailing zeros.
std::string num(double v);
/// The value of a decimal text (`12.500`) for drawing; 0 if it is none.
double value_of(std::string_view decimal);

/// A chart's frame: data coordinates [x0, x1] × [y0, y1] mapped into a `width` × `height` SVG
/// with margins for the axes.
struct Frame {
  double width = 880;
  double height = 240;
  double left = 72;
  double right = 120;
  double top = 16;
  double bottom = 40;
  double x0 = 0;
  double x1 = 1;
  double y0 = 0;
  double y1 = 1;
  [[nodiscard]] double x(double v) const;
  [[nodiscard]] double y(double v) const;
  /// `<svg ...>` opening tag: role img, focusable, labelled by `label`, with `attrs` added.
  [[nodiscard]] std::string open(const std::string& cls,
                                 const std::string& label,
                                 const std::string& attrs = "") const;
  /// The axes with ticks and their titles.
  [[nodiscard]] std::string axes(const std::string& x_title, const std::string& y_title) const;
};

/// A legend: items of a shape (`circle`, `square`, `cross`, `triangle`, `diamond`, `line`,
/// `dash`), a CSS class for its colour, and a label.
struct LegendItem {
  std::string shape;
  std::string cls;
  std::string label;
};
std::string legend(const std::vector<LegendItem>& items);
/// A marker of `shape` centred at (x, y) with half-size `r`, of class `cls`.
std::string marker(const std::string& shape, double x, double y, double r, const std::string& cls);

/// A graph to draw: with Graphviz when `layout` gives its SVG, else with a layered layout.
struct GraphNode {
  std::string label;
  std::string cls;    // `ok`, `bad`, `unknown`, `idle`: its colour (and its border style)
  std::string shape;  // `box`, `ellipse`, `diamond`
  bool dashed = false;
  std::string title;  // the tooltip
};
struct GraphEdge {
  std::size_t from = 0;
  std::size_t to = 0;
  std::string label;
  std::string cls;  // as a node's
  bool dashed = false;
  bool directed = true;
};
struct Graph {
  std::string label;  // for screen readers
  std::vector<GraphNode> nodes;
  std::vector<GraphEdge> edges;
};
/// The graph as DOT (for Graphviz).
std::string to_dot(const Graph& g);
/// The graph's picture: Graphviz's SVG when `layout` gives one, else the built-in layout.
std::string render_graph(const Graph& g, const GraphLayout& layout);

/// The section of a run's trace (html_run.cpp). Sets `findings` for a broken chain or replay.
std::string run_section(const std::string& id,
                        const std::string& path,
                        const std::shared_ptr<const kernel::TaskModel>& model,
                        const std::string& spec_path,
                        std::size_t buckets,
                        bool& findings);

/// `<table>` of name and value rows (a definition list as a table).
std::string facts_table(const std::vector<std::pair<std::string, std::string>>& rows,
                        const std::string& cls = "facts");

}  // namespace clampai::report::html
