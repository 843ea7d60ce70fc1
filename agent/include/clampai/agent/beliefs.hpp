// Beliefs of the reasoning engine (seed layer 1): a Beta posterior of each action's success,
// with decay for non-stationary environments and cost-aware priors.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "clampai/kernel/model.hpp"

namespace clampai::agent {

/// A Beta(alpha, beta) posterior of the probability that an action succeeds (the kernel approves
/// it). Conjugate updates: a success adds 1 to alpha, a failure 1 to beta. With a decay d < 1,
/// the evidence gathered so far is first pulled back toward the prior, alpha' = a0 + d·(alpha -
/// a0) (the same for beta), so recent outcomes weigh more: about 1 / (1 - d) outcomes count.
/// No formal counterpart: the beliefs only rank actions; the kernel decides.
struct Belief {
  double alpha = 1.0;  // INVARIANT (positive): alpha > 0 and beta > 0
  double beta = 1.0;
  double prior_alpha = 1.0;
  double prior_beta = 1.0;
  double observations = 0.0;  ///< outcomes seen, decayed like the evidence

  /// A belief at its prior. Requires `alpha > 0` and `beta > 0`.
  /// @throws InvalidArgument otherwise.
  static Belief prior(double alpha, double beta);

  /// The posterior mean alpha / (alpha + beta).
  [[nodiscard]] double mean() const noexcept;
  /// The posterior variance alpha·beta / ((alpha + beta)^2 (alpha + beta + 1)), at most 1/4.
  [[nodiscard]] double variance() const noexcept;
  /// max(0, mean - z·sd): a one-sided credible bound (z = 1.645 is about 95% for a Beta with
  /// some evidence, by its normal approximation).
  [[nodiscard]] double lower_bound(double z = 1.645) const noexcept;
  /// min(1, mean + z·sd).
  [[nodiscard]] double upper_bound(double z = 1.645) const noexcept;
  /// How much evidence backs the mean, in [0, 1): 1 - 1 / (1 + 0.1·observations).
  [[nodiscard]] double confidence() const noexcept;
  /// Records one outcome, decaying the evidence before by `decay` in (0, 1].
  void observe(bool success, double decay = 1.0) noexcept;
};

/// The seed's cost tiers: how pessimistic an action's prior is, by its share of the budget and
/// whether it can be undone.
enum class CostTier : std::uint8_t {
  explore,   ///< cheap and reversible: Beta(3, 1)
  cautious,  ///< at least `cautious_ratio` of the budget: Beta(2, 1 + K·r/2)
  guarded,   ///< at least `guarded_ratio`, or irreversible: Beta(1, 1 + K·r)
  gated,     ///< at least `gated_ratio` and not yet authorised: Beta(0.01, 100) until it
             ///< succeeds once or is authorised, then guarded
};
std::string_view to_string(CostTier tier);

/// Parameters of the cost-aware priors (r is the action's cost over the total budget).
struct PriorOptions {
  double pessimism = 5.0;  ///< K
  double cautious_ratio = 0.03;
  double guarded_ratio = 0.1;
  double gated_ratio = 0.3;
};

/// The tier of an action costing `cost_ratio` of the budget.
CostTier cost_tier(double cost_ratio, bool reversible, const PriorOptions& options = {});
/// The prior of `tier` for an action costing `cost_ratio` of the budget (gated: as if not
/// authorised).
Belief tier_prior(CostTier tier, double cost_ratio, const PriorOptions& options = {});

/// The beliefs of every action of a model, indexed like `model.actions`.
class BeliefState {
 public:
  /// Cost-aware priors for every action of `model` (a cost given by an expression counts at
  /// the cost of its default parameters, when they evaluate; otherwise the budget's minimum).
  /// `decay` in (0, 1]. @throws InvalidArgument for a decay outside (0, 1].
  BeliefState(const kernel::TaskModel& model, double decay = 1.0, PriorOptions options = {});

  [[nodiscard]] const Belief& operator[](std::size_t action) const { return beliefs_.at(action); }
  [[nodiscard]] CostTier tier(std::size_t action) const { return tiers_.at(action); }
  [[nodiscard]] bool authorised(std::size_t action) const { return authorised_.at(action) != 0; }
  [[nodiscard]] std::size_t size() const noexcept { return beliefs_.size(); }

  /// Records an outcome of `action`. A gated action that succeeds becomes authorised: its
  /// belief restarts from the guarded prior, with this success counted.
  void observe(std::size_t action, bool success);
  /// Authorises a gated action (a person allowed it): its belief restarts from the guarded
  /// prior. Other tiers are unchanged.
  void authorise(std::size_t action);

 private:
  double decay_;
  PriorOptions options_;
  std::vector<Belief> beliefs_;
  std::vector<CostTier> tiers_;
  std::vector<double> cost_ratios_;
  std::vector<char> authorised_;
};

}  // namespace clampai::agent
