// The reference monitor's attestations in the trace (`attested` entries: chained, replayed,
// resumed, followed by a shared ledger, bounded), the goal's attestation gate, the monitor's
// gates when a driver commits through its kernel, and the spec's `probes` and `readiness`.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>

#include "clampai/driver.hpp"
#include "clampai/hardening.hpp"
#include "clampai/kernel.hpp"
#include "clampai/kernel/digest.hpp"
#include "clampai/kernel/ledger.hpp"

namespace fs = std::filesystem;
using namespace clampai;
using Catch::Matchers::Contains;
using hardening::ReferenceMonitor;
using kernel::EntryKind;
using kernel::ReasonCode;

namespace {

const char* kGatedSpec = R"J({
  "variables": {"deployed": {"type": "bool", "initial": false},
                "count": {"type": "int", "initial": 0}},
  "attestors": {"review": {"external": true}, "signoff": {"external": true}},
  "actions": [
    {"id": "bump", "cost": 1, "effects": [{"variable": "count", "mode": "increment", "value": 1}]},
    {"id": "deploy", "cost": 1, "attestations": ["review"],
     "effects": [{"variable": "deployed", "mode": "set", "value": true}]}],
  "goal": {"check": "deployed", "attestations": ["signoff"]},
  "budget": {"total": 10, "min_action_cost": 1}})J";

struct Switch {
  std::shared_ptr<bool> pass = std::make_shared<bool>(true);
  std::shared_ptr<std::string> evidence = std::make_shared<std::string>("ok");
  std::shared_ptr<const hardening::Attestor> attestor(const std::string& name) const {
    return std::make_shared<hardening::PredicateAttestor>(
        name,
        [pass = pass, evidence = evidence](const hardening::AttestationContext&, std::string& ev) {
          ev = *evidence;
          return *pass;
        });
  }
};

std::string param(const kernel::TraceEntry& e, const std::string& name) {
  for (const auto& [k, v] : e.params)
    if (k == name) return v.kind() == kernel::Value::Kind::string ? v.as_string() : v.to_string();
  return "(none)";
}

std::vector<std::string> kinds(const std::vector<kernel::TraceEntry>& trace) {
  std::vector<std::string> out;
  for (const auto& e : trace) out.emplace_back(kernel::to_string(e.kind));
  return out;
}

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

}  // namespace

TEST_CASE("Monitor trace: every attestation is an `attested` entry before the decision's",
          "[hardening][monitor][trace]") {
  Switch review;
  Switch signoff;
  hardening::MonitorOptions opts;
  opts.kernel.record_rejections = true;
  opts.attestors["review"] = review.attestor("review");
  opts.attestors["signoff"] = signoff.attestor("signoff");
  const auto model = kernel::load_spec(kGatedSpec);
  ReferenceMonitor mon(model, opts);

  // A failed attestation: its entry, then the rejection; nothing else changes (T5).
  *review.pass = false;
  *review.evidence = std::string(1 << 20, 'x') + "\x01";  // 1 MB: the entry stays small
  const auto before = mon.kernel().situation();
  const auto no = mon.execute("deploy");
  REQUIRE_FALSE(no.outcome.decision.approved);
  REQUIRE(no.outcome.decision.has(ReasonCode::attestation_failed, "review"));
  auto trace = mon.kernel().trace();
  REQUIRE(kinds(trace) == std::vector<std::string>{"genesis", "attested", "rejected"});
  const kernel::TraceEntry& failed = trace[1];
  REQUIRE(failed.action == "deploy");
  REQUIRE(param(failed, "attestor") == "review");
  REQUIRE(param(failed, "gate") == "action");
  REQUIRE(param(failed, "passed") == "false");
  REQUIRE(param(failed, "evidence_sha256") == kernel::sha256_hex(*review.evidence));
  REQUIRE(param(failed, "detail").size() == kernel::kAttestationExcerptBytes);
  REQUIRE(param(failed, "detail").substr(kernel::kAttestationExcerptBytes - 3) == "...");
  REQUIRE(failed.to_json_line().size() < 1000);
  REQUIRE(failed.step == before.steps);
  REQUIRE(mon.kernel().state() == before.state);
  REQUIRE(mon.kernel().budget().net() == before.budget.net());

  // A passing one: its entry, then the execution. Untraced rejections (no
  // record_rejections) still leave their attestations in the trace.
  *review.pass = true;
  *review.evidence = "LGTM\n";
  REQUIRE(mon.execute("deploy").outcome.receipt);
  trace = mon.kernel().trace();
  REQUIRE(kinds(trace) ==
          std::vector<std::string>{"genesis", "attested", "rejected", "attested", "executed"});
  REQUIRE(param(trace[3], "passed") == "true");
  REQUIRE(param(trace[3], "detail") == "LGTM?");

  // The goal's attestation: traced with an empty action and gate `goal`, with a reason.
  *signoff.pass = false;
  *signoff.evidence = "nobody signed";
  const auto goal = mon.check_goal();
  REQUIRE(goal.reached);
  REQUIRE_FALSE(goal.success());
  REQUIRE(goal.reason);
  REQUIRE(goal.reason->code == ReasonCode::attestation_failed);
  REQUIRE(goal.reason->subject == "signoff");
  REQUIRE_THAT(goal.reason->message,
               Contains("the goal holds but its attestation `signoff` failed: nobody signed"));
  *signoff.pass = true;
  REQUIRE(mon.check_goal().success());
  trace = mon.kernel().trace();
  REQUIRE(trace.size() == 7);
  REQUIRE(trace[5].action.empty());
  REQUIRE(param(trace[5], "gate") == "goal");
  REQUIRE(param(trace[6], "passed") == "true");

  // The chain holds (T6); a replay accepts the entries and changes nothing because of them.
  REQUIRE(mon.kernel().verify_trace().ok);
  kernel::State replayed = model->initial_state();
  REQUIRE_FALSE(kernel::replay_trace(model, trace, &replayed));
  REQUIRE(replayed == mon.kernel().state());
  // A changed verdict breaks the chain; an entry of another shape fails the replay.
  auto forged = trace;
  forged[1].params.back().second = kernel::Value::boolean(true);
  REQUIRE_FALSE(kernel::verify_chain(forged, true).ok);
  forged[1].hash = forged[1].compute_hash();
  REQUIRE_FALSE(kernel::verify_chain(forged, true).ok);  // the next entry's prev
  auto odd = trace;
  odd[6].params.pop_back();
  const auto mismatch = kernel::replay_trace(model, odd);
  REQUIRE(mismatch);
  REQUIRE(mismatch->first == 6);
  REQUIRE_THAT(mismatch->second, Contains("exactly 5 params"));
  // Counters moved by an attestation are a replay mismatch.
  auto moved = trace;
  moved[3].step += 1;
  REQUIRE(kernel::replay_trace(model, moved));

  // The kernel refuses to record what is not an attestation.
  kernel::TraceEntry wrong = trace[4];
  REQUIRE_THROWS_WITH(mon.kernel().record_attested(wrong), Contains("is not an attestation"));
  wrong = trace[3];
  wrong.action = "ghost";
  REQUIRE_THROWS_WITH(mon.kernel().record_attested(wrong), Contains("unknown action `ghost`"));
}

