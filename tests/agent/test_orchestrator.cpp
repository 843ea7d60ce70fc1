// The orchestrator loop: its terminations, fallbacks, rejection feedback and lookahead.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "clampai/agent.hpp"
#include "clampai/driver/lookahead.hpp"
#include "clampai/kernel.hpp"

namespace ca = clampai::agent;
namespace ck = clampai::kernel;

namespace {

std::string example(const std::string& name) {
  return std::string(CLAMPAI_SOURCE_DIR) + "/examples/" + name;
}

// Two actions of equal value (so the LLM is asked) and a goal ten increments away.
const char* kTwins = R"({"goal": "x >= 10",
  "variables": {"x": {"type": "int", "initial": 0, "min": 0}},
  "actions": [
    {"id": "left", "cost": 1, "effects": [{"variable": "x", "mode": "increment", "value": "1"}]},
    {"id": "right", "cost": 1, "effects": [{"variable": "x", "mode": "increment", "value": "1"}]}],
  "budget": {"total": 100, "min_action_cost": 1}})";

// An LLM that records every request and answers with the first tool.
class Recorder final : public ca::LlmClient {
 public:
  ca::LlmResponse complete(const ca::LlmRequest& request) override {
    requests.push_back(request);
    ca::LlmResponse r;
    if (request.tools.empty()) {
      r.text = R"({"stop": true})";
    } else {
      r.tool_call = ca::ToolCall{request.tools.front().name, "{}"};
    }
    return r;
  }
  [[nodiscard]] std::string_view name() const noexcept override { return "recorder"; }
  std::vector<ca::LlmRequest> requests;
};

}  // namespace

TEST_CASE("Orchestrator: the mock reaches the quickstart's goal", "[agent][orchestrator]") {
  const auto m = ck::load_spec_file(example("quickstart.json"));
  ck::SafetyKernel kernel(m);
  ca::MockLlm llm;
  ca::Orchestrator o(kernel, llm);
  const ca::OrchestratorResult r = o.run();
  REQUIRE(r.termination == ca::Termination::goal_reached);
  REQUIRE(r.goal_reached);
  REQUIRE(r.executed == 2);
  REQUIRE(r.total_failures() == 0);
  REQUIRE(r.progress == Approx(1.0));
  REQUIRE(kernel.verify_trace().ok);
}

TEST_CASE("Orchestrator: every termination reason", "[agent][orchestrator]") {
  ca::OrchestratorOptions ask;
  ask.skip_dominant = false;
  SECTION("llm_stop") {
    ck::SafetyKernel kernel(ck::load_spec(kTwins));
    ca::MockLlm llm({{ca::MockAnswer::text(R"({"stop": true})")}});
    const auto r = ca::Orchestrator(kernel, llm, ask).run();
    REQUIRE(r.termination == ca::Termination::llm_stop);
    REQUIRE(r.steps == 0);
  }
  SECTION("step_limit: the run's own cap, then the kernel's T2 bound") {
    ck::SafetyKernel kernel(ck::load_spec(kTwins));
    ca::MockLlm llm;
    ca::OrchestratorOptions capped = ask;
    capped.max_steps = 3;
    const auto r = ca::Orchestrator(kernel, llm, capped).run();
    REQUIRE(r.termination == ca::Termination::step_limit);
    REQUIRE(r.executed == 3);
    ck::SafetyKernel small(ck::load_spec(R"({"goal": "x >= 10",
      "variables": {"x": {"type": "int", "initial": 0}},
      "actions": [{"id": "inc", "cost": 1, "effects": [{"variable": "x", "mode": "increment", "value": "1"}]}],
      "budget": {"total": 100, "min_action_cost": 1, "max_steps": 4}})"));
    const auto t2 = ca::Orchestrator(small, llm).run();
    REQUIRE(t2.termination == ca::Termination::step_limit);
    REQUIRE(small.steps() == 4);
  }
  SECTION("budget_exhausted") {
    ck::SafetyKernel kernel(ck::load_spec(R"({"goal": "x >= 10",
      "variables": {"x": {"type": "int", "initial": 0}},
      "actions": [{"id": "inc", "cost": 2, "effects": [{"variable": "x", "mode": "increment", "value": "1"}]}],
      "budget": {"total": 5, "min_action_cost": 0.5}})"));
    ca::MockLlm llm;
    const auto r = ca::Orchestrator(kernel, llm).run();
    REQUIRE(r.termination == ca::Termination::budget_exhausted);
    REQUIRE(r.executed == 2);
    REQUIRE(kernel.budget().net() <= kernel.budget().total());
  }
  SECTION("stuck: nothing ready, or no progress") {
    ck::SafetyKernel blocked(ck::load_spec(R"({"goal": "x >= 1",
      "variables": {"x": {"type": "int", "initial": 0}},
      "actions": [{"id": "inc", "cost": 1, "effects": [{"variable": "x", "mode": "increment", "value": "1"}]},
                  {"id": "hover", "cost": 0, "effects": []}],
      "emergency_actions": ["hover"], "dependencies": {"inc": ["hover"]},
      "budget": {"total": 5, "min_action_cost": 1}})"));
    ca::MockLlm llm;
    auto r = ca::Orchestrator(blocked, llm).run();
    REQUIRE(r.termination == ca::Termination::stuck);
    REQUIRE(r.message == "no action is ready");
    ck::SafetyKernel spinning(ck::load_spec(R"({"goal": "x >= 1",
      "variables": {"x": {"type": "int", "initial": 0}, "y": {"type": "int", "initial": 0}},
      "actions": [{"id": "spin", "cost": 1, "effects": [{"variable": "y", "mode": "increment", "value": "1"}]}],
      "budget": {"total": 50, "min_action_cost": 1}})"));
    r = ca::Orchestrator(spinning, llm).run();
    REQUIRE(r.termination == ca::Termination::stuck);
    REQUIRE(r.executed == 6);  // the first completion is progress, then 5 steps without
  }
  SECTION("max_failures, with the reasons and the closest approved parameters fed back") {
    ck::SafetyKernel kernel(ck::load_spec(R"({"goal": "x >= 9",
      "variables": {"x": {"type": "int", "initial": 0, "min": 0}},
      "actions": [{"id": "add", "cost": 1, "parameters": {"n": {"type": "int", "min": 1, "max": 20}},
                   "effects": [{"variable": "x", "mode": "increment", "value": "n"}]},
                  {"id": "noop", "cost": 1, "effects": []}],
      "invariants": [{"name": "cap", "check": "x <= 5"}],
      "budget": {"total": 50, "min_action_cost": 1}})"));
    std::vector<ca::MockAnswer> script(6, ca::MockAnswer::call("add", R"({"n": 12})"));
    ca::MockLlm llm({script});
    const auto r = ca::Orchestrator(kernel, llm, ask).run();
    REQUIRE(r.termination == ca::Termination::max_failures);
    REQUIRE(r.rejected == 5);
    REQUIRE(r.rejections_by_reason.at("invariant_violated") == 5);
    REQUIRE(r.log.back().repair == "n=5");
    REQUIRE_THAT(llm.last_prompt(),
                 Catch::Contains("REJECTED by the kernel: invariant_violated (cap)") &&
                     Catch::Contains("The closest parameters the kernel approves: n=5"));
    REQUIRE(kernel.state().get("x") == ck::Value::integer(0));
  }
}

