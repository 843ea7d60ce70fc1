// SafetyKernel::compensate: an earlier step undone by its exact inverse on the current state
// (docs/THEOREMS.md, "Compensation"), refunded once, traced as a `compensated` entry that
// resume, replay and `trace verify` understand.
#include <catch2/catch.hpp>

#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "support.hpp"

using namespace clampai::kernel;
using clampai::test::model_from;

namespace {

// `n` and `m` are moved by increments and decrements; `level`, `mode` and `items` by other
// effects; `cap` is a blocking invariant a compensation can break (undoing a decrement).
const char* kSpec = R"J({
  "variables": {
    "n": {"type": "int", "initial": 50, "min": 0, "max": 1000},
    "m": {"type": "decimal", "scale": 2, "initial": "0.00"},
    "level": {"type": "int", "initial": 0},
    "mode": {"type": "enum", "values": ["a", "b", "c"], "initial": "a"},
    "items": {"type": "list", "element": "int", "initial": []}
  },
  "actions": [
    {"id": "inc", "cost": 2, "parameters": {"k": {"type": "int", "min": 1, "max": 30}},
     "effects": [{"variable": "n", "mode": "increment", "value": "k"},
                 {"variable": "m", "mode": "increment", "value": "0.25"}]},
    {"id": "dec", "cost": 3, "parameters": {"k": {"type": "int", "min": 1, "max": 30}},
     "effects": [{"variable": "n", "mode": "decrement", "value": "k"}]},
    {"id": "set_level", "cost": "0.5 * v", "parameters": {"v": {"type": "int", "min": 1, "max": 9}},
     "effects": [{"variable": "level", "mode": "set", "value": "v"}]},
    {"id": "to_b", "cost": 1, "effects": [{"variable": "mode", "mode": "set", "value": "'b'"}]},
    {"id": "to_c", "cost": 1, "effects": [{"variable": "mode", "mode": "set", "value": "'c'"},
                                          {"variable": "n", "mode": "increment", "value": 1}]},
    {"id": "push", "cost": 1, "parameters": {"v": {"type": "int", "min": 0, "max": 9}},
     "effects": [{"variable": "items", "mode": "append", "value": "v"}]},
    {"id": "once", "cost": 1, "reversible": false,
     "effects": [{"variable": "level", "mode": "increment", "value": 1}]},
    {"id": "hover", "cost": 0, "effects": [{"variable": "m", "mode": "increment", "value": "1"}]}
  ],
  "invariants": [
    {"name": "cap", "check": "n <= 100", "description": "n stays at most 100"},
    {"name": "calm", "check": "level <= 8", "enforcement": "monitoring"}
  ],
  "budget": {"total": 10000, "min_action_cost": 0.5},
  "emergency_actions": ["hover"]
})J";

std::int64_t fixed_clock() { return 1700000000000000; }

KernelOptions options() {
  KernelOptions o;
  o.clock = fixed_clock;
  return o;
}

// A committed step as the test sees it: what it was and the state before it.
struct Step {
  Receipt receipt;
  std::string action;
  ParamMap params;
  std::optional<State> before;  // set by random_step
  bool undone = false;
};

// The sequence of the last entry of `trace` that wrote `variable` (its `changes` name it).
std::uint64_t last_write(const std::vector<TraceEntry>& trace, const std::string& variable) {
  std::uint64_t last = 0;
  for (const TraceEntry& e : trace)
    for (const auto& change : e.changes)
      if (change.first == variable) last = e.sequence;
  return last;
}

// The test's own model of the exact inverse of `s` on `now`: nullopt where the kernel must
// refuse (a non-increment effect whose variable a later entry wrote, an irreversible action).
std::optional<State> expected_inverse(const TaskModel& model,
                                      const Step& s,
                                      const State& now,
                                      const std::vector<TraceEntry>& trace) {
  auto set_back = [&](const std::string& var, State& out) {
    if (last_write(trace, var) != s.receipt.sequence) return false;
    out = out.with({{*model.schema->find(var), s.before->get(var)}});
    return true;
  };
  const auto k = [&] { return s.params.at(0).second.as_number(); };
  State out = now;
  auto add = [&](const std::string& var, const Decimal& by) {
    const VarId id = *model.schema->find(var);
    const Decimal v = *checked_add(out.get(id).as_number(), by);
    out = out.with({{id, Value::number(*v.rescaled(out.get(id).as_number().scale))}});
  };
  const Decimal minus_quarter = *Decimal::parse("-0.25");
  if (s.action == "inc") {
    add("n", Decimal::integer(-k().units));
    add("m", minus_quarter);
  } else if (s.action == "dec") {
    add("n", k());
  } else if (s.action == "set_level") {
    if (!set_back("level", out)) return std::nullopt;
  } else if (s.action == "to_b") {
    if (!set_back("mode", out)) return std::nullopt;
  } else if (s.action == "to_c") {
    if (!set_back("mode", out)) return std::nullopt;
    add("n", Decimal::integer(-1));
  } else if (s.action == "push") {
    if (!set_back("items", out)) return std::nullopt;
  } else if (s.action == "hover") {
    add("m", Decimal::integer(-1));
  } else {
    return std::nullopt;  // once: irreversible
  }
  return out;
}

