// The shared-ledger protocol over in-process ledgers (issue 21): the entries a SharedKernel
// commits are byte for byte those of a SafetyKernel; several kernels on one ledger keep T1, T2,
// T4, T6 and T7 for the group; conflicts are retried with fresh decisions.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <random>
#include <thread>

#include "../kernel/support.hpp"
#include "clampai/kernel/ledger.hpp"
#include "clampai/kernel/spec_loader.hpp"

using namespace clampai::kernel;

namespace {

const char* kSpec = R"J({"name": "shared",
  "variables": {"n": {"type": "int", "initial": 0, "min": 0, "max": 400},
                "m": {"type": "int", "initial": 0},
                "d": {"type": "decimal", "scale": 2, "initial": "1.50"}},
  "actions": [{"id": "inc", "cost": 1.5, "effects": [{"variable": "n", "mode": "increment", "value": 3}]},
              {"id": "dec", "cost": 1, "effects": [{"variable": "n", "mode": "decrement", "value": 2}]},
              {"id": "pay", "cost": "amount", "parameters": {"amount": {"type": "decimal", "scale": 2, "min": "0.5", "max": "3"}},
               "effects": [{"variable": "d", "mode": "increment", "value": "amount"}, {"variable": "m", "mode": "increment", "value": 1}]}],
  "invariants": [{"name": "cap", "check": "n + m <= 300"}],
  "budget": {"total": 300, "min_action_cost": 0.5}})J";

std::int64_t fixed_clock() { return 1700000000000000; }

// Every proposal of `ids` in turn, with `amount` for pay.
Outcome step(SharedKernel& k, std::mt19937& rng) {
  const char* ids[] = {"inc", "dec", "pay"};
  const char* id = ids[rng() % 3];
  ParamMap params;
  if (std::string(id) == "pay")
    params.emplace_back("amount", Value::number(*Decimal::parse("1.25")));
  return k.execute(id, params);
}

}  // namespace

TEST_CASE("SharedKernel: one kernel on a memory ledger writes the SafetyKernel's entries",
          "[ledger]") {
  const auto model = load_spec(kSpec);
  KernelOptions ko;
  ko.clock = fixed_clock;
  SafetyKernel plain(model, ko);
  SharedOptions so;
  so.clock = fixed_clock;
  auto ledger = std::make_shared<MemoryLedger>();
  SharedKernel shared(model, ledger, so);
  std::mt19937 a(7), b(7);
  std::vector<Receipt> receipts;
  for (int i = 0; i < 60; ++i) {
    const char* ids[] = {"inc", "dec", "pay"};
    const char* id = ids[a() % 3];
    (void)b();
    ParamMap params;
    if (std::string(id) == "pay")
      params.emplace_back("amount", Value::number(*Decimal::parse("1.25")));
    Outcome x = plain.execute(id, params);
    Outcome y = shared.execute(id, params);
    REQUIRE(x.decision.approved == y.decision.approved);
    if (x.receipt) {
      REQUIRE(y.receipt);
      REQUIRE(x.receipt->sequence == y.receipt->sequence);
      receipts.push_back(*x.receipt);
    }
    if (i % 9 == 8 && !receipts.empty()) {  // roll back the latest, as both allow
      plain.rollback(receipts.back());
      shared.rollback(receipts.back());
      receipts.pop_back();
    }
  }
  const std::vector<TraceEntry> expected = plain.trace();
  const std::vector<std::string> lines = ledger->read(0);
  REQUIRE(lines.size() == expected.size());
  for (std::size_t i = 0; i < lines.size(); ++i) REQUIRE(lines[i] == expected[i].to_json_line());
  REQUIRE(verify_trace_lines(lines, "memory", true).ok);
  REQUIRE(shared.local().state() == plain.state());
  REQUIRE(shared.stats().conflicts == 0);
}

