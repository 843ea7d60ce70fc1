// The report of `clampai repair`: text and JSON (schema/repair-report.schema.json).
#pragma once

#include <ostream>
#include <string>

#include "clampai/kernel/model.hpp"
#include "clampai/report/format.hpp"
#include "clampai/verifier/repair.hpp"

namespace clampai::report {

struct RepairReport {
  std::string spec{};
  const kernel::TaskModel* model = nullptr;
  const kernel::Proposal* proposal = nullptr;  // as proposed (its action is the one repaired)
  const verifier::RepairResult* result = nullptr;
};

/// Writes `r` in `format` (text or json). Requires the pointers set.
void write_repair(std::ostream& out, Format format, const RepairReport& r);

}  // namespace clampai::report
