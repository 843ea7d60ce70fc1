// Shadow mode (issue 40): `execute_unenforced` decides exactly as `execute` and blocks nothing;
// its trace entries carry `enforced: false` and replay (trace verify --spec, a resume) as such.
#include <catch2/catch.hpp>
#include <random>

#include "shadow_spec.hpp"
#include "support.hpp"

using namespace clampai::kernel;

namespace {

using clampai::testing::kShadowSpec;

std::string reasons_text(const std::vector<Reason>& reasons) {
  std::string out;
  for (const Reason& r : reasons)
    out += std::string(to_string(r.code)) + "|" + r.subject + "|" + r.message + "\n";
  return out;
}

// The decision as every front end writes it: what must be the same.
std::string decision_text(const TaskModel& m, const Decision& d) {
  std::string out = std::string(d.approved ? "approved" : "rejected") + " cost " +
                    m.format_amount(d.cost) + (d.emergency ? " emergency" : "") + "\n";
  out += reasons_text(d.reasons) + "warnings:\n" + reasons_text(d.warnings) + "changes:";
  for (const auto& [id, v] : d.changes) out += " " + m.variables[id].name + "=" + v.to_string();
  return out;
}

struct Call {
  std::string action;
  ParamMap params;
};

Call random_call(std::mt19937_64& rng) {
  static const char* kActions[] = {"add", "add", "add", "sub", "grow", "after", "stop", "nope"};
  Call c{kActions[rng() % 8], {}};
  if (c.action == "add" && rng() % 4 != 0)
    c.params.emplace_back("k", Value::integer(static_cast<std::int64_t>(rng() % 10) - 1));
  return c;
}

bool same_situation(const SafetyKernel& a, const SafetyKernel& b) {
  return a.state() == b.state() && a.budget().gross() == b.budget().gross() &&
         a.budget().net() == b.budget().net() && a.steps() == b.steps() &&
         a.emergency_steps() == b.emergency_steps();
}

}  // namespace

TEST_CASE(
    "shadow: decisions equal the enforcing kernel's up to the first divergence, and "
    "nothing is blocked",
    "[shadow]") {
  const auto model = load_spec(kShadowSpec);
  for (std::uint64_t seed = 1; seed <= 25; ++seed) {
    INFO("seed " << seed);
    std::mt19937_64 rng(seed);
    SafetyKernel enforcing(model);
    SafetyKernel shadow(model);
    bool diverged = false;
    std::size_t compared = 0;
    std::size_t would_be_rejections_followed = 0;
    for (int i = 0; i < 120; ++i) {
      const Call c = random_call(rng);
      INFO("call " << i << ": " << c.action);
      const State before = shadow.state();
      const ShadowStep step = shadow.execute_unenforced(c.action, c.params);
      const Outcome& s = step.outcome;
      if (!diverged) {
        const Outcome e = enforcing.execute(c.action, c.params);
        REQUIRE(decision_text(*model, step.would_be) == decision_text(*model, e.decision));
        ++compared;
        diverged = !same_situation(enforcing, shadow);
        // Only a would-be rejection that was followed makes them part.
        if (diverged) CHECK((!e.decision.approved && s.receipt.has_value()));
      }
      // Never blocked: committed whenever what it does can be computed.
      auto fitted = resolve(*model, c.action, c.params, ParamCheck::fitted);
      Amount cost = 0;
      Changes changes;
      const bool computable =
          std::holds_alternative<Proposal>(fitted) &&
          preview_into(*model, before, std::get<Proposal>(fitted), cost, changes);
      CHECK(s.receipt.has_value() == computable);
      if (s.receipt) {
        CHECK(shadow.state() == before.with(changes));
        CHECK(s.decision.approved);
        CHECK(s.state == shadow.state());
        if (!step.would_be.approved) ++would_be_rejections_followed;
      } else {
        CHECK(shadow.state() == before);
        CHECK_FALSE(step.would_be.approved);
      }
    }
    CHECK(compared > 0);
    CHECK(would_be_rejections_followed > 0);  // each seed tried what enforcing mode refuses

    // Every entry says it was not enforced; the trace replays as such (trace verify --spec),
    // and a kernel resumes from it (a restart) to the same place.
    const std::vector<TraceEntry> trace = shadow.trace();
    for (std::size_t i = 1; i < trace.size(); ++i) CHECK_FALSE(trace[i].enforced);
    State replayed = model->initial_state();
    const auto mismatch = replay_trace(model, trace, &replayed);
    CHECK_FALSE(mismatch.has_value());
    if (mismatch) FAIL_CHECK("entry " << mismatch->first << ": " << mismatch->second);
    CHECK(replayed == shadow.state());
    KernelOptions options;
    options.resume = trace;
    SafetyKernel resumed(model, options);
    CHECK(same_situation(resumed, shadow));
  }
}