TEST_CASE("SharedKernel: kernels sharing a ledger never break T1 and keep one chain", "[ledger]") {
  const auto model = load_spec(kSpec);
  auto ledger = std::make_shared<MemoryLedger>();
  constexpr int kKernels = 4;
  std::vector<std::unique_ptr<SharedKernel>> kernels;
  for (int t = 0; t < kKernels; ++t)
    kernels.push_back(std::make_unique<SharedKernel>(model, ledger->share()));
  std::vector<std::uint64_t> committed(kKernels, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kKernels; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(static_cast<unsigned>(t));
      for (int i = 0; i < 300; ++i) {
        Outcome o = step(*kernels[t], rng);
        if (o.receipt) ++committed[t];
        if (o.receipt && rng() % 7 == 0) {
          try {
            kernels[t]->rollback(*o.receipt);  // fails if another kernel committed since
          } catch (const clampai::InvalidArgument&) {
          }
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  for (auto& k : kernels) k->refresh();
  const std::vector<std::string> lines = ledger->read(0);
  const TraceCheck check = verify_trace_lines(lines, "memory", true);
  REQUIRE(check.ok);
  const std::vector<TraceEntry> entries = parse_trace_lines(lines, "memory");
  REQUIRE_FALSE(replay_trace(model, entries).has_value());  // every decision stands on its head
  std::uint64_t executed = 0;
  for (const auto& e : entries) executed += e.kind == EntryKind::executed ? 1 : 0;
  std::uint64_t sum = 0;
  for (auto c : committed) sum += c;
  REQUIRE(executed == sum);  // nothing committed is lost, nothing counted twice
  std::uint64_t stats_commits = 0;
  for (auto& k : kernels) {
    REQUIRE(k->length() == lines.size());
    REQUIRE(k->local().state() == kernels[0]->local().state());
    const auto b = k->local().budget();
    REQUIRE(b.net() <= b.total());
    stats_commits += k->stats().commits;
  }
  REQUIRE(stats_commits + 0 >= sum);
}

TEST_CASE("SharedKernel: an attested entry is committed as a SafetyKernel appends it", "[ledger]") {
  const auto model = load_spec(kSpec);
  KernelOptions ko;
  ko.clock = fixed_clock;
  SafetyKernel plain(model, ko);
  SharedOptions so;
  so.clock = fixed_clock;
  auto ledger = std::make_shared<MemoryLedger>();
  SharedKernel shared(model, ledger, so);
  SharedKernel other(model, ledger, so);
  AttestationRecord r;
  r.attestor = "gateway";
  r.gate = "inc";
  r.passed = false;
  r.evidence = "step 1: unknown";
  r.error = "step 1: unknown: the upstream is gone";
  REQUIRE(plain.execute("inc").receipt);
  REQUIRE(shared.execute("inc").receipt);
  REQUIRE(other.execute("inc").receipt);  // another process commits in between
  REQUIRE(plain.execute("inc").receipt);
  (void)plain.record_attested(attestation_entry(r));
  // On a replica behind the head: caught up by the compare-and-set, committed after it.
  const TraceEntry e = shared.record_attested(attestation_entry(r));
  CHECK(e.sequence == 3);
  const std::vector<std::string> lines = ledger->read(0);
  const std::vector<TraceEntry> expected = plain.trace();
  REQUIRE(lines.size() == expected.size());
  for (std::size_t i = 0; i < lines.size(); ++i) CHECK(lines[i] == expected[i].to_json_line());
  CHECK(other.refresh() == 1);  // the other replica replays it as recorded
  CHECK(other.local().state() == plain.state());
  // Only a well-formed attestation, of a known action.
  TraceEntry bad = attestation_entry(r);
  bad.kind = EntryKind::checkpoint;
  CHECK_THROWS_WITH(shared.record_attested(bad), Catch::Contains("is not an attestation"));
  bad = attestation_entry(r);
  bad.action = "nope";
  CHECK_THROWS_WITH(shared.record_attested(bad), Catch::Contains("unknown action `nope`"));
  CHECK(ledger->read(0).size() == expected.size());
}

TEST_CASE("SharedKernel: two kernels race for the last unit of budget; exactly one wins",
          "[ledger]") {
  const auto model = load_spec(R"J({"name": "last",
    "variables": {"n": {"type": "int", "initial": 0}},
    "actions": [{"id": "a", "cost": 1, "effects": [{"variable": "n", "mode": "increment", "value": 1}]}],
    "budget": {"total": 3, "min_action_cost": 1}})J");
  auto ledger = std::make_shared<MemoryLedger>();
  SharedKernel x(model, ledger->share());
  SharedKernel y(model, ledger->share());
  REQUIRE(x.execute("a").receipt);
  REQUIRE(y.execute("a").receipt);
  x.refresh();
  // Both decide on the same head (one unit left); x commits first, y's compare-and-set fails,
  // y decides afresh and is refused.
  bool y_inside = false;
  SharedOptions so;
  so.hook = [&](SharedPhase p) {
    if (p == SharedPhase::committing && !y_inside) {
      y_inside = true;
      REQUIRE(x.execute("a").receipt);
    }
  };
  SharedKernel z(model, ledger->share(), so);
  const Outcome o = z.execute("a");
  REQUIRE_FALSE(o.decision.approved);
  REQUIRE(o.decision.has(ReasonCode::budget_exceeded));
  REQUIRE(z.stats().conflicts == 1);
  REQUIRE(z.local().budget().net() == z.local().budget().total());
  REQUIRE(ledger->read(0).size() == 4);
}

TEST_CASE("SharedKernel: a rollback is refunded once across kernels", "[ledger]") {
  const auto model = load_spec(kSpec);
  auto ledger = std::make_shared<MemoryLedger>();
  SharedKernel x(model, ledger->share());
  SharedKernel y(model, ledger->share());
  const Outcome o = x.execute("inc");
  REQUIRE(o.receipt);
  y.refresh();
  (void)y.rollback(*o.receipt);
  REQUIRE_THROWS_AS(x.rollback(*o.receipt), clampai::InvalidArgument);  // already undone
  REQUIRE(x.local().budget().net() == 0);
  REQUIRE(x.local().budget().gross() == y.local().budget().gross());
}

TEST_CASE("SharedKernel: a file ledger is a trace file, shared by its handles", "[ledger]") {
  const auto model = load_spec(kSpec);
  const std::string path = clampai::test::temp_file("shared_ledger.jsonl");
  std::filesystem::remove(path);
  SharedKernel x(model, std::make_shared<FileLedger>(path));
  SharedKernel y(model, open_local_ledger("file:" + path));
  std::mt19937 rng(3);
  for (int i = 0; i < 40; ++i) (void)step(i % 2 == 0 ? x : y, rng);
  REQUIRE(verify_trace_file(path, /*allow_unsealed=*/true).ok);
  REQUIRE_FALSE(replay_trace(model, read_trace_file(path)).has_value());
  x.refresh();
  y.refresh();
  REQUIRE(x.length() == read_trace_file(path).size());
  REQUIRE(x.local().state() == y.local().state());
  REQUIRE(x.stats().conflicts + y.stats().conflicts > 0);  // each lagged behind the other
}

TEST_CASE("SharedKernel: a ledger of another spec is refused", "[ledger]") {
  auto ledger = std::make_shared<MemoryLedger>();
  SharedKernel x(load_spec(kSpec), ledger->share());
  const auto other = load_spec(R"J({"variables": {"n": {"type": "int", "initial": 0}},
    "actions": [{"id": "a", "cost": 1, "effects": [{"variable": "n", "mode": "increment", "value": 1}]}],
    "budget": {"total": 3, "min_action_cost": 1}})J");
  REQUIRE_THROWS_WITH(SharedKernel(other, ledger->share()),
                      Catch::Contains("written for another spec"));
}

namespace {
// A ledger whose connection fails at chosen commits, after (or before) the commit took effect.
class FlakyLedger final : public Ledger {
 public:
  explicit FlakyLedger(std::shared_ptr<MemoryLedger> inner) : inner_(std::move(inner)) {}
  std::string describe() const override { return "flaky"; }
  std::vector<std::string> read(std::uint64_t from) override {
    if (reads_down > 0) {
      --reads_down;
      throw clampai::LedgerUnavailable("down");
    }
    return inner_->read(from);
  }
  CommitStatus commit(const LedgerRecord& record) override {
    if (fail_after_commit) {
      fail_after_commit = false;
      (void)inner_->commit(record);
      throw clampai::LedgerUnavailable("the acknowledgement was lost");
    }
    if (fail_before_commit) {
      fail_before_commit = false;
      throw clampai::LedgerUnavailable("the connection was lost");
    }
    return inner_->commit(record);
  }
  bool fail_after_commit = false;
  bool fail_before_commit = false;
  int reads_down = 0;

 private:
  std::shared_ptr<MemoryLedger> inner_;
};
}  // namespace

TEST_CASE("SharedKernel: a commit whose acknowledgement is lost is read back, never repeated",
          "[ledger]") {
  const auto model = load_spec(kSpec);
  auto memory = std::make_shared<MemoryLedger>();
  auto flaky = std::make_shared<FlakyLedger>(memory->share());
  SharedOptions so;
  so.reconnect_delay_ms = 0;
  SharedKernel k(model, flaky, so);
  flaky->fail_after_commit = true;
  flaky->reads_down = 2;  // and the first reconnections fail too
  const Outcome a = k.execute("inc");
  REQUIRE(a.receipt);
  REQUIRE(memory->read(0).size() == 2);  // committed once
  flaky->fail_before_commit = true;
  const Outcome b = k.execute("inc");
  REQUIRE(b.receipt);
  REQUIRE(b.receipt->sequence == 2);
  REQUIRE(memory->read(0).size() == 3);
  REQUIRE(k.stats().in_doubt == 2);
  REQUIRE(k.stats().conflicts == 1);  // the lost one counts as lost, and is decided afresh
  REQUIRE(k.local().budget().gross() == 3000);
  REQUIRE(verify_trace_lines(memory->read(0), "memory", true).ok);
  // Beyond the reconnect attempts the error surfaces (and nothing was committed).
  so.reconnect_attempts = 3;
  SharedKernel impatient(model, flaky, so);
  REQUIRE(impatient.length() == 3);
  flaky->fail_before_commit = true;
  flaky->reads_down = 100;
  REQUIRE_THROWS_AS(impatient.execute("inc"), clampai::LedgerUnavailable);
  flaky->reads_down = 0;
  REQUIRE(memory->read(0).size() == 3);
}

namespace {

// A memory ledger that keeps budget pools beside its log, as PostgresLedger keeps them in the
// commit's transaction (here: under one lock): every level of the record's path checked and
// charged (refunded) with the entry, or nothing (`refused`).
class PooledLedger final : public Ledger {
 public:
  struct Rows {
    std::mutex mutex;
    std::vector<LedgerPool> pools;  // parents may come in any order
  };
  PooledLedger(std::shared_ptr<MemoryLedger> log, std::shared_ptr<Rows> rows)
      : log_(std::move(log)), rows_(std::move(rows)) {}
  [[nodiscard]] std::string describe() const override { return "pooled:"; }
  std::vector<std::string> read(std::uint64_t from) override { return log_->read(from); }
  std::vector<LedgerPool> pool_path(const std::string& pool) override {
    std::lock_guard lock(rows_->mutex);
    std::vector<LedgerPool> out;
    for (LedgerPool* p = find(pool); p != nullptr; p = find(p->parent)) out.push_back(*p);
    return out;
  }
  CommitStatus commit(const LedgerRecord& r) override {
    std::lock_guard lock(rows_->mutex);
    std::vector<LedgerPool*> path;
    for (LedgerPool* p = find(r.pool); p != nullptr; p = find(p->parent)) path.push_back(p);
    const bool refund = r.kind == "rolled_back";
    const Decimal amount = r.pool_amount.empty() ? Decimal{} : *Decimal::parse(r.pool_amount);
    if (!r.pool_amount.empty() && !refund) {
      for (LedgerPool* p : path)
        if (*checked_add(*Decimal::parse(p->net), amount) > *Decimal::parse(p->total))
          return CommitStatus::refused;
    }
    const CommitStatus s = log_->commit(r);
    if (s != CommitStatus::committed || r.pool_amount.empty()) return s;
    for (LedgerPool* p : path) {
      if (!refund) p->gross = checked_add(*Decimal::parse(p->gross), amount)->to_string();
      p->net = (refund ? checked_sub(*Decimal::parse(p->net), amount)
                       : checked_add(*Decimal::parse(p->net), amount))
                   ->to_string();
    }
    return s;
  }

 private:
  LedgerPool* find(const std::string& name) {
    for (LedgerPool& p : rows_->pools)
      if (!name.empty() && p.name == name) return &p;
    return nullptr;
  }
  std::shared_ptr<MemoryLedger> log_;
  std::shared_ptr<Rows> rows_;
};

std::shared_ptr<const TaskModel> pooled_model(const std::string& name, const std::string& pool) {
  return load_spec(R"J({"name": ")J" + name +
                   R"J(", "variables": {"n": {"type": "int", "initial": 0}},
    "actions": [{"id": "inc", "cost": 1, "effects": [{"variable": "n", "mode": "increment", "value": 1}]}],
    "budget": {"total": 10, "min_action_cost": 1, "pool": ")J" +
                   pool + R"J("}})J");
}

}  // namespace

