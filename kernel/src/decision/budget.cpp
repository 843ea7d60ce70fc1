// The integer budget ledger (T1, T4).
#include "clampai/kernel/budget.hpp"

#include <string>

#include "clampai/kernel/assert.hpp"
#include "clampai/kernel/error.hpp"

namespace clampai::kernel {

namespace {

// Gross spend after charging `cost` (>= 0). Refunds let gross spend grow past the total: after
// enough charges and rollbacks near the int64 limit it would leave the range. Refused (thrown)
// with nothing changed (the exact Coq model has no limit; the model_differential test checks
// this refusal).
Amount gross_after(Amount gross, Amount cost) {
  Amount out = 0;
  if (__builtin_add_overflow(gross, cost, &out)) {
    throw InvalidArgument("cannot charge " + std::to_string(cost) + ": gross spend " +
                          std::to_string(gross) + " would leave the int64 range of amounts");
  }
  return out;
}

}  // namespace

BudgetController::BudgetController(Amount total) : total_(total) {
  if (total < 0) throw InvalidArgument("budget must not be negative, got " + std::to_string(total));
}

std::optional<BudgetController> BudgetController::carried(Amount total,
                                                          Amount gross,
                                                          Amount refunded) {
  if (total < 0 || refunded < 0 || refunded > gross || gross - refunded > total)
    return std::nullopt;
  BudgetController b(total);
  b.gross_ = gross;  // INVARIANT (budget-safe): checked above
  b.refunded_ = refunded;
  return b;
}

// INVARIANT (budget-safe): maintained because the charge is guarded by can_afford.
void BudgetController::charge(Amount cost) {
  if (!can_afford(cost)) {
    throw InvalidArgument("cannot charge " + std::to_string(cost) + ": remaining budget is " +
                          std::to_string(remaining()));
  }
  const Amount old_gross = gross_;
  gross_ = gross_after(gross_, cost);
  CLAMPAI_ALWAYS_ASSERT(gross_ >= old_gross);  // T4
  CLAMPAI_ALWAYS_ASSERT(net() <= total_);      // T1
}

void BudgetController::charge_unenforced(Amount cost) {
  if (cost < 0) throw InvalidArgument("cannot charge " + std::to_string(cost) + ": negative");
  gross_ = gross_after(gross_, cost);  // T4: cost >= 0; T1 is not enforced here
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
