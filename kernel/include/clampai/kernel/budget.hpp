// The integer budget model behind T1 (net spend never exceeds the budget) and T4 (gross spend
// never decreases).
#pragma once

#include <cstdint>
#include <optional>

namespace clampai::kernel {

/// Amounts of budget in fixed point: an integer count of 10^-scale units (see `BudgetSpec`).
using Amount = std::int64_t;

/// The budget ledger of one kernel: a total, a gross spend and the refunds granted.
/// Net spend is `gross - refunded`. Every operation is exact integer arithmetic.
/// Not thread-safe by itself: `SafetyKernel` holds its lock around every use.
/// Lean: lean/ClampAI/Spec/Budget.lean. TLA+: tla/BudgetSafety.tla.
class BudgetController {
 public:
  /// Creates a ledger with nothing spent.
  /// @throws InvalidArgument if `total` is negative.
  explicit BudgetController(Amount total);
  /// A ledger of `total` that has charged `gross` and refunded `refunded` (a spend carried
  /// over to another spec's budget: a reload). Nullopt unless `0 <= refunded <= gross` and
  /// `gross - refunded <= total` (T1 holds from the start).
  static std::optional<BudgetController> carried(Amount total, Amount gross, Amount refunded);

  /// True iff `cost >= 0` and charging it keeps net spend within the total.
  /// Lean: `canAfford`. TLA+: the guard of `Charge`.
  [[nodiscard]] bool can_afford(Amount cost) const noexcept {
    // remaining() cannot overflow: 0 <= net() and 0 <= total_ (net() <= total_ unless a step
    // was unenforced). Comparing against it avoids net + cost.
    return cost >= 0 && cost <= remaining();
  }

  /// Adds `cost` to gross spend.
  /// Requires `can_afford(cost)`; otherwise throws and nothing changes.
  /// @throws InvalidArgument if `cost` is negative or not affordable, or if gross spend would
  /// leave the int64 range (possible only after refunds of more than the total: charges and
  /// rollbacks near the int64 limit); nothing changes then.
  /// Lean: `charge` (T1: `charge_preserves_budgetSafe`, T4: `step_gross_monotone`).
  /// TLA+: `Charge`.
  void charge(Amount cost);

  /// Adds `cost` to gross spend whether or not the budget affords it: a step of shadow mode
  /// (`SafetyKernel::execute_unenforced`), where the theorems are not enforced, T1 included
  /// (net spend may pass the total; `remaining()` is then negative and `can_afford` false for
  /// every cost). T4 still holds.
  /// @throws InvalidArgument if `cost` is negative or gross spend would leave the int64 range;
  /// nothing changes then.
  void charge_unenforced(Amount cost);

  /// True iff `amount >= 0` and refunding it keeps net spend non-negative.
  [[nodiscard]] bool can_refund(Amount amount) const noexcept;

  /// Records a refund of `amount`: net spend falls, gross spend is unchanged (T4).
  /// Requires `can_refund(amount)`; otherwise throws and nothing changes.
  /// @throws InvalidArgument if `amount` is negative or exceeds net spend.
  /// Lean: `refund`. TLA+: `Refund`.
  void refund(Amount amount);

  /// Changes the total to `total` (a pool's total raised or lowered at run time): never below
  /// net spend, so T1 holds; gross spend is unchanged (T4).
  /// @throws InvalidArgument if `total` is negative or below `net()`; nothing changes then.
  /// Coq: `set_total` (coq/theories/Pools.v).
  void set_total(Amount total);

  /// The total budget B0.
  [[nodiscard]] Amount total() const noexcept { return total_; }
  /// Everything ever charged; never decreases (T4).
  [[nodiscard]] Amount gross() const noexcept { return gross_; }
  /// Everything ever refunded; never exceeds `gross()`.
  [[nodiscard]] Amount refunded() const noexcept { return refunded_; }
  /// Net spend `gross() - refunded()`; always within `[0, total()]` (T1).
  [[nodiscard]] Amount net() const noexcept { return gross_ - refunded_; }
  /// What can still be charged: `total() - net()`.
  [[nodiscard]] Amount remaining() const noexcept { return total_ - net(); }

 private:
  // INVARIANT (budget-safe): 0 <= refunded_ <= gross_ and gross_ - refunded_ <= total_, the
  // latter unless `charge_unenforced` passed it (shadow mode).
  Amount total_;
  Amount gross_ = 0;
  Amount refunded_ = 0;
};

}  // namespace clampai::kernel