// Whether `s` satisfies the bounds and the blocking invariant of kSpec.
bool allowed(const State& s) {
  const std::int64_t n = s.get("n").as_number().units;
  return n >= 0 && n <= 100;
}

Step random_step(SafetyKernel& k, std::mt19937& rng, bool& committed) {
  const char* ids[] = {"inc", "dec", "set_level", "to_b", "to_c", "push", "once", "hover"};
  Step s;
  s.action = ids[rng() % 8];
  if (s.action == "inc" || s.action == "dec")
    s.params.emplace_back("k", Value::integer(static_cast<std::int64_t>(1 + rng() % 30)));
  if (s.action == "set_level")
    s.params.emplace_back("v", Value::integer(static_cast<std::int64_t>(1 + rng() % 9)));
  if (s.action == "push")
    s.params.emplace_back("v", Value::integer(static_cast<std::int64_t>(rng() % 10)));
  s.before = k.state();
  const Outcome o = k.execute(s.action, s.params);
  committed = o.receipt.has_value();
  if (committed) s.receipt = *o.receipt;
  return s;
}

}  // namespace

TEST_CASE("Compensation: random steps, a random earlier step compensated (seeded)",
          "[kernel][compensation]") {
  const auto model = model_from(kSpec);
  std::uint64_t compensated = 0;
  std::uint64_t refused_by_write = 0;
  std::uint64_t refused_by_invariant = 0;
  for (unsigned seed = 1; seed <= 40; ++seed) {
    INFO("seed " << seed);
    std::mt19937 rng(seed);
    SafetyKernel k(model, options());
    std::vector<Step> steps;
    for (int round = 0; round < 30; ++round) {
      bool committed = false;
      Step s = random_step(k, rng, committed);
      if (committed) steps.push_back(std::move(s));
      if (steps.empty() || rng() % 3 != 0) continue;
      Step& target = steps[rng() % steps.size()];
      const State now = k.state();
      const BudgetController budget = k.budget();
      const std::uint64_t counted = k.steps();
      const std::uint64_t emergency = k.emergency_steps();
      const std::uint64_t length = k.trace_length();
      const std::size_t action = target.receipt.action;
      const std::uint64_t completions = k.completions(action);
      const std::vector<TraceEntry> trace = k.trace();
      const std::optional<State> want =
          target.undone ? std::nullopt : expected_inverse(*model, target, now, trace);
      if (!target.undone && !want && target.action != "once") ++refused_by_write;
      if (want && !allowed(*want)) ++refused_by_invariant;
      if (!want || !allowed(*want)) {
        REQUIRE_THROWS_AS(k.compensate(target.receipt), clampai::InvalidArgument);
        // Refused: nothing changed (T5).
        REQUIRE(k.state() == now);
        REQUIRE(k.budget().net() == budget.net());
        REQUIRE(k.trace_length() == length);
        continue;
      }
      const Outcome o = k.compensate(target.receipt, "alice");
      ++compensated;
      target.undone = true;
      REQUIRE(o.decision.approved);
      REQUIRE(o.state == *want);
      REQUIRE(k.state() == *want);
      // The cost refunded once: net down by it, gross kept (T4); counters kept (T2).
      REQUIRE(k.budget().net() == budget.net() - target.receipt.cost);
      REQUIRE(k.budget().gross() == budget.gross());
      REQUIRE(k.steps() == counted);
      REQUIRE(k.emergency_steps() == emergency);
      REQUIRE(k.completions(action) == completions - 1);
      const TraceEntry e = k.trace().back();
      REQUIRE(e.kind == EntryKind::compensated);
      REQUIRE(e.principal == "alice");
      REQUIRE(compensated_step(e) == target.receipt.sequence);
      REQUIRE(e.cost == model->format_amount(target.receipt.cost));
      // At most once; and nothing before it can be rolled back any more.
      REQUIRE_THROWS_WITH(k.compensate(target.receipt), Catch::Contains("compensated already"));
      REQUIRE(k.budget().net() == budget.net() - target.receipt.cost);
      REQUIRE_THROWS_WITH(k.rollback(steps.back().receipt),
                          Catch::Contains("compensate it instead"));
    }
    // The trace verifies, replays to the same state, and resumes byte for byte.
    const std::vector<TraceEntry> trace = k.trace();
    REQUIRE(k.verify_trace().ok);
    REQUIRE(verify_chain(trace, true).ok);
    State replayed = model->initial_state();
    const auto mismatch = replay_trace(model, trace, &replayed);
    INFO((mismatch ? mismatch->second : std::string()));
    REQUIRE_FALSE(mismatch);
    REQUIRE(replayed == k.state());
    KernelOptions again = options();
    again.resume = trace;
    SafetyKernel resumed(model, again);
    REQUIRE(resumed.state() == k.state());
    REQUIRE(resumed.budget().net() == k.budget().net());
    REQUIRE(resumed.head_hash() == k.head_hash());
  }
  // The seeds cover every case.
  REQUIRE(compensated > 20);
  REQUIRE(refused_by_write > 5);
  REQUIRE(refused_by_invariant > 0);
}

