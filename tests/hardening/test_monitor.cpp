// The reference monitor: information flow (exact, through `if`, on list elements), the
// attestation gate in the spec, reconciliation with tolerance and hanging probes, readiness
// with backoff on an injected clock; the spec's errors for all of it.
#include <atomic>
#include <catch2/catch.hpp>
#include <filesystem>
#include <string>

#include "clampai/hardening.hpp"
#include "clampai/kernel.hpp"

namespace fs = std::filesystem;
using namespace clampai;
using Catch::Matchers::Contains;
using hardening::ReferenceMonitor;
using kernel::ReasonCode;

namespace {

const char* kFlowSpec = R"J({
  "name": "flows",
  "variables": {
    "api_key": {"type": "int", "initial": 7, "label": "SECRET"},
    "ssn": {"type": "string", "initial": "123-45-6789", "label": "PII"},
    "score": {"type": "int", "initial": 0, "label": "INTERNAL"},
    "public_flag": {"type": "int", "initial": 0},
    "contacts": {"type": "list", "element": "string", "initial": ["a@b.c"],
                 "label": "INTERNAL", "element_label": "PII"}
  },
  "sinks": {
    "public_log": {"label": "PUBLIC", "description": "world-readable"},
    "vault": {"label": "PII"}
  },
  "actions": [
    {"id": "leak_if", "cost": 1, "effects": [
      {"variable": "public_flag", "mode": "set", "value": "if api_key > 10 then 1 else 0"}]},
    {"id": "count_contacts", "cost": 1, "effects": [
      {"variable": "score", "mode": "set", "value": "len(contacts)"}]},
    {"id": "publish_count", "cost": 1, "emits": [{"sink": "public_log", "value": "len(contacts)"}]},
    {"id": "check_contact", "cost": 1, "effects": [
      {"variable": "score", "mode": "set", "value": "if contains(contacts, 'x@y.z') then 1 else 0"}]},
    {"id": "add_contact", "cost": 1, "effects": [
      {"variable": "contacts", "mode": "append", "value": "'x@y.z'"}]},
    {"id": "bump", "cost": 1, "effects": [{"variable": "public_flag", "mode": "increment", "value": 1}]},
    {"id": "guarded", "cost": 1, "requires": "api_key > 0", "effects": [
      {"variable": "public_flag", "mode": "increment", "value": 1}]},
    {"id": "file_ssn", "cost": 1, "emits": [{"sink": "vault", "value": "ssn"}]}
  ],
  "budget": {"total": 100, "min_action_cost": 1}
})J";

std::vector<std::string> flow_lines(const kernel::TaskModel& m, bool downward_only) {
  std::vector<std::string> out;
  for (const auto& f : kernel::information_flows(m, downward_only))
    out.push_back(m.actions[f.action].id + ": " + f.source + " -> " + f.target + " at " + f.path);
  return out;
}

}  // namespace

TEST_CASE("Information flow: exact reads, through `if`, on list elements, from `requires`",
          "[hardening][flow]") {
  const auto m = kernel::load_spec(kFlowSpec);
  REQUIRE(m->variables[4].label == kernel::SecurityLabel::internal);
  REQUIRE(m->variables[4].element_label == kernel::SecurityLabel::pii);
  REQUIRE(flow_lines(*m, true) ==
          std::vector<std::string>{
              "leak_if: api_key -> public_flag at actions[0].effects[0].value",
              "publish_count: contacts -> sink:public_log at actions[2].emits[0].value",
              "check_contact: contacts[] -> score at actions[3].effects[0].value",
              "guarded: api_key -> public_flag at actions[6].requires"});
  // Upward and level flows are flows, not leaks.
  const auto all = flow_lines(*m, false);
  REQUIRE(std::find(all.begin(),
                    all.end(),
                    "count_contacts: contacts -> score at actions[1].effects[0].value") !=
          all.end());
  REQUIRE(std::find(all.begin(),
                    all.end(),
                    "file_ssn: ssn -> sink:vault at actions[7].emits[0].value") != all.end());
  const auto leaks = kernel::information_flows(*m, true);
  REQUIRE(leaks[0].source_label == kernel::SecurityLabel::secret);
  REQUIRE(leaks[0].target_label == kernel::SecurityLabel::public_data);
  REQUIRE(leaks[0].expression == "if api_key > 10 then 1 else 0");
}

