// The report of `clampai verify`: text, JSON (schema/verify-report.schema.json), SARIF, JUnit.
#pragma once

#include <optional>
#include <ostream>
#include <string>

#include "clampai/driver/lookahead.hpp"
#include "clampai/kernel/model.hpp"
#include "clampai/kernel/security.hpp"
#include "clampai/report/format.hpp"
#include "clampai/verifier/verify.hpp"

namespace clampai::report {

/// `verify --depth K` on a spec with a goal: can the goal be reached within K steps?
struct GoalSummary {
  unsigned depth = 0;
  bool reachable = false;
  /// Not reachable, proved for every run.
  bool infeasible = false;
  bool complete = true;
  std::string message{};  // one line, for people
  driver::Plan plan{};    // the cheapest plan (with or without the budget)
  kernel::Amount cost = 0;
};

struct VerifyReport {
  std::string spec{};  // the spec file, as named on the command line
  const kernel::TaskModel* model = nullptr;
  const verifier::Report* report = nullptr;
  std::optional<GoalSummary> goal{};
  /// Information flow (docs/HARDENING.md): set iff the spec declares labels or sinks. The
  /// downward flows are findings: the reference monitor rejects those actions.
  bool labelled = false;
  std::size_t flows_checked = 0;  // flows of labelled data, downward or not
  std::vector<kernel::InformationFlow> downward_flows{};
  /// Wall-clock seconds of the whole command (loading, proving, the goal search).
  double seconds = 0;
};

/// Fills the information-flow part of `r` from its model (kernel::information_flows).
/// Requires `r.model`.
void add_information_flows(VerifyReport& r);

/// Writes `r` in `format`. Requires `r.model` and `r.report`.
void write_verify(std::ostream& out, Format format, const VerifyReport& r);

}  // namespace clampai::report
