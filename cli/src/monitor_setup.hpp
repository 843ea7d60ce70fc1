// The reference monitor for the commands that run a spec (`run`, `agent`): a spec's hardening
// sections (attestations, probes, readiness, information flow) are enforced from the command
// line (docs/HARDENING.md). Private to the CLI.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "clampai/hardening/monitor.hpp"

namespace clampai::cli {

/// True iff `model` declares something the reference monitor enforces: attestations (of an
/// action or the goal), reconciliation probes, readiness probes, or a downward information flow.
bool needs_monitor(const kernel::TaskModel& model);

/// For `--ledger` runs, whose shared commit does not consult the monitor.
/// @throws InvalidArgument if `needs_monitor(model)`, saying to run the spec without --ledger.
void refuse_monitor_on_ledger(const kernel::TaskModel& model);

/// Adds `--allow-program PATH` (repeatable) to `cmd`: the programs the spec's command
/// attestors and probes may run.
void add_allow_program_option(CLI::App* cmd, std::vector<std::string>& programs);

/// The monitor over a kernel with `options` (its guard is consulted first), or null when the
/// model needs none.
/// @throws InvalidArgument if a spec's program is not allowed (naming it and the flag), an
/// attestor is `external` (only a host program can supply one), or what the monitor throws.
std::unique_ptr<hardening::ReferenceMonitor> make_monitor(
    const std::shared_ptr<const kernel::TaskModel>& model,
    kernel::KernelOptions options,
    const std::vector<std::string>& allowed_programs);

/// What the monitor says at the end of a run whose kernel's goal holds iff `goal_reached`:
/// the last reconciliation (when the spec has probes), then the goal's attestations (traced).
/// Returns nullopt if the run's verdict stands, else why the goal is not reached and the
/// termination to report (`environment_drift`, `goal_not_attested`).
struct MonitorVerdict {
  std::string termination;
  kernel::Reason reason;
};
std::optional<MonitorVerdict> finish_monitored(hardening::ReferenceMonitor& monitor,
                                               bool goal_reached);

}  // namespace clampai::cli
