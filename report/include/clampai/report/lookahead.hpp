// The report of `clampai lookahead`: text and JSON (schema/lookahead-report.schema.json).
#pragma once

#include <ostream>
#include <string>

#include "clampai/driver/lookahead.hpp"
#include "clampai/kernel/model.hpp"
#include "clampai/report/format.hpp"

namespace clampai::report {

struct LookaheadReport {
  std::string spec{};
  std::string action{};
  unsigned depth = 0;
  std::string engine{};  // `explicit` or `symbolic`
  const kernel::TaskModel* model = nullptr;
  const driver::LookaheadResult* result = nullptr;
};

/// Writes `r` in `format` (text or json). Requires `r.model` and `r.result`.
void write_lookahead(std::ostream& out, Format format, const LookaheadReport& r);

}  // namespace clampai::report
