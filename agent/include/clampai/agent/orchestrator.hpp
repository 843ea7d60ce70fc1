// The orchestrator (seed layer 2): the loop that offers the ready, affordable actions with their
// values to an LLM, has the kernel decide what it chooses, learns from the outcome, and stops
// for a stated reason. Whatever the LLM answers, execution never stalls and never crashes.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "clampai/agent/answer.hpp"
#include "clampai/agent/beliefs.hpp"
#include "clampai/agent/llm.hpp"
#include "clampai/agent/saliency.hpp"
#include "clampai/agent/valuation.hpp"
#include "clampai/driver/committer.hpp"
#include "clampai/driver/driver.hpp"
#include "clampai/kernel/ledger.hpp"
#include "clampai/kernel/safety_kernel.hpp"

namespace clampai::agent {

/// Why a run stopped: the run loop's one list (driver::Termination). The agent stops with
/// `goal_reached`, `budget_exhausted` (no ready action is affordable with the budget left),
/// `step_limit` (the kernel's T2 bound or the run's `max_steps`), `llm_stop` (the LLM answered
/// {"stop": true}), `stuck` (nothing is ready, or `stuck_patience` steps made no progress),
/// `max_failures` (`max_consecutive_failures` steps in a row committed nothing) or `error` (the
/// kernel could not go on: its trace file could not be written, its ledger was unreachable).
using Termination = driver::Termination;
using driver::to_string;

/// Who chose a step's action.
enum class ChoiceSource : std::uint8_t {
  llm,       ///< the LLM's answer
  dominant,  ///< the dominant-action rule (no LLM call)
  fallback,  ///< the highest-value ready action, after an LLM failure
};
std::string_view to_string(ChoiceSource s) noexcept;

struct OrchestratorOptions {
  /// Steps (loop turns, each one kernel decision) at most; besides the kernel's T2 bound.
  std::optional<std::uint64_t> max_steps{};
  /// Executed steps in a row without progress (the goal distance does not shrink and no action
  /// completes for the first time) before the run stops as stuck.
  unsigned stuck_patience = 5;
  /// Steps in a row that commit nothing (a rejection) before the run stops.
  unsigned max_consecutive_failures = 5;
  /// Belief decay in (0, 1] (1: stationary).
  double belief_decay = 1.0;
  PriorOptions priors{};
  ValuationWeights weights{};
  DominanceRule dominance{};
  bool skip_dominant = true;  ///< apply the dominant-action rule
  SaliencyOptions saliency{};
  /// On a rejection of an action with numeric parameters, ask `verifier::repair` for the
  /// closest approved parameters and tell the LLM (each repair limited to this many ms;
  /// 0: never).
  unsigned repair_timeout_ms = 1000;
  /// How many past steps the prompt recalls.
  std::size_t history = 5;
  /// How many of the offered actions the prompt describes (the best ones); the others are
  /// only named (each is still a tool). Fewer tokens, and the loop's own cost per step.
  std::size_t prompt_actions = 20;
  /// Called after every step (for a live display); must not throw.
  std::function<void(const struct StepRecord&)> on_step{};
  /// Asked at the start of every step and again just before the chosen action is handed to
  /// the kernel (the Python bindings' `AsyncOrchestrator`): true ends the run there with
  /// `Termination::error` and the message `cancelled`, proposing nothing. A commit already
  /// handed over finishes first. Must not throw; may be empty.
  std::function<bool()> cancelled{};
  /// Answers the approval an action's spec asks for (driver::RunOptions::approve: the loop
  /// records the ticket, then grants, denies or leaves it waiting as this says); empty: every
  /// such action waits and is not taken. Requests name the principal `agent`.
  std::function<driver::ApprovalAnswer(const driver::Ticket&, const kernel::Decision&)> approve{};
  /// Called before each step (driver::RunOptions::between_steps: `--checkpoint-every`'s
  /// checkpoints). May be empty.
  std::function<void()> between_steps{};
  /// A budget besides the kernel's, shared with other runs (the Python bindings'
  /// `AsyncOrchestrator(task, kernel=AsyncSafetyKernel(...))`): `reserve` is asked just before
  /// the chosen action is handed to the kernel, with its id and cost; a text refuses it and
  /// ends the run with `Termination::budget_exhausted` and that text. Once the kernel has
  /// decided, `settle` is told the same and whether it approved (the caller returns a
  /// rejected action's reservation). A commit that throws is never settled: its reservation
  /// stays spent. Must not throw; either may be empty.
  std::function<std::optional<std::string>(std::string_view action, kernel::Amount cost)> reserve{};
  std::function<void(std::string_view action, kernel::Amount cost, bool approved)> settle{};
};

/// One step of a run.
struct StepRecord {
  std::uint64_t index = 0;  ///< 1, 2, ...
  ChoiceSource source = ChoiceSource::llm;
  std::optional<FailureKind> failure{};  ///< the LLM failure that led to a fallback
  std::string failure_message{};
  std::string action{};  ///< the action proposed to the kernel
  std::string params{};  ///< its parameters, `n=2, amount=1.50`
  bool approved = false;
  std::vector<kernel::Reason> reasons{};  ///< the kernel's, when rejected
  std::string repair{};                   ///< the closest approved parameters, if found
  /// Shadow mode: what the enforcing kernel would have decided (the step was followed).
  std::optional<kernel::Decision> would_be{};
  kernel::Amount cost = 0;
  kernel::Amount spent = 0;  ///< net spend after the step
  double value = 0.0;        ///< the chosen action's value
  double progress = 0.0;     ///< goal progress after the step, in [0, 1]
  TokenUsage tokens{};
};

/// A run's result.
struct OrchestratorResult {
  Termination termination = Termination::stuck;
  /// Approvals (OrchestratorOptions::approve): granted, denied, answered too late, and the
  /// tickets the run moved on from, still pending.
  std::uint64_t approvals_granted = 0, approvals_denied = 0, approvals_expired = 0;
  std::vector<driver::Ticket> approvals_waiting{};
  /// Shadow mode (a committer that does not enforce): the steps the enforcing kernel would
  /// have rejected, in order (driver::RunResult::shadow_rejections).
  bool shadow = false;
  std::vector<driver::ShadowRejection> shadow_rejections{};
  bool goal_reached = false;
  std::string message{};  ///< why, for people (the error, the stop, what was stuck)
  std::uint64_t steps = 0;
  std::uint64_t executed = 0;
  std::uint64_t rejected = 0;
  std::uint64_t llm_calls = 0;
  std::uint64_t dominant_choices = 0;
  std::uint64_t fallbacks = 0;
  std::array<std::uint64_t, kFailureKinds> failures{};  ///< by FailureKind
  std::map<std::string, std::uint64_t> rejections_by_reason{};
  TokenUsage tokens{};
  kernel::Amount spent = 0, total = 0;
  double progress = 0.0;
  std::vector<StepRecord> log{};