TEST_CASE("Monitor trace: a trace with attestations resumes, and a shared ledger follows it",
          "[hardening][monitor][trace][ledger]") {
  const fs::path dir =
      fs::temp_directory_path() / ("clampai_monitor_trace_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string file = (dir / "trace.jsonl").string();
  Switch review;
  const auto model = kernel::load_spec(kGatedSpec);
  {
    hardening::MonitorOptions opts;
    opts.attestors["review"] = review.attestor("review");
    opts.attestors["signoff"] = review.attestor("signoff");
    opts.kernel.writer = std::make_shared<kernel::TraceWriter>(file, kernel::FlushPolicy::flush);
    ReferenceMonitor mon(model, opts);
    REQUIRE(mon.execute("bump").outcome.receipt);
    REQUIRE(mon.execute("deploy").outcome.receipt);
    REQUIRE(mon.check_goal().success());
  }
  REQUIRE(kernel::verify_trace_file(file, /*allow_unsealed=*/true).ok);
  std::vector<kernel::TraceEntry> entries = kernel::read_trace_file(file);
  REQUIRE(kinds(entries) ==
          std::vector<std::string>{"genesis", "executed", "attested", "executed", "attested"});
  REQUIRE_FALSE(kernel::replay_trace(model, entries));

  // Resumed byte for byte (the guard and gate are not consulted on the recorded entries).
  kernel::KernelOptions resume;
  resume.resume = entries;
  kernel::SafetyKernel k(model, resume);
  REQUIRE(k.trace_length() == entries.size());
  REQUIRE(k.state().get(*model->schema->find("deployed")) == kernel::Value::boolean(true));
  REQUIRE(k.execute("bump").receipt);
  REQUIRE(k.verify_trace().ok);

  // A file ledger holding the trace: a shared kernel replays the attestations and goes on.
  auto ledger = std::make_shared<kernel::FileLedger>(file);
  kernel::SharedKernel shared(model, ledger);
  REQUIRE(shared.length() == entries.size());
  REQUIRE(shared.execute("bump").receipt);
  REQUIRE(kernel::verify_trace_file(file, true).ok);
  REQUIRE_FALSE(kernel::replay_trace(model, kernel::read_trace_file(file)));
  fs::remove_all(dir);
}

namespace {

const char* kDriftSpec = R"J({
  "variables": {"up": {"type": "bool", "initial": false},
                "replicas": {"type": "int", "initial": 0},
                "load": {"type": "decimal", "scale": 2, "initial": 1.25}},
  "actions": [
    {"id": "provision", "cost": 1, "requires": "up == false",
     "effects": [{"variable": "up", "mode": "set", "value": true}]},
    {"id": "scale", "cost": 1, "effects": [
      {"variable": "replicas", "mode": "increment", "value": 1},
      {"variable": "load", "mode": "set", "value": 1.5}]}],
  "dependencies": {"scale": ["provision"]},
  "goal": "replicas >= 2",
  "budget": {"total": 10, "min_action_cost": 1}})J";

}  // namespace

