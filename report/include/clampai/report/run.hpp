// The reports of `clampai check`, `clampai run` and `clampai trace verify`: text and JSON.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "clampai/driver/driver.hpp"
#include "clampai/kernel/model.hpp"
#include "clampai/kernel/pools.hpp"
#include "clampai/kernel/sign.hpp"
#include "clampai/kernel/trace.hpp"
#include "clampai/report/format.hpp"
#include "clampai/report/ledger.hpp"

namespace clampai::report {

/// `check`: the spec's summary. Requires `model`.
void write_check(std::ostream& out,
                 Format format,
                 const std::string& spec,
                 const kernel::TaskModel& model);

struct RunReport {
  std::string spec{};
  const kernel::TaskModel* model = nullptr;
  const driver::RunResult* result = nullptr;
  std::uint64_t steps = 0, emergency_steps = 0;
  std::int64_t step_limit = 0;
  kernel::Amount total = 0, net = 0, gross = 0;  // the budget at the end
  std::uint64_t trace_entries = 0;
  std::string trace_head{};
  bool trace_verified = false;
  std::string trace_file{};     // empty: not written to a file
  bool trace_appended = false;  // the run continued the trace already in `trace_file`
  std::optional<unsigned> lookahead{};
  bool recover = false;
  std::optional<LedgerSection> ledger{};  // a run on a shared ledger
  /// The budget pools at the end (`run --pools`), parents first; empty: none.
  std::vector<kernel::PoolStatus> pools{};
};

/// `run`. Requires the pointers set.
void write_run(std::ostream& out, Format format, const RunReport& r);

struct TraceReport {
  std::string file{};
  std::string spec{};    // empty: no replay requested
  std::string replay{};  // `not requested`, `ok` or `failed`
  kernel::TraceCheck check{};
  /// A gateway's trace (its spec has bindings): the executed steps without an outcome entry
  /// (docs/GATEWAY.md); none otherwise.
  std::optional<std::vector<std::uint64_t>> unresolved{};
  /// With `--public-key`: what the signatures say (docs/CLI.md, `trace verify`).
  std::optional<kernel::SignatureCheck> signatures{};
};

/// `trace verify`.
void write_trace_check(std::ostream& out, Format format, const TraceReport& r);

}  // namespace clampai::report