TEST_CASE("Orchestrator: every LLM failure is counted by kind and falls back",
          "[agent][orchestrator]") {
  ck::SafetyKernel kernel(ck::load_spec(kTwins));
  ca::MockLlm llm({{ca::MockAnswer::fail(ca::LlmErrorKind::timeout),
                    ca::MockAnswer::fail(ca::LlmErrorKind::http),
                    ca::MockAnswer::fail(ca::LlmErrorKind::auth),
                    ca::MockAnswer::fail(ca::LlmErrorKind::unparsable),
                    ca::MockAnswer::call("nope"),
                    ca::MockAnswer::call("left", R"({"n": 1})"),
                    ca::MockAnswer::text("no idea")}});
  ca::OrchestratorOptions options;
  options.skip_dominant = false;
  const auto r = ca::Orchestrator(kernel, llm, options).run();
  REQUIRE(r.goal_reached);
  REQUIRE(r.fallbacks == 7);
  for (auto k : {ca::FailureKind::timeout,
                 ca::FailureKind::http,
                 ca::FailureKind::auth,
                 ca::FailureKind::unparsable,
                 ca::FailureKind::unknown_action,
                 ca::FailureKind::bad_params,
                 ca::FailureKind::unparsable_answer})
    REQUIRE(r.failures_of(k) == 1);
  REQUIRE(r.log[4].source == ca::ChoiceSource::fallback);
  REQUIRE(r.log[4].failure == ca::FailureKind::unknown_action);
  REQUIRE(r.log[7].source == ca::ChoiceSource::llm);
}

TEST_CASE("Orchestrator: blocked actions are never offered", "[agent][orchestrator]") {
  const auto m = ck::load_spec_file(example("cloud_deploy.json"));
  ck::SafetyKernel kernel(m);
  Recorder llm;
  ca::OrchestratorOptions options;
  options.skip_dominant = false;
  const auto r = ca::Orchestrator(kernel, llm, options).run();
  REQUIRE(r.goal_reached);
  REQUIRE(!llm.requests.empty());
  std::vector<std::uint64_t> done(m->actions.size(), 0);
  for (const auto& req : llm.requests) {
    for (const auto& tool : req.tools) {
      REQUIRE(tool.name != "safe_hover");  // emergency actions are not offered either
      const std::size_t a = *m->find_action(tool.name);
      for (std::size_t d : m->actions[a].dependencies) REQUIRE(done[d] > 0);
    }
    done[*m->find_action(req.tools.front().name)] += 1;  // the recorder takes the first
  }
  // The first prompt shows the critical path and what waits on what.
  REQUIRE_THAT(llm.requests.front().prompt,
               Catch::Contains("CRITICAL PATH: build -> test -> deploy -> scale_up") &&
                   Catch::Contains("test (needs build)"));
  REQUIRE(llm.requests.front().tools.size() == 1);
  REQUIRE(nlohmann::json::parse(llm.requests.front().tools[0].input_schema)["type"] == "object");
}

