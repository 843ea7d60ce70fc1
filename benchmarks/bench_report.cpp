// Report generation: the JSON and SARIF of `verify` (200 obligations, half refuted with a
// counterexample), the JSON of `agent` (200 logged steps, a rejection with reasons every
// fourth) and of `run`, and one decision in the compact wire form the server answers with.
// Only the writing is timed: the reports' inputs are built once.
#include <benchmark/benchmark.h>

#include <sstream>
#include <string>

#include "clampai/kernel.hpp"
#include "clampai/report.hpp"
#include "clampai/report/wire.hpp"

namespace {

namespace ck = clampai::kernel;
namespace cr = clampai::report;
namespace cv = clampai::verifier;

std::shared_ptr<const ck::TaskModel> model() {
  static const auto m = ck::load_spec(R"({"name": "bench",
    "variables": {"n": {"type": "int", "initial": 0}, "label": {"type": "string", "initial": ""}},
    "actions": [{"id": "step", "cost": 1, "parameters": {"k": {"type": "int", "min": 0, "max": 9}},
                 "effects": [{"variable": "n", "mode": "increment", "value": "k"}]}],
    "invariants": [{"name": "cap", "check": "n <= 1000"}],
    "goal": "n >= 500", "budget": {"total": 1000, "min_action_cost": 1}})");
  return m;
}

std::vector<ck::Reason> reasons() {
  return {
      {ck::ReasonCode::budget_exceeded, "budget", "the budget left, 0.50, is less than 1.00"},
      {ck::ReasonCode::invariant_violated, "cap", "invariant `cap` would be violated: n <= 1000"}};
}

void BM_Report_VerifyJson(benchmark::State& state) {
  const auto m = model();
  cv::Report report;
  for (int i = 0; i < 200; ++i) {
    cv::Obligation o;
    o.id = "preservation:step:cap" + std::to_string(i);
    o.action = "step";
    o.invariant = "cap";
    o.verdict = i % 2 == 0 ? cv::VerdictKind::proved : cv::VerdictKind::refuted;
    o.reason = "an approved step can break it";
    o.loc = {3, 7};
    if (i % 2 == 1) {
      o.counterexample = cv::Counterexample{{{"n", ck::Value::integer(999)}},
                                            {{"k", ck::Value::integer(2)}},
                                            {{"n", ck::Value::integer(1001)}}};
    }
    report.obligations.push_back(o);
    (o.verdict == cv::VerdictKind::proved ? report.proved : report.refuted) += 1;
  }
  cr::VerifyReport r;
  r.spec = "bench.json";
  r.model = m.get();
  r.report = &report;
  const auto format = state.range(0) == 0 ? cr::Format::json : cr::Format::sarif;
  for (auto _ : state) {
    std::ostringstream out;
    cr::write_verify(out, format, r);
    benchmark::DoNotOptimize(out.str().size());
  }
}
BENCHMARK(BM_Report_VerifyJson)->Arg(0)->Arg(1)->ArgNames({"sarif"});

void BM_Report_AgentJson(benchmark::State& state) {
  const auto m = model();
  cr::AgentReport r;
  r.spec = "bench.json";
  r.model = m.get();
  r.llm = "mock";
  r.termination = "goal_reached";
  r.message = "the goal holds";
  r.progress = 1.0 / 3.0;
  r.failures = {{"timeout", 1}, {"bad_params", 2}};
  r.rejections_by_reason = {{"budget_exceeded", 50}};
  for (std::uint64_t i = 0; i < 200; ++i) {
    cr::AgentStep s;
    s.index = i + 1;
    s.source = "llm";
    s.action = "step";
    s.params = R"({"k": 3})";
    s.approved = i % 4 != 0;
    if (!s.approved) s.reasons = reasons();
    s.cost = 1000;
    s.spent = static_cast<ck::Amount>(1000 * i);
    r.log.push_back(s);
  }
  r.trace_head = std::string(64, 'a');
  for (auto _ : state) {
    std::ostringstream out;
    cr::write_agent(out, cr::Format::json, r);
    benchmark::DoNotOptimize(out.str().size());
  }
}
BENCHMARK(BM_Report_AgentJson);

void BM_Report_RunJson(benchmark::State& state) {
  const auto m = model();
  clampai::driver::RunResult result;
  result.actions.assign(200, "step");
  result.last_reasons = reasons();
  result.rejections_by_reason = {{"budget_exceeded", 3}, {"invariant_violated", 1}};
  cr::RunReport r;
  r.spec = "bench.json";
  r.model = m.get();
  r.result = &result;
  r.trace_head = std::string(64, 'a');
  for (auto _ : state) {
    std::ostringstream out;
    cr::write_run(out, cr::Format::json, r);
    benchmark::DoNotOptimize(out.str().size());
  }
}
BENCHMARK(BM_Report_RunJson);

// The server's hot path: one decision, compact.
void BM_Wire_Decision(benchmark::State& state) {
  const auto m = model();
  ck::Decision d;
  d.action = 0;
  d.cost = 1000;
  d.reasons = reasons();
  d.changes = {{0, ck::Value::integer(7)}};
  for (auto _ : state) benchmark::DoNotOptimize(cr::decision_json(*m, d).size());
}
BENCHMARK(BM_Wire_Decision);

}  // namespace

BENCHMARK_MAIN();