TEST_CASE(
    "ReferenceMonitor: a downward flow is rejected with `information_flow` and traced; "
    "an action reading no labelled data is not blocked",
    "[hardening][monitor][flow]") {
  hardening::MonitorOptions opts;
  opts.kernel.record_rejections = true;
  ReferenceMonitor mon(kernel::load_spec(kFlowSpec), opts);
  REQUIRE(mon.downward_flows().size() == 4);
  const auto leak = mon.execute("leak_if");
  REQUIRE_FALSE(leak.outcome.decision.approved);
  REQUIRE(leak.outcome.decision.has(ReasonCode::information_flow, "api_key -> public_flag"));
  REQUIRE_THAT(leak.outcome.decision.reasons.back().message,
               Contains("moves `api_key` (SECRET) to `public_flag` (PUBLIC)"));
  REQUIRE(mon.evaluate("check_contact").has(ReasonCode::information_flow));
  REQUIRE(mon.execute("bump").outcome.receipt);
  REQUIRE(mon.execute("count_contacts").outcome.receipt);
  REQUIRE(mon.execute("add_contact").outcome.receipt);
  REQUIRE(mon.execute("file_ssn").outcome.receipt);
  // The rejection is in the trace, the chain verifies and a replay without the monitor
  // accepts the monitor's veto as recorded.
  const auto trace = mon.kernel().trace();
  REQUIRE(std::any_of(trace.begin(), trace.end(), [](const kernel::TraceEntry& e) {
    return e.kind == kernel::EntryKind::rejected && !e.reasons.empty() &&
           e.reasons.back().code == ReasonCode::information_flow;
  }));
  REQUIRE(mon.kernel().verify_trace().ok);
  REQUIRE_FALSE(kernel::replay_trace(mon.kernel().model_ptr(), trace));
  // Off, the same action runs.
  hardening::MonitorOptions off;
  off.enforce_information_flow = false;
  ReferenceMonitor lax(kernel::load_spec(kFlowSpec), off);
  REQUIRE(lax.execute("leak_if").outcome.receipt);
}

namespace {

std::string gate_spec(const std::string& test_program) {
  return R"J({
    "variables": {
      "path": {"type": "string", "initial": "/nonexistent/clampai"},
      "deployed": {"type": "bool", "initial": false}
    },
    "attestors": {
      "approval": {"external": true},
      "file_exists": {"command": [")J" +
         test_program + R"J(", "-e", "{path}"], "timeout_ms": 2000},
      "both": {"all": ["approval", "file_exists"]},
      "either": {"quorum": 1, "of": ["approval", "file_exists"]}
    },
    "actions": [
      {"id": "deploy", "cost": 1, "attestations": ["both"],
       "effects": [{"variable": "deployed", "mode": "set", "value": true}]},
      {"id": "soft_deploy", "cost": 1, "attestations": ["either"],
       "effects": [{"variable": "deployed", "mode": "set", "value": true}]}
    ],
    "goal": {"check": "deployed", "attestations": ["approval"]},
    "budget": {"total": 10, "min_action_cost": 1}
  })J";
}

}  // namespace

