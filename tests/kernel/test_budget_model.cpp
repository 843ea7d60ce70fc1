// Bounded model check of the budget ledger through the real BudgetController: the same state
// space as tla/BudgetSafety.tla with the constants of tla/BudgetSafety.cfg, explored breadth-first.
// T1: 0 <= net spend <= total in every reached state. T4: gross spend never decreases.
// Lean: lean/ClampAI/Thm/Budget.lean. The state count is recorded in tla/README.md.
#include <catch2/catch.hpp>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "clampai/kernel/budget.hpp"
#include "clampai/kernel/error.hpp"

namespace {

using clampai::kernel::Amount;
using clampai::kernel::BudgetController;

// The CONSTANTS of tla/BudgetSafety.cfg and tla/BudgetSafetyBroken.cfg: change them together.
constexpr Amount kBudget = 20;
constexpr Amount kMaxCost = 10;
constexpr Amount kMinCost = 2;
constexpr std::int64_t kMaxSteps = 10;
constexpr std::int64_t kMaxEmergency = 3;
static_assert(kMaxSteps == kBudget / kMinCost, "max_steps = floor(total / min_action_cost)");

// Distinct states of tla/BudgetSafety.cfg, as recorded in tla/README.md.
constexpr std::size_t kExpectedStates = 35524;
// Longest shortest path from the initial state, in transitions.
constexpr int kExpectedDiameter = 23;

// A state of the TLA+ spec: VARIABLES gross, refunded, steps, emergencySteps.
using Key = std::tuple<Amount, Amount, std::int64_t, std::int64_t>;

// The ledger plus the kernel's step counters around it.
struct ModelState {
  BudgetController budget{kBudget};
  std::int64_t steps = 0;
  std::int64_t emergency_steps = 0;

  [[nodiscard]] Key key() const {
    return {budget.gross(), budget.refunded(), steps, emergency_steps};
  }
};

bool same_ledger(const BudgetController& a, const BudgetController& b) {
  return a.total() == b.total() && a.gross() == b.gross() && a.refunded() == b.refunded();
}

// BudgetSafe of the TLA+ spec (T1), plus the C++ class invariant 0 <= refunded <= gross.
bool budget_safe(const BudgetController& b) {
  return b.refunded() >= 0 && b.refunded() <= b.gross() && b.net() >= 0 && b.net() <= b.total();
}

// True iff charging `cost` throws InvalidArgument and leaves a copy of `b` unchanged.
bool charge_is_rejected(const BudgetController& b, Amount cost) {
  BudgetController copy = b;
  try {
    copy.charge(cost);
  } catch (const clampai::InvalidArgument&) {
    return same_ledger(copy, b);
  }
  return false;
}

// True iff refunding `amount` throws InvalidArgument and leaves a copy of `b` unchanged.
bool refund_is_rejected(const BudgetController& b, Amount amount) {
  BudgetController copy = b;
  try {
    copy.refund(amount);
  } catch (const clampai::InvalidArgument&) {
    return same_ledger(copy, b);
  }
  return false;
}

struct Exploration {
  std::size_t distinct_states = 0;
  int diameter = 0;
  std::size_t transitions = 0;
  std::size_t t1_violations = 0;
  std::size_t t4_violations = 0;
  std::size_t rejected_charges_checked = 0;
  std::size_t rejected_refunds_checked = 0;
  std::size_t bad_rejections = 0;
};

// Next of the TLA+ spec: every action with every argument in range, through BudgetController.
// Arguments a guard refuses are checked to throw and change nothing.
std::vector<ModelState> successors(const ModelState& s, Exploration& stats) {
  std::vector<ModelState> out;
  // Charge(c): a committed non-emergency action of cost c.
  for (Amount c = 0; c <= kMaxCost; ++c) {
    if (!s.budget.can_afford(c)) {
      ++stats.rejected_charges_checked;
      if (!charge_is_rejected(s.budget, c)) ++stats.bad_rejections;
      continue;
    }
    if (c < kMinCost || s.steps >= kMaxSteps) continue;  // the kernel's other guards
    ModelState t = s;
    t.budget.charge(c);
    ++t.steps;
    out.push_back(t);
  }
  // Refund(a): rollback of an action of cost a.
  for (Amount a = 0; a <= kMaxCost; ++a) {
    if (!s.budget.can_refund(a)) {
      ++stats.rejected_refunds_checked;
      if (!refund_is_rejected(s.budget, a)) ++stats.bad_rejections;
      continue;
    }
    ModelState t = s;
    t.budget.refund(a);
    out.push_back(t);
  }
  // Reject: nothing changes.
  out.push_back(s);
  // Emergency: costs exactly 0, charged 0, counted apart from steps.
  if (s.emergency_steps < kMaxEmergency && s.budget.can_afford(0)) {
    ModelState t = s;
    t.budget.charge(0);
    ++t.emergency_steps;
    out.push_back(t);
  }
  return out;
}

Exploration explore() {
  Exploration stats;
  std::set<Key> seen;
  std::deque<std::pair<ModelState, int>> frontier;
  const ModelState init;
  seen.insert(init.key());
  frontier.emplace_back(init, 0);
  if (!budget_safe(init.budget)) ++stats.t1_violations;
  while (!frontier.empty()) {
    const auto [s, depth] = frontier.front();
    frontier.pop_front();
    if (depth > stats.diameter) stats.diameter = depth;
    for (const ModelState& t : successors(s, stats)) {
      ++stats.transitions;
      if (t.budget.gross() < s.budget.gross()) ++stats.t4_violations;
      if (!seen.insert(t.key()).second) continue;
      if (!budget_safe(t.budget)) ++stats.t1_violations;
      frontier.emplace_back(t, depth + 1);
    }
  }
  stats.distinct_states = seen.size();
  return stats;
}

// BudgetSafetyBroken.tla, by raw arithmetic: Charge without its CanAfford guard.
struct RawState {
  Amount gross = 0;
  Amount refunded = 0;
  std::int64_t steps = 0;
  std::int64_t emergency_steps = 0;