TEST_CASE("Compensation: increments are inverted whatever came after; sets only if untouched",
          "[kernel][compensation]") {
  const auto model = model_from(kSpec);
  SafetyKernel k(model, options());
  const Outcome a = k.execute("inc", {{"k", Value::integer(5)}});         // n 55
  const Outcome lv = k.execute("set_level", {{"v", Value::integer(4)}});  // level 4
  const Outcome b = k.execute("dec", {{"k", Value::integer(20)}});        // n 35
  const Outcome c = k.execute("set_level", {{"v", Value::integer(6)}});   // level 6
  REQUIRE((a.receipt && lv.receipt && b.receipt && c.receipt));
  // `a`'s increment is undone on top of `b`'s decrement.
  const Outcome undone = k.compensate(*a.receipt);
  REQUIRE(k.state().get("n") == Value::integer(30));
  REQUIRE(k.state().get("m") == Value::number(*Decimal::parse("0.00")));
  REQUIRE(undone.decision.changes.size() == 2);
  // `lv`'s set of `level` was overwritten by `c`: refused, naming the variable and the entry.
  REQUIRE_THROWS_WITH(k.compensate(*lv.receipt),
                      Catch::Contains("`set` of `level` cannot be inverted: entry " +
                                      std::to_string(c.receipt->sequence)));
  // `c`'s set is the last write of `level`: it goes back to 4 (the value before `c`).
  k.compensate(*c.receipt);
  REQUIRE(k.state().get("level") == Value::integer(4));
  // Undoing a decrement that would break `cap` is refused, naming the invariant.
  const Outcome up = k.execute("inc", {{"k", Value::integer(30)}});  // n 60
  REQUIRE(up.receipt);
  REQUIRE(k.execute("inc", {{"k", Value::integer(30)}}).receipt);  // n 90
  REQUIRE_THROWS_WITH(k.compensate(*b.receipt), Catch::Contains("`cap`"));
  REQUIRE(k.state().get("n") == Value::integer(90));
  // A rolled-back step is not compensated; a compensated one is not rolled back.
  const Outcome last = k.execute("push", {{"v", Value::integer(3)}});
  k.rollback(*last.receipt);
  REQUIRE_THROWS_WITH(k.compensate(*last.receipt), Catch::Contains("not a committed action"));
  const Outcome latest = k.execute("to_b");
  k.compensate(*latest.receipt);  // the latest may be compensated too
  REQUIRE(k.state().get("mode") == Value::string("a"));
  REQUIRE_THROWS_WITH(k.rollback(*latest.receipt), Catch::Contains("compensate it instead"));
  // Irreversible actions are neither rolled back nor compensated; emergency ones are (cost 0).
  const Outcome once = k.execute("once");
  REQUIRE(k.execute("inc", {{"k", Value::integer(1)}}).receipt);
  REQUIRE_THROWS_WITH(k.compensate(*once.receipt), Catch::Contains("irreversible"));
  const Outcome hover = k.execute("hover");
  REQUIRE(hover.receipt);
  REQUIRE(k.execute("inc", {{"k", Value::integer(1)}}).receipt);
  const Amount net = k.budget().net();
  const std::uint64_t emergency = k.emergency_steps();
  k.compensate(*hover.receipt);
  REQUIRE(k.budget().net() == net);
  REQUIRE(k.emergency_steps() == emergency);
  // Entries that are not committed actions are refused.
  REQUIRE_THROWS_WITH(k.compensate(0), Catch::Contains("not a committed action"));
  REQUIRE_THROWS_WITH(k.compensate(9999), Catch::Contains("not a committed action"));
  REQUIRE(replay_trace(model, k.trace()) == std::nullopt);
  k.seal();
  REQUIRE_THROWS_WITH(k.compensate(*up.receipt), Catch::Contains("sealed"));
}