TEST_CASE("SharedKernel: a task in a pool charges the ledger's pools, refused as in process",
          "[ledger][pools]") {
  auto rows = std::make_shared<PooledLedger::Rows>();
  rows->pools = {{"team-a", "org", "3", "0", "0"}, {"org", "", "4", "0", "0"}};
  auto log_a = std::make_shared<MemoryLedger>();
  auto log_b = std::make_shared<MemoryLedger>();
  SharedOptions so;
  so.record_rejections = true;
  SharedKernel a(pooled_model("a", "team-a"), std::make_shared<PooledLedger>(log_a, rows), so);
  SharedKernel b(pooled_model("b", "org"), std::make_shared<PooledLedger>(log_b, rows), so);
  // b spends 2 of org's 4; a then gets 2 (org's rest), not team-a's 3: the first level from
  // the task's pool up that cannot take the cost is named.
  REQUIRE(b.execute("inc").receipt);
  REQUIRE(b.execute("inc").receipt);
  std::vector<Receipt> receipts;
  Outcome o = a.execute("inc");
  for (; o.receipt; o = a.execute("inc")) receipts.push_back(*o.receipt);
  CHECK(receipts.size() == 2);
  REQUIRE(o.decision.reasons.size() == 1);
  CHECK(o.decision.reasons[0].code == ReasonCode::budget_exceeded);
  CHECK(o.decision.reasons[0].subject == "pool:org");
  CHECK(o.decision.reasons[0].message ==
        "cost 1.000 exceeds the remaining budget 0.000 of pool `org` (total 4.000)");
  CHECK(rows->pools[1].net == "4.000");
  CHECK(rows->pools[0].net == "2.000");
  // The rejection is recorded, and another kernel of task a replays it as recorded (its
  // replica has no pools).
  SharedKernel a2(pooled_model("a", "team-a"), std::make_shared<PooledLedger>(log_a, rows), so);
  CHECK(a2.length() == a.length());
  // A rollback refunds every level (gross stays); then a charge fits again (a2's), and org
  // refuses the one after.
  (void)a.rollback(receipts.back());
  CHECK(rows->pools[0].net == "1.000");
  CHECK(rows->pools[0].gross == "2.000");
  CHECK(rows->pools[1].net == "3.000");
  // a2 last read org full: its refusal is final only on the rows as they are now.
  CHECK(a2.execute("inc").receipt);
  CHECK(a.execute("inc").receipt.has_value() == false);
  CHECK(rows->pools[1].net == "4.000");
}

