// Property tests: T1-T8 over 1,000 seeded random task specs and random operation sequences.
#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "../kernel/support.hpp"
#include "clampai/driver.hpp"
#include "random_spec.hpp"

using namespace clampai::kernel;
using namespace clampai::driver;
using clampai::test::random_model;
using clampai::test::random_proposal;
using clampai::test::satisfies_blocking;

namespace {

constexpr int kSpecs = 1000;
constexpr int kOpsPerSpec = 60;

struct Snapshot {
  State state;
  Amount gross, net;
  std::uint64_t steps, emergency_steps;
};

Snapshot snapshot(const SafetyKernel& k) {
  const auto b = k.budget();
  return Snapshot{k.state(), b.gross(), b.net(), k.steps(), k.emergency_steps()};
}

}  // namespace

TEST_CASE("Theorems: T1-T5 and T7 hold along random runs of random specs",
          "[properties][theorems]") {
  std::mt19937_64 rng(20261122);
  std::uint64_t approved = 0, rejected = 0, rollbacks = 0;
  for (int spec = 0; spec < kSpecs; ++spec) {
    const auto model = random_model(rng);
    SafetyKernel k(model);
    std::vector<std::pair<Receipt, State>> undo;  // receipts still in effect, with the state before
    for (int op = 0; op < kOpsPerSpec; ++op) {
      const Snapshot before = snapshot(k);
      const bool try_rollback = !undo.empty() && rng() % 5 == 0;
      if (try_rollback) {
        const auto [receipt, state_before] = undo.back();
        if (!model->actions[receipt.action].reversible) {
          REQUIRE_THROWS_AS(k.rollback(receipt), clampai::InvalidArgument);
          undo.clear();  // irreversible: nothing below it can be rolled back in order either
          continue;
        }
        k.rollback(receipt);
        undo.pop_back();
        ++rollbacks;
        // T7: exactly the state before the action; its cost refunded; steps not decreased.
        REQUIRE(k.state() == state_before);
        REQUIRE(k.budget().net() == before.net - receipt.cost);
        REQUIRE(k.steps() == before.steps);
      } else {
        const Proposal p = random_proposal(*model, rng);
        const Outcome o = k.execute(p);
        if (o.decision.approved) {
          ++approved;
          undo.emplace_back(*o.receipt, before.state);
          if (model->actions[p.action].emergency) {
            REQUIRE(k.emergency_steps() == before.emergency_steps + 1);
          }
        } else {
          ++rejected;
          // T5: a rejection changes nothing.
          const Snapshot after = snapshot(k);
          REQUIRE(after.state == before.state);
          REQUIRE(after.gross == before.gross);
          REQUIRE(after.net == before.net);
          REQUIRE(after.steps == before.steps);
          REQUIRE(after.emergency_steps == before.emergency_steps);
        }
      }
      const Snapshot now = snapshot(k);
      // T1: net spend within the budget, never negative.
      REQUIRE(now.net <= model->budget.total);
      REQUIRE(now.net >= 0);
      // T2: non-emergency steps within floor(B / eps).
      REQUIRE(now.steps <= static_cast<std::uint64_t>(model->budget.step_limit));
      // T3: every blocking invariant and bound holds in every reached state.
      REQUIRE(satisfies_blocking(*model, now.state));
      // T4: gross spend never decreases.
      REQUIRE(now.gross >= before.gross);
    }
    // T6 in memory: the chain verifies, and replays to the same state.
    REQUIRE(k.verify_trace().ok);
    State replayed = model->initial_state();
    REQUIRE_FALSE(replay_trace(model, k.trace(), &replayed).has_value());
    REQUIRE(replayed == k.state());
  }
  // The generator must exercise both outcomes and rollbacks, or the properties are vacuous.
  REQUIRE(approved > 10000);
  REQUIRE(rejected > 10000);
  REQUIRE(rollbacks > 1000);
}

TEST_CASE("Theorems: T7 rollback(execute(s, a)) == s for every effect mode",
          "[properties][theorems]") {
  std::mt19937_64 rng(7);
  int per_mode[7] = {0, 0, 0, 0, 0, 0, 0};
  for (int spec = 0; spec < kSpecs; ++spec) {
    const auto model = random_model(rng);
    SafetyKernel k(model);
    for (int op = 0; op < 20; ++op) {
      const State s = k.state();
      const Proposal p = random_proposal(*model, rng);
      const Outcome o = k.execute(p);
      if (!o.decision.approved || !model->actions[p.action].reversible) continue;
      for (const auto& e : model->actions[p.action].effects) ++per_mode[static_cast<int>(e.mode)];
      REQUIRE(k.rollback(*o.receipt).state == s);
      REQUIRE(k.state() == s);
      k.execute(p);  // move on
    }
  }
  for (int mode = 0; mode < 7; ++mode) {
    INFO("mode " << to_string(static_cast<EffectMode>(mode)));
    REQUIRE(per_mode[mode] > 100);
  }
}

