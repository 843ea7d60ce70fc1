// The HTML report: the page, its charts and graphs, and the sections of the JSON reports of
// `verify`, `compose` and `agent` (a run's trace: html_run.cpp). docs/REPORT.md.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "clampai/kernel/error.hpp"
#include "clampai/kernel/file.hpp"
#include "clampai/kernel/number.hpp"
#include "clampai/kernel/spec_loader.hpp"
#include "clampai/report/format.hpp"
#include "clampai/report/live_charts.hpp"
#include "encode.hpp"
#include "html_page.hpp"

namespace clampai::report {

using nlohmann::json;

std::string_view to_string(HtmlInput kind) {
  switch (kind) {
    case HtmlInput::trace:
      return "trace";
    case HtmlInput::verify:
      return "verify";
    case HtmlInput::compose:
      return "compose";
    case HtmlInput::agent:
      return "agent";
  }
  return "trace";
}

namespace html {

std::string esc(std::string_view s) { return detail::xml(s); }

std::string num(double v) {
  if (!std::isfinite(v)) return "0";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  std::string s = buf;
  while (!s.empty() && s.back() == '0') s.pop_back();
  if (!s.empty() && s.back() == '.') s.pop_back();
  if (s == "-0") s = "0";
  return s;
}

double value_of(std::string_view decimal) {
  const auto d = kernel::Decimal::parse(decimal);
  if (!d) return 0;
  return static_cast<double>(d->units) / std::pow(10.0, d->scale);
}

double Frame::x(double v) const {
  const double span = x1 > x0 ? x1 - x0 : 1;
  return left + (v - x0) / span * (width - left - right);
}

double Frame::y(double v) const {
  const double span = y1 > y0 ? y1 - y0 : 1;
  return height - bottom - (v - y0) / span * (height - top - bottom);
}

std::string Frame::open(const std::string& cls,
                        const std::string& label,
                        const std::string& attrs) const {
  return "<svg class=\"chart " + cls + "\" viewBox=\"0 0 " + num(width) + " " + num(height) +
         "\" role=\"img\" tabindex=\"0\" aria-label=\"" + esc(label) + "\"" +
         (attrs.empty() ? "" : " " + attrs) + "><title>" + esc(label) + "</title>";
}

namespace {

// About `n` round tick values covering [lo, hi].
std::vector<double> ticks(double lo, double hi, int n) {
  std::vector<double> out;
  if (!(hi > lo)) {
    out.push_back(lo);
    return out;
  }
  const double raw = (hi - lo) / n;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (const double m : {1.0, 2.0, 2.5, 5.0, 10.0}) {
    if (raw <= m * mag) {
      step = m * mag;
      break;
    }
  }
  for (double t = std::ceil(lo / step) * step; t <= hi + step * 1e-9 && out.size() < 50; t += step)
    out.push_back(std::abs(t) < step * 1e-9 ? 0 : t);
  return out;
}

}  // namespace

std::string Frame::axes(const std::string& x_title, const std::string& y_title) const {
  std::string s = "<g class=\"axes\" aria-hidden=\"true\">";
  const double bx = x(x0);
  const double by = y(y0);
  s += "<line class=\"axis\" x1=\"" + num(bx) + "\" y1=\"" + num(by) + "\" x2=\"" + num(x(x1)) +
       "\" y2=\"" + num(by) + "\"/>";
  s += "<line class=\"axis\" x1=\"" + num(bx) + "\" y1=\"" + num(by) + "\" x2=\"" + num(bx) +
       "\" y2=\"" + num(y(y1)) + "\"/>";
  for (const double t : ticks(x0, x1, 8)) {
    if (x1 - x0 >= 2 && t != std::floor(t)) continue;  // entries and steps are whole
    s += "<line class=\"tick\" x1=\"" + num(x(t)) + "\" y1=\"" + num(by) + "\" x2=\"" + num(x(t)) +
         "\" y2=\"" + num(by + 4) + "\"/><text class=\"tick\" x=\"" + num(x(t)) + "\" y=\"" +
         num(by + 16) + "\" text-anchor=\"middle\">" + num(t) + "</text>";
  }
  if (!y_title.empty()) {
    for (const double t : ticks(y0, y1, 4)) {
      s += "<line class=\"grid\" x1=\"" + num(bx) + "\" y1=\"" + num(y(t)) + "\" x2=\"" +
           num(x(x1)) + "\" y2=\"" + num(y(t)) + "\"/><text class=\"tick\" x=\"" + num(bx - 6) +
           "\" y=\"" + num(y(t) + 4) + "\" text-anchor=\"end\">" + num(t) + "</text>";
    }
    s += "<text class=\"title\" transform=\"translate(14 " + num((top + by) / 2) +
         ") rotate(-90)\" text-anchor=\"middle\">" + esc(y_title) + "</text>";
  }
  s += "<text class=\"title\" x=\"" + num((bx + x(x1)) / 2) + "\" y=\"" + num(height - 6) +
       "\" text-anchor=\"middle\">" + esc(x_title) + "</text></g>";
  return s;
}

std::string marker(const std::string& shape, double x, double y, double r, const std::string& cls) {
  const std::string c = " class=\"" + cls + "\"";
  if (shape == "circle")
    return "<circle" + c + " cx=\"" + num(x) + "\" cy=\"" + num(y) + "\" r=\"" + num(r) + "\"/>";
  if (shape == "square")
    return "<rect" + c + " x=\"" + num(x - r) + "\" y=\"" + num(y - r) + "\" width=\"" +
           num(2 * r) + "\" height=\"" + num(2 * r) + "\"/>";
  if (shape == "triangle")
    return "<path" + c + " d=\"M" + num(x) + " " + num(y - r) + "L" + num(x + r) + " " +
           num(y + r) + "L" + num(x - r) + " " + num(y + r) + "Z\"/>";
  if (shape == "diamond")
    return "<path" + c + " d=\"M" + num(x) + " " + num(y - r) + "L" + num(x + r) + " " + num(y) +
           "L" + num(x) + " " + num(y + r) + "L" + num(x - r) + " " + num(y) + "Z\"/>";
  if (shape == "cross")
    return "<path" + c + " stroke-width=\"" + num(std::max(1.5, r / 2)) + "\" d=\"M" + num(x - r) +
           " " + num(y - r) + "L" + num(x + r) + " " + num(y + r) + "M" + num(x + r) + " " +
           num(y - r) + "L" + num(x - r) + " " + num(y + r) + "\"/>";
  if (shape == "line" || shape == "dash")
    return "<line" + c + " x1=\"" + num(x - r) + "\" y1=\"" + num(y) + "\" x2=\"" + num(x + r) +
           "\" y2=\"" + num(y) + "\"/>";
  return "";
}

std::string legend(const std::vector<LegendItem>& items) {
  std::string s = "<ul class=\"legend\">";
  for (const auto& i : items) {
    s += "<li><svg width=\"22\" height=\"14\" viewBox=\"0 0 22 14\" aria-hidden=\"true\">" +
         marker(i.shape, 11, 7, i.shape == "line" || i.shape == "dash" ? 10 : 5, i.cls) +
         "</svg> " + esc(i.label) + "</li>";
  }
  return s + "</ul>";
}

std::string facts_table(const std::vector<std::pair<std::string, std::string>>& rows,
                        const std::string& cls) {
  std::string s = "<table class=\"" + cls + "\"><tbody>";
  for (const auto& [k, v] : rows)
    s += "<tr><th scope=\"row\">" + esc(k) + "</th><td>" + v + "</td></tr>";
  return s + "</tbody></table>";
}

namespace {

// Okabe–Ito colours of the classes, for Graphviz (the page's CSS has the same ones).
const char* dot_colour(const std::string& cls) {
  if (cls == "ok") return "#009E73";
  if (cls == "bad") return "#D55E00";
  if (cls == "unknown") return "#E69F00";
  return "#666666";
}

std::string dot_quote(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

}  // namespace

std::string to_dot(const Graph& g) {
  std::string s =
      "digraph G {\nrankdir=LR;\nbgcolor=\"transparent\";\nnode [fontname=\"Helvetica\", "
      "fontsize=11, style=\"filled\", fillcolor=\"white\", penwidth=2];\nedge "
      "[fontname=\"Helvetica\", "
      "fontsize=10, penwidth=1.5];\n";
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    const GraphNode& n = g.nodes[i];
    s += "n" + std::to_string(i) + " [label=" + dot_quote(n.label) +
         ", shape=" + (n.shape.empty() ? std::string("box") : n.shape) + ", color=\"" +
         dot_colour(n.cls) + "\"" + (n.dashed ? ", style=\"filled,dashed\"" : "") +
         ", tooltip=" + dot_quote(n.title.empty() ? n.label : n.title) + "];\n";
  }
  for (const GraphEdge& e : g.edges) {
    s += "n" + std::to_string(e.from) + " -> n" + std::to_string(e.to) +
         " [label=" + dot_quote(e.label) + ", color=\"" + dot_colour(e.cls) +
         "\", fontcolor=\"#222222\"" + (e.dashed ? ", style=dashed" : "") +
         (e.directed ? "" : ", dir=none") + "];\n";
  }
  return s + "}\n";
}

namespace {

// The built-in layout: each node in the column of its longest path from a source (a cycle's
// nodes stay where the bounded relaxation leaves them), stacked in order within a column.
std::string builtin_layout(const Graph& g) {
  const std::size_t n = g.nodes.size();
  std::vector<std::size_t> layer(n, 0);
  for (std::size_t round = 0; round < n; ++round) {
    bool changed = false;
    for (const GraphEdge& e : g.edges) {
      if (!e.directed || e.from >= n || e.to >= n || e.from == e.to) continue;
      if (layer[e.to] < layer[e.from] + 1) {
        layer[e.to] = layer[e.from] + 1;
        changed = true;
      }
    }
    if (!changed) break;
  }
  std::map<std::size_t, std::size_t> height;
  std::vector<std::size_t> row(n, 0);
  for (std::size_t i = 0; i < n; ++i) row[i] = height[layer[i]]++;
  std::size_t rows = 1;
  std::size_t columns = 1;
  for (const auto& [l, h] : height) {
    rows = std::max(rows, h);
    columns = std::max(columns, l + 1);
  }
  constexpr double kW = 150;
  constexpr double kH = 40;
  constexpr double kGapX = 70;
  constexpr double kGapY = 30;
  const double width = static_cast<double>(columns) * (kW + kGapX) + 20;
  const double height_px = static_cast<double>(rows) * (kH + kGapY) + 20;
  const auto cx = [&](std::size_t i) { return 10 + static_cast<double>(layer[i]) * (kW + kGapX); };
  const auto cy = [&](std::size_t i) { return 10 + static_cast<double>(row[i]) * (kH + kGapY); };
  std::string s = "<svg class=\"graph builtin\" viewBox=\"0 0 " + num(width) + " " +
                  num(height_px) + "\" width=\"" + num(width) + "\" role=\"img\" aria-label=\"" +
                  esc(g.label) +
                  "\"><defs><marker id=\"arrow\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" "
                  "markerWidth=\"7\" markerHeight=\"7\" orient=\"auto-start-reverse\"><path "
                  "d=\"M0 0L10 5L0 10Z\" class=\"arrowhead\"/></marker></defs>";
  for (const GraphEdge& e : g.edges) {
    if (e.from >= n || e.to >= n) continue;
    double x1 = cx(e.from) + kW;
    double x2 = cx(e.to);
    if (layer[e.to] <= layer[e.from]) {  // same column (a parallel pair) or backwards
      x1 = cx(e.from) + kW / 2;
      x2 = cx(e.to) + kW / 2;
    }
    const double y1 = cy(e.from) + kH / 2;
    const double y2 = cy(e.to) + kH / 2;
    s += "<g class=\"edge " + e.cls + "\"><title>" + esc(g.nodes[e.from].label) + " → " +
         esc(g.nodes[e.to].label) + (e.label.empty() ? "" : ": " + esc(e.label)) +
         "</title><line x1=\"" + num(x1) + "\" y1=\"" + num(y1) + "\" x2=\"" + num(x2) +
         "\" y2=\"" + num(y2) + "\"" + (e.dashed ? " stroke-dasharray=\"6 4\"" : "") +
         (e.directed ? " marker-end=\"url(#arrow)\"" : "") + "/>";
    if (!e.label.empty())
      s += "<text x=\"" + num((x1 + x2) / 2) + "\" y=\"" + num((y1 + y2) / 2 - 4) +
           "\" text-anchor=\"middle\">" + esc(e.label.substr(0, 24)) + "</text>";
    s += "</g>";
  }
  for (std::size_t i = 0; i < n; ++i) {
    const GraphNode& node = g.nodes[i];
    const double x = cx(i);
    const double y = cy(i);
    s += "<g class=\"node " + node.cls + "\"><title>" +
         esc(node.title.empty() ? node.label : node.title) + "</title>";
    if (node.shape == "diamond") {
      s += "<path d=\"M" + num(x + kW / 2) + " " + num(y) + "L" + num(x + kW) + " " +
           num(y + kH / 2) + "L" + num(x + kW / 2) + " " + num(y + kH) + "L" + num(x) + " " +
           num(y + kH / 2) + "Z\"";
    } else {
      s += "<rect x=\"" + num(x) + "\" y=\"" + num(y) + "\" width=\"" + num(kW) + "\" height=\"" +
           num(kH) + "\" rx=\"" + (node.shape == "ellipse" ? "20" : "4") + "\"";
    }
    s += std::string(node.dashed ? " stroke-dasharray=\"6 3\"" : "") + "/>";
    // Each line of the label, cut to the box.
    std::vector<std::string> lines;
    for (std::size_t start = 0; start <= node.label.size();) {
      const auto nl = node.label.find('\n', start);
      std::string line = node.label.substr(start, nl == std::string::npos ? nl : nl - start);
      if (line.size() > 24) line = line.substr(0, 23) + "…";
      lines.push_back(line);
      if (nl == std::string::npos) break;
      start = nl + 1;
    }
    const double first = y + kH / 2 + 4 - 6.5 * static_cast<double>(lines.size() - 1);
    for (std::size_t l = 0; l < lines.size(); ++l)
      s += "<text x=\"" + num(x + kW / 2) + "\" y=\"" + num(first + 13 * static_cast<double>(l)) +
           "\" text-anchor=\"middle\">" + esc(lines[l]) + "</text>";
    s += "</g>";
  }
  return s + "</svg>";
}

}  // namespace

std::string render_graph(const Graph& g, const GraphLayout& layout) {
  if (layout) {
    if (auto svg = layout(to_dot(g))) {
      const auto at = svg->find("<svg");
      if (at != std::string::npos) {
        return "<div class=\"graph dot\" role=\"img\" aria-label=\"" + esc(g.label) + "\">" +
               svg->substr(at) + "</div>";
      }
    }
  }
  return "<div class=\"graph\">" + builtin_layout(g) + "</div>";
}

}  // namespace html

namespace {

using html::esc;
using html::facts_table;
using html::num;

constexpr std::size_t kPeekBytes = 64 * 1024;

std::string text_of(const json& j) {
  if (j.is_string()) return j.get<std::string>();
  if (j.is_null()) return "";
  return j.dump();
}

bool has_all(const json& j, std::initializer_list<const char*> keys) {
  return std::all_of(keys.begin(), keys.end(), [&](const char* k) { return j.contains(k); });
}

std::optional<HtmlInput> kind_of(const json& j) {
  if (!j.is_object()) return std::nullopt;
  if (has_all(j, {"spec", "summary", "facts", "obligations"})) return HtmlInput::verify;
  if (has_all(j, {"manifest", "summary", "tasks", "obligations"})) return HtmlInput::compose;
  if (has_all(j, {"spec", "llm", "termination", "log"})) return HtmlInput::agent;
  return std::nullopt;
}

// Whether the members a section reads have their schema's types (the rest is read with
// defaults, and a member of another type is a json::exception, reported as bad input).
void check_shape(const std::string& path, HtmlInput kind, const json& j) {
  const auto need = [&](const char* key, bool ok, const char* what) {
    if (!ok)
      throw InvalidArgument(path + ": `" + key + "` is not " + what + " as the " +
                            std::string(to_string(kind)) + " report's schema says");
  };
  if (kind == HtmlInput::verify || kind == HtmlInput::compose) {
    need("summary", j["summary"].is_object(), "an object");
    need("obligations", j["obligations"].is_array(), "an array");
    for (const json& o : j["obligations"]) need("obligations[]", o.is_object(), "objects");
  }
  if (kind == HtmlInput::compose) {
    need("tasks", j["tasks"].is_array(), "an array");
    for (const json& t : j["tasks"]) need("tasks[]", t.is_object(), "objects");
  }
  if (kind == HtmlInput::agent) {
    need("log", j["log"].is_array(), "an array");
    for (const json& step : j["log"]) need("log[]", step.is_object(), "objects");
    need("spec", j["spec"].is_string(), "a string");
  }
}

const char* verdict_symbol(const std::string& v) {
  if (v == "proved") return "✓";
  if (v == "refuted") return "✗";
  return "?";
}

std::string verdict_class(const std::string& v) {
  if (v == "proved") return "ok";
  if (v == "refuted") return "bad";
  return "unknown";
}

std::string verdict_badge(const std::string& v) {
  return "<span class=\"badge " + verdict_class(v) + "\">" + verdict_symbol(v) + " " + esc(v) +
         "</span>";
}

// A counterexample `{"pre", "params"?, "post"?}` as a table of variables.
std::string counterexample_table(const json& cex) {
  std::set<std::string> names;
  for (const char* part : {"pre", "post"})
    if (cex.contains(part) && cex[part].is_object())
      for (const auto& [k, v] : cex[part].items()) names.insert(k);
  std::string s;
  if (cex.contains("params") && cex["params"].is_object() && !cex["params"].empty()) {
    s += "<p>parameters: ";
    bool first = true;
    for (const auto& [k, v] : cex["params"].items()) {
      s += (first ? "" : ", ") + std::string("<code>") + esc(k) + " = " + esc(text_of(v)) +
           "</code>";
      first = false;
    }
    s += "</p>";
  }
  const bool post = cex.contains("post") && cex["post"].is_object();
  s += "<table class=\"cex-table\"><thead><tr><th scope=\"col\">variable</th><th "
       "scope=\"col\">before</th>" +
       std::string(post ? "<th scope=\"col\">after</th>" : "") + "</tr></thead><tbody>";
  for (const auto& name : names) {
    const std::string pre = cex.contains("pre") ? text_of(cex["pre"].value(name, json())) : "";
    const std::string after = post ? text_of(cex["post"].value(name, json())) : "";
    s += "<tr" + std::string(post && pre != after ? " class=\"changed\"" : "") +
         "><th scope=\"row\"><code>" + esc(name) + "</code></th><td><code>" + esc(pre) +
         "</code></td>" + (post ? "<td><code>" + esc(after) + "</code></td>" : "") + "</tr>";
  }
  return s + "</tbody></table>";
}

std::string count_cell(const json& j, const char* key) {
  return esc(text_of(j.value(key, json(0))));
}

// ---- verify ----

std::string verify_section(const std::string& id, const std::string& path, const json& r) {
  std::string s =
      "<section id=\"" + id + "\" aria-labelledby=\"" + id + "-h\" data-kind=\"verify\"><h2 id=\"" +
      id + "-h\">Proofs: " + esc(text_of(r["spec"])) + "</h2><p class=\"source\">from <code>" +
      esc(path) + "</code> (<code>clampai verify --format json</code>)</p>";
  const json& sum = r["summary"];
  s += facts_table(
      {{"proved", "<span data-figure=\"proved\">" + count_cell(sum, "proved") + "</span>"},
       {"refuted", "<span data-figure=\"refuted\">" + count_cell(sum, "refuted") + "</span>"},
       {"unknown", "<span data-figure=\"unknown\">" + count_cell(sum, "unknown") + "</span>"},
       {"lint warnings", count_cell(sum, "warnings")},
       {"seconds", esc(text_of(sum.value("seconds", json(0))))}});
  // The grid: one row per action (the initial state's base cases first), one column per
  // invariant.
  std::vector<std::string> actions;
  std::vector<std::string> invariants;
  std::map<std::pair<std::string, std::string>, const json*> cells;
  std::vector<const json*> others;
  const auto add = [](std::vector<std::string>& v, const std::string& x) {
    if (std::find(v.begin(), v.end(), x) == v.end()) v.push_back(x);
  };
  const std::string initial = "(initial state)";
  for (const json& o : r["obligations"]) {
    const std::string kind = o.value("kind", "");
    if ((kind == "preservation" || kind == "base_case") && o.contains("invariant")) {
      const std::string action = kind == "base_case" ? initial : o.value("action", "");
      const std::string inv = o.value("invariant", "");
      if (kind == "base_case" && (actions.empty() || actions.front() != initial))
        actions.insert(actions.begin(), initial);
      else
        add(actions, action);
      add(invariants, inv);
      cells[{action, inv}] = &o;
    } else {
      others.push_back(&o);
    }
  }
  std::string panels;
  std::size_t k = 0;
  if (!invariants.empty()) {
    s += "<h3>Obligations: action × invariant</h3>" +
         html::legend({{"square", "ok", "✓ proved"},
                       {"cross", "bad", "✗ refuted (select the cell for its counterexample)"},
                       {"diamond", "unknown", "? unknown"}}) +
         "<div class=\"scroll\"><table class=\"grid\" role=\"grid\" aria-label=\"obligations by "
         "action and invariant\"><thead><tr><th scope=\"col\">action \\ invariant</th>";
    for (const auto& inv : invariants) s += "<th scope=\"col\"><code>" + esc(inv) + "</code></th>";
    s += "</tr></thead><tbody>";
    for (const auto& a : actions) {
      s += "<tr><th scope=\"row\">" + (a == initial ? esc(a) : "<code>" + esc(a) + "</code>") +
           "</th>";
      for (const auto& inv : invariants) {
        const auto it = cells.find({a, inv});
        if (it == cells.end()) {
          s += "<td class=\"none\">–</td>";
          continue;
        }
        const json& o = *it->second;
        const std::string v = o.value("verdict", "unknown");
        const std::string reason = o.value("reason", "");
        const std::string panel = id + "-cex-" + std::to_string(k++);
        const bool opens = v != "proved";
        s += "<td class=\"" + verdict_class(v) + "\" data-verdict=\"" + esc(v) +
             "\" data-obligation=\"" + esc(o.value("id", "")) +
             "\"><button type=\"button\" class=\"cell\"" +
             (opens ? " aria-expanded=\"false\" aria-controls=\"" + panel + "\"" : "") +
             " title=\"" +
             esc(o.value("id", "") + ": " + v + (reason.empty() ? "" : " (" + reason + ")")) +
             "\">" + verdict_symbol(v) + "<span class=\"sr\"> " + esc(v) + "</span></button></td>";
        if (opens) {
          panels += "<div class=\"cex\" id=\"" + panel + "\" hidden><h4>" + verdict_badge(v) +
                    " <code>" + esc(o.value("id", "")) + "</code></h4><p>" + esc(reason) + "</p>";
          if (o.contains("counterexample"))
            panels += "<p>Counterexample, replayed through the kernel:</p>" +
                      counterexample_table(o["counterexample"]);
          panels += "</div>";
        }
      }
      s += "</tr>";
    }
    s += "</tbody></table></div>" + panels;
  }
  if (!others.empty()) {
    s += "<h3>Other obligations</h3><div class=\"scroll\"><table class=\"list\"><thead><tr><th "
         "scope=\"col\">obligation</th><th scope=\"col\">verdict</th><th "
         "scope=\"col\">reason</th></tr></thead><tbody>";
    for (const json* o : others) {
      s += "<tr data-verdict=\"" + esc(o->value("verdict", "")) + "\"><td><code>" +
           esc(o->value("id", "")) + "</code></td><td>" + verdict_badge(o->value("verdict", "")) +
           "</td><td>" + esc(o->value("reason", "")) + "</td></tr>";
    }
    s += "</tbody></table></div>";
  }
  return s + "</section>";
}

// ---- compose ----

// The tasks an obligation id `sequential:a+b->c` or `conditional:a[cond]->b` joins: the
// sources, the target and the edge's label.
struct Link {
  std::vector<std::string> from;
  std::string to;
  std::string label;
};

std::optional<Link> link_of(const std::string& id) {
  const auto colon = id.find(':');
  if (colon == std::string::npos) return std::nullopt;
  const std::string kind = id.substr(0, colon);
  const std::string rest = id.substr(colon + 1);
  if (kind != "sequential" && kind != "conditional") return std::nullopt;
  const auto arrow = rest.find("->");
  if (arrow == std::string::npos) return std::nullopt;
  Link l;
  std::string left = rest.substr(0, arrow);
  l.to = rest.substr(arrow + 2);
  if (kind == "conditional") {
    const auto bracket = left.find('[');
    if (bracket != std::string::npos && left.back() == ']') {
      l.label = "if " + left.substr(bracket + 1, left.size() - bracket - 2);
      left = left.substr(0, bracket);
    }
  }
  std::size_t start = 0;
  while (start <= left.size()) {
    const auto plus = left.find('+', start);
    l.from.push_back(
        left.substr(start, plus == std::string::npos ? std::string::npos : plus - start));
    if (plus == std::string::npos) break;
    start = plus + 1;
  }
  return l;
}

std::string compose_section(const std::string& id,
                            const std::string& path,
                            const json& r,
                            const GraphLayout& layout) {
  std::string s = "<section id=\"" + id + "\" aria-labelledby=\"" + id +
                  "-h\" data-kind=\"compose\"><h2 id=\"" + id +
                  "-h\">Composition: " + esc(text_of(r["manifest"])) +
                  "</h2><p class=\"source\">from <code>" + esc(path) +
                  "</code> (<code>clampai compose --format json</code>)</p>";
  const json& sum = r["summary"];
  s += facts_table({{"proved", count_cell(sum, "proved")},
                    {"refuted", count_cell(sum, "refuted")},
                    {"unknown", count_cell(sum, "unknown")},
                    {"tasks", count_cell(sum, "tasks")},
                    {"certificates reused", count_cell(sum, "reused")}});
  html::Graph g;
  g.label = "the pipeline of tasks";
  std::map<std::string, std::size_t> index;
  for (const json& t : r["tasks"]) {
    const std::string name = t.value("name", "");
    const bool reused = t.value("reused", false);
    const bool refuted = t.value("refuted", 0) > 0;
    const bool unknown = t.value("unknown", 0) > 0;
    index[name] = g.nodes.size();
    g.nodes.push_back(
        {name + (reused ? "\n(cached certificate)" : "\n(new certificate)"),
         refuted   ? "bad"
         : unknown ? "unknown"
                   : "ok",
         "box",
         reused,
         name + ": " + (reused ? "certificate reused from the cache" : "verified now")});
  }
  const auto node = [&](const std::string& name) {
    if (auto it = index.find(name); it != index.end()) return it->second;
    index[name] = g.nodes.size();
    g.nodes.push_back({name, "idle", "ellipse", false, name});
    return g.nodes.size() - 1;
  };
  for (const json& o : r["obligations"]) {
    const std::string oid = o.value("id", "");
    const std::string cls = verdict_class(o.value("verdict", "unknown"));
    if (auto l = link_of(oid)) {
      for (const auto& f : l->from)
        g.edges.push_back({node(f), node(l->to), l->label, cls, false, true});
    } else if (oid.rfind("parallel:", 0) == 0) {
      const std::string rest = oid.substr(9);
      const auto bar = rest.find("||");
      if (bar != std::string::npos) {
        g.edges.push_back(
            {node(rest.substr(0, bar)), node(rest.substr(bar + 2)), "parallel", cls, true, false});
      }
    }
  }
  s += "<h3>Pipeline</h3>" +
       html::legend({{"square", "ok", "all proved"},
                     {"cross", "bad", "something refuted"},
                     {"diamond", "unknown", "something unknown"},
                     {"dash", "idle dashed", "dashed border: certificate reused (cached)"}}) +
       html::render_graph(g, layout);
  s += "<h3>Tasks</h3><div class=\"scroll\"><table class=\"list tasks\"><thead><tr><th "
       "scope=\"col\">task</th><th scope=\"col\">certificate</th><th scope=\"col\">proved</th><th "
       "scope=\"col\">refuted</th><th scope=\"col\">unknown</th></tr></thead><tbody>";
  for (const json& t : r["tasks"]) {
    s += "<tr><td><code>" + esc(t.value("name", "")) + "</code></td><td>" +
         (t.value("reused", false) ? "cached" : "new") + "</td><td class=\"num\">" +
         count_cell(t, "proved") + "</td><td class=\"num\">" + count_cell(t, "refuted") +
         "</td><td class=\"num\">" + count_cell(t, "unknown") + "</td></tr>";
  }
  s += "</tbody></table></div><h3>Obligations</h3><div class=\"scroll\"><table "
       "class=\"list\"><thead><tr><th scope=\"col\">obligation</th><th "
       "scope=\"col\">verdict</th><th scope=\"col\">reason</th></tr></thead><tbody>";
  for (const json& o : r["obligations"]) {
    s += "<tr data-verdict=\"" + esc(o.value("verdict", "")) + "\"><td><code>" +
         esc(o.value("id", "")) + "</code></td><td>" + verdict_badge(o.value("verdict", "")) +
         "</td><td>" + esc(o.value("reason", ""));
    if (o.contains("counterexample"))
      s += "<details><summary>counterexample</summary>" +
           counterexample_table(o["counterexample"]) + "</details>";
    s += "</td></tr>";
  }
  return s + "</tbody></table></div></section>";
}

// ---- agent ----

std::string agent_section(const std::string& id,
                          const std::string& path,
                          const json& r,
                          const std::string& spec_path,
                          const GraphLayout& layout) {
  const std::string spec = spec_path.empty() ? text_of(r["spec"]) : spec_path;
  std::string s =
      "<section id=\"" + id + "\" aria-labelledby=\"" + id + "-h\" data-kind=\"agent\"><h2 id=\"" +
      id + "-h\">Agent run: " + esc(text_of(r["spec"])) + "</h2><p class=\"source\">from <code>" +
      esc(path) + "</code> (<code>clampai agent --format json</code>)</p>";
  const json budget = r.value("budget", json::object());
  s += facts_table(
      {{"termination",
        esc(text_of(r["termination"])) + " — " + esc(text_of(r.value("message", json(""))))},
       {"goal reached", r.value("goal_reached", false) ? "yes" : "no"},
       {"LLM",
        esc(text_of(r["llm"])) + (r.contains("model") ? " " + esc(text_of(r["model"])) : "")},
       {"steps",
        count_cell(r, "steps") + " (executed " + count_cell(r, "executed") + ", rejected " +
            count_cell(r, "rejected") + ")"},
       {"choices",
        "LLM calls " + count_cell(r, "llm_calls") + ", dominant " +
            count_cell(r, "dominant_choices") + ", fallbacks " + count_cell(r, "fallbacks")},
       {"budget",
        "net " + esc(text_of(budget.value("net", json("")))) + ", gross " +
            esc(text_of(budget.value("gross", json("")))) + " of " +
            esc(text_of(budget.value("total", json(""))))}});
  // The causal graph: the spec's actions and dependencies, each marked by what the kernel
  // answered when it was chosen.
  std::map<std::string, std::pair<std::size_t, std::size_t>> answers;  // approved, rejected
  for (const json& step : r["log"]) {
    auto& a = answers[step.value("action", "")];
    (step.value("approved", false) ? a.first : a.second)++;
  }
  std::shared_ptr<const kernel::TaskModel> model;
  std::string why;
  try {
    model = kernel::load_spec_file(spec);
  } catch (const clampai::Error& e) {
    why = e.what();
  }
  s += "<h3>Causal graph</h3>";
  if (model) {
    html::Graph g;
    g.label = "the causal graph of the task's actions";
    for (const auto& a : model->actions) {
      const auto it = answers.find(a.id);
      const std::size_t ok = it == answers.end() ? 0 : it->second.first;
      const std::size_t bad = it == answers.end() ? 0 : it->second.second;
      std::string label = a.id;
      if (ok || bad)
        label += "\n" + std::string(ok ? "✓ " + std::to_string(ok) : "") + (ok && bad ? " " : "") +
                 (bad ? "✗ " + std::to_string(bad) : "");
      g.nodes.push_back(
          {label,
           ok    ? "ok"
           : bad ? "bad"
                 : "idle",
           a.emergency ? "diamond" : "box",
           !ok && !bad,
           a.id + ": executed " + std::to_string(ok) + ", rejected " + std::to_string(bad)});
    }
    for (std::size_t i = 0; i < model->actions.size(); ++i)
      for (const std::size_t d : model->actions[i].dependencies)
        g.edges.push_back({d, i, "", "idle", false, true});
    s += html::legend({{"square", "ok", "✓ chosen and executed"},
                       {"cross", "bad", "✗ chosen and rejected only"},
                       {"dash", "idle dashed", "dashed: never chosen"},
                       {"diamond", "idle", "diamond: emergency action"}}) +
         html::render_graph(g, layout);
  } else {
    s += "<p class=\"note\">The spec <code>" + esc(spec) +
         "</code> could not be read, so the causal graph is not drawn (give it with "
         "<code>--spec</code>): " +
         esc(why) + "</p>";
  }
  // The choices against the kernel's answers.
  const json& log = r["log"];
  const std::size_t n = log.size();
  s += "<h3>The LLM's choices and the kernel's answers</h3>";
  if (n > 0) {
    html::Frame f;
    f.height = 150;
    f.x0 = 0.5;
    f.x1 = static_cast<double>(n) + 0.5;
    f.y0 = 0;
    f.y1 = 2;
    s += html::legend({{"circle", "ok", "approved (green) / rejected (red, lower lane)"},
                       {"circle", "plain", "● chosen by the LLM"},
                       {"square", "plain", "■ dominant (no LLM call)"},
                       {"diamond", "plain", "◆ fallback after an LLM failure"}});
    s += f.open("choices",
                "each step's choice, its source and the kernel's answer",
                "data-steps=\"" + std::to_string(n) + "\"") +
         f.axes("step", "");
    s += "<text class=\"lane\" x=\"" + num(f.left - 6) + "\" y=\"" + num(f.y(1.5) + 4) +
         "\" text-anchor=\"end\">approved</text><text class=\"lane\" x=\"" + num(f.left - 6) +
         "\" y=\"" + num(f.y(0.5) + 4) + "\" text-anchor=\"end\">rejected</text>";
    std::size_t i = 0;
    for (const json& step : log) {
      ++i;
      const bool ok = step.value("approved", false);
      const std::string src = step.value("source", "llm");
      const std::string shape = src == "dominant"   ? "square"
                                : src == "fallback" ? "diamond"
                                                    : "circle";
      s += "<g class=\"mark\" data-step=\"" + esc(text_of(step.value("step", json()))) +
           "\" data-approved=\"" + (ok ? "true" : "false") + "\"><title>step " +
           esc(text_of(step.value("step", json()))) + ": " + esc(step.value("action", "")) + " " +
           esc(step.value("params", "")) + " (" + esc(src) + ") " + (ok ? "approved" : "rejected") +
           "</title>" +
           html::marker(shape,
                        f.x(static_cast<double>(i)),
                        f.y(ok ? 1.5 : 0.5),
                        std::clamp(300.0 / static_cast<double>(n), 2.5, 7.0),
                        ok ? "ok" : "bad") +
           "</g>";
    }
    s += "</svg>";
  }
  s += "<div class=\"scroll\"><table class=\"list\"><thead><tr><th scope=\"col\">step</th><th "
       "scope=\"col\">chosen by</th><th scope=\"col\">action</th><th scope=\"col\">kernel's "
       "answer</th><th scope=\"col\">cost</th><th scope=\"col\">spent</th></tr></thead><tbody>";
  for (const json& step : log) {
    const bool ok = step.value("approved", false);
    std::string answer = ok ? "<span class=\"badge ok\">✓ approved</span>"
                            : "<span class=\"badge bad\">✗ rejected</span>";
    if (step.contains("reasons"))
      for (const json& reason : step["reasons"])
        answer += " <code>" + esc(reason.value("code", "")) + "</code> " +
                  esc(reason.value("message", ""));
    s += "<tr><td class=\"num\">" + esc(text_of(step.value("step", json()))) + "</td><td>" +
         esc(step.value("source", "")) +
         (step.contains("failure") ? " (after " + esc(text_of(step["failure"])) + ")" : "") +
         "</td><td><code>" + esc(step.value("action", "")) + "</code> " +
         esc(step.value("params", "")) + "</td><td>" + answer + "</td><td class=\"num\">" +
         esc(step.value("cost", "")) + "</td><td class=\"num\">" + esc(step.value("spent", "")) +
         "</td></tr>";
  }
  return s + "</tbody></table></div></section>";
}

// The page's style: Okabe–Ito colours, shapes beside them, a print stylesheet.
constexpr const char* kStyle = R"CSS(
:root{--ok:#009E73;--bad:#D55E00;--unknown:#E69F00;--net:#0072B2;--gross:#E69F00;--rb:#CC79A7;--att:#56B4E9;--ink:#1a1a1a;--muted:#555;--line:#ccc;--bg:#fff}
*{box-sizing:border-box}
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;color:var(--ink);background:var(--bg);margin:0}
header,main,footer{max-width:1100px;margin:0 auto;padding:0 1rem}
header{border-bottom:1px solid var(--line)}
h1{font-size:1.5rem;margin:1rem 0 .25rem}h2{font-size:1.25rem;margin:2rem 0 .25rem;border-top:2px solid var(--ink);padding-top:.75rem}h3{font-size:1.05rem;margin:1.5rem 0 .5rem}
nav ul{list-style:none;padding:0;display:flex;flex-wrap:wrap;gap:.25rem 1rem}
a{color:#0056a3}a:focus,button:focus,svg:focus,summary:focus{outline:3px solid #0072B2;outline-offset:2px}
.skip{position:absolute;left:-999px}.skip:focus{left:1rem;top:.5rem;background:#fff;padding:.25rem}
.sr{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0)}
.source,.note{color:var(--muted)}
table{border-collapse:collapse;margin:.5rem 0}th,td{border:1px solid var(--line);padding:.2rem .5rem;text-align:left;vertical-align:top}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
table.facts th{background:#f4f4f4;font-weight:600}
.scroll{overflow:auto;max-width:100%}
code{font:13px ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
.badge{display:inline-block;white-space:nowrap;border:2px solid;border-radius:3px;padding:0 .3rem;font-weight:600}
.badge.ok{border-color:var(--ok);color:#00684d}.badge.bad{border-color:var(--bad);color:#a33f00}.badge.unknown{border-color:var(--unknown);color:#7a5400}
svg.chart{width:100%;height:auto;max-width:880px;display:block;margin:.25rem 0 .75rem}
svg text{font-size:11px;fill:var(--ink)}svg text.title{font-size:12px;fill:var(--muted)}
.axis{stroke:var(--ink)}.tick{stroke:var(--ink)}.grid{stroke:#e3e3e3}
.net{stroke:var(--net);fill:none;stroke-width:2.5}.gross{stroke:var(--gross);fill:none;stroke-width:2.5;stroke-dasharray:7 4}
.budget{stroke:#000;stroke-width:2;stroke-dasharray:2 3;fill:none}.zero{stroke:var(--bad);stroke-width:1.5;stroke-dasharray:4 3}
.mline{stroke:var(--net);fill:none;stroke-width:2}
circle.net,rect.net{fill:var(--net);stroke:none}rect.gross{fill:var(--gross);stroke:none}
.ok{fill:var(--ok);stroke:var(--ok)}.bad{fill:none;stroke:var(--bad)}path.bad{stroke-width:2.5}.unknown{fill:var(--unknown);stroke:var(--unknown)}
.rb{fill:var(--rb);stroke:var(--rb)}.att{fill:var(--att);stroke:var(--att)}.plain{fill:#555;stroke:#555}.idle{fill:#888;stroke:#888}
line.idle.dashed{stroke-dasharray:4 3}
rect.bar{fill:var(--bad)}
ul.legend{list-style:none;padding:0;margin:.25rem 0;display:flex;flex-wrap:wrap;gap:.25rem 1.25rem;font-size:13px}
ul.legend svg{vertical-align:middle}
table.grid td{text-align:center;padding:0}table.grid td.none{color:#aaa}
table.grid button.cell{font:inherit;font-size:16px;font-weight:700;width:100%;min-width:2.6rem;padding:.25rem;border:0;background:transparent;cursor:pointer}
table.grid td.ok{background:#d8f0e8}table.grid td.bad{background:#f9ddd0}table.grid td.bad button{text-decoration:underline}table.grid td.unknown{background:#fbeccb}
table.grid td.ok button{color:#00684d}table.grid td.bad button{color:#a33f00}table.grid td.unknown button{color:#7a5400}
.cex{border:2px solid var(--bad);padding:.5rem 1rem;margin:.5rem 0}
tr.changed td{font-weight:700}
.graph{overflow:auto;margin:.5rem 0}.graph svg{max-width:100%;height:auto}
.graph.builtin rect,.graph.builtin path{fill:#fff;stroke-width:2}.node.ok rect,.node.ok path{stroke:var(--ok)}.node.bad rect,.node.bad path{stroke:var(--bad)}.node.unknown rect,.node.unknown path{stroke:var(--unknown)}.node.idle rect,.node.idle path{stroke:#888}
.node text{fill:var(--ink)}.edge line{stroke:#666;stroke-width:1.5}.edge.bad line{stroke:var(--bad)}.edge.unknown line{stroke:var(--unknown)}.arrowhead{fill:#666}
.status-ok{color:#00684d;font-weight:700}.status-bad{color:#a33f00;font-weight:700}
footer{color:var(--muted);border-top:1px solid var(--line);margin-top:2rem;padding:.75rem 1rem}
@media print{
 body{font-size:11pt}nav,.skip{display:none}
 a{color:inherit;text-decoration:none}
 .cex[hidden]{display:block!important}
 details>summary{list-style:none}
 section{break-before:page}section:first-of-type{break-before:auto}
 svg.chart,.graph,table{break-inside:avoid}
 .scroll{overflow:visible}
 table.grid td.ok,table.grid td.bad,table.grid td.unknown{-webkit-print-color-adjust:exact;print-color-adjust:exact}
}
)CSS";

// The page's script: a refuted or unknown cell opens its counterexample; arrow keys move
// between the grid's cells; every <details> opens for printing.
constexpr const char* kScript = R"JS(
(function(){
  "use strict";
  document.querySelectorAll("button.cell[aria-controls]").forEach(function(b){
    b.addEventListener("click",function(){
      var panel=document.getElementById(b.getAttribute("aria-controls"));
      var open=b.getAttribute("aria-expanded")!=="true";
      b.setAttribute("aria-expanded",open?"true":"false");
      panel.hidden=!open;
      if(open){panel.setAttribute("tabindex","-1");panel.focus();}
    });
  });
  document.querySelectorAll("table.grid").forEach(function(grid){
    grid.addEventListener("keydown",function(e){
      var cell=e.target.closest("td");if(!cell)return;
      var row=cell.parentElement,col=Array.prototype.indexOf.call(row.children,cell),next=null;
      if(e.key==="ArrowRight")next=cell.nextElementSibling;
      else if(e.key==="ArrowLeft")next=cell.previousElementSibling;
      else if(e.key==="ArrowDown"&&row.nextElementSibling)next=row.nextElementSibling.children[col];
      else if(e.key==="ArrowUp"&&row.previousElementSibling)next=row.previousElementSibling.children[col];
      else return;
      var b=next&&next.querySelector("button");
      if(b){b.focus();e.preventDefault();}
    });
  });
  window.addEventListener("beforeprint",function(){
    document.querySelectorAll("details").forEach(function(d){d.open=true;});
  });
})();
)JS";

}  // namespace

std::string_view html_style() { return kStyle; }

HtmlInput recognise_input(const std::string& path) {
  std::string head;
  {
    const kernel::InputFile file(path, std::numeric_limits<std::size_t>::max());
    head.resize(std::min(file.size(), kPeekBytes));
    if (!head.empty()) file.read(0, head.size(), head.data());
  }
  if (const auto nl = head.find('\n'); nl != std::string::npos) {
    const json first = json::parse(head.substr(0, nl), nullptr, /*allow_exceptions=*/false);
    if (first.is_object() && first.contains("seq") && first.contains("kind"))
      return HtmlInput::trace;
  }
  const std::string text = kernel::read_file(path);
  const json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded())
    throw InvalidArgument(path +
                          ": neither a trace (its first line is no trace entry) nor a JSON report "
                          "(it is not JSON)");
  if (auto kind = kind_of(doc)) return *kind;
  if (doc.is_object() && doc.contains("error") && doc.contains("command"))
    throw InvalidArgument(path + ": the error report of `clampai " + text_of(doc["command"]) +
                          "`: it holds no results to draw");
  throw InvalidArgument(path +
                        ": not a report `clampai report` draws: a trace (JSON Lines) or the JSON "
                        "report of `verify`, `compose` or `agent` (docs/REPORT.md)");
}

HtmlResult write_html(std::ostream& out,
                      const std::vector<std::string>& inputs,
                      const HtmlOptions& options) {
  HtmlResult result;
  std::shared_ptr<const kernel::TaskModel> model;
  if (!options.spec.empty()) model = kernel::load_spec_file(options.spec);
  std::vector<std::pair<std::string, std::string>> toc;  // id, title
  std::string body;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const std::string& path = inputs[i];
    const std::string id = "s" + std::to_string(i + 1);
    const HtmlInput kind = recognise_input(path);
    result.kinds.push_back(kind);
    if (kind == HtmlInput::trace) {
      bool findings = false;
      body += html::run_section(
          id, path, model, options.spec, std::max<std::size_t>(options.buckets, 2), findings);
      result.findings = result.findings || findings;
      toc.emplace_back(id, "Run: " + path);
      continue;
    }
    const json doc = json::parse(kernel::read_file(path), nullptr, false);
    try {
      check_shape(path, kind, doc);
      if (kind == HtmlInput::verify) {
        body += verify_section(id, path, doc);
        toc.emplace_back(id, "Proofs: " + path);
      } else if (kind == HtmlInput::compose) {
        body += compose_section(id, path, doc, options.layout);
        toc.emplace_back(id, "Composition: " + path);
      } else {
        body += agent_section(id, path, doc, options.spec, options.layout);
        toc.emplace_back(id, "Agent run: " + path);
      }
    } catch (const json::exception& e) {
      throw InvalidArgument(path + ": not a well-formed " + std::string(to_string(kind)) +
                            " report (its schema: schema/" + std::string(to_string(kind)) +
                            "-report.schema.json): " + e.what());
    }
  }
  std::string title = "ClampAI report";
  if (inputs.size() == 1) title += ": " + inputs.front();
  out << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
         "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
         "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">\n"
         "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
         "<meta name=\"generator\" content=\"clampai "
      << tool_version() << "\">\n<title>" << esc(title) << "</title>\n<style>" << kStyle
      << "</style>\n</head>\n<body>\n<a class=\"skip\" href=\"#main\">Skip to the report</a>\n"
         "<header><h1>"
      << esc(title) << "</h1><nav aria-label=\"sections\"><ul>";
  for (const auto& [id, t] : toc) out << "<li><a href=\"#" << id << "\">" << esc(t) << "</a></li>";
  out << "</ul></nav></header>\n<main id=\"main\">\n"
      << body << "\n</main>\n<footer>Made by <code>clampai report</code> " << tool_version()
      << ": one file, nothing fetched when it is opened.</footer>\n<script>" << kScript
      << "</script>\n</body>\n</html>\n";
  return result;
}

}  // namespace clampai::report
