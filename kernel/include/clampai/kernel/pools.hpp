// Budget pools (docs/POOLS.md): a tree of budgets (an organisation, its teams, ...) shared by
// the tasks whose budget names one of them (`"budget": {"total": 20, "pool": "team-a"}`). A
// charge commits only if it fits the task's own budget and every pool from its own up to the
// root, atomically; a refund returns to every level. T1 (net spend <= total) and T4 (gross
// spend never decreases) hold at every level. One tree is shared by every kernel of a process
// (`KernelOptions::pools`); across processes, see docs/LEDGER.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "clampai/kernel/budget.hpp"
#include "clampai/kernel/error.hpp"
#include "clampai/kernel/number.hpp"

namespace clampai::kernel {

/// True iff `name` may name a pool: 1 to 64 characters among `A-Z a-z 0-9 _ -`.
[[nodiscard]] bool is_pool_name(std::string_view name) noexcept;
/// Why `name` may not name a pool (for an error message).
[[nodiscard]] std::string pool_name_rule(std::string_view name);

/// One pool as a pools file declares it.
struct PoolDecl {
  std::string name{};
  Decimal total{};
  std::string parent{};  // empty: a root
};

/// One pool's figures at a moment, at the pool's scale (the finest budget scale of the tasks
/// bound under it; until one is, the scale of its declared total and nothing spent).
struct PoolStatus {
  std::string name{};
  std::string parent{};  // empty: a root
  int scale = 0;
  Amount total = 0;
  Amount gross = 0;       // everything ever charged (T4: never decreases)
  Amount net = 0;         // gross minus refunds (T1: within [0, total])
  std::size_t tasks = 0;  // kernels bound directly to this pool now (`bind`, `unbind`)
  /// An amount of this pool as decimal text at its scale (`40.000`).
  [[nodiscard]] std::string format(Amount a) const;
};

/// What one charge (or refund) did at one level: the amount at the level's scale and the
/// level's figures after it. A commit's list goes from the task's own pool up to the root.
struct PoolCharge {
  std::string pool{};
  bool refund = false;  // a refund (a rollback's) rather than a charge
  int scale = 0;
  Amount amount = 0;
  Amount gross = 0;
  Amount net = 0;
  Amount total = 0;
};

/// A tree (a forest) of pools. Thread-safe: every member takes the locks it needs, and a charge
/// locks the pools from the root down to the task's own (root first), so that concurrent
/// charges through one root are serialised and never overspend a level.
class PoolTree {
 public:
  /// Builds and checks a tree: unique names (`is_pool_name`), totals >= 0, every parent
  /// declared, no cycle.
  /// @throws SpecError at `pools.NAME` (`pools.NAME.total`, `pools.NAME.parent`).
  static std::shared_ptr<PoolTree> build(std::vector<PoolDecl> decls);
  ~PoolTree();
  PoolTree(const PoolTree&) = delete;
  PoolTree& operator=(const PoolTree&) = delete;

  /// The index of pool `name`, or nullopt.
  [[nodiscard]] std::optional<std::size_t> find(std::string_view name) const;
  /// The number of pools.
  [[nodiscard]] std::size_t size() const noexcept;

  /// Binds a task whose budget amounts are at `scale` under pool `name`: every level from it to
  /// the root moves to the finer of its scale and `scale` (its figures rescaled exactly).
  /// Returns the pool's index, to charge through (`Chain`).
  /// @throws SpecError at `budget.pool` if the pool is unknown, or a level's total is not exact
  /// at `scale` (it has more digits after the point), or rescaling a level leaves the int64
  /// range; nothing changes then.
  std::size_t bind(std::string_view name, int scale);
  /// Undoes one `bind` of pool `pool` (an index `bind` returned): its kernel is gone. Its spend
  /// stays charged at every level, and a scale the binding fixed stays.
  void unbind(std::size_t pool) noexcept;

  /// Raises or lowers pool `name`'s total at run time (never below what it has spent: T1 at
  /// that level; gross spend unchanged: T4). Coq: `PSetTotal` (coq/theories/Pools.v).
  /// @throws InvalidArgument if the pool is unknown, `total` is negative, below the pool's net
  /// spend, or not exact at the pool's scale (the finest budget scale of its tasks); nothing
  /// changes then.
  void set_total(std::string_view name, const Decimal& total);

  /// Every pool's figures, parents before their children, each level read under its lock.
  [[nodiscard]] std::vector<PoolStatus> status() const;

  /// The pools from `pool` up to the root, locked root first for as long as it lives: what a
  /// kernel's commit holds while it checks, charges and publishes (so the check and the charge
  /// are one atomic step at every level). Amounts are a task's, at its budget `scale`; each
  /// level converts them exactly to its own scale (never finer than the task's: `bind`).
  class Chain {
   public:
    Chain(const PoolTree& tree, std::size_t pool, int scale);
    ~Chain();
    Chain(const Chain&) = delete;
    Chain& operator=(const Chain&) = delete;
    /// The first level, from the task's own pool up to the root, that cannot take `cost`
    /// (its remaining budget is smaller, or its gross spend would leave the int64 range), or
    /// nullopt if every level can.
    [[nodiscard]] std::optional<std::size_t> refusing(Amount cost) const;
    /// What charging `cost` to every level would do (nothing changes yet: `apply`).
    /// @throws InvalidArgument if `refusing(cost)`.
    [[nodiscard]] std::vector<PoolCharge> plan_charge(Amount cost) const;
    /// What refunding `amount` at every level would do (net falls, gross stays: T4).
    /// @throws InvalidArgument if some level's net spend is smaller.
    [[nodiscard]] std::vector<PoolCharge> plan_refund(Amount amount) const;
    /// Applies a plan of this chain made while it was held (nothing changed since): cannot
    /// fail then.
    void apply(const std::vector<PoolCharge>& plan);
    /// `plan_charge` then `apply`.
    std::vector<PoolCharge> charge(Amount cost);
    /// `plan_refund` then `apply`.
    std::vector<PoolCharge> refund(Amount amount);
    /// Level `level`'s (0: the task's own pool) name, remaining budget as decimal text, and
    /// total as decimal text.
    [[nodiscard]] std::string name(std::size_t level) const;
    [[nodiscard]] std::string remaining_text(std::size_t level) const;
    [[nodiscard]] std::string total_text(std::size_t level) const;

   private:
    const PoolTree& tree_;
    std::vector<std::size_t> levels_;  // the task's pool first, the root last
    int scale_;
  };

 private:
  struct Node;
  PoolTree() = default;
  std::vector<std::unique_ptr<Node>> nodes_{};
};

/// Checks declarations as `PoolTree::build` does (without building).
/// @throws SpecError as `PoolTree::build` does.
void check_pools(const std::vector<PoolDecl>& decls);

/// Reads a pools file's text into declarations and checks them (`check_pools`).
/// @throws SpecError as load_pools does.
std::vector<PoolDecl> parse_pools(std::string_view json_text);

/// Reads a pools file's text: `{"pools": {"org": {"total": 100}, "team-a": {"total": 40,
/// "parent": "org"}}}` (schema/pools.schema.json).
/// @throws SpecError naming the JSON path and its line and column (`pools.team-a.parent`).
std::shared_ptr<PoolTree> load_pools(std::string_view json_text);
/// Reads (`read_file`: a regular file within `max_input_bytes()`) and loads a pools file.
/// @throws SpecError as load_pools does; FileError if the file cannot be read.
std::shared_ptr<PoolTree> load_pools_file(const std::string& path);

}  // namespace clampai::kernel
