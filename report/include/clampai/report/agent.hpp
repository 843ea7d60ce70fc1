// The report of `clampai agent`: the seed-style summary of an LLM-driven run, text and JSON.
// Plain values, so the report library does not depend on the agent library.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "clampai/kernel/decision.hpp"
#include "clampai/kernel/model.hpp"
#include "clampai/kernel/pools.hpp"
#include "clampai/report/approvals.hpp"
#include "clampai/report/format.hpp"
#include "clampai/report/ledger.hpp"
#include "clampai/report/shadow.hpp"

namespace clampai::report {

/// One step of an agent run.
struct AgentStep {
  std::uint64_t index = 0;
  std::string source{};   ///< `llm`, `dominant` or `fallback`
  std::string failure{};  ///< the LLM failure behind a fallback (`timeout`, `bad_params`, ...)
  std::string action{};
  std::string params{};
  bool approved = false;
  std::vector<kernel::Reason> reasons{};
  std::string repair{};  ///< the closest approved parameters, after a rejection
  /// Shadow mode: what the enforcing kernel would have decided (the step was followed).
  std::optional<kernel::Decision> would_be{};
  kernel::Amount cost = 0, spent = 0;
  std::int64_t input_tokens = 0, output_tokens = 0;  ///< of this step's LLM call, if any
};

struct AgentReport {
  std::string spec{};
  const kernel::TaskModel* model = nullptr;
  std::string llm{};        ///< `mock`, `anthropic`, `openai`
  std::string llm_model{};  ///< the vendor's model, if named
  std::string termination{};
  bool goal_reached = false;
  std::string message{};
  std::uint64_t steps = 0, executed = 0, rejected = 0;
  std::uint64_t llm_calls = 0, dominant = 0, fallbacks = 0;
  std::vector<std::pair<std::string, std::uint64_t>> failures{};  ///< every kind, in order
  std::map<std::string, std::uint64_t> rejections_by_reason{};
  std::int64_t input_tokens = 0, output_tokens = 0;
  kernel::Amount total = 0, net = 0, gross = 0;
  std::int64_t step_limit = 0;
  double progress = 0.0;
  std::vector<AgentStep> log{};
  std::uint64_t trace_entries = 0;
  std::string trace_head{};
  bool trace_verified = false;
  std::string trace_file{};
  std::string transcript_file{};
  std::optional<unsigned> lookahead{};
  std::optional<LedgerSection> ledger{};    // a run on a shared ledger
  std::vector<kernel::PoolStatus> pools{};  // the budget pools at the end (--pools)
  ApprovalsSection approvals{};             // actions that asked for an approval (--approvals)
  ShadowSection shadow{};                   // a run in shadow mode (--shadow)
};

/// `agent`. Requires `model`.
void write_agent(std::ostream& out, Format format, const AgentReport& r);

/// The live line of one step, as `clampai agent` prints it on a terminal:
/// `step 3  scale_up n=2  approved  spent 9.000/20.000  (llm)`.
std::string agent_step_line(const kernel::TaskModel& model, const AgentStep& step);

}  // namespace clampai::report