  [[nodiscard]] std::uint64_t failures_of(FailureKind k) const noexcept {
    return failures[static_cast<std::size_t>(k)];
  }
  [[nodiscard]] std::uint64_t total_failures() const noexcept;
};

/// Drives a kernel with an LLM: a chooser on the one run loop (driver::run). Each step:
/// 1. stop if the goal holds, the T2 bound or `max_steps` is reached, too many steps failed in a
///    row, or the run is stuck;
/// 2. offer the non-emergency actions whose dependencies are met (the causal graph: blocked
///    actions are never offered) and whose default cost fits the budget left, ranked by value
///    (no ready action: stuck; none affordable: budget exhausted);
/// 3. take the dominant action, or ask the LLM (a tool per offered action), or, on any LLM
///    failure, fall back to the highest-value action the kernel approves with default
///    parameters;
/// 4. have the kernel execute it; update the beliefs; on a rejection, tell the LLM why next
///    time, with the closest approved parameters from `verifier::repair`.
/// Terminates (T2 at the loop level): every step either commits a non-emergency action (at most
/// the kernel's step bound) or fails, and at most `max_consecutive_failures` steps fail between
/// two commits; nothing is ever rolled back. Emergency actions are never offered.
class Orchestrator {
 public:
  /// Requires `kernel` and `llm` to outlive the orchestrator. A lookahead guard, a trace file
  /// and recorded rejections are the kernel's options (KernelOptions).
  /// @throws InvalidArgument for a belief decay outside (0, 1].
  Orchestrator(kernel::SafetyKernel& kernel, LlmClient& llm, OrchestratorOptions options = {});
  /// The same on a shared ledger (docs/LEDGER.md): each step first catches up with what the
  /// other processes committed, offers and asks on that head (`kernel.local()`), and executes
  /// through `kernel` (a compare-and-set commit, decided afresh on a conflict); so `executed`
  /// counts only what this process committed. A lookahead guard and recorded rejections are
  /// the shared kernel's options (SharedOptions). A ledger that stays unreachable ends the run
  /// with `Termination::error`.
  Orchestrator(kernel::SharedKernel& kernel, LlmClient& llm, OrchestratorOptions options = {});
  /// The same through `committer`, which outlives the orchestrator: one that does more than
  /// commit (`clampai agent --upstream`: it executes each committed step through its bound
  /// tool). `shared`: it commits to a shared ledger, caught up with before every step.
  Orchestrator(driver::Committer& committer,
               bool shared,
               LlmClient& llm,
               OrchestratorOptions options = {});
  ~Orchestrator();
  Orchestrator(const Orchestrator&) = delete;
  Orchestrator& operator=(const Orchestrator&) = delete;

  /// Runs until a termination. Never throws on what the LLM does; an exception of the kernel
  /// (its trace file) ends the run with `Termination::error`.
  OrchestratorResult run();

  [[nodiscard]] const BeliefState& beliefs() const noexcept;
  [[nodiscard]] const Valuator& valuator() const noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// The standing instructions the orchestrator gives the LLM.
std::string_view system_prompt() noexcept;

}  // namespace clampai::agent
