// `clampai agent --shadow` (issue 40): the LLM's choice that the kernel rejects is followed all
// the same through the shadow committer, the state follows it, the result lists it and marks
// its step, and the trace replays with its spec; without shadow mode it is rejected.
#include <catch2/catch.hpp>

#include <filesystem>

#include "../kernel/support.hpp"
#include "clampai/agent.hpp"
#include "clampai/kernel.hpp"

namespace ca = clampai::agent;
namespace cd = clampai::driver;
namespace ck = clampai::kernel;

namespace {

// A second send of 8 overdraws the account: the kernel rejects it (`solvent`).
const char* kAccount = R"J({"name": "acct", "goal": "sent >= 12",
  "variables": {"balance": {"type": "int", "initial": 10, "min": -1000},
                "sent": {"type": "int", "initial": 0}},
  "actions": [
    {"id": "send", "parameters": {"amount": {"type": "int", "min": 1, "max": 8, "default": 1}},
     "cost": 1, "reversible": true,
     "effects": [{"variable": "balance", "mode": "decrement", "value": "amount"},
                 {"variable": "sent", "mode": "increment", "value": "amount"}]}],
  "invariants": [{"name": "solvent", "check": "balance >= 0"}],
  "budget": {"total": 25, "min_action_cost": 1}})J";

ca::MockLlm two_large_sends() {
  return ca::MockLlm({{ca::MockAnswer::call("send", R"({"amount": 8})"),
                       ca::MockAnswer::call("send", R"({"amount": 8})"),
                       ca::MockAnswer::text(R"({"stop": true})")}});
}

std::string value_of(const ck::SafetyKernel& k, const char* name) {
  return k.state().get(name).as_number().to_string();
}

}  // namespace

TEST_CASE("Agent in shadow mode: a rejected choice is followed, listed and replays",
          "[agent][shadow]") {
  const auto model = ck::load_spec(kAccount);
  const std::string trace = clampai::test::temp_file("shadow-agent.jsonl");
  ca::OrchestratorOptions ask;
  ask.skip_dominant = false;  // the LLM chooses every step
  {
    ck::KernelOptions options;
    options.record_rejections = true;  // as `clampai agent` runs it
    options.writer =
        std::make_shared<ck::TraceWriter>(trace, ck::FlushPolicy::flush, ck::TraceOpen::create);
    ck::SafetyKernel kernel(model, std::move(options));
    cd::ShadowCommitter shadow(kernel);
    ca::MockLlm llm = two_large_sends();
    const ca::OrchestratorResult r = ca::Orchestrator(shadow, false, llm, ask).run();
    // Both sends were executed: the state follows what was done.
    CHECK(r.shadow);
    CHECK(r.executed == 2);
    CHECK(r.rejected == 0);
    CHECK(value_of(kernel, "balance") == "-6");
    CHECK(value_of(kernel, "sent") == "16");
    CHECK(r.goal_reached);
    // The second is listed as the kernel would have rejected it, and its step is marked.
    REQUIRE(r.shadow_rejections.size() == 1);
    CHECK(r.shadow_rejections[0].action == "send");
    REQUIRE(r.shadow_rejections[0].sequence.has_value());
    REQUIRE_FALSE(r.shadow_rejections[0].reasons.empty());
    CHECK(r.shadow_rejections[0].reasons[0].code == ck::ReasonCode::invariant_violated);
    REQUIRE(r.log.size() == 2);
    REQUIRE(r.log[0].would_be.has_value());
    CHECK(r.log[0].would_be->approved);
    REQUIRE(r.log[1].would_be.has_value());
    CHECK_FALSE(r.log[1].would_be->approved);
    CHECK(r.log[1].approved);
    (void)kernel.seal();
  }
  // `trace verify --spec`'s replay; every step's entry says it was not enforced.
  ck::TraceReader reader(trace);
  ck::TraceReplay replay(model);
  std::size_t unenforced = 0, executed = 0;
  const ck::TraceCheck check =
      ck::replay_stream(reader, replay, [&](const ck::TraceEntry& e, const ck::TraceReplay&) {
        if (e.kind != ck::EntryKind::executed) return;
        ++executed;
        unenforced += e.enforced ? 0 : 1;
      });
  CHECK(check.ok);
  if (!check.ok) FAIL_CHECK(check.message);
  CHECK(executed == 2);
  CHECK(unenforced == 2);
  std::filesystem::remove(trace);
}

TEST_CASE("Agent enforcing (the control): the same choice is rejected", "[agent][shadow]") {
  ck::SafetyKernel kernel(ck::load_spec(kAccount));
  ca::OrchestratorOptions ask;
  ask.skip_dominant = false;
  ca::MockLlm llm = two_large_sends();
  const ca::OrchestratorResult r = ca::Orchestrator(kernel, llm, ask).run();
  CHECK_FALSE(r.shadow);
  CHECK(r.shadow_rejections.empty());
  CHECK(r.executed == 1);
  CHECK(r.rejected == 1);
  CHECK(value_of(kernel, "balance") == "2");
  CHECK_FALSE(r.goal_reached);
  REQUIRE(r.log.size() == 2);
  CHECK_FALSE(r.log[1].approved);
  CHECK_FALSE(r.log[1].would_be.has_value());
}

TEST_CASE("Shadow committer: refused for a budget in a pool", "[agent][shadow]") {
  std::string pooled = kAccount;
  pooled.replace(pooled.find("\"total\": 25"), 11, "\"total\": 25, \"pool\": \"team\"");
  const auto model = ck::load_spec(pooled);
  ck::KernelOptions options;
  options.pools = ck::PoolTree::build({ck::PoolDecl{"team", ck::Decimal::integer(100), ""}});
  ck::SafetyKernel kernel(model, std::move(options));
  CHECK_THROWS_WITH(cd::ShadowCommitter(kernel), Catch::Contains("cannot run in shadow mode"));
}