TEST_CASE("Orchestrator: with a lookahead guard the trap is rejected before it closes",
          "[agent][orchestrator]") {
  const auto m = ck::load_spec_file(example("pressure_vessel.json"));
  ck::KernelOptions options;
  clampai::driver::LookaheadOptions la;
  la.depth = 3;
  options.guard = clampai::driver::lookahead_guard(m, la);
  ck::SafetyKernel kernel(m, options);
  // The LLM insists on opening the valve (a trap three fills deep), then lets the mock choose.
  ca::MockLlm llm({{ca::MockAnswer::call("open_valve")}});
  ca::OrchestratorOptions o;
  o.skip_dominant = false;
  const auto r = ca::Orchestrator(kernel, llm, o).run();
  REQUIRE(r.log.front().action == "open_valve");
  REQUIRE(!r.log.front().approved);
  REQUIRE(r.rejections_by_reason.at("lookahead_trap") == 1);
  REQUIRE(r.goal_reached);
  REQUIRE(kernel.verify_trace().ok);
}

TEST_CASE("Orchestrator: an exception from the kernel ends the run with `error`",
          "[agent][orchestrator]") {
  ck::KernelOptions options;
  // A guard that fails (as a trace file that cannot be written would): the kernel's execute
  // throws, and the loop stops rather than letting it escape.
  options.guard = [](const ck::Situation&, const ck::Proposal&, const ck::Decision&)
      -> std::optional<ck::Reason> { throw std::runtime_error("the guard's disk is full"); };
  ck::SafetyKernel kernel(ck::load_spec(kTwins), options);
  ca::MockLlm llm;
  ca::OrchestratorResult r;
  REQUIRE_NOTHROW(r = ca::Orchestrator(kernel, llm).run());
  REQUIRE(r.termination == ca::Termination::error);
  REQUIRE(r.message == "the guard's disk is full");
  REQUIRE(r.executed == 0);
  REQUIRE(kernel.steps() == 0);
}

TEST_CASE("Orchestrator: a cancellation ends the run before its next proposal",
          "[agent][orchestrator]") {
  ca::OrchestratorOptions options;
  options.skip_dominant = false;  // the LLM is asked at every step
  SECTION("asked at the start of a step: the steps before it are committed, no other") {
    ck::SafetyKernel kernel(ck::load_spec(kTwins));
    ca::MockLlm llm;
    int asked = 0;
    options.cancelled = [&] { return ++asked > 4; };  // two steps ask twice each
    const auto r = ca::Orchestrator(kernel, llm, options).run();
    REQUIRE(r.termination == ca::Termination::error);
    REQUIRE(r.message == "cancelled");
    REQUIRE(r.executed == 2);
    REQUIRE(kernel.steps() == 2);
  }
  SECTION("set while the LLM answers: its choice is never handed to the kernel") {
    ck::SafetyKernel kernel(ck::load_spec(kTwins));
    Recorder llm;
    bool cancel = false;
    options.cancelled = [&] {
      cancel = !llm.requests.empty();  // true once the first answer is in
      return cancel;
    };
    const auto r = ca::Orchestrator(kernel, llm, options).run();
    REQUIRE(llm.requests.size() == 1);
    REQUIRE(r.termination == ca::Termination::error);
    REQUIRE(r.steps == 0);
    REQUIRE(kernel.steps() == 0);
    REQUIRE(kernel.trace_length() == 1);
  }
}

TEST_CASE("Orchestrator: a shared budget reserves before the commit and settles after",
          "[agent][orchestrator]") {
  ck::SafetyKernel kernel(ck::load_spec(kTwins));
  ca::MockLlm llm;
  ca::OrchestratorOptions options;
  std::vector<std::string> log;
  int granted = 0;
  options.reserve = [&](std::string_view action, ck::Amount cost) -> std::optional<std::string> {
    log.push_back("reserve " + std::string(action) + " " + kernel.model().format_amount(cost));
    if (granted == 3) return "the shared budget is spent";
    ++granted;
    return std::nullopt;
  };
  options.settle = [&](std::string_view action, ck::Amount cost, bool approved) {
    log.push_back("settle " + std::string(action) + " " + kernel.model().format_amount(cost) +
                  (approved ? " approved" : " rejected"));
  };
  const auto r = ca::Orchestrator(kernel, llm, options).run();
  REQUIRE(r.termination == ca::Termination::budget_exhausted);
  REQUIRE(r.message == "the shared budget is spent");
  REQUIRE(r.executed == 3);
  REQUIRE(kernel.steps() == 3);
  REQUIRE(log.size() == 7);  // three reserved and settled, the fourth refused
  for (std::size_t i = 0; i < 6; i += 2) {
    REQUIRE(log[i].rfind("reserve ", 0) == 0);
    REQUIRE(log[i + 1].rfind("settle ", 0) == 0);
    REQUIRE(log[i + 1].ends_with(" 1.000 approved"));
  }
  REQUIRE(log[6].rfind("reserve ", 0) == 0);
}
