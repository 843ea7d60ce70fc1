// What `--ledger` on `run`, `agent` and `serve` rests on (issue 21): a SharedKernel's guard (the
// lookahead) vetoes on the replica but never while replaying, so kernels with and without a
// guard follow one ledger; `record_rejection` commits only rejections; Orchestrators on one
// ledger share one budget.
#include <catch2/catch.hpp>
#include <thread>

#include "clampai/agent.hpp"
#include "clampai/kernel/ledger.hpp"
#include "clampai/kernel/spec_loader.hpp"

namespace ca = clampai::agent;
using namespace clampai::kernel;

namespace {

const char* kSpec = R"J({"name": "wire", "goal": "n >= 1000",
  "variables": {"n": {"type": "int", "initial": 0, "min": 0}},
  "actions": [{"id": "a", "cost": 1, "effects": [{"variable": "n", "mode": "increment", "value": 1}]},
              {"id": "b", "cost": 2, "effects": [{"variable": "n", "mode": "increment", "value": 2}]}],
  "budget": {"total": 40, "min_action_cost": 1}})J";

// Vetoes every `b`, as the lookahead vetoes a trap.
std::optional<Reason> no_b(const Situation&, const Proposal& p, const Decision&) {
  if (p.action != 1) return std::nullopt;
  return Reason{ReasonCode::lookahead_trap, "trap", "`b` leads into the trap"};
}

}  // namespace

TEST_CASE("SharedKernel: a guard vetoes on the replica; its veto replays without it", "[ledger]") {
  const auto model = load_spec(kSpec);
  auto ledger = std::make_shared<MemoryLedger>();
  SharedOptions guarded;
  guarded.guard = no_b;
  guarded.record_rejections = true;
  SharedKernel x(model, ledger->share(), guarded);
  // The replica a driver reads sees the veto, and execute records it in the shared trace.
  REQUIRE(x.local().evaluate("b").has(ReasonCode::lookahead_trap));
  REQUIRE(x.local().evaluate("a").approved);
  const Outcome vetoed = x.execute("b");
  REQUIRE_FALSE(vetoed.decision.approved);
  REQUIRE(vetoed.decision.has(ReasonCode::lookahead_trap, "trap"));
  REQUIRE(x.length() == 2);  // the genesis and the recorded veto
  // A kernel without the guard replays the veto as recorded, then executes `b` itself.
  SharedKernel y(model, ledger->share());
  REQUIRE(y.length() == 2);
  REQUIRE(y.execute("b").receipt.has_value());
  // The guarded kernel replays that approval (no guard while replaying) and stays on one chain.
  REQUIRE(x.refresh() == 1);
  REQUIRE(x.head() == y.head());
  REQUIRE(x.local().state() == y.local().state());
  REQUIRE(verify_trace_lines(ledger->read(0), "memory:", true).ok);
  // Replaying the whole ledger into a fresh guarded kernel also gives the same head.
  SharedKernel z(model, ledger->share(), guarded);
  REQUIRE(z.head() == x.head());
}

TEST_CASE("SharedKernel: record_rejection commits rejections only, on the latest head",
          "[ledger]") {
  const auto model = load_spec(R"J({"name": "last",
    "variables": {"n": {"type": "int", "initial": 0, "min": 0}},
    "actions": [{"id": "a", "cost": 1, "effects": [{"variable": "n", "mode": "increment", "value": 1}]}],
    "budget": {"total": 2, "min_action_cost": 1}})J");
  auto ledger = std::make_shared<MemoryLedger>();
  SharedOptions recording;
  recording.record_rejections = true;
  SharedKernel x(model, ledger->share(), recording);
  SharedKernel y(model, ledger->share());
  REQUIRE(x.records_rejections());
  REQUIRE_FALSE(y.records_rejections());
  const Proposal a{0, {}};
  // Approved on x's replica: nothing is committed.
  REQUIRE(x.record_rejection(a).approved);
  REQUIRE(x.length() == 1);
  REQUIRE(y.execute(a).receipt.has_value());
  REQUIRE(y.execute(a).receipt.has_value());
  // x's replica is stale (it still approves), so nothing is recorded until it learns better.
  REQUIRE(x.record_rejection(a).approved);
  REQUIRE(x.refresh() == 2);
  const Decision d = x.record_rejection(a);
  REQUIRE(d.has(ReasonCode::budget_exceeded));
  REQUIRE(ledger->read(0).size() == 4);  // genesis, two executions, the recorded rejection
  // A kernel that does not record rejections commits nothing for one.
  REQUIRE(y.record_rejection(a).has(ReasonCode::budget_exceeded));
  REQUIRE(ledger->read(0).size() == 4);
  REQUIRE(verify_trace_lines(ledger->read(0), "memory:", true).ok);
}

TEST_CASE("Orchestrator: two agents on one shared ledger spend one budget", "[ledger][agent]") {
  const auto model = load_spec(kSpec);
  auto ledger = std::make_shared<MemoryLedger>();
  SharedOptions so;
  so.record_rejections = true;
  SharedKernel x(model, ledger->share(), so);
  SharedKernel y(model, ledger->share(), so);
  ca::OrchestratorResult rx, ry;
  {
    std::thread tx([&] {
      ca::MockLlm llm;
      rx = ca::Orchestrator(x, llm).run();
    });
    std::thread ty([&] {
      ca::MockLlm llm;
      ry = ca::Orchestrator(y, llm).run();
    });
    tx.join();
    ty.join();
  }
  const std::vector<std::string> lines = ledger->read(0);
  REQUIRE(verify_trace_lines(lines, "memory:", true).ok);
  std::uint64_t executed = 0;
  for (const TraceEntry& e : parse_trace_lines(lines, "memory:"))
    if (e.kind == EntryKind::executed) ++executed;
  // Each orchestrator counts what it committed: together, the shared trace's executions.
  REQUIRE(rx.executed + ry.executed == executed);
  REQUIRE(x.stats().commits + y.stats().commits == lines.size());
  // T1 for the group: the net spend of the shared head is within the budget, and nothing of it
  // is left that an action could use (the goal is out of reach).
  x.refresh();
  const auto budget = x.local().budget();
  REQUIRE(budget.net() <= budget.total());
  REQUIRE(budget.remaining() < model->budget.min_action_cost);
  REQUIRE(rx.termination != ca::Termination::error);
  REQUIRE(ry.termination != ca::Termination::error);
}

TEST_CASE("Orchestrator: on a shared ledger, a run alone is the run of its own kernel",
          "[ledger][agent]") {
  const auto model = load_spec(kSpec);
  SafetyKernel own(model);
  ca::MockLlm a;
  const ca::OrchestratorResult plain = ca::Orchestrator(own, a).run();
  SharedKernel shared(model, std::make_shared<MemoryLedger>());
  ca::MockLlm b;
  const ca::OrchestratorResult on_ledger = ca::Orchestrator(shared, b).run();
  REQUIRE(on_ledger.termination == plain.termination);
  REQUIRE(on_ledger.executed == plain.executed);
  REQUIRE(on_ledger.rejected == plain.rejected);
  REQUIRE(shared.local().state() == own.state());
  REQUIRE(shared.local().budget().net() == own.budget().net());
}
