// The report of `clampai compose`: text, JSON (schema/compose-report.schema.json), SARIF, JUnit.
#pragma once

#include <ostream>
#include <string>

#include "clampai/composition/compose.hpp"
#include "clampai/report/format.hpp"

namespace clampai::report {

struct ComposeReport {
  std::string manifest{};  // as named on the command line
  const composition::ComposeReport* report = nullptr;
  bool show_proved = false;  // text: also list proved obligations
  double seconds = 0;        // wall-clock seconds of the whole command
};

/// Writes `r` in `format`. Requires `r.report`.
void write_compose(std::ostream& out, Format format, const ComposeReport& r);

}  // namespace clampai::report
