// The prompt of one step and the offered actions as tools (private to the agent library).
#pragma once

#include <deque>
#include <span>
#include <string>
#include <vector>

#include "clampai/agent/beliefs.hpp"
#include "clampai/agent/llm.hpp"
#include "clampai/agent/orchestrator.hpp"
#include "clampai/agent/saliency.hpp"
#include "clampai/agent/valuation.hpp"

namespace clampai::agent::detail {

/// The tool of action `index`: its id, description, and a JSON Schema of its parameters.
ToolSpec tool_of(const kernel::TaskModel& model, std::size_t index);

/// Everything the prompt of one step shows.
struct PromptInput {
  const kernel::TaskModel* model = nullptr;
  const kernel::Situation* situation = nullptr;
  std::span<const Candidate> offered{};   // ranked, best first
  std::span<const ActionValue> values{};  // same order
  const BeliefState* beliefs = nullptr;
  const Salience* salience = nullptr;
  double progress = 0.0;
  std::vector<std::string> waiting{};  // "deploy (needs test)"
  std::vector<std::string> critical_path{};
  std::string last_outcome{};
  const std::deque<StepRecord>* recent = nullptr;
  const std::vector<std::string>* headers = nullptr;  // per action: `action_header`
  std::size_t detailed_actions = 20;  // the best ones described; the others only named
};

/// What the prompt says of action `index` that never changes: `id: description`, its cost with
/// its default parameters, its parameters and whether it is irreversible (computed once per
/// run: it is most of the prompt).
std::string action_header(const kernel::TaskModel& model, std::size_t index);

/// Writes the step's prompt into `out` (cleared first).
void write_prompt(const PromptInput& in, std::string& out);

/// `n=2, amount=1.50` (empty: `no parameters`).
std::string describe_params(const kernel::TaskModel& model, const kernel::Proposal& p);

}  // namespace clampai::agent::detail
