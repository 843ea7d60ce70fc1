// Approvals on the one run loop (`clampai run`, `agent`; issue 40): an action whose spec asks
// for an approval is asked for (a ticket), answered by RunOptions::approve, and decided again
// when granted; denials, expiries (an injected clock: no test waits) and tickets left waiting
// are trace entries that rebuild the ticket book; on a shared ledger, the tickets are every
// process's, and each is answered once across them.
#include <unistd.h>
#include <catch2/catch.hpp>

#include <filesystem>
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

namespace {

// One process on a shared ledger: its kernel, committer and ticket book, on the test's clock.
struct Process {
  SharedKernel kernel;
  SharedCommitter committer{kernel};
  Approvals book;
  Process(const Fixture& f, std::shared_ptr<Ledger> ledger, std::function<void(SharedPhase)> hook)
      : kernel(f.model, std::move(ledger), shared_options(f, std::move(hook))),
        book(committer, [now = f.now] { return *now; }) {}
  static SharedOptions shared_options(const Fixture& f, std::function<void(SharedPhase)> hook) {
    SharedOptions o;
    o.clock = [now = f.now] { return *now; };
    o.hook = std::move(hook);
    return o;
  }
  Proposal deploy(const std::string& principal) {
    Proposal p = std::get<Proposal>(kernel.local().resolve("deploy", {}));
    p.principal = principal;
    return p;
  }
};

std::size_t count(Ledger& ledger, EntryKind kind) {
  std::size_t n = 0;
  for (const TraceEntry& e : parse_trace_lines(ledger.read(0), "ledger"))
    n += e.kind == kind ? 1 : 0;
  return n;
}

// Two handles on one log: a memory ledger's, or a file ledger's (two opens of one file,
// removed with the handles).
struct TwoHandles {
  std::string path;
  std::shared_ptr<Ledger> a, b;
  explicit TwoHandles(bool file) {
    if (!file) {
      auto log = std::make_shared<MemoryLedger>();
      a = log;
      b = log->share();
      return;
    }
    path = (std::filesystem::temp_directory_path() /
            ("clampai-shared-approvals-" + std::to_string(::getpid()) + ".jsonl"))
               .string();
    std::filesystem::remove(path);
    a = std::make_shared<FileLedger>(path);
    b = std::make_shared<FileLedger>(path);
  }
  ~TwoHandles() {
    if (!path.empty()) std::filesystem::remove(path);
  }
  TwoHandles(const TwoHandles&) = delete;
  TwoHandles& operator=(const TwoHandles&) = delete;
};

}  // namespace

TEST_CASE("Shared approvals: a ticket asked by one process is listed and approved by another",
          "[driver][approvals][ledger]") {
  const bool file = GENERATE(false, true);
  INFO((file ? "file ledger" : "memory ledger"));
  Fixture f;
  TwoHandles ledgers(file);
  const std::shared_ptr<Ledger> la = ledgers.a;
  Process a(f, ledgers.a, {}), b(f, ledgers.b, {});
  REQUIRE(a.kernel.execute("build").receipt);
  const Approvals::Asked asked = a.book.ask(a.deploy("alice"));
  REQUIRE(asked.ticket);
  const std::vector<Ticket> listed = b.book.pending();
  REQUIRE(listed.size() == 1);
  CHECK(listed[0].id == asked.ticket->id);
  CHECK(listed[0].principal == "alice");
  CHECK(listed[0].sequence == asked.ticket->sequence);
  CHECK(listed[0].expires_us == kStart + 60'000'000);
  const Approvals::Answered won = b.book.answer(asked.ticket->id, true, "bob");
  CHECK(won.granted);
  REQUIRE(won.step.committed());  // decided afresh on the latest head, committed by b
  CHECK(a.kernel.refresh() > 0);
  CHECK(a.kernel.local().state().get("deployed") == Value::boolean(true));
  // Answered once, across processes: a's book finds it answered, by whom.
  CHECK(a.book.pending().empty());
  REQUIRE_THROWS_MATCHES(a.book.answer(asked.ticket->id, true, "carol"),
                         TicketRefused,
                         Catch::Matchers::Predicate<TicketRefused>([](const TicketRefused& e) {
                           return e.why == TicketRefused::Why::unknown &&
                                  std::string(e.what()).find("approved by `bob`") !=
                                      std::string::npos;
                         }));
  const std::vector<std::string> lines = la->read(0);
  CHECK(verify_trace_lines(lines, "the ledger", true).ok);
  const std::vector<TraceEntry> trace = parse_trace_lines(lines, "the ledger");
  REQUIRE(trace.size() == 5);
  CHECK(trace[2].kind == EntryKind::approval_requested);
  CHECK(trace[3].kind == EntryKind::approval_granted);
  CHECK(trace[3].principal == "bob");
  CHECK(trace[4].kind == EntryKind::executed);
  CHECK(trace[4].principal == "alice");  // the commit names who asked
}

