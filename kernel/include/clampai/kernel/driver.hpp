// Drivers choose the next action to propose; `run` drives a kernel with one until it stops.
// The deterministic driver here stands in for the orchestrator (beliefs, LLM) of Layer 2.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "clampai/kernel/safety_kernel.hpp"

namespace clampai::kernel {

/// What a driver proposes next, and the proposals it considered and found rejected.
struct Choice {
  std::optional<Proposal> proposal{};  // none: the driver has nothing to propose
  std::vector<Decision> rejected{};    // rejected evaluations made while choosing
};

/// Chooses actions. Implementations must not change the kernel (only evaluate).
class Driver {
 public:
  virtual ~Driver() = default;
  /// The next proposal for `kernel` in its current state.
  virtual Choice next(const SafetyKernel& kernel) = 0;
};

/// A proposal of action `index` with each parameter at its default, else its minimum, else 0:
/// what the deterministic driver and `clampai bench` propose. Requires `index` < the number of
/// actions.
Proposal default_proposal(const TaskModel& model, std::size_t index);

/// Proposes the first non-emergency action, in spec order, whose dependencies are met and that
/// the kernel approves now. Parameters take their default, else their minimum, else 0.
class FirstApprovableDriver final : public Driver {
 public:
  Choice next(const SafetyKernel& kernel) override;
};

/// Why a run stopped.
enum class Termination : std::uint8_t {
  goal_reached,
  no_approvable_action,
  budget_exhausted,
  step_limit,
  max_steps,  // the run's own cap (RunOptions::max_steps)
};
std::string_view to_string(Termination t);

struct RunOptions {
  /// Stop after this many executed actions (a driver-level cap besides the kernel's T2 bound).
  std::optional<std::uint64_t> max_steps{};
};

/// A run's summary, like the seed's result summary.
struct RunResult {
  Termination termination = Termination::no_approvable_action;
  bool goal_reached = false;
  std::uint64_t executed = 0;   // actions committed
  std::uint64_t attempted = 0;  // evaluations made (approved or not)
  std::uint64_t rejected = 0;   // rejected evaluations
  std::map<std::string, std::uint64_t> rejections_by_reason;
  std::vector<std::string> actions{};  // ids of the committed actions, in order
  std::vector<Reason> last_reasons{};  // why nothing was approvable, when that ended the run
};

/// Drives `kernel` with `driver` until the goal is reached, the driver has nothing to
/// propose, or the run's cap is reached. Terminates: every committed non-emergency action
/// counts against the kernel's step limit (T2).
RunResult run(SafetyKernel& kernel, Driver& driver, const RunOptions& options = {});

}  // namespace clampai::kernel
