// The encoders' private helpers: JSON pieces (written with the one JsonWriter), the SARIF
// envelope, XML text and JUnit shape.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "clampai/driver/lookahead.hpp"
#include "clampai/kernel/decision.hpp"
#include "clampai/kernel/model.hpp"
#include "clampai/kernel/pools.hpp"
#include "clampai/kernel/value.hpp"
#include "clampai/report/approvals.hpp"
#include "clampai/report/format.hpp"
#include "clampai/report/ledger.hpp"
#include "clampai/report/shadow.hpp"
#include "clampai/report/wire.hpp"
#include "clampai/verifier/verify.hpp"

namespace clampai::report::detail {

/// The writer every JSON report is built with (`JsonWriter::Layout::indented`).
inline JsonWriter report_writer() { return JsonWriter(JsonWriter::Layout::indented); }

/// `{"name": "value as text", ...}`.
void write_named_values(JsonWriter& j,
                        const std::vector<std::pair<std::string, kernel::Value>>& values);
/// `{"pre", "params"?, "post"?}`; with `all`, `params` and `post` even when empty.
void write_counterexample(JsonWriter& j, const verifier::Counterexample& c, bool all = false);
/// The counterexample alone, as an indented JSON text.
std::string counterexample_text(const verifier::Counterexample& c);
/// A plan: `[{"action", "params": {name: value}, "cost"}]`.
void write_plan(JsonWriter& j, const kernel::TaskModel& m, const driver::Plan& p);
/// `{"file", "line"?, "column"?}`.
void write_location(JsonWriter& j, const std::string& file, const kernel::SourceLoc& loc);

/// A report's `ledger` member: `{"url", "commits", "conflicts", "replayed", "reconnects"}`, or in
/// escrow mode `{"url", "mode", "leases", "flushes", "commits", "expired"}`.
void write_ledger(JsonWriter& j, const LedgerSection& l);
/// The line a text report ends with on a shared ledger (`ledger: URL: ...`).
void print_ledger(std::ostream& out, const LedgerSection& l);

/// A report's `approvals` member: `{"granted", "denied", "expired", "waiting": [{"ticket",
/// "action"}]}`.
void write_approvals(JsonWriter& j, const ApprovalsSection& a);
/// Its text line: `  approvals   1 granted, 0 denied, 0 expired, 1 waiting: ticket T of `a``.
void print_approvals(std::ostream& out, const ApprovalsSection& a);

/// A shadow run's `shadow` member: `{"would_be_rejected": N, "rejections": [{"action",
/// "sequence" (null when not followed), "reasons"}]}`; nothing when the run enforced.
void write_shadow(JsonWriter& j, const ShadowSection& s);
/// Its text lines: `  shadow      nothing enforced; 1 step the kernel would have rejected`,
/// then one line per such step.
void print_shadow(std::ostream& out, const ShadowSection& s);

/// The lines a text report gives the budget pools: `  pool        NAME (in PARENT): NET of
/// TOTAL (gross GROSS)`.
void print_pools(std::ostream& out, const std::vector<kernel::PoolStatus>& pools);

/// The counterexample as a table of variables, before and (for a transition) after, indented
/// by four spaces.
void print_counterexample(std::ostream& out, const verifier::Counterexample& cex);

/// `VERIFIED` for `verified`.
std::string upper(std::string_view s);

/// The rejections by reason, `budget_exceeded 2, requires_failed 1`, and when they do not add
/// up to `rejected` (a rejection with several reasons counts under each), why not.
std::string rejections_by_reason(std::uint64_t rejected,
                                 const std::map<std::string, std::uint64_t>& by_reason);

// ---- SARIF 2.1.0 ----

struct SarifRule {
  std::string id;
  std::string description;
};

/// One result: a located message at `level` (`error`, `warning`, `note`), and what its finding
/// is: the counterexample's values under `properties.counterexample` and, with `steps` (each a
/// message and where in the spec it is), a code flow that replays them from the initial state,
/// ending at the result's own location.
struct SarifResult {
  std::string rule{};
  std::string level{};
  std::string text{};
  std::string file{};
  kernel::SourceLoc loc{};
  const verifier::Counterexample* counterexample = nullptr;
  std::vector<std::pair<std::string, kernel::SourceLoc>> steps{};
  /// Writes further members of `properties` (none if empty).
  std::function<void(JsonWriter&)> properties{};
};

/// The whole SARIF log: one run of the clampai driver with its rules, the results and one
/// invocation (`executionSuccessful`, with an error notification when `failure` is set).
void write_sarif_log(JsonWriter& j,
                     const std::vector<SarifRule>& rules,
                     const std::vector<SarifResult>& results,
                     const Failure* failure = nullptr);

// ---- XML and JUnit ----

/// Text for XML 1.0 attribute values and character data: markup escaped, control characters
/// XML forbids and bytes that are not UTF-8 (a file name can hold any) replaced by `?`.
std::string xml(std::string_view s);
/// Seconds as JUnit's `time`: a decimal with three places (`0.120`).
std::string junit_time(double seconds);

struct JUnitCase {
  std::string classname;
  std::string name;
  std::string outcome;  // empty: passed; `failure`, `error` or `skipped`
  std::string type;     // of the failure or error
  std::string message;  // attribute
  std::string details;  // element text
  std::string out;      // <system-out>, if not empty
};

/// `<testsuites><testsuite name=...>` with the cases; counts computed from them.
void write_junit(std::ostream& os,
                 const std::string& suites,
                 const std::string& suite,
                 double seconds,
                 const std::vector<JUnitCase>& cases);

}  // namespace clampai::report::detail