  [[nodiscard]] Key key() const { return {gross, refunded, steps, emergency_steps}; }
  [[nodiscard]] Amount net() const { return gross - refunded; }
};

std::vector<RawState> broken_successors(const RawState& s) {
  std::vector<RawState> out;
  for (Amount c = kMinCost; c <= kMaxCost; ++c) {
    if (s.steps >= kMaxSteps) break;  // no `c <= Budget - Net`: the guard under test is gone
    RawState t = s;
    t.gross += c;
    ++t.steps;
    out.push_back(t);
  }
  for (Amount a = 0; a <= kMaxCost && a <= s.net(); ++a) {
    RawState t = s;
    t.refunded += a;
    out.push_back(t);
  }
  out.push_back(s);
  if (s.emergency_steps < kMaxEmergency && s.net() <= kBudget) {
    RawState t = s;
    ++t.emergency_steps;
    out.push_back(t);
  }
  return out;
}

// Breadth-first search for the first state that breaks BudgetSafe; returns the trace to it.
std::vector<RawState> broken_counterexample() {
  std::map<Key, Key> parent;
  std::map<Key, RawState> by_key;
  std::deque<RawState> frontier;
  const RawState init;
  parent.emplace(init.key(), init.key());
  by_key.emplace(init.key(), init);
  frontier.push_back(init);
  while (!frontier.empty()) {
    const RawState s = frontier.front();
    frontier.pop_front();
    for (const RawState& t : broken_successors(s)) {
      if (!parent.emplace(t.key(), s.key()).second) continue;
      by_key.emplace(t.key(), t);
      if (t.net() < 0 || t.net() > kBudget) {
        std::vector<RawState> trace{t};
        for (Key k = s.key(); k != init.key(); k = parent.at(k)) trace.push_back(by_key.at(k));
        trace.push_back(init);
        return {trace.rbegin(), trace.rend()};
      }
      frontier.push_back(t);
    }
  }
  return {};
}

}  // namespace