TEST_CASE("SharedKernel: a task in a pool needs a ledger that keeps pools", "[ledger][pools]") {
  auto rows = std::make_shared<PooledLedger::Rows>();
  CHECK_THROWS_WITH(SharedKernel(pooled_model("a", "team-a"), std::make_shared<MemoryLedger>()),
                    Catch::Contains("keeps no budget pools"));
  CHECK_THROWS_WITH(
      SharedKernel(pooled_model("a", "team-a"),
                   std::make_shared<PooledLedger>(std::make_shared<MemoryLedger>(), rows)),
      Catch::Contains("has no budget pool `team-a`"));
  rows->pools = {{"team-a", "", "3.0005", "0", "0"}};
  CHECK_THROWS_WITH(
      SharedKernel(pooled_model("a", "team-a"),
                   std::make_shared<PooledLedger>(std::make_shared<MemoryLedger>(), rows)),
      Catch::Contains("is not exact at the task's budget scale"));
}

TEST_CASE("SharedKernel: a step compensated after another kernel's commit",
          "[ledger][compensation]") {
  const auto model = load_spec(kSpec);
  auto ledger = std::make_shared<MemoryLedger>();
  SharedOptions so;
  so.clock = fixed_clock;
  SharedKernel k1(model, ledger, so);
  SharedKernel k2(model, ledger->share(), so);
  const Outcome a = k1.execute("inc");  // n 3, by k1
  REQUIRE(a.receipt);
  const Outcome b = k2.execute("pay", {{"amount", Value::number(*Decimal::parse("2.00"))}});
  REQUIRE(b.receipt);  // by k2, on top of a: k1's replica has not seen it yet
  // k1 cannot roll `a` back (b came after it), but compensates it on the latest head.
  REQUIRE_THROWS_WITH(k1.rollback(*a.receipt), Catch::Contains("not the one it produced"));
  const Outcome undone = k1.compensate(a.receipt->sequence, "k1");
  REQUIRE(undone.decision.approved);
  REQUIRE(undone.state.get("n") == Value::integer(0));
  REQUIRE(undone.state.get("m") == Value::integer(1));  // b's effects stay
  // a's cost refunded once: net is b's cost, gross both (T4).
  REQUIRE(k1.local().budget().net() == b.receipt->cost);
  REQUIRE(k1.local().budget().gross() == a.receipt->cost + b.receipt->cost);
  // Once; and `b`, committed before the compensation, can no longer be rolled back.
  REQUIRE_THROWS_WITH(k2.compensate(a.receipt->sequence), Catch::Contains("compensated already"));
  REQUIRE_THROWS_WITH(k2.rollback(*b.receipt), Catch::Contains("compensate it instead"));
  REQUIRE(k2.local().state() == k1.local().state());
  // The ledger's trace verifies and replays, and a third kernel follows it to the same state.
  const std::vector<std::string> lines = ledger->read(0);
  REQUIRE(verify_trace_lines(lines, "memory", true).ok);
  const std::vector<TraceEntry> entries = parse_trace_lines(lines, "memory");
  REQUIRE(entries.at(3).kind == EntryKind::compensated);
  REQUIRE(compensated_step(entries.at(3)) == a.receipt->sequence);
  State replayed = model->initial_state();
  REQUIRE(replay_trace(model, entries, &replayed) == std::nullopt);
  REQUIRE(replayed == k1.local().state());
  SharedKernel k3(model, ledger->share(), so);
  REQUIRE(k3.local().state() == k1.local().state());
  REQUIRE(k3.local().budget().net() == b.receipt->cost);
  // A compensation refused on the latest head (an entry that is no committed action).
  REQUIRE_THROWS_WITH(k3.compensate(99), Catch::Contains("not a committed action"));
}

