// The reference monitor: the kernel wrapped with the runtime gates a spec declares or a host
// program adds: information flow, attestations, environment reconciliation and readiness of
// dependencies (docs/HARDENING.md). Every gate vetoes through the kernel's guard, so a vetoed
// action changes nothing (T5) and its rejection is traced like any other.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "clampai/hardening/attestor.hpp"
#include "clampai/hardening/http.hpp"
#include "clampai/hardening/subprocess.hpp"
#include "clampai/kernel/safety_kernel.hpp"
#include "clampai/kernel/security.hpp"

namespace clampai::hardening {

/// Time as the monitor sees it: injected, so that tests of backoff and deadlines are exact.
struct MonitorClock {
  std::function<std::chrono::milliseconds()> now;        // default: steady_clock
  std::function<void(std::chrono::milliseconds)> sleep;  // default: this_thread::sleep_for
};

/// What a probe read from the world.
struct ProbeReading {
  std::optional<kernel::Value> value{};  // set iff the probe could read it
  std::string error{};                   // why it could not
};

/// Reads the world's value of one model variable. A numeric variable drifts when the two
/// values differ by more than `tolerance`; any other kind when they differ at all. A probe that
/// cannot read (a timeout, a refused program, a malformed answer) counts as drift: the monitor
/// fails closed.
struct Probe {
  std::string variable{};
  std::function<ProbeReading(const AttestationContext&)> read{};
  kernel::Decimal tolerance{};
};

/// A probe that runs a program (through `runner`: allowlist, limits, timeout) and reads its
/// standard output, trimmed, as a value of the variable's type (`true`/`false`, a decimal, the
/// text itself). Arguments may refer to state variables as `{name}`.
Probe command_probe(std::string variable,
                    std::vector<std::string> argv,
                    SubprocessRunner runner,
                    kernel::Decimal tolerance = {});
/// A probe that reads the body of an HTTP answer (status must be `check.expect_status`).
Probe http_probe(std::string variable, HttpCheck check, kernel::Decimal tolerance = {});
/// A probe given as a C++ callable; a throw is a failed reading.
Probe callback_probe(std::string variable,
                     std::function<kernel::Value(const AttestationContext&)> read,
                     kernel::Decimal tolerance = {});

/// One variable whose world value differs from the model's.
struct Drift {
  std::string variable{};
  kernel::Value model{};
  std::optional<kernel::Value> world{};  // unset when the probe could not read it
  std::string detail{};                  // the difference, or the probe's error
};

/// "Provisioned" is not "ready": a check that an action's dependency has taken effect, polled
/// with exponential backoff until it passes or the deadline passes. Consulted before an action
/// that depends on `dependency` runs; once it has passed it is not asked again.
struct ReadinessProbe {
  std::string dependency{};                          // the action id depended on
  std::function<bool(std::string& detail)> ready{};  // may be slow; a throw is "not ready"
  std::chrono::milliseconds initial_delay{100};      // wait after the first failed check
  double multiplier = 2.0;                           // >= 1
  std::chrono::milliseconds max_delay{5000};         // cap of one wait
  std::chrono::milliseconds deadline{30000};         // from the first check
};

/// Options of a reference monitor.
struct MonitorOptions {
  /// The kernel's options. A guard given here is consulted first; the monitor's gates follow.
  kernel::KernelOptions kernel{};
  /// Implementations of the spec's `external` attestors, by name.
  std::map<std::string, std::shared_ptr<const Attestor>> attestors{};
  /// The programs the spec's `command` attestors may run, and their limits (a spec's
  /// `timeout_ms` and `max_output_bytes` override the limits').
  std::vector<std::string> allowed_programs{};
  SubprocessLimits limits{};
  /// Reject actions with a downward information flow (`information_flow`).
  bool enforce_information_flow = true;
  /// Environment reconciliation: run after every committed action of `execute` (before every
  /// commit when a driver commits through `kernel()`). The spec's `probes` are added after
  /// these, and its `readiness` probes after `readiness` (their programs over
  /// `allowed_programs`).
  std::vector<Probe> probes{};
  std::vector<ReadinessProbe> readiness{};
  MonitorClock clock{};
};

/// What `execute` did: the kernel's outcome and every attestation run for it.
struct MonitorOutcome {
  kernel::Outcome outcome;
  std::vector<Attestation> attestations{};
  std::vector<Drift> drift{};  // found by the reconciliation after this action (then halted)
};

/// Whether the goal may be declared reached: the model's goal holds and every goal attestation
/// passed.
struct GoalCheck {
  bool reached = false;   // the goal expression holds
  bool attested = false;  // and every attestation passed (vacuously true without any)
  std::vector<Attestation> attestations{};
  /// Why the goal may not be declared reached though it holds: the first failed attestation.
  std::optional<kernel::Reason> reason{};
  [[nodiscard]] bool success() const noexcept { return reached && attested; }
};

/// The reference monitor. Thread-safe as the kernel is; `execute` calls are serialised.
class ReferenceMonitor {
 public:
  struct Armed;  // implementation detail: the execution in progress on a thread

