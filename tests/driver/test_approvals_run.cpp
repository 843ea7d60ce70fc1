// Approvals on the one run loop (`clampai run`, `agent`; issue 40): an action whose spec asks
// for an approval is asked for (a ticket), answered by RunOptions::approve, and decided again
// when granted; denials, expiries (an injected clock: no test waits) and tickets left waiting
// are trace entries that rebuild the ticket book; a shared ledger refuses clearly.
#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <vector>

#include "clampai/driver.hpp"
#include "clampai/kernel.hpp"

using namespace clampai::kernel;
using namespace clampai::driver;

namespace {

// `build` once, then `deploy` (approval within 60 s) reaches the goal unless `freeze` (what
// another thread does meanwhile, in one test) came first.
const char* kSpec = R"J({"name": "deploy",
  "variables": {"built": {"type": "bool", "initial": false},
                "deployed": {"type": "bool", "initial": false},
                "frozen": {"type": "bool", "initial": false}},
  "actions": [
    {"id": "build", "cost": 1, "requires": "!built",
     "effects": [{"variable": "built", "mode": "set", "value": true}]},
    {"id": "deploy", "cost": 2, "requires": "built && !frozen", "approval": {"ttl_s": 60},
     "effects": [{"variable": "deployed", "mode": "set", "value": true}]},
    {"id": "freeze", "cost": 1, "requires": "!frozen",
     "effects": [{"variable": "frozen", "mode": "set", "value": true}]}],
  "goal": "deployed",
  "budget": {"total": 10, "min_action_cost": 1}})J";

constexpr std::int64_t kStart = 1'800'000'000'000'000;

struct Fixture {
  std::shared_ptr<std::int64_t> now = std::make_shared<std::int64_t>(kStart);
  std::shared_ptr<const TaskModel> model = load_spec(kSpec);
  std::unique_ptr<SafetyKernel> kernel;
  Fixture() {
    KernelOptions o;
    o.clock = [now = now] { return *now; };
    kernel = std::make_unique<SafetyKernel>(model, std::move(o));
  }
  RunOptions options(std::function<ApprovalAnswer(const Ticket&, const Decision&)> approve) {
    RunOptions o;
    o.approve = std::move(approve);
    o.principal = "run";
    o.clock = [now = now] { return *now; };
    return o;
  }
  std::vector<EntryKind> kinds() const {
    std::vector<EntryKind> out;
    for (const TraceEntry& e : kernel->trace()) out.push_back(e.kind);
    return out;
  }
};

ApprovalAnswer answer(ApprovalAnswer::Kind k) { return {k, "alice"}; }

}  // namespace

TEST_CASE("Run approvals: a grant is recorded, then the action is committed",
          "[driver][approvals]") {
  Fixture f;
  std::vector<Ticket> asked;
  FirstApprovableDriver d;
  const RunResult r = run(*f.kernel, d, f.options([&](const Ticket& t, const Decision& now) {
    REQUIRE(now.approved);  // decided on the state of the request
    asked.push_back(t);
    return answer(ApprovalAnswer::Kind::grant);
  }));
  REQUIRE(r.goal_reached);
  REQUIRE(r.actions == std::vector<std::string>{"build", "deploy"});
  REQUIRE(r.approvals_granted == 1);
  REQUIRE(asked.size() == 1);
  REQUIRE(asked[0].action == "deploy");
  REQUIRE(asked[0].principal == "run");
  REQUIRE(asked[0].expires_us == kStart + 60'000'000);
  const std::vector<TraceEntry> trace = f.kernel->trace();
  REQUIRE(f.kinds() == std::vector<EntryKind>{EntryKind::genesis,
                                              EntryKind::executed,
                                              EntryKind::approval_requested,
                                              EntryKind::approval_granted,
                                              EntryKind::executed});
  REQUIRE(trace[2].ticket == asked[0].id);
  REQUIRE(trace[3].ticket == asked[0].id);
  REQUIRE(trace[3].principal == "alice");
  REQUIRE(trace[4].action == "deploy");
  REQUIRE(trace[4].principal == "run");  // the commit names who asked
  REQUIRE(f.kernel->verify_trace().ok);
}

TEST_CASE("Run approvals: the kernel decides again when the grant comes", "[driver][approvals]") {
  // Between the request and the grant the world moves (another thread freezes deploys): the
  // grant is recorded, the action decided afresh on the state of then and refused.
  Fixture f;
  FirstApprovableDriver d;
  const RunResult r = run(*f.kernel, d, f.options([&](const Ticket&, const Decision& now) {
    REQUIRE(now.approved);
    REQUIRE(f.kernel->execute(Proposal{2, {}}).decision.approved);  // `freeze`, meanwhile
    return answer(ApprovalAnswer::Kind::grant);
  }));
  REQUIRE_FALSE(r.goal_reached);
  REQUIRE(r.approvals_granted == 1);
  REQUIRE(r.rejections_by_reason.at("requires_failed") >= 1);
  REQUIRE(f.kinds() == std::vector<EntryKind>{EntryKind::genesis,
                                              EntryKind::executed,
                                              EntryKind::approval_requested,
                                              EntryKind::executed,  // freeze
                                              EntryKind::approval_granted});
  REQUIRE(f.kernel->state().get("deployed") == Value::boolean(false));
  REQUIRE(f.kernel->budget().net() == f.model->budget.min_action_cost * 2);  // build, freeze
}