TEST_CASE("ReferenceMonitor: the attestation gate of actions and of the goal",
          "[hardening][monitor][attestor]") {
  const std::string test_program = fs::canonical("/usr/bin/test").string();
  const auto model = kernel::load_spec(gate_spec(test_program));
  auto approved = std::make_shared<std::atomic<bool>>(true);
  hardening::MonitorOptions opts;
  opts.kernel.record_rejections = true;
  opts.allowed_programs = {test_program};
  opts.attestors["approval"] = std::make_shared<hardening::PredicateAttestor>(
      "approval", [approved](const hardening::AttestationContext&, std::string& ev) {
        ev = "ticket 42";
        return approved->load();
      });
  ReferenceMonitor mon(model, opts);

  // `both` fails on its file dimension: nothing changes, the failure is traced.
  const auto before = mon.kernel().state();
  const auto r = mon.execute("deploy");
  REQUIRE_FALSE(r.outcome.decision.approved);
  REQUIRE(r.outcome.decision.has(ReasonCode::attestation_failed, "both"));
  REQUIRE(r.outcome.state == before);
  REQUIRE(r.attestations.size() == 1);
  REQUIRE(r.attestations[0].dimensions.size() == 2);
  REQUIRE(r.attestations[0].dimensions[0].passed);
  REQUIRE_FALSE(r.attestations[0].dimensions[1].passed);
  const auto trace = mon.kernel().trace();
  REQUIRE(trace.back().kind == kernel::EntryKind::rejected);
  REQUIRE(trace.back().reasons.back().subject == "both");
  REQUIRE_THAT(trace.back().reasons.back().message, Contains("1 of 2 dimensions passed"));
  // Evaluating runs no attestor.
  REQUIRE(mon.evaluate("deploy").approved);

  // A quorum of one passes; the goal then needs its own attestation.
  const auto soft = mon.execute("soft_deploy");
  REQUIRE(soft.outcome.receipt);
  REQUIRE(soft.attestations[0].passed);
  REQUIRE(mon.check_goal().success());
  REQUIRE(mon.check_goal().attestations[0].evidence == "ticket 42");
  approved->store(false);
  const auto goal = mon.check_goal();
  REQUIRE(goal.reached);
  REQUIRE_FALSE(goal.success());
}

TEST_CASE("ReferenceMonitor: attestor configuration errors are named",
          "[hardening][monitor][attestor]") {
  const std::string test_program = fs::canonical("/usr/bin/test").string();
  const auto model = kernel::load_spec(gate_spec(test_program));
  hardening::MonitorOptions opts;
  opts.allowed_programs = {test_program};
  REQUIRE_THROWS_WITH(ReferenceMonitor(model, opts),
                      Contains("attestor `approval` is external: supply it"));
  auto yes = std::make_shared<hardening::PredicateAttestor>(
      "approval", [](const hardening::AttestationContext&, std::string&) { return true; });
  opts.attestors["approval"] = yes;
  opts.attestors["typo"] = yes;
  REQUIRE_THROWS_WITH(ReferenceMonitor(model, opts),
                      Contains("attestor `typo` is not an external attestor of the spec"));
  opts.attestors.erase("typo");
  opts.allowed_programs = {};
  REQUIRE_THROWS_WITH(
      ReferenceMonitor(model, opts),
      Contains("attestor `file_exists`: `" + test_program + "` is not in the allowlist"));
}

TEST_CASE("ReferenceMonitor: drift beyond the tolerance halts with `environment_drift`",
          "[hardening][monitor][reconcile]") {
  const auto model = kernel::load_spec(R"J({
    "variables": {"replicas": {"type": "decimal", "scale": 1, "initial": 10},
                  "region": {"type": "string", "initial": "eu"}},
    "actions": [{"id": "scale", "cost": 1, "effects": [
                   {"variable": "replicas", "mode": "increment", "value": 1}]},
                {"id": "stop", "cost": 0, "effects": []}],
    "emergency_actions": ["stop"],
    "budget": {"total": 10, "min_action_cost": 1}})J");
  auto world = std::make_shared<std::atomic<int>>(114);  // tenths
  hardening::MonitorOptions opts;
  opts.kernel.record_rejections = true;
  opts.probes.push_back(hardening::callback_probe(
      "replicas",
      [world](const hardening::AttestationContext&) {
        return kernel::Value::number(kernel::Decimal{world->load(), 1});
      },
      kernel::Decimal{5, 1}));
  opts.probes.push_back(hardening::callback_probe(
      "region", [](const hardening::AttestationContext&) { return kernel::Value::string("eu"); }));
  ReferenceMonitor mon(model, opts);
  // 11 in the model, 11.4 in the world: within 0.5.
  const auto ok = mon.execute("scale");
  REQUIRE(ok.outcome.receipt);
  REQUIRE(ok.drift.empty());
  REQUIRE_FALSE(mon.halted());
  // 12 against 11.4: 0.6 apart.
  const auto drifted = mon.execute("scale");
  REQUIRE(drifted.outcome.receipt);
  REQUIRE(drifted.drift.size() == 1);
  REQUIRE(drifted.drift[0].variable == "replicas");
  REQUIRE_THAT(drifted.drift[0].detail, Contains("differs by 0.6, tolerance 0.5"));
  REQUIRE(mon.halted());
  const auto after = mon.execute("scale");
  REQUIRE(after.outcome.decision.has(ReasonCode::environment_drift, "replicas"));
  REQUIRE(mon.kernel().trace().back().reasons.back().code == ReasonCode::environment_drift);
  // Emergency actions still run (T8).
  REQUIRE(mon.execute("stop").outcome.receipt);
}

