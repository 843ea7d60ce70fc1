// Saliency (the seed's sensitivity filter): which variables the prompt shows. Exact, from the
// expressions: what the offered actions, the goal and the invariants read or write, and always
// the variables near an invariant's or a bound's boundary. The kernel still sees everything.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "clampai/agent/valuation.hpp"
#include "clampai/kernel/model.hpp"
#include "clampai/kernel/safety_kernel.hpp"

namespace clampai::agent {

struct SaliencyOptions {
  /// A blocking invariant whose slack (`Valuator::slack`, 1 where the task started) is below
  /// this, now or after an offered action, puts its variables near the boundary; so does a
  /// bounded variable within this share of its range from a bound.
  double boundary_slack = 0.2;
  /// An invariant is also near its boundary when this many steps like one of the offered
  /// actions would reach it (its slack shrinks by at least 1/`boundary_steps` of itself).
  double boundary_steps = 2.0;
  /// At most this many variables are shown; those near a boundary are always shown.
  std::size_t max_variables = 40;
};

/// The variables to show, in the order to show them.
struct Salience {
  std::vector<kernel::VarId> variables{};  ///< near the boundary first, then in model order
  /// The variables near a boundary, each with why (`invariant `cap``, `bound max 10`).
  std::vector<std::pair<kernel::VarId, std::string>> near_boundary{};
  std::size_t hidden = 0;  ///< relevant variables left out by `max_variables`
};

class Saliency {
 public:
  explicit Saliency(const kernel::TaskModel& model, SaliencyOptions options = {});

  /// The salient variables of `situation` with `offered` on the table.
  [[nodiscard]] Salience select(const kernel::Situation& situation,
                                std::span<const Candidate> offered,
                                const Valuator& valuator) const;

 private:
  const kernel::TaskModel* model_;
  SaliencyOptions options_;
  std::vector<std::vector<kernel::VarId>> action_vars_;  // read or written by each action
  std::vector<bool> always_;                             // read by the goal or an invariant
  std::vector<std::vector<kernel::VarId>> inv_vars_;     // read by each invariant
};

}  // namespace clampai::agent
