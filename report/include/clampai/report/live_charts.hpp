// The HTML report's run charts, drawn as a run goes (the live page of `clampai serve`,
// docs/SERVE.md): the same code as a trace's section of `clampai report --html` draws them with,
// fed one entry at a time, in bounded memory whatever the count.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "clampai/kernel/model.hpp"
#include "clampai/kernel/trace.hpp"

namespace clampai::report {

/// The stylesheet of the HTML report's pages (a `<style>` element's text): its colours and the
/// classes of its charts. A page that shows RunCharts uses it.
[[nodiscard]] std::string_view html_style();

/// The spend chart, the timeline of decisions by outcome and the rejections by reason code of a
/// run, as the HTML report draws them (docs/REPORT.md), of entries added one at a time. Each
/// chart is an HTML fragment (its legend, then an `<svg>`), its figures as `data-` attributes.
/// Past `buckets` entries, neighbouring entries merge into buckets, as in the report. Not
/// thread-safe: one writer, or a lock around it.
class RunCharts {
 public:
  /// `model` gives the budget's line (T1; may be null: none); `unit` names what an entry is on
  /// the horizontal axis (`decision`).
  explicit RunCharts(std::shared_ptr<const kernel::TaskModel> model,
                     std::string unit = "entry",
                     std::size_t buckets = 240);
  ~RunCharts();
  RunCharts(RunCharts&&) noexcept;
  RunCharts& operator=(RunCharts&&) noexcept;
  RunCharts(const RunCharts&) = delete;
  RunCharts& operator=(const RunCharts&) = delete;

  /// Adds an entry (its `sequence` becomes the number of entries added before it): `executed`,
  /// `rejected` (with its reasons), `rolled_back` and `attested` are counted on the timeline;
  /// every entry's `net` and `gross` (the budget after it) are a point of the spend chart.
  void add(kernel::TraceEntry entry);
  /// The entries added.
  [[nodiscard]] std::uint64_t count() const;

  /// The spend chart (`svg.spend`: net and gross spend, the budget's line).
  [[nodiscard]] std::string spend() const;
  /// The decisions by outcome (`svg.timeline`).
  [[nodiscard]] std::string timeline() const;
  /// The rejections by reason code (`svg.reasons`), or a note that there is none.
  [[nodiscard]] std::string reasons() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace clampai::report
