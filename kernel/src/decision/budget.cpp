// The integer budget ledger (T1, T4).
#include "clampai/kernel/budget.hpp"

#include <string>

#include "clampai/kernel/assert.hpp"
#include "clampai/kernel/error.hpp"

namespace clampai::kernel {

BudgetController::BudgetController(Amount total) : total_(total) {
  if (total < 0) throw InvalidArgument("budget must not be negative, got " + std::to_string(total));
}

// INVARIANT (budget-safe): maintained because the charge is guarded by can_afford.
void BudgetController::charge(Amount cost) {
  if (!can_afford(cost)) {
    throw InvalidArgument("cannot charge " + std::to_string(cost) + ": remaining budget is " +
                          std::to_string(remaining()));
  }

  // Refunds let gross spend grow past the total: after enough charges and rollbacks near the
  // int64 limit it would leave the range. Refuse with nothing changed (the exact Coq model has
  // no limit; the model_differential test checks this refusal).
  Amount new_gross = 0;
  if (__builtin_add_overflow(gross_, cost, &new_gross)) {
    throw InvalidArgument("cannot charge " + std::to_string(cost) + ": gross spend " +
                          std::to_string(gross_) + " would leave the int64 range of amounts");
  }
  const Amount old_gross = gross_;
  gross_ = new_gross;
  CLAMPAI_ALWAYS_ASSERT(gross_ >= old_gross);  // T4
  CLAMPAI_ALWAYS_ASSERT(net() <= total_);      // T1
}

bool BudgetController::can_refund(Amount amount) const noexcept {
  return amount >= 0 && amount <= net();
}

// INVARIANT (budget-safe): maintained because the refund is guarded by can_refund.
void BudgetController::refund(Amount amount) {
  if (!can_refund(amount)) {
    throw InvalidArgument("cannot refund " + std::to_string(amount) + ": net spend is " +
                          std::to_string(net()));
  }

  refunded_ += amount;
  CLAMPAI_ALWAYS_ASSERT(refunded_ <= gross_ && net() >= 0);
}

// INVARIANT (budget-safe): maintained because the new total is at least net spend.
void BudgetController::set_total(Amount total) {
  if (total < 0 || total < net()) {
    throw InvalidArgument(
        "cannot set the total to " + std::to_string(total) +
        (total < 0 ? ": a total must not be negative" : ": net spend is " + std::to_string(net())));
  }
  total_ = total;
  CLAMPAI_ALWAYS_ASSERT(net() <= total_);
}

}  // namespace clampai::kernel