TEST_CASE("shadow: past the budget, the step limit and an invariant, and back by rollback",
          "[shadow]") {
  const auto model = load_spec(kShadowSpec);
  SafetyKernel k(model);
  // Past the blocking invariant `small` (n <= 12): followed, the would-be reasons recorded.
  ShadowStep o = k.execute_unenforced("add", {{"k", Value::integer(5)}});
  o = k.execute_unenforced("add", {{"k", Value::integer(5)}});
  o = k.execute_unenforced("add", {{"k", Value::integer(5)}});
  REQUIRE(o.outcome.receipt);
  CHECK_FALSE(o.would_be.approved);
  CHECK(o.would_be.has(ReasonCode::invariant_violated));
  CHECK(k.state().get(*model->schema->find("n")).as_number().to_string() == "15");
  // A parameter out of its bounds is followed too.
  o = k.execute_unenforced("add", {{"k", Value::integer(9)}});
  REQUIRE(o.outcome.receipt);
  CHECK(o.would_be.has(ReasonCode::invalid_parameter));
  // Past the budget (40): net spend goes over, T1 not enforced.
  for (int i = 0; i < 5; ++i) o = k.execute_unenforced("add", {{"k", Value::integer(5)}});
  CHECK(o.would_be.has(ReasonCode::budget_exceeded));
  CHECK(k.budget().net() > k.budget().total());
  CHECK(k.budget().remaining() < 0);
  // Rolled back like any commit: the refund brings net spend down by its cost.
  const Amount net = k.budget().net();
  const Outcome undone = k.rollback(*o.outcome.receipt);
  CHECK(k.budget().net() == net - o.outcome.receipt->cost);
  CHECK(undone.decision.approved);
  // The rollback's entry is an ordinary one; the trace replays.
  const auto trace = k.trace();
  CHECK(trace.back().kind == EntryKind::rolled_back);
  CHECK_FALSE(replay_trace(model, trace).has_value());
  // What cannot be computed is not followed: a rejected entry, enforced false.
  for (int i = 0; i < 4; ++i) o = k.execute_unenforced("grow");
  CHECK_FALSE(o.outcome.receipt);
  CHECK(o.would_be.has(ReasonCode::overflow));
  CHECK(k.trace().back().kind == EntryKind::rejected);
  CHECK_FALSE(k.trace().back().enforced);
  o = k.execute_unenforced("nope");
  CHECK_FALSE(o.outcome.receipt);
  CHECK(o.would_be.has(ReasonCode::unknown_action));
  CHECK_FALSE(replay_trace(model, k.trace()).has_value());
}

TEST_CASE("shadow: a replay refuses unenforced entries that lie", "[shadow]") {
  const auto model = load_spec(kShadowSpec);
  SafetyKernel k(model);
  (void)k.execute_unenforced("sub");  // requires n > 0: a would-be rejection, followed
  (void)k.execute_unenforced("add", {{"k", Value::integer(2)}});
  std::vector<TraceEntry> trace = k.trace();
  REQUIRE(trace.size() == 3);
  REQUIRE_FALSE(trace[1].reasons.empty());
  REQUIRE_FALSE(replay_trace(model, trace).has_value());
  SECTION("a would-be rejection recorded as a would-be approval") {
    trace[1].reasons.clear();
    const auto m = replay_trace(model, trace);
    REQUIRE(m.has_value());
    CHECK(m->first == 1);
    CHECK(m->second.find("rejected on replay") != std::string::npos);
  }
  SECTION("an unenforced step read as an enforced one") {
    trace[1].enforced = true;
    const auto m = replay_trace(model, trace);
    REQUIRE(m.has_value());
    CHECK(m->second.find("is rejected on replay") != std::string::npos);
  }
  SECTION("other changes than the effects compute") {
    trace[2].changes = {{"n", Value::integer(7)}};
    const auto m = replay_trace(model, trace);
    REQUIRE(m.has_value());
    CHECK(m->first == 2);
    CHECK(m->second.find("changes other values") != std::string::npos);
  }
  SECTION("a step recorded as not followed that could be") {
    trace[1].kind = EntryKind::rejected;
    trace[1].changes.clear();
    const auto m = replay_trace(model, trace);
    REQUIRE(m.has_value());
    CHECK(m->first == 1);
    CHECK(m->second.find("could not be followed, but it can") != std::string::npos);
  }
}

TEST_CASE("shadow: refused on a kernel in a budget pool; enforcing execute unchanged", "[shadow]") {
  const std::string spec = std::string(kShadowSpec)
                               .replace(std::string(kShadowSpec).find("\"total\": 40"),
                                        11,
                                        "\"total\": 40, \"pool\": \"team\"");
  auto pools = PoolTree::build({PoolDecl{"team", Decimal::integer(100), ""}});
  KernelOptions options;
  options.pools = pools;
  SafetyKernel k(load_spec(spec), options);
  CHECK_THROWS_WITH(k.execute_unenforced("add"), Catch::Contains("cannot run in shadow mode"));
  // The enforcing kernel's entries have no `enforced` member.
  SafetyKernel plain(load_spec(kShadowSpec));
  (void)plain.execute("add");
  CHECK(plain.trace().back().enforced);
}