TEST_CASE("ReferenceMonitor: a probe that hangs counts as drift (fails closed)",
          "[hardening][monitor][reconcile]") {
  const auto model = kernel::load_spec(R"J({
    "variables": {"n": {"type": "int", "initial": 0}},
    "actions": [{"id": "inc", "cost": 1, "effects": [{"variable": "n", "mode": "increment", "value": 1}]}],
    "budget": {"total": 10, "min_action_cost": 1}})J");
  const std::string sh = fs::canonical("/bin/sh").string();
  hardening::SubprocessLimits limits;
  limits.timeout = std::chrono::milliseconds(200);
  hardening::MonitorOptions opts;
  opts.probes.push_back(hardening::command_probe(
      "n",
      {sh, "-c", "sleep 100"},
      hardening::SubprocessRunner(hardening::ProgramAllowlist({sh}), limits)));
  ReferenceMonitor mon(model, opts);
  const auto r = mon.execute("inc");
  REQUIRE(r.drift.size() == 1);
  REQUIRE_FALSE(r.drift[0].world);
  REQUIRE_THAT(r.drift[0].detail, Contains("timed out after 200 ms"));
  REQUIRE(mon.halted());

  // A command probe that answers is read as the variable's type.
  hardening::MonitorOptions good;
  good.probes.push_back(
      hardening::command_probe("n",
                               {sh, "-c", "echo ' {n} '"},
                               hardening::SubprocessRunner(hardening::ProgramAllowlist({sh}))));
  ReferenceMonitor fine(model, good);
  REQUIRE(fine.execute("inc").drift.empty());
  REQUIRE(fine.reconcile().empty());
}

namespace {

struct FakeClock {
  std::int64_t now = 0;
  std::vector<std::int64_t> sleeps;
  hardening::MonitorClock clock() {
    return {[this] { return std::chrono::milliseconds(now); },
            [this](std::chrono::milliseconds d) {
              sleeps.push_back(d.count());
              now += d.count();
            }};
  }
};

const char* kDependencySpec = R"J({
  "variables": {"up": {"type": "bool", "initial": false}, "used": {"type": "int", "initial": 0}},
  "actions": [
    {"id": "provision", "cost": 1, "effects": [{"variable": "up", "mode": "set", "value": true}]},
    {"id": "use", "cost": 1, "effects": [{"variable": "used", "mode": "increment", "value": 1}]}],
  "dependencies": {"use": ["provision"]},
  "budget": {"total": 10, "min_action_cost": 1}})J";

}  // namespace

TEST_CASE("ReferenceMonitor: readiness is polled with exponential backoff on the injected clock",
          "[hardening][monitor][readiness]") {
  FakeClock fake;
  int calls = 0;
  hardening::MonitorOptions opts;
  opts.clock = fake.clock();
  hardening::ReadinessProbe probe;
  probe.dependency = "provision";
  probe.ready = [&calls](std::string& detail) {
    detail = "warming up";
    return ++calls == 4;
  };
  opts.readiness.push_back(probe);
  ReferenceMonitor mon(kernel::load_spec(kDependencySpec), opts);
  // Not completed yet: the kernel says so, nothing is probed.
  REQUIRE(mon.execute("use").outcome.decision.has(ReasonCode::dependency_unmet));
  REQUIRE(calls == 0);
  REQUIRE(mon.execute("provision").outcome.receipt);
  REQUIRE(mon.execute("use").outcome.receipt);
  REQUIRE(fake.sleeps == std::vector<std::int64_t>{100, 200, 400});
  REQUIRE(mon.execute("use").outcome.receipt);  // ready once: not asked again
  REQUIRE(calls == 4);
}

