// The causal graph of a task (seed layer 1): its actions and their declared dependencies, on
// Boost.Graph. Readiness, what blocks an action, and the critical path of the work left.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "clampai/kernel/model.hpp"

namespace clampai::agent {

/// The dependency DAG of a model's actions (an edge d -> a when `a` depends on `d`). The spec
/// loader refuses cyclic dependencies, so this is acyclic. Immutable; the progress it is asked
/// about is the kernel's completion counts (executions minus rollbacks, per action).
/// No formal counterpart: readiness here mirrors the kernel's `dependency_unmet` check exactly,
/// and the kernel still checks it.
class CausalGraph {
 public:
  explicit CausalGraph(const kernel::TaskModel& model);
  ~CausalGraph();
  CausalGraph(CausalGraph&&) noexcept;
  CausalGraph& operator=(CausalGraph&&) noexcept;

  [[nodiscard]] std::size_t size() const noexcept;
  /// True iff every dependency of `action` has completed at least once. Requires
  /// `completions.size()` to be the number of actions.
  [[nodiscard]] bool ready(std::size_t action, std::span<const std::uint64_t> completions) const;
  /// The dependencies of `action` that have not completed, in spec order.
  [[nodiscard]] std::vector<std::size_t> blockers(std::size_t action,
                                                  std::span<const std::uint64_t> completions) const;
  /// Every action that depends on `action`, directly or through others, in spec order.
  [[nodiscard]] std::vector<std::size_t> dependents(std::size_t action) const;
  /// The longest chain of actions not yet completed, each a dependency of the next, weighted by
  /// their nominal costs (ties: more actions, then spec order): the work that bounds what is
  /// left. Its first action is ready. Empty when every action that has dependencies or
  /// dependents has completed.
  [[nodiscard]] std::vector<std::size_t> critical_path(
      std::span<const std::uint64_t> completions) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace clampai::agent