  /// Builds the spec's attestors, probes and readiness probes, and the kernel. Attestations run
  /// in the kernel's commit gate (KernelOptions::commit_gate) and each result is an `attested`
  /// trace entry.
  /// @throws InvalidArgument if an `external` attestor has no implementation, an implementation
  /// names no external attestor of the spec, a command attestor's program is refused by the
  /// allowlist, a probe names an unknown variable, a readiness probe an unknown action or bad
  /// backoff; and what SafetyKernel's constructor throws.
  ReferenceMonitor(std::shared_ptr<const kernel::TaskModel> model, MonitorOptions options = {});
  ~ReferenceMonitor();
  ReferenceMonitor(const ReferenceMonitor&) = delete;
  ReferenceMonitor& operator=(const ReferenceMonitor&) = delete;

  /// The kernel's decision with the information-flow and drift gates (no attestation runs, no
  /// probe: nothing with side effects).
  [[nodiscard]] kernel::Decision evaluate(std::string_view action_id,
                                          const kernel::ParamMap& params = {}) const;
  /// Readiness of the action's dependencies, then the kernel's execute with every gate:
  /// information flow, drift halt, then the action's attestations on the state it starts from.
  /// After a commit, the reconciliation probes run; drift halts the monitor.
  MonitorOutcome execute(std::string_view action_id, const kernel::ParamMap& params = {});
  /// Runs the reconciliation probes now; drift halts the monitor. Returns the drift found.
  std::vector<Drift> reconcile();
  /// The goal check with its attestations (on the current state).
  GoalCheck check_goal();

  /// True once drift was found; every later non-emergency action is rejected with
  /// `environment_drift` (emergency actions still run: T8).
  [[nodiscard]] bool halted() const noexcept { return halted_.load(); }
  /// The drift that halted the monitor.
  [[nodiscard]] std::vector<Drift> drift() const;
  /// The rejection of a halted monitor: `environment_drift`, its subject the drifted variables,
  /// its message each one's model and world values.
  [[nodiscard]] kernel::Reason drift_reason() const;
  /// The downward flows the monitor rejects (kernel::information_flows).
  [[nodiscard]] const std::vector<kernel::InformationFlow>& downward_flows() const noexcept {
    return flows_;
  }
  [[nodiscard]] kernel::SafetyKernel& kernel() noexcept { return *kernel_; }
  [[nodiscard]] const kernel::SafetyKernel& kernel() const noexcept { return *kernel_; }

 private:
  std::optional<kernel::Reason> gate(const kernel::Situation& s,
                                     const kernel::Proposal& p,
                                     const kernel::Decision& d);
  std::optional<kernel::Reason> commit_gate(const kernel::Situation& s,
                                            const kernel::Proposal& p,
                                            const kernel::Decision& d,
                                            std::vector<kernel::AttestationRecord>& records);
  std::optional<kernel::Reason> await_readiness(std::size_t action,
                                                const std::vector<std::uint64_t>& completions,
                                                const kernel::State& state);
  std::vector<Drift> reconcile_on(const kernel::State& state);

  std::shared_ptr<const kernel::TaskModel> model_;
  MonitorOptions options_;
  std::vector<std::shared_ptr<const Attestor>> attestors_;  // by the model's attestor index
  std::vector<kernel::InformationFlow> flows_;
  std::vector<std::optional<std::size_t>> first_flow_;  // per action: its first downward flow
  std::vector<std::optional<std::size_t>> probe_vars_;  // per probe: its variable
  std::vector<bool> ready_;                             // per readiness probe: passed once
  std::mutex execute_mutex_;
  mutable std::mutex drift_mutex_;
  std::vector<Drift> drift_;
  std::atomic<bool> halted_{false};
  std::unique_ptr<kernel::SafetyKernel> kernel_;
};

}  // namespace clampai::hardening