TEST_CASE("ReferenceMonitor: a dependency never ready is rejected at the deadline",
          "[hardening][monitor][readiness]") {
  FakeClock fake;
  hardening::MonitorOptions opts;
  opts.kernel.record_rejections = true;
  opts.clock = fake.clock();
  hardening::ReadinessProbe probe;
  probe.dependency = "provision";
  probe.max_delay = std::chrono::milliseconds(300);
  probe.deadline = std::chrono::milliseconds(1000);
  probe.ready = [](std::string&) -> bool { throw std::runtime_error("connection refused"); };
  opts.readiness.push_back(probe);
  ReferenceMonitor mon(kernel::load_spec(kDependencySpec), opts);
  REQUIRE(mon.execute("provision").outcome.receipt);
  const auto r = mon.execute("use");
  REQUIRE(r.outcome.decision.has(ReasonCode::dependency_not_ready, "provision"));
  REQUIRE_THAT(r.outcome.decision.reasons.back().message,
               Contains("not ready after 1000 ms (6 checks): threw: connection refused"));
  REQUIRE(fake.sleeps == std::vector<std::int64_t>{100, 200, 300, 300, 100});
  REQUIRE(mon.kernel().trace().back().kind == kernel::EntryKind::rejected);
  hardening::ReadinessProbe bad = probe;
  bad.multiplier = 0.5;
  hardening::MonitorOptions wrong;
  wrong.readiness.push_back(bad);
  REQUIRE_THROWS_WITH(ReferenceMonitor(kernel::load_spec(kDependencySpec), wrong),
                      Contains("multiplier >= 1"));
}

TEST_CASE("Spec: labels, sinks, emits and attestors are checked with their paths",
          "[hardening][spec]") {
  auto error = [](const std::string& text) {
    try {
      (void)kernel::load_spec(text);
    } catch (const SpecError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  auto spec = [](const std::string& vars, const std::string& actions, const std::string& extra) {
    return R"J({"variables": {)J" + vars + R"J(}, "actions": [)J" + actions + "]" + extra +
           R"J(, "budget": {"total": 1, "min_action_cost": 1}})J";
  };
  const std::string x = R"J("x": {"type": "int", "initial": 0})J";
  REQUIRE_THAT(error(spec(R"J("x": {"type": "int", "initial": 0, "label": "TOP"})J", "", "")),
               Contains("variables.x.label: unknown label `TOP`"));
  REQUIRE_THAT(
      error(spec(R"J("x": {"type": "int", "initial": 0, "element_label": "PII"})J", "", "")),
      Contains("variables.x.element_label: applies to lists only"));
  REQUIRE_THAT(
      error(
          spec(x, R"J({"id": "a", "cost": 1, "emits": [{"sink": "nowhere", "value": "x"}]})J", "")),
      Contains("actions[0].emits[0].sink: unknown sink `nowhere`"));
  REQUIRE_THAT(error(spec(x,
                          R"J({"id": "a", "cost": 1, "emits": [{"sink": "s", "value": "y"}]})J",
                          R"J(, "sinks": {"s": {"label": "PUBLIC"}})J")),
               Contains("actions[0].emits[0].value:1:1: unknown variable `y`"));
  REQUIRE_THAT(error(spec(x, "", R"J(, "sinks": {"s": {}})J")),
               Contains("sinks.s: a sink needs a `label`"));
  REQUIRE_THAT(error(spec(x, R"J({"id": "a", "cost": 1, "attestations": ["ghost"]})J", "")),
               Contains("actions[0].attestations[0]: unknown attestor `ghost`"));
  REQUIRE_THAT(error(spec(x, "", R"J(, "attestors": {"a": {"all": ["b"]}, "b": {"all": ["a"]}})J")),
               Contains("attestors contain each other: a -> b -> a"));
  REQUIRE_THAT(error(spec(x, "", R"J(, "attestors": {"a": {"command": ["sh", "-c", "true"]}})J")),
               Contains("attestors.a.command[0]: `sh` is not an absolute path"));
  REQUIRE_THAT(
      error(spec(
          x, "", R"J(, "attestors": {"a": {"external": true, "http": {"url": "http://x"}}})J")),
      Contains("attestors.a: an attestor is exactly one of"));
  REQUIRE_THAT(error(spec(x, "", R"J(, "attestors": {"q": {"quorum": 3, "of": ["q"]}})J")),
               Contains("attestors.q.quorum: must be between 1 and the 1 attestors"));
  REQUIRE_THAT(error(spec(x, "", R"J(, "attestors": {"h": {"http": {"url": "ftp://x"}}})J")),
               Contains("attestors.h.http.url: expected an http:// or https:// URL"));
}
