// The run loop in shadow mode (issue 40, `clampai run --shadow`): through the driver's shadow
// committer every step is followed whatever the kernel decides; the would-be decisions equal an
// enforcing kernel's on the same proposals until their states part; where nothing is
// approvable the first screened rejection is followed, within the step bound (T2).
#include <catch2/catch.hpp>

#include <random>

#include "clampai/driver.hpp"
#include "clampai/kernel.hpp"
#include "shadow_spec.hpp"

using namespace clampai::kernel;
using namespace clampai::driver;

namespace {

const char* const kSpec = clampai::testing::kShadowSpec;

// Sends of 4 from a balance of 10 that must stay >= 0: an enforcing run stops after two.
const char* kSends = R"J({"name": "sends", "goal": "sent >= 20",
  "variables": {"balance": {"type": "int", "initial": 10, "min": -1000},
                "sent": {"type": "int", "initial": 0}},
  "actions": [{"id": "send", "cost": 1, "reversible": true,
               "effects": [{"variable": "balance", "mode": "decrement", "value": 4},
                           {"variable": "sent", "mode": "increment", "value": 4}]}],
  "invariants": [{"name": "solvent", "check": "balance >= 0"}],
  "budget": {"total": %TOTAL%, "min_action_cost": 1}})J";

std::string sends(int total) {
  std::string s = kSends;
  s.replace(s.find("%TOTAL%"), 7, std::to_string(total));
  return s;
}

std::string reasons_text(const std::vector<Reason>& reasons) {
  std::string out;
  for (const Reason& r : reasons)
    out += std::string(to_string(r.code)) + "|" + r.subject + "|" + r.message + "\n";
  return out;
}

std::string decision_text(const TaskModel& m, const Decision& d) {
  std::string out = std::string(d.approved ? "approved" : "rejected") + " cost " +
                    m.format_amount(d.cost) + (d.emergency ? " emergency" : "") + "\n";
  out += reasons_text(d.reasons) + "warnings:\n" + reasons_text(d.warnings) + "changes:";
  for (const auto& [id, v] : d.changes) out += " " + m.variables[id].name + "=" + v.to_string();
  return out;
}

bool same_situation(const SafetyKernel& a, const SafetyKernel& b) {
  return a.state() == b.state() && a.budget().gross() == b.budget().gross() &&
         a.budget().net() == b.budget().net() && a.steps() == b.steps() &&
         a.emergency_steps() == b.emergency_steps();
}

// A chooser of random proposals (parameters out of their bounds too), which executes each on
// an enforcing kernel of its own as long as the two kernels are in the same situation, and
// compares the shadow run's would-be decision with the enforcing kernel's.
class Mirror final : public Driver {
 public:
  Mirror(std::shared_ptr<const TaskModel> model, std::uint64_t seed, const SafetyKernel& shadow)
      : model_(model), enforcing_(model), shadow_(shadow), rng_(seed) {}

  Choice next(const SafetyKernel& /*view*/) override {
    Choice c;
    if (proposed_ == 80) {
      c.stop = Termination::llm_stop;
      return c;
    }
    static const char* kActions[] = {"add", "add", "add", "sub", "grow", "after", "stop"};
    const std::string action = kActions[rng_() % 7];
    ParamMap params;
    if (action == "add" && rng_() % 4 != 0)
      params.emplace_back("k", Value::integer(static_cast<std::int64_t>(rng_() % 10) - 1));
    c.proposal = std::get<Proposal>(resolve(*model_, action, params, ParamCheck::fitted));
    ++proposed_;
    return c;
  }
  void shadowed(const Proposal& p, const Decision& would_be) override {
    ++shadowed_;
    if (parted) return;
    const Outcome e = enforcing_.execute(p);
    CHECK(decision_text(*model_, would_be) == decision_text(*model_, e.decision));
    ++compared;
    if (!e.decision.approved) expected.push_back(reasons_text(e.decision.reasons));
  }
  void committed(const Proposal& /*p*/, const Outcome& o) override {
    CHECK(o.receipt.has_value() == o.decision.approved);  // blocked only if not computable
    if (!parted) parted = !same_situation(enforcing_, shadow_);
  }

  bool parted = false;
  std::size_t compared = 0;
  std::vector<std::string> expected;  // the enforcing kernel's rejections until they part
  std::size_t shadowed_ = 0;
  [[nodiscard]] std::size_t proposed() const { return proposed_; }

 private:
  std::shared_ptr<const TaskModel> model_;
  SafetyKernel enforcing_;
  const SafetyKernel& shadow_;
  std::mt19937_64 rng_;
  std::size_t proposed_ = 0;
};

}  // namespace

