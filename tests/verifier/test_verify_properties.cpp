// Properties of the verifier over random specs: every proved pair survives random concrete
// steps through the kernel; every refuted pair replays (verify throws InternalError otherwise).
#include <catch2/catch.hpp>

#include "../properties/random_spec.hpp"
#include "clampai/verifier.hpp"

using namespace clampai;
using namespace clampai::kernel;

TEST_CASE(
    "Verify: every proved pair survives 10,000 random concrete steps; every refutation replays",
    "[verifier][properties]") {
  std::mt19937_64 rng(31337);
  std::size_t steps_checked = 0, proved = 0, refuted = 0;
  for (int spec = 0; spec < 60; ++spec) {
    const auto model = test::random_model(rng);
    verifier::Report report;
    REQUIRE_NOTHROW(report = verifier::verify(model));  // an unreplayable refutation throws
    KernelOptions options;
    options.check_initial_state = false;
    const SafetyKernel kernel(model, options);
    for (const auto& o : report.obligations) {
      if (o.kind != verifier::ObligationKind::preservation) continue;
      if (o.verdict == verifier::VerdictKind::refuted) ++refuted;
      if (o.verdict != verifier::VerdictKind::proved) continue;
      ++proved;
      const std::size_t a = *model->find_action(o.action);
      // Random states that satisfy the bounds and the blocking invariants, random parameters.
      int found = 0;
      for (int attempt = 0; attempt < 4000 && found < 250; ++attempt) {
        std::vector<std::pair<VarId, Value>> values;
        for (VarId id = 0; id < model->variables.size(); ++id) {
          const Variable& v = model->variables[id];
          if (v.type.kind() == Type::Kind::integer)
            values.emplace_back(id, Value::integer(static_cast<int>(rng() % 41) - 20));
          if (v.type.kind() == Type::Kind::decimal)
            values.emplace_back(id,
                                Value::number(Decimal{static_cast<int>(rng() % 2001) - 1000, 2}));
          if (v.type.kind() == Type::Kind::list) {
            Value::List items;
            for (int k = static_cast<int>(rng() % 4); k > 0; --k)
              items.push_back(Value::integer(static_cast<int>(rng() % 7) - 3));
            values.emplace_back(id, Value::list(items));
          }
        }
        const State pre = model->initial_state().with(values);
        if (!test::satisfies_blocking(*model, pre)) continue;
        ++found;
        const Proposal p = test::random_proposal(*model, rng);
        Proposal same_action{a,
                             p.action == a ? p.params
                                           : std::vector<Value>(model->actions[a].parameters.size(),
                                                                Value::integer(0))};
        const Decision d = kernel.evaluate_in(pre, same_action);
        if (d.has(ReasonCode::requires_failed) || d.has(ReasonCode::invalid_parameter) ||
            d.has(ReasonCode::overflow))
          continue;
        INFO(o.id);
        REQUIRE_FALSE(d.has(ReasonCode::invariant_violated, o.invariant));
        ++steps_checked;
      }
    }
  }
  REQUIRE(proved > 100);
  REQUIRE(refuted > 10);
  REQUIRE(steps_checked >= 10000);
}