TEST_CASE("BudgetController: bounded model of BudgetSafety.tla keeps T1 and T4",
          "[kernel][budget]") {
  const Exploration stats = explore();

  CHECK(stats.distinct_states == kExpectedStates);
  CHECK(stats.diameter == kExpectedDiameter);
  CHECK(stats.t1_violations == 0);
  CHECK(stats.t4_violations == 0);
  // Every refused argument was refused by a throw that changed nothing.
  CHECK(stats.rejected_charges_checked > 0);
  CHECK(stats.rejected_refunds_checked > 0);
  CHECK(stats.bad_rejections == 0);
  CHECK(stats.transitions > stats.distinct_states);
}

TEST_CASE("BudgetController: an unaffordable charge throws and changes nothing",
          "[kernel][budget]") {
  BudgetController budget(kBudget);
  budget.charge(15);
  budget.refund(3);
  REQUIRE(budget.net() == 12);
  REQUIRE(budget.remaining() == 8);

  CHECK_FALSE(budget.can_afford(9));
  CHECK_THROWS_AS(budget.charge(9), clampai::InvalidArgument);
  CHECK_FALSE(budget.can_afford(-1));
  CHECK_THROWS_AS(budget.charge(-1), clampai::InvalidArgument);
  CHECK(budget.gross() == 15);
  CHECK(budget.refunded() == 3);

  CHECK(budget.can_afford(8));  // exactly the remaining budget is affordable
  budget.charge(8);
  CHECK(budget.net() == kBudget);
  CHECK(budget.can_afford(0));
  CHECK_FALSE(budget.can_afford(1));
}

TEST_CASE("BudgetController: refunding more than net spend throws and changes nothing",
          "[kernel][budget]") {
  BudgetController budget(kBudget);
  budget.charge(5);

  CHECK_FALSE(budget.can_refund(6));
  CHECK_THROWS_AS(budget.refund(6), clampai::InvalidArgument);
  CHECK_THROWS_AS(budget.refund(-1), clampai::InvalidArgument);
  CHECK(budget.gross() == 5);
  CHECK(budget.refunded() == 0);

  budget.refund(5);  // a full refund leaves gross spend where it was (T4)
  CHECK(budget.net() == 0);
  CHECK(budget.gross() == 5);
  CHECK_THROWS_AS(budget.refund(1), clampai::InvalidArgument);
}

TEST_CASE("BudgetController: without the charge guard T1 fails, as in BudgetSafetyBroken.tla",
          "[kernel][budget]") {
  const std::vector<RawState> trace = broken_counterexample();

  // A shortest counterexample: three charges, the last taking net spend past the budget.
  REQUIRE(trace.size() == 4);
  CHECK(trace.back().net() > kBudget);
  REQUIRE(trace.back().steps == 3);  // so every transition is a charge
  CHECK(trace[2].net() <= kBudget);

  // The real controller refuses the last charge of that trace.
  BudgetController budget(kBudget);
  for (std::size_t i = 1; i + 1 < trace.size(); ++i) {
    budget.charge(trace[i].gross - trace[i - 1].gross);
  }
  const Amount last = trace.back().gross - trace[trace.size() - 2].gross;
  CHECK_FALSE(budget.can_afford(last));
  CHECK(charge_is_rejected(budget, last));
}

TEST_CASE(
    "BudgetController: a charge whose gross spend would leave int64 throws and changes "
    "nothing",
    "[kernel][budget]") {
  // Refunds let gross spend grow past the total; near the int64 limit a second charge of the
  // whole budget after a full refund would overflow (tests/formal/model_differential.cpp
  // found that this aborted the process).
  constexpr Amount max = std::numeric_limits<Amount>::max();
  BudgetController budget(max);
  budget.charge(max);
  budget.refund(max);
  CHECK(budget.can_afford(max));  // affordable: net spend is 0
  try {
    budget.charge(max);
    FAIL("the charge should have thrown");
  } catch (const clampai::InvalidArgument& e) {
    CHECK(std::string(e.what()).find("int64") != std::string::npos);
  }
  CHECK(budget.gross() == max);
  CHECK(budget.refunded() == max);
  CHECK(budget.net() == 0);
  budget.charge(0);  // what still fits is still charged
  CHECK(budget.gross() == max);
}
