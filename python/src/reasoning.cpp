#include "reasoning.hpp"

#include <pybind11/stl.h>

#include <string>
#include <tuple>

#include "clampai/agent/answer.hpp"
#include "clampai/agent/beliefs.hpp"
#include "clampai/agent/valuation.hpp"
#include "clampai/kernel/error.hpp"

namespace clampai::python {

namespace {

namespace ag = clampai::agent;
using namespace pybind11::literals;

// A Beta(alpha, beta) belief with the uniform prior Beta(1, 1) the Python ClampAI decays toward.
// Beta(1, 1) is the prior only; `alpha` and `beta` are checked by `Belief::prior`.
ag::Belief belief(double alpha, double beta) {
  ag::Belief b = ag::Belief::prior(alpha, beta);
  b.prior_alpha = 1.0;
  b.prior_beta = 1.0;
  b.observations = alpha + beta - 2.0;
  return b;
}

ag::CostTier tier_of(const std::string& name) {
  if (name == "explore") return ag::CostTier::explore;
  if (name == "cautious") return ag::CostTier::cautious;
  if (name == "guarded") return ag::CostTier::guarded;
  if (name == "gated") return ag::CostTier::gated;
  throw InvalidArgument("unknown cost tier `" + name + "` (explore, cautious, guarded or gated)");
}

}  // namespace

void bind_reasoning(py::module_& m) {
  m.def(
      "_belief",
      [](double alpha, double beta, double z) {
        const ag::Belief b = belief(alpha, beta);
        return std::make_tuple(
            b.mean(), b.variance(), b.lower_bound(z), b.upper_bound(z), b.confidence());
      },
      "alpha"_a,
      "beta"_a,
      "z"_a);
  m.def(
      "_belief_observe",
      [](double alpha, double beta, bool success, double decay) {
        if (!(decay > 0.0 && decay <= 1.0))
          throw InvalidArgument("decay must be in (0, 1], not " + std::to_string(decay));
        ag::Belief b = belief(alpha, beta);
        b.observe(success, decay);
        return std::make_tuple(b.alpha, b.beta);
      },
      "alpha"_a,
      "beta"_a,
      "success"_a,
      "decay"_a);
  m.def(
      "_tier_prior",
      [](const std::string& tier, double cost_ratio, double pessimism) {
        ag::PriorOptions options;
        options.pessimism = pessimism;
        const ag::Belief b = ag::tier_prior(tier_of(tier), cost_ratio, options);
        return std::make_tuple(b.alpha, b.beta);
      },
      "tier"_a,
      "cost_ratio"_a,
      "pessimism"_a);
  m.def(
      "_weighted_value",
      [](double progress,
         double information,
         double cost_ratio,
         double risk,
         double opportunity,
         double risk_aversion) {
        ag::ActionValue v;
        v.expected_progress = progress;
        v.information_gain = information;
        v.cost_ratio = cost_ratio;
        v.risk = risk;
        v.opportunity_cost = opportunity;
        ag::ValuationWeights weights;
        weights.risk = risk_aversion;
        return ag::weighted_value(v, weights);
      },
      "progress"_a,
      "information"_a,
      "cost_ratio"_a,
      "risk"_a,
      "opportunity"_a,
      "risk_aversion"_a);
  m.def(
      "_strip_invisible",
      [](const std::string& text) { return ag::strip_invisible(text); },
      "text"_a);
}

}  // namespace clampai::python