namespace {

const char* kApprovalSpec = R"J({"name": "approve",
  "variables": {"n": {"type": "int", "initial": 0}},
  "actions": [{"id": "go", "cost": 1, "approval": {"ttl_s": 60},
               "effects": [{"variable": "n", "mode": "increment", "value": 1}]}],
  "budget": {"total": 10, "min_action_cost": 1}})J";

TraceEntry note(EntryKind kind, const std::string& ticket, const std::string& who) {
  TraceEntry e;
  e.kind = kind;
  e.action = "go";
  e.ticket = ticket;
  e.principal = who;
  return e;
}

}  // namespace

TEST_CASE("SharedKernel: a ticket is answered once across kernels, on the head it extends",
          "[ledger][approvals]") {
  const auto model = load_spec(kApprovalSpec);
  SharedOptions so;
  so.clock = fixed_clock;
  auto log = std::make_shared<MemoryLedger>();
  SharedKernel a(model, log, so), b(model, log->share(), so);
  const TraceEntry asked = a.record_note(note(EntryKind::approval_requested, "t1", "alice"));
  CHECK(asked.sequence == 1);
  CHECK(a.ticket_open("t1"));
  CHECK_FALSE(b.ticket_open("t1"));  // b has not read it yet
  // On its stale head b does not know the ticket: a refusal is final only on the latest head.
  const TraceEntry granted = b.record_note(note(EntryKind::approval_granted, "t1", "bob"));
  CHECK(granted.sequence == 2);
  CHECK_FALSE(b.ticket_open("t1"));
  // a's answer, on a head where the ticket is open, loses its compare-and-set to b's: caught
  // up, a finds the ticket answered, and commits nothing.
  CHECK(a.ticket_open("t1"));
  REQUIRE_THROWS_WITH(
      a.record_note(note(EntryKind::approval_denied, "t1", "carol")),
      Catch::Contains("ticket `t1`, which is not open (answered or expired already"));
  CHECK(a.stats().conflicts == 1);
  CHECK(a.length() == 3);
  REQUIRE_THROWS_WITH(a.record_note(note(EntryKind::approval_expired, "never", "")),
                      Catch::Contains("not open"));
  // A request for an open ticket, an answer naming another action or no ticket: refused.
  (void)a.record_note(note(EntryKind::approval_requested, "t2", "alice"));
  REQUIRE_THROWS_WITH(a.record_note(note(EntryKind::approval_requested, "t2", "alice")),
                      Catch::Contains("requested again while it is open"));
  REQUIRE_THROWS_WITH(a.record_note(note(EntryKind::approval_granted, "", "bob")),
                      Catch::Contains("without a ticket"));
  TraceEntry other = note(EntryKind::approval_granted, "t2", "bob");
  other.action.clear();
  REQUIRE_THROWS_WITH(a.record_note(other), Catch::Contains("the ticket is for `go`"));
  REQUIRE(log->read(0).size() == 4);  // genesis, t1 asked and granted, t2 asked
  CHECK(verify_trace_lines(log->read(0), "memory", true).ok);
  // A kernel opened on the ledger rebuilds the open tickets.
  SharedKernel c(model, log->share(), so);
  CHECK(c.ticket_open("t2"));
  CHECK_FALSE(c.ticket_open("t1"));
}

