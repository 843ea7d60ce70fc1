// Beta posteriors with decay and the seed's cost-aware priors.
#include "clampai/agent/beliefs.hpp"

#include <algorithm>
#include <cmath>

#include "clampai/kernel/error.hpp"
#include "clampai/kernel/expr.hpp"
#include "valuation_internal.hpp"

namespace clampai::agent {

Belief Belief::prior(double alpha, double beta) {
  if (!(alpha > 0) || !(beta > 0) || !std::isfinite(alpha) || !std::isfinite(beta))
    throw InvalidArgument("a Beta prior needs positive, finite alpha and beta");

  Belief b;
  b.alpha = b.prior_alpha = alpha;
  b.beta = b.prior_beta = beta;
  return b;
}

double Belief::mean() const noexcept { return alpha / (alpha + beta); }

double Belief::variance() const noexcept {
  const double s = alpha + beta;
  return alpha * beta / (s * s * (s + 1.0));
}

double Belief::lower_bound(double z) const noexcept {
  return std::max(0.0, mean() - z * std::sqrt(variance()));
}

double Belief::upper_bound(double z) const noexcept {
  return std::min(1.0, mean() + z * std::sqrt(variance()));
}

double Belief::confidence() const noexcept { return 1.0 - 1.0 / (1.0 + 0.1 * observations); }

void Belief::observe(bool success, double decay) noexcept {
  // Decay pulls the evidence (not the prior) toward zero, so a long streak of successes can be
  // overturned by a few recent failures when the environment changes.
  alpha = prior_alpha + decay * (alpha - prior_alpha);
  beta = prior_beta + decay * (beta - prior_beta);
  observations = decay * observations + 1.0;
  (success ? alpha : beta) += 1.0;
}

std::string_view to_string(CostTier tier) {
  switch (tier) {
    case CostTier::explore:
      return "explore";
    case CostTier::cautious:
      return "cautious";
    case CostTier::guarded:
      return "guarded";
    case CostTier::gated:
      return "gated";
  }
  return "explore";
}

CostTier cost_tier(double cost_ratio, bool reversible, const PriorOptions& options) {
  if (cost_ratio >= options.gated_ratio) return CostTier::gated;
  if (cost_ratio >= options.guarded_ratio || !reversible) return CostTier::guarded;
  if (cost_ratio >= options.cautious_ratio) return CostTier::cautious;
  return CostTier::explore;
}

Belief tier_prior(CostTier tier, double cost_ratio, const PriorOptions& options) {
  const double k = options.pessimism * std::max(0.0, cost_ratio);
  switch (tier) {
    case CostTier::explore:
      return Belief::prior(3.0, 1.0);
    case CostTier::cautious:
      return Belief::prior(2.0, 1.0 + k * 0.5);
    case CostTier::guarded:
      return Belief::prior(1.0, 1.0 + k);
    case CostTier::gated:
      return Belief::prior(0.01, 100.0);
  }
  return Belief::prior(1.0, 1.0);
}

BeliefState::BeliefState(const kernel::TaskModel& model, double decay, PriorOptions options)
    : decay_(decay), options_(options) {
  if (!(decay > 0.0 && decay <= 1.0))
    throw InvalidArgument("belief decay must be in (0, 1], got " + std::to_string(decay));

  const double total = std::max(detail::amount_to_double(model, model.budget.total), 1e-9);
  for (std::size_t i = 0; i < model.actions.size(); ++i) {
    const double ratio = detail::amount_to_double(model, detail::nominal_cost(model, i)) / total;
    const CostTier tier = cost_tier(ratio, model.actions[i].reversible, options_);
    beliefs_.push_back(tier_prior(tier, ratio, options_));
    tiers_.push_back(tier);
    cost_ratios_.push_back(ratio);
    authorised_.push_back(0);
  }
}

void BeliefState::observe(std::size_t action, bool success) {
  Belief& b = beliefs_.at(action);
  if (tiers_[action] == CostTier::gated && success && authorised_[action] == 0) {
    authorise(action);
  }
  b.observe(success, decay_);
}

void BeliefState::authorise(std::size_t action) {
  if (tiers_.at(action) != CostTier::gated || authorised_[action] != 0) return;
  authorised_[action] = 1;
  beliefs_[action] = tier_prior(CostTier::guarded, cost_ratios_[action], options_);
}

}  // namespace clampai::agent
