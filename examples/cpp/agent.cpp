// docs/AGENT.md's C++ example: the mock LLM drives examples/agent_release.json, first on a
// kernel of its own, then as one of the processes sharing a ledger (here in memory).
#include <iostream>

#include "clampai/agent.hpp"
#include "clampai/driver.hpp"
#include "clampai/kernel.hpp"
#include "clampai/ledger/ledger.hpp"

int main() {
  namespace ca = clampai::agent;
  namespace ck = clampai::kernel;
  auto model = ck::load_spec_file("examples/agent_release.json");
  ck::KernelOptions ko;  // a trace writer, a lookahead guard, ...
  ko.record_rejections = true;
  ck::SafetyKernel kernel(model, ko);
  ca::MockLlm llm;                  // or make_http_llm({...})
  ca::OrchestratorOptions options;  // max_steps, patience, weights, on_step, ...
  ca::Orchestrator orchestrator(kernel, llm, options);
  const ca::OrchestratorResult r = orchestrator.run();
  std::cout << "alone: " << clampai::driver::to_string(r.termination) << ", " << r.executed
            << " executed, " << r.failures_of(ca::FailureKind::timeout) << " timeouts\n";

  // On a shared ledger: the same loop over a SharedKernel (clampai/kernel/ledger.hpp).
  ck::SharedOptions so;  // record_rejections, guard (the lookahead), ...
  so.record_rejections = true;
  ck::SharedKernel shared(model, clampai::ledger::open_ledger("memory:", model->name), so);
  const ca::OrchestratorResult mine = ca::Orchestrator(shared, llm, options).run();
  std::cout << "shared: " << clampai::driver::to_string(mine.termination) << ", " << mine.executed
            << " executed by this process\n";
  return r.goal_reached && mine.goal_reached ? 0 : 1;
}