TEST_CASE("SharedKernel: a ledger with an answer to a ticket that is not open is refused",
          "[ledger][approvals]") {
  // A local kernel records what it is given: a second answer, written to a file ledger.
  const auto model = load_spec(kApprovalSpec);
  KernelOptions ko;
  ko.clock = fixed_clock;
  SafetyKernel plain(model, ko);
  (void)plain.record_note(note(EntryKind::approval_requested, "t1", "alice"));
  (void)plain.record_note(note(EntryKind::approval_granted, "t1", "bob"));
  (void)plain.record_note(note(EntryKind::approval_denied, "t1", "carol"));
  const std::string path =
      (std::filesystem::temp_directory_path() / "clampai-twice-answered.jsonl").string();
  {
    std::ofstream out(path, std::ios::trunc);
    for (const TraceEntry& e : plain.trace()) out << e.to_json_line() << '\n';
  }
  SharedOptions so;
  so.clock = fixed_clock;
  REQUIRE_THROWS_WITH(SharedKernel(model, std::make_shared<FileLedger>(path), so),
                      Catch::Contains("entry 3") && Catch::Contains("not open"));
  std::filesystem::remove(path);
  // `trace verify --spec` (TraceReplay) finds it too, at that entry.
  TraceReplay replay(model);
  const std::vector<TraceEntry> entries = plain.trace();
  for (std::size_t i = 0; i < 3; ++i) CHECK_FALSE(replay.add(entries[i]));
  const std::optional<std::string> broken = replay.add(entries[3]);
  REQUIRE(broken);
  CHECK_THAT(*broken, Catch::Contains("ticket `t1`, which is not open"));
}