TEST_CASE("Shared approvals: two approvers race on two processes; exactly one wins",
          "[driver][approvals][ledger]") {
  Fixture f;
  auto log = std::make_shared<MemoryLedger>();
  // Process a answers the ticket while b's answer is on its way to the ledger: b's
  // compare-and-set is lost, and b, caught up, finds the ticket answered.
  std::unique_ptr<Process> a;
  std::string ticket;
  bool armed = false;
  std::optional<Approvals::Answered> first;
  const bool a_approves = GENERATE(true, false);
  Process b(f, log->share(), [&](SharedPhase phase) {
    if (phase != SharedPhase::committing || !armed) return;
    armed = false;
    first = a->book.answer(ticket, a_approves, "carol");
  });
  a = std::make_unique<Process>(f, log, std::function<void(SharedPhase)>{});
  REQUIRE(a->kernel.execute("build").receipt);
  ticket = a->book.ask(a->deploy("alice")).ticket.value().id;
  REQUIRE(b.book.pending().size() == 1);  // b knows the ticket, open
  armed = true;
  try {
    (void)b.book.answer(ticket, true, "bob");
    FAIL("both answers won");
  } catch (const TicketRefused& e) {
    CHECK(e.why == TicketRefused::Why::unknown);
    CHECK_THAT(e.what(), Catch::Contains(a_approves ? "approved by `carol`" : "denied by `carol`"));
  }
  REQUIRE(first);
  CHECK(first->granted == a_approves);
  CHECK(b.kernel.stats().conflicts >= 1);
  CHECK(count(*log, EntryKind::approval_granted) + count(*log, EntryKind::approval_denied) == 1);
  CHECK(count(*log, EntryKind::executed) == (a_approves ? 2U : 1U));
  CHECK(verify_trace_lines(log->read(0), "memory", true).ok);
}

TEST_CASE("Shared approvals: a ticket's expiry is recorded once across processes",
          "[driver][approvals][ledger]") {
  Fixture f;
  auto log = std::make_shared<MemoryLedger>();
  std::unique_ptr<Process> a;
  bool armed = false;
  std::size_t a_expired = 0, b_expired = 0;
  // a records the expiry while b's is on its way: b's is the one lost.
  Process b(f, log->share(), [&](SharedPhase phase) {
    if (phase != SharedPhase::committing || !armed) return;
    armed = false;
    CHECK(a->book.pending().empty());
  });
  b.book.on_expiry = [&](const Ticket&) { ++b_expired; };
  a = std::make_unique<Process>(f, log, std::function<void(SharedPhase)>{});
  a->book.on_expiry = [&](const Ticket&) { ++a_expired; };
  REQUIRE(a->kernel.execute("build").receipt);
  const std::string ticket = a->book.ask(a->deploy("alice")).ticket.value().id;
  REQUIRE(b.book.pending().size() == 1);
  *f.now += 61'000'000;  // past its ttl_s of 60
  armed = true;
  CHECK(b.book.pending().empty());
  CHECK(a_expired == 1);
  CHECK(b_expired == 0);
  CHECK(count(*log, EntryKind::approval_expired) == 1);
  REQUIRE_THROWS_MATCHES(b.book.answer(ticket, true, "bob"),
                         TicketRefused,
                         Catch::Matchers::Predicate<TicketRefused>([](const TicketRefused& e) {
                           return e.why == TicketRefused::Why::expired;
                         }));
  CHECK(count(*log, EntryKind::approval_expired) == 1);
}

TEST_CASE("Shared approvals: a change by another process makes the approval a rejection",
          "[driver][approvals][ledger]") {
  Fixture f;
  auto log = std::make_shared<MemoryLedger>();
  Process a(f, log, {}), b(f, log->share(), {});
  REQUIRE(a.kernel.execute("build").receipt);
  const std::string ticket = a.book.ask(a.deploy("alice")).ticket.value().id;
  REQUIRE(b.kernel.execute("freeze").receipt);  // a does not know yet
  const Approvals::Answered r = a.book.answer(ticket, true, "bob");
  CHECK(r.granted);
  REQUIRE_FALSE(r.step.committed());
  REQUIRE_FALSE(r.step.outcome.decision.reasons.empty());
  CHECK(r.step.outcome.decision.reasons[0].code == ReasonCode::requires_failed);
  CHECK(a.kernel.local().state().get("deployed") == Value::boolean(false));
}

TEST_CASE("Shared approvals: a new process on the ledger rebuilds the pending tickets",
          "[driver][approvals][ledger]") {
  Fixture f;
  auto log = std::make_shared<MemoryLedger>();
  std::string ticket;
  {
    Process a(f, log, {});
    REQUIRE(a.kernel.execute("build").receipt);
    ticket = a.book.ask(a.deploy("alice")).ticket.value().id;
  }
  Process restarted(f, log->share(), {});
  const std::vector<Ticket> pending = restarted.book.pending();
  REQUIRE(pending.size() == 1);
  CHECK(pending[0].id == ticket);
  CHECK(pending[0].principal == "alice");
  CHECK(restarted.book.answer(ticket, true, "bob").step.committed());
}

TEST_CASE("Shared approvals: the run loop asks and commits on a shared ledger",
          "[driver][approvals][ledger]") {
  Fixture f;
  auto log = std::make_shared<MemoryLedger>();
  Process p(f, log, {});
  FirstApprovableDriver d;
  const RunResult r = run(p.committer, d, f.options([](const Ticket&, const Decision&) {
    return answer(ApprovalAnswer::Kind::grant);
  }));
  REQUIRE(r.goal_reached);
  CHECK(r.approvals_granted == 1);
  CHECK(r.actions == std::vector<std::string>{"build", "deploy"});
  CHECK(count(*log, EntryKind::approval_requested) == 1);
  CHECK(count(*log, EntryKind::approval_granted) == 1);
  CHECK(verify_trace_lines(log->read(0), "memory", true).ok);
}