TEST_CASE("Monitor: a driver committing through the monitor's kernel meets every gate",
          "[hardening][monitor][driver]") {
  const auto model = kernel::load_spec(kDriftSpec);
  FakeClock fake;
  int checks = 0;
  std::int64_t world_replicas = 0;
  hardening::MonitorOptions opts;
  opts.clock = fake.clock();
  hardening::ReadinessProbe ready;
  ready.dependency = "provision";
  ready.ready = [&checks](std::string&) { return ++checks == 3; };
  opts.readiness.push_back(ready);
  opts.probes.push_back(hardening::callback_probe(
      "replicas", [&world_replicas](const hardening::AttestationContext&) {
        return kernel::Value::number(kernel::Decimal{world_replicas, 0});
      }));
  opts.probes.push_back(hardening::callback_probe(
      "load",
      [](const hardening::AttestationContext&) {
        return kernel::Value::number(kernel::Decimal{125, 2});
      },
      kernel::Decimal{5, 1}));
  ReferenceMonitor mon(model, opts);
  driver::FirstApprovableDriver d;
  // The world's replicas stay 0: the probe agrees before the first `scale`, not after it.
  driver::RunOptions once;
  once.max_steps = 2;
  auto r = driver::run(mon.kernel(), d, once);
  REQUIRE(r.actions == std::vector<std::string>{"provision", "scale"});
  // Readiness waited on the injected clock before the first scale (exactly).
  REQUIRE(fake.sleeps == std::vector<std::int64_t>{100, 200});
  REQUIRE(checks == 3);
  REQUIRE_FALSE(mon.halted());  // checked before `scale`: replicas 0 = 0, load within 0.5
  // The world did not follow: before the next commit, the drift halts the run.
  r = driver::run(mon.kernel(), d);
  REQUIRE(r.executed == 0);
  REQUIRE(mon.halted());
  REQUIRE(mon.drift().size() == 1);
  REQUIRE(mon.drift()[0].variable == "replicas");  // load 1.5 vs 1.25: within its tolerance
  REQUIRE(r.rejections_by_reason.count("environment_drift") == 1);
  const kernel::Reason why = mon.drift_reason();
  REQUIRE(why.code == ReasonCode::environment_drift);
  REQUIRE(why.subject == "replicas");
  REQUIRE_THAT(why.message, Contains("replicas: model 1, world 0"));
  world_replicas = 1;  // a halt is final
  REQUIRE(mon.kernel().evaluate("scale").has(ReasonCode::environment_drift));
}

