// The reference monitor for the commands that run a spec.
#include "monitor_setup.hpp"

#include <algorithm>

#include "clampai/kernel/error.hpp"

namespace clampai::cli {

namespace ck = clampai::kernel;
namespace ch = clampai::hardening;

bool needs_monitor(const ck::TaskModel& m) { return ck::needs_reference_monitor(m); }

void refuse_monitor_on_ledger(const ck::TaskModel& model) {
  if (needs_monitor(model))
    throw InvalidArgument(
        "--ledger: the spec declares what the reference monitor enforces (attestations, "
        "probes, readiness or a downward information flow), which a shared ledger run does "
        "not: run it without --ledger");
}

void add_allow_program_option(CLI::App* cmd, std::vector<std::string>& programs) {
  cmd->add_option("--allow-program",
                  programs,
                  "A program the spec's command attestors and probes may run: its resolved "
                  "absolute path, not writable by group or others (repeat for each)")
      ->option_text("PATH");
}

std::unique_ptr<ch::ReferenceMonitor> make_monitor(
    const std::shared_ptr<const ck::TaskModel>& model,
    ck::KernelOptions options,
    const std::vector<std::string>& allowed_programs) {
  if (!needs_monitor(*model)) {
    if (!allowed_programs.empty())
      throw InvalidArgument(
          "--allow-program: the spec runs no program (no attestation, probe or readiness check)");
    return nullptr;
  }
  for (const ck::AttestorDecl& a : model->attestors)
    if (a.kind == ck::AttestorKind::external)
      throw InvalidArgument("attestor `" + a.name +
                            "` is external: only a host program can supply it (C++ "
                            "hardening::MonitorOptions::attestors), not the command line");
  ch::MonitorOptions mo;
  mo.kernel = std::move(options);
  mo.allowed_programs = allowed_programs;
  try {
    return std::make_unique<ch::ReferenceMonitor>(model, std::move(mo));
  } catch (const InvalidArgument& e) {
    const std::string what = e.what();
    if (what.find("allowlist") != std::string::npos || what.find("allowed") != std::string::npos)
      throw InvalidArgument(what + " (allow a program with --allow-program PATH)");
    throw;
  }
}

std::optional<MonitorVerdict> finish_monitored(ch::ReferenceMonitor& monitor, bool goal_reached) {
  if (!monitor.halted() && !monitor.kernel().model().probes.empty()) (void)monitor.reconcile();
  if (monitor.halted()) {
    return MonitorVerdict{"environment_drift", monitor.drift_reason()};
  }
  if (!goal_reached) return std::nullopt;
  const ch::GoalCheck g = monitor.check_goal();
  if (g.success() || !g.reason) return std::nullopt;
  return MonitorVerdict{"goal_not_attested", *g.reason};
}

}  // namespace clampai::cli