TEST_CASE(
    "Shadow run: would-be decisions equal an enforcing kernel's until the states part; "
    "every would-be rejection is listed; nothing is blocked",
    "[driver][shadow]") {
  const auto model = load_spec(kSpec);
  std::size_t bounded = 0;  // runs the step bound ended, the chooser still proposing
  for (std::uint64_t seed = 1; seed <= 25; ++seed) {
    INFO("seed " << seed);
    SafetyKernel kernel(model);
    ShadowCommitter shadow(kernel);
    Mirror mirror(model, seed, kernel);
    RunOptions options;
    options.refusals_before_stop = 0;  // the chooser stops the run
    const RunResult r = run(shadow, mirror, options);
    CHECK(r.shadow);
    // The chooser stops, or the step bound (T2) does: the kernel does not, in shadow mode.
    if (r.termination == Termination::step_limit) {
      CHECK(kernel.steps() == static_cast<std::uint64_t>(kernel.step_limit()));
      ++bounded;
    } else {
      CHECK(r.termination == Termination::llm_stop);
    }
    CHECK(mirror.shadowed_ == mirror.proposed());  // every proposal went through the shadow step
    CHECK(mirror.compared > 0);
    // The listed would-be rejections begin with the enforcing kernel's, in order.
    REQUIRE(r.shadow_rejections.size() >= mirror.expected.size());
    for (std::size_t i = 0; i < mirror.expected.size(); ++i)
      CHECK(reasons_text(r.shadow_rejections[i].reasons) == mirror.expected[i]);
    CHECK_FALSE(r.shadow_rejections.empty());
    // Every step's entry says it was not enforced, and the trace replays (trace verify --spec).
    const std::vector<TraceEntry> trace = kernel.trace();
    for (std::size_t i = 1; i < trace.size(); ++i) CHECK_FALSE(trace[i].enforced);
    const auto mismatch = replay_trace(model, trace);
    CHECK_FALSE(mismatch.has_value());
  }
  CHECK(bounded > 0);
}

TEST_CASE("Shadow run: where the enforcing run stops, the first screened rejection is followed",
          "[driver][shadow]") {
  const auto model = load_spec(sends(25));
  {
    SafetyKernel enforcing(model);
    FirstApprovableDriver driver;
    const RunResult r = run(enforcing, driver);
    CHECK(r.termination == Termination::no_approvable_action);
    CHECK(r.executed == 2);
    CHECK_FALSE(r.shadow);
    CHECK(r.shadow_rejections.empty());
  }
  SafetyKernel kernel(model);
  ShadowCommitter shadow(kernel);
  FirstApprovableDriver driver;
  const RunResult r = run(shadow, driver);
  CHECK(r.goal_reached);
  CHECK(r.executed == 5);
  CHECK(kernel.state().get("balance") == Value::integer(-10));
  REQUIRE(r.shadow_rejections.size() == 3);
  for (const ShadowRejection& s : r.shadow_rejections) {
    CHECK(s.action == "send");
    CHECK(s.sequence.has_value());
    REQUIRE_FALSE(s.reasons.empty());
    CHECK(s.reasons[0].code == ReasonCode::invariant_violated);
  }
  CHECK(kernel.trace().size() == 6);  // the genesis and the five steps: screenings not traced
}

TEST_CASE("Shadow run: the step bound (T2) ends a run whose goal is out of reach",
          "[driver][shadow]") {
  std::string far = sends(6);
  far.replace(far.find("sent >= 20"), 10, "sent >= 99");
  const auto unreachable = load_spec(far);
  SafetyKernel kernel(unreachable);
  ShadowCommitter shadow(kernel);
  FirstApprovableDriver driver;
  const RunResult r = run(shadow, driver);
  CHECK_FALSE(r.goal_reached);
  CHECK(r.termination == Termination::step_limit);
  CHECK(kernel.steps() == 6);
  CHECK(r.shadow_rejections.size() == 4);  // 6 steps, 2 of them approvable
}

TEST_CASE("Shadow run: an action that asks for an approval is followed without one",
          "[driver][shadow]") {
  const auto model = load_spec(R"J({"name": "audit", "goal": "done == 1",
    "variables": {"done": {"type": "int", "initial": 0}},
    "actions": [{"id": "audit", "cost": 1, "approval": {"ttl_s": 60},
                 "effects": [{"variable": "done", "mode": "set", "value": 1}]}],
    "budget": {"total": 5, "min_action_cost": 1}})J");
  SafetyKernel kernel(model);
  ShadowCommitter shadow(kernel);
  FirstApprovableDriver driver;
  RunOptions options;
  bool asked = false;
  options.approve = [&asked](const Ticket&, const Decision&) {
    asked = true;
    return ApprovalAnswer{};
  };
  const RunResult r = run(shadow, driver, options);
  CHECK(r.goal_reached);
  CHECK_FALSE(asked);
  CHECK(r.shadow_rejections.empty());  // approved: waiting for a person is not a rejection
  CHECK(r.waiting.empty());
}