TEST_CASE("Run approvals: a denial commits nothing and the run moves on", "[driver][approvals]") {
  Fixture f;
  FirstApprovableDriver d;
  int asked = 0;
  const RunResult r = run(*f.kernel, d, f.options([&](const Ticket&, const Decision&) {
    ++asked;
    return answer(ApprovalAnswer::Kind::deny);
  }));
  REQUIRE(asked == 1);  // not asked again in the same state
  REQUIRE(r.approvals_denied == 1);
  REQUIRE(r.rejections_by_reason.at("approval_denied") == 1);
  REQUIRE(r.actions == std::vector<std::string>{"build", "freeze"});
  const std::vector<TraceEntry> trace = f.kernel->trace();
  REQUIRE(trace[3].kind == EntryKind::approval_denied);
  REQUIRE(trace[3].principal == "alice");
  REQUIRE(trace[3].reasons.at(0).code == ReasonCode::approval_denied);
  REQUIRE(f.kernel->state().get("deployed") == Value::boolean(false));
}

TEST_CASE("Run approvals: an answer after the ttl expires the ticket", "[driver][approvals]") {
  Fixture f;
  FirstApprovableDriver d;
  const RunResult r = run(*f.kernel, d, f.options([&](const Ticket& t, const Decision&) {
    *f.now = t.expires_us;  // the person answers when the time is up: no test waits
    return answer(ApprovalAnswer::Kind::grant);
  }));
  REQUIRE(r.approvals_expired == 1);
  REQUIRE(r.approvals_granted == 0);
  REQUIRE(r.rejections_by_reason.at("approval_expired") == 1);
  const std::vector<TraceEntry> trace = f.kernel->trace();
  REQUIRE(trace[3].kind == EntryKind::approval_expired);
  REQUIRE(trace[3].ticket == trace[2].ticket);
  for (const TraceEntry& e : trace) REQUIRE(e.kind != EntryKind::approval_granted);
  REQUIRE(f.kernel->state().get("deployed") == Value::boolean(false));
}

TEST_CASE("Run approvals: a ticket left waiting stays pending in the trace",
          "[driver][approvals]") {
  Fixture f;
  FirstApprovableDriver d;
  RunOptions o = f.options({});  // no approver: every such action waits
  const RunResult r = run(*f.kernel, d, o);
  REQUIRE_FALSE(r.goal_reached);
  REQUIRE(r.waiting.size() == 1);
  REQUIRE(r.waiting[0].action == "deploy");
  REQUIRE(r.actions == std::vector<std::string>{"build", "freeze"});
  // The trace alone rebuilds the ticket book: the ticket is pending, and can be answered.
  TicketLog log;
  for (const TraceEntry& e : f.kernel->trace()) log.note(*f.model, e);
  REQUIRE(log.pending.size() == 1);
  REQUIRE(log.pending.begin()->first == r.waiting[0].id);
  Approvals book(
      *f.kernel, [now = f.now] { return *now; }, log);
  REQUIRE(book.pending().size() == 1);
  const Approvals::Answered a = book.answer(r.waiting[0].id, true, "bob");
  REQUIRE(a.granted);
  REQUIRE_FALSE(a.step.committed());  // frozen meanwhile: decided afresh, refused
  REQUIRE_THROWS_AS(book.answer(r.waiting[0].id, true, "bob"), TicketRefused);
}

TEST_CASE("Run approvals: the same proposal waiting is not asked for again",
          "[driver][approvals]") {
  // A chooser that proposes `deploy` again and again: one ticket, then refusals that stop it.
  struct Stubborn final : Driver {
    Choice next(const SafetyKernel& k) override {
      Choice c;
      c.proposal =
          default_proposal(k.model(), k.state().get("built") == Value::boolean(true) ? 1 : 0);
      return c;
    }
  } stubborn;
  Fixture f;
  const RunResult r = run(*f.kernel, stubborn, f.options({}));
  REQUIRE(r.waiting.size() == 1);
  REQUIRE(r.termination == Termination::no_approvable_action);
  std::size_t requests = 0;
  for (const TraceEntry& e : f.kernel->trace())
    if (e.kind == EntryKind::approval_requested) ++requests;
  REQUIRE(requests == 1);
}

TEST_CASE("Run approvals: a shared ledger refuses them clearly", "[driver][approvals]") {
  Fixture f;
  SharedKernel shared(f.model, std::make_shared<MemoryLedger>());
  SharedCommitter committer(shared);
  FirstApprovableDriver d;
  RunOptions o =
      f.options([](const Ticket&, const Decision&) { return answer(ApprovalAnswer::Kind::grant); });
  REQUIRE_THROWS_WITH(run(committer, d, o),
                      Catch::Contains("`deploy` asks for an approval, and a shared ledger keeps no "
                                      "approval tickets"));
  REQUIRE(shared.local().state().get("deployed") == Value::boolean(false));
}