TEST_CASE("Compensation: a dropped undo record is named", "[kernel][compensation]") {
  KernelOptions o = options();
  o.undo_depth = 2;
  SafetyKernel k(model_from(kSpec), o);
  const Outcome first = k.execute("inc", {{"k", Value::integer(1)}});
  for (int i = 0; i < 3; ++i) REQUIRE(k.execute("inc", {{"k", Value::integer(1)}}).receipt);
  REQUIRE_THROWS_WITH(k.compensate(*first.receipt), Catch::Contains("undo_depth"));
}

TEST_CASE("Compensation: a tampered compensation fails verification and replay",
          "[kernel][compensation][adversarial]") {
  const auto model = model_from(kSpec);
  SafetyKernel k(model, options());
  const Outcome a = k.execute("inc", {{"k", Value::integer(5)}});
  const Outcome b = k.execute("inc", {{"k", Value::integer(7)}});
  REQUIRE(k.execute("dec", {{"k", Value::integer(2)}}).receipt);
  k.compensate(*a.receipt);
  REQUIRE(k.execute("to_b").receipt);
  const std::vector<TraceEntry> good = k.trace();
  REQUIRE(replay_trace(model, good) == std::nullopt);
  const std::size_t at = 4;
  REQUIRE(good[at].kind == EntryKind::compensated);
  // Each forgery, its hash recomputed (the chain breaks at the next entry) or not.
  auto forged = [&](const std::function<void(TraceEntry&)>& change) {
    std::vector<TraceEntry> t = good;
    change(t[at]);
    REQUIRE_FALSE(verify_chain(t, true).ok);  // the hash no longer matches
    t[at].hash = t[at].compute_hash();
    const TraceCheck chain = verify_chain(t, true);
    REQUIRE_FALSE(chain.ok);
    REQUIRE(chain.first_bad == at + 1);  // the next entry links to the old hash
    const auto mismatch = replay_trace(model, t);
    REQUIRE(mismatch);
    REQUIRE(mismatch->first == at);
    return mismatch->second;
  };
  // Another step named: it undoes other values.
  CHECK_THAT(forged([&](TraceEntry& e) {
               e.params[0].second = Value::integer(static_cast<std::int64_t>(b.receipt->sequence));
             }),
             Catch::Contains("other values"));
  // Another value restored.
  CHECK_THAT(forged([](TraceEntry& e) { e.changes[0].second = Value::integer(44); }),
             Catch::Contains("other values"));
  // A smaller refund.
  CHECK_THAT(forged([](TraceEntry& e) { e.net = "9990.000"; }), Catch::Contains("budget"));
  // No step named, or a step that is not one.
  CHECK_THAT(forged([](TraceEntry& e) { e.params.clear(); }), Catch::Contains("without its step"));
  CHECK_THAT(forged([](TraceEntry& e) { e.params[0].second = Value::integer(0); }),
             Catch::Contains("not a committed action"));
  // A second compensation of the same step, appended and linked.
  std::vector<TraceEntry> twice = good;
  TraceEntry dup = good[at];
  dup.sequence = good.size();
  dup.prev = good.back().hash;
  dup.hash = dup.compute_hash();
  twice.push_back(dup);
  REQUIRE(verify_chain(twice, true).ok);
  const auto mismatch = replay_trace(model, twice);
  REQUIRE(mismatch);
  REQUIRE(mismatch->first == good.size());
  REQUIRE_THAT(mismatch->second, Catch::Contains("compensated already"));
  // Resuming such a trace is refused too, naming the entry.
  KernelOptions resume = options();
  resume.resume = twice;
  REQUIRE_THROWS_WITH(SafetyKernel(model, resume),
                      Catch::Contains("entry " + std::to_string(good.size())));
}

TEST_CASE("Compensation: written to a file, read back and verified", "[kernel][compensation]") {
  const auto model = model_from(kSpec);
  const std::string path = clampai::test::temp_file("compensation.jsonl");
  {
    KernelOptions o = options();
    o.writer = std::make_shared<TraceWriter>(path, FlushPolicy::flush, TraceOpen::create);
    SafetyKernel k(model, o);
    const Outcome a = k.execute("set_level", {{"v", Value::integer(3)}});
    REQUIRE(k.execute("inc", {{"k", Value::integer(2)}}).receipt);
    k.compensate(*a.receipt, "bob");
    k.seal();
  }
  REQUIRE(verify_trace_file(path).ok);
  const std::vector<TraceEntry> read = read_trace_file(path);
  REQUIRE(read.at(3).kind == EntryKind::compensated);
  REQUIRE(to_string(read.at(3).kind) == "compensated");
  State end = model->initial_state();
  REQUIRE(replay_trace(model, read, &end) == std::nullopt);
  REQUIRE(end.get("level") == Value::integer(0));
  std::filesystem::remove(path);
}