TEST_CASE(
    "Theorems: T8 an emergency action executes with the budget exhausted and at the step limit",
    "[properties][theorems]") {
  std::mt19937_64 rng(8);
  int exhausted = 0;
  for (int spec = 0; spec < kSpecs; ++spec) {
    const auto model = random_model(rng);
    SafetyKernel k(model);
    // Drive until nothing non-emergency is approvable: budget or steps run out, or a dead end.
    for (int guard = 0; guard < 10000; ++guard) {
      bool any = false;
      for (std::size_t a = 0; a + 1 < model->actions.size(); ++a) {
        Proposal p{a, {}};
        for (std::size_t i = 0; i < model->actions[a].parameters.size(); ++i)
          p.params.push_back(Value::integer(0));
        if (k.execute(p).decision.approved) any = true;
      }
      if (!any) break;
    }
    const auto b = k.budget();
    const bool out_of_resources = b.remaining() < model->budget.min_action_cost ||
                                  k.steps() >= static_cast<std::uint64_t>(k.step_limit());
    exhausted += out_of_resources;
    const std::size_t hover = model->actions.size() - 1;
    REQUIRE(model->actions[hover].emergency);
    for (int i = 0; i < 3; ++i) {
      const Outcome o = k.execute(Proposal{hover, {}});
      INFO("reasons: " << (o.decision.reasons.empty() ? "" : o.decision.reasons[0].message));
      REQUIRE(o.decision.approved);
    }
    REQUIRE(k.emergency_steps() == 3);
  }
  REQUIRE(exhausted > kSpecs / 2);
}

TEST_CASE("Theorems: T6 every single-byte change to a persisted trace is detected",
          "[properties][theorems]") {
  std::mt19937_64 rng(6);
  for (int spec = 0; spec < 8; ++spec) {
    const auto model = random_model(rng);
    const std::string path = clampai::test::temp_file("t6.jsonl");
    {
      KernelOptions options;
      options.writer = std::make_shared<TraceWriter>(path, FlushPolicy::buffered);
      options.record_rejections = true;
      SafetyKernel k(model, options);
      for (int op = 0; op < 6; ++op) k.execute(random_proposal(*model, rng));
      k.seal();
    }
    std::string original;
    {
      std::ifstream in(path, std::ios::binary);
      std::ostringstream ss;
      ss << in.rdbuf();
      original = ss.str();
    }
    REQUIRE(verify_trace_file(path).ok);
    for (std::size_t i = 0; i < original.size(); ++i) {
      std::string changed = original;
      changed[i] = static_cast<char>(changed[i] ^ static_cast<char>(1 + rng() % 255));
      {
        std::ofstream out(path, std::ios::binary | std::ios::trunc);
        out << changed;
      }
      bool detected = false;
      try {
        detected = !verify_trace_file(path).ok;
      } catch (const clampai::Error&) {
        detected = true;
      }
      INFO("byte " << i << " of " << original.size());
      REQUIRE(detected);
    }
    std::remove(path.c_str());
  }
}

TEST_CASE("Theorems: T2 at the driver level: recovering runs terminate within the step bound",
          "[properties][driver]") {
  std::mt19937_64 rng(0xD21E5);
  for (int spec = 0; spec < 300; ++spec) {
    const auto model = random_model(rng);
    SafetyKernel k(model);
    FirstApprovableDriver driver;
    RunOptions options;
    options.recover = true;
    const RunResult r = run(k, driver, options);  // returning at all is the property
    INFO("spec " << spec);
    REQUIRE(k.steps() <= static_cast<std::uint64_t>(k.step_limit()));
    REQUIRE(r.rollbacks <= r.executed);
    REQUIRE(r.emergencies <= 1);
    REQUIRE(r.executed <= static_cast<std::uint64_t>(k.step_limit()) + r.emergencies);
    REQUIRE(satisfies_blocking(*model, k.state()));
  }
}