TEST_CASE("Spec: probes and readiness are read and checked with their paths",
          "[hardening][spec][probes]") {
  auto error = [](const std::string& extra) {
    try {
      (void)kernel::load_spec(std::string(kDriftSpec).insert(1, extra));
    } catch (const SpecError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const auto m = kernel::load_spec(std::string(kDriftSpec).insert(1, R"J(
    "probes": {"replicas": {"command": ["/usr/bin/cat", "/run/replicas"], "timeout_ms": 50},
               "load": {"http": {"url": "http://127.0.0.1:9/load"}, "tolerance": "0.25"}},
    "readiness": {"provision": {"command": ["/usr/bin/test", "-e", "/run/up"],
                                "initial_delay_ms": 10, "multiplier": 1.5,
                                "max_delay_ms": 40, "deadline_ms": 100}},)J"));
  REQUIRE(m->probes.size() == 2);
  auto probe = [&](const std::string& v) {
    for (const auto& p : m->probes)
      if (p.variable == v) return p;
    FAIL("no probe of " << v);
    return kernel::ProbeDecl{};
  };
  REQUIRE(probe("load").check.kind == kernel::AttestorKind::http);
  REQUIRE(probe("load").tolerance == kernel::Decimal{25, 2});
  REQUIRE(probe("replicas").check.argv ==
          std::vector<std::string>{"/usr/bin/cat", "/run/replicas"});
  REQUIRE(probe("replicas").check.timeout_ms == 50);
  REQUIRE(m->readiness.size() == 1);
  REQUIRE(m->readiness[0].multiplier == kernel::Decimal{15, 1});
  REQUIRE(m->readiness[0].deadline_ms == 100);
  // They are part of the digest.
  REQUIRE(m->digest != kernel::load_spec(kDriftSpec)->digest);

  REQUIRE_THAT(error(R"J("probes": {"ghost": {"command": ["/usr/bin/true"]}},)J"),
               Contains("probes.ghost: unknown variable `ghost`"));
  REQUIRE_THAT(error(R"J("probes": {"up": {"command": ["/usr/bin/true"], "tolerance": 1}},)J"),
               Contains("probes.up.tolerance: a tolerance applies to numbers, not `up`"));
  REQUIRE_THAT(error(R"J("probes": {"replicas": {"tolerance": 1}},)J"),
               Contains("probes.replicas: a probe needs a `command` or an `http` check (C++ "
                        "callbacks are API-only"));
  REQUIRE_THAT(error(R"J("probes": {"replicas": {"command": ["cat"]}},)J"),
               Contains("probes.replicas.command[0]: `cat` is not an absolute path"));
  REQUIRE_THAT(
      error(R"J("probes": {"replicas": {"command": ["/usr/bin/true"], "tolerance": -1}},)J"),
      Contains("probes.replicas.tolerance: must not be negative"));
  REQUIRE_THAT(error(R"J("probes": {"replicas": {"command": ["/usr/bin/true"], "every": 1}},)J"),
               Contains("probes.replicas.every: unknown key `every`"));
  REQUIRE_THAT(error(R"J("readiness": {"scale": {"command": ["/usr/bin/true"]}},)J"),
               Contains("readiness.scale: no action depends on `scale`"));
  REQUIRE_THAT(error(R"J("readiness": {"ghost": {"command": ["/usr/bin/true"]}},)J"),
               Contains("readiness.ghost: unknown action `ghost`"));
  REQUIRE_THAT(
      error(R"J("readiness": {"provision": {"command": ["/usr/bin/true"], "multiplier": 0.5}},)J"),
      Contains("readiness.provision.multiplier: must be at least 1, got 0.5"));
  REQUIRE_THAT(error(R"J("readiness": {"provision": {"command": ["/usr/bin/true"],
                                        "initial_delay_ms": 50, "max_delay_ms": 10}},)J"),
               Contains("readiness.provision.max_delay_ms: must be at least `initial_delay_ms`"));
  REQUIRE_THAT(error(R"J("readiness": {"provision": {"http": {"url": "http://x"},
                                        "command": ["/usr/bin/true"]}},)J"),
               Contains("readiness.provision: a readiness probe is either a `command` or an "
                        "`http` check"));
}

TEST_CASE("Monitor: the spec's probes and readiness run through the allowlist",
          "[hardening][monitor][probes]") {
  const std::string cat = fs::canonical("/usr/bin/cat").string();
  const std::string test = fs::canonical("/usr/bin/test").string();
  const fs::path dir =
      fs::temp_directory_path() / ("clampai_monitor_probes_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string world = (dir / "replicas").string();
  const std::string up = (dir / "up").string();
  { std::ofstream(world) << "0\n"; }
  const std::string spec = std::string(kDriftSpec)
                               .insert(1,
                                       R"J(
    "probes": {"replicas": {"command": [")J" +
                                           cat + R"J(", ")J" + world + R"J("]}},
    "readiness": {"provision": {"command": [")J" +
                                           test + R"J(", "-e", ")J" + up + R"J("],
                                "initial_delay_ms": 10, "deadline_ms": 30}},)J");
  const auto model = kernel::load_spec(spec);
  {
    hardening::MonitorOptions opts;
    opts.allowed_programs = {cat};
    REQUIRE_THROWS_WITH(
        ReferenceMonitor(model, opts),
        Contains("readiness probe `readiness.provision`: `" + test + "` is not in the allowlist"));
  }
  FakeClock fake;
  hardening::MonitorOptions opts;
  opts.allowed_programs = {cat, test};
  opts.kernel.record_rejections = true;
  opts.clock = fake.clock();
  ReferenceMonitor mon(model, opts);
  REQUIRE(mon.execute("provision").outcome.receipt);
  // Not ready: the file is missing; polled at 0, 10, 20, 30 on the injected clock.
  const auto no = mon.execute("scale");
  REQUIRE(no.outcome.decision.has(ReasonCode::dependency_not_ready, "provision"));
  REQUIRE(fake.sleeps == std::vector<std::int64_t>{10, 20});
  { std::ofstream(up) << ""; }
  const auto yes = mon.execute("scale");
  REQUIRE(yes.outcome.receipt);
  // The world still says 0 replicas: drift, found after the commit.
  REQUIRE(yes.drift.size() == 1);
  REQUIRE(yes.drift[0].variable == "replicas");
  REQUIRE(mon.halted());
  fs::remove_all(dir);
}
