import ClampAI.Spec.Budget

/-!
# The budget ledger (T1, T4): proofs

* **T1** (budget safety): every reachable state has `0 ≤ net ≤ total`
  (`reachable_net_le_total`, `reachable_net_nonneg`), by induction over `Reachable` with the
  invariant `budgetSafe` (`reachable_budgetSafe`).
* **T4** (monotone gross spend): no `Step` decreases `gross` (`step_gross_monotone`), hence no
  run of steps does (`steps_gross_monotone`).

Every proof is core Lean 4: `omega` on linear integer facts, after `have`/`show` have restated
definitions as plain inequalities over the fields (both checked by definitional unfolding).
-/

namespace ClampAI.Budget

/-! ## Net spend -/

/-- `net` is `gross - refunded`, as `BudgetController::net` computes it. -/
theorem net_eq (s : BudgetState) : net s = s.gross - s.refunded := rfl

/-! ## T1: each operation keeps the ledger budget-safe -/

/-- Base case of T1: a fresh ledger with a non-negative total is budget-safe. -/
theorem initial_budgetSafe (total : Int) (hTotal : 0 ≤ total) :
    budgetSafe (initial total) := by
  show 0 ≤ (0 : Int) ∧ 0 ≤ (0 : Int) - 0 ∧ (0 : Int) - 0 ≤ total
  exact ⟨by omega, by omega, by omega⟩

/-- T1 for a charge: an affordable charge keeps the ledger budget-safe.
C++: `CLAMPAI_ALWAYS_ASSERT(net() <= total_)` after `gross_ += cost` in `charge`. -/
theorem charge_preserves_budgetSafe (s : BudgetState) (cost : Int)
    (hs : budgetSafe s) (hc : canAfford s cost) : budgetSafe (charge s cost) := by
  have hs' : 0 ≤ s.refunded ∧ 0 ≤ s.gross - s.refunded ∧ s.gross - s.refunded ≤ s.total := hs
  have hc' : 0 ≤ cost ∧ cost ≤ s.total - (s.gross - s.refunded) := hc
  have h1 := hs'.1
  have h2 := hs'.2.1
  have h4 := hc'.1
  have h5 := hc'.2
  show 0 ≤ s.refunded ∧ 0 ≤ s.gross + cost - s.refunded ∧ s.gross + cost - s.refunded ≤ s.total
  exact ⟨h1, by omega, by omega⟩

/-- `canAfford` is sound: on a budget-safe ledger, charging an affordable cost keeps
net spend within the total. -/
theorem canAfford_is_sound (s : BudgetState) (cost : Int) (hs : budgetSafe s)
    (hc : canAfford s cost) : net (charge s cost) ≤ (charge s cost).total := by
  have h : 0 ≤ (charge s cost).refunded ∧ 0 ≤ net (charge s cost) ∧
      net (charge s cost) ≤ (charge s cost).total :=
    charge_preserves_budgetSafe s cost hs hc
  exact h.2.2

/-- `canAfford` is complete: it accepts every non-negative cost whose charge keeps net spend
within the total, so it never refuses a charge T1 would allow. -/
theorem canAfford_is_complete (s : BudgetState) (cost : Int) (hc : 0 ≤ cost)
    (h : net (charge s cost) ≤ (charge s cost).total) : canAfford s cost := by
  have h' : s.gross + cost - s.refunded ≤ s.total := h
  show 0 ≤ cost ∧ cost ≤ s.total - (s.gross - s.refunded)
  exact ⟨hc, by omega⟩

/-- A refund never breaks T1: it only lowers net spend.
(Needs nothing but T1 itself in the state before.) -/
theorem refund_preserves_net_le_total (s : BudgetState) (amount : Int)
    (hs : net s ≤ s.total) (hr : canRefund s amount) :
    net (refund s amount) ≤ (refund s amount).total := by
  have hs' : s.gross - s.refunded ≤ s.total := hs
  have hr' : 0 ≤ amount ∧ amount ≤ s.gross - s.refunded := hr
  have h1 := hr'.1
  show s.gross - (s.refunded + amount) ≤ s.total
  omega

/-- A refund keeps the whole invariant: net spend stays within `[0, total]` and refunds stay
non-negative. C++: `CLAMPAI_ALWAYS_ASSERT(refunded_ <= gross_ && net() >= 0)` in `refund`. -/
theorem refund_preserves_budgetSafe (s : BudgetState) (amount : Int)
    (hs : budgetSafe s) (hr : canRefund s amount) : budgetSafe (refund s amount) := by
  have hs' : 0 ≤ s.refunded ∧ 0 ≤ s.gross - s.refunded ∧ s.gross - s.refunded ≤ s.total := hs
  have hr' : 0 ≤ amount ∧ amount ≤ s.gross - s.refunded := hr
  have h1 := hs'.1
  have h3 := hs'.2.2
  have h4 := hr'.1
  have h5 := hr'.2
  show 0 ≤ s.refunded + amount ∧ 0 ≤ s.gross - (s.refunded + amount) ∧
    s.gross - (s.refunded + amount) ≤ s.total
  exact ⟨by omega, by omega, by omega⟩

/-- A rejected action keeps the ledger budget-safe (it changes nothing). -/
theorem reject_preserves_budgetSafe (s : BudgetState) (hs : budgetSafe s) :
    budgetSafe (reject s) := hs

/-- Counting a step does not touch the ledger. -/
theorem countStep_preserves_budgetSafe (s : BudgetState) (hs : budgetSafe s) :
    budgetSafe (countStep s) := by
  have hs' : 0 ≤ s.refunded ∧ 0 ≤ s.gross - s.refunded ∧ s.gross - s.refunded ≤ s.total := hs
  show 0 ≤ s.refunded ∧ 0 ≤ s.gross - s.refunded ∧ s.gross - s.refunded ≤ s.total
  exact hs'

/-- Counting an emergency step does not touch the ledger. -/
theorem countEmergency_preserves_budgetSafe (s : BudgetState) (hs : budgetSafe s) :
    budgetSafe (countEmergency s) := by
  have hs' : 0 ≤ s.refunded ∧ 0 ≤ s.gross - s.refunded ∧ s.gross - s.refunded ≤ s.total := hs
  show 0 ≤ s.refunded ∧ 0 ≤ s.gross - s.refunded ∧ s.gross - s.refunded ≤ s.total
  exact hs'

/-- Inductive step of T1: every `Step` keeps the ledger budget-safe. -/
theorem step_preserves_budgetSafe {minCost : Int} {s t : BudgetState}
    (h : Step minCost s t) (hs : budgetSafe s) : budgetSafe t := by
  cases h with
  | chargeStep cost _ _ hAfford =>
    exact countStep_preserves_budgetSafe (charge s cost)
      (charge_preserves_budgetSafe s cost hs hAfford)
  | refundStep amount hRefund =>
    exact refund_preserves_budgetSafe s amount hs hRefund
  | rejectStep =>
    exact reject_preserves_budgetSafe s hs
  | emergencyStep hAfford =>
    exact countEmergency_preserves_budgetSafe (charge s 0)
      (charge_preserves_budgetSafe s 0 hs hAfford)

/-! ## A charge that cannot be afforded is not a step -/

/-- The only step that counts a step is a charge, and what it adds to gross spend was
affordable in the state before. -/
theorem counted_step_is_affordable_charge {minCost : Int} {s t : BudgetState}
    (h : Step minCost s t) (hCount : t.steps = s.steps + 1) :
    canAfford s (t.gross - s.gross) := by
  cases h with
  | chargeStep cost _ _ hAfford =>
    have hc : 0 ≤ cost ∧ cost ≤ s.total - (s.gross - s.refunded) := hAfford
    have h1 := hc.1
    have h2 := hc.2
    show 0 ≤ s.gross + cost - s.gross ∧
      s.gross + cost - s.gross ≤ s.total - (s.gross - s.refunded)
    exact ⟨by omega, by omega⟩
  | refundStep _ _ =>
    have h1 : s.steps = s.steps + 1 := hCount
    exact False.elim (by omega)
  | rejectStep =>
    have h1 : s.steps = s.steps + 1 := hCount
    exact False.elim (by omega)
  | emergencyStep _ =>
    have h1 : s.steps = s.steps + 1 := hCount
    exact False.elim (by omega)

/-- A charge that cannot be afforded is not a step: no transition of the kernel leads from
`s` to the state that charging `cost` and counting it would give. C++: `charge` throws. -/
theorem unaffordable_charge_not_step {minCost cost : Int} {s : BudgetState}
    (hc : ¬ canAfford s cost) : ¬ Step minCost s (countStep (charge s cost)) := by
  intro h
  have ha := counted_step_is_affordable_charge h rfl
  have ha' : 0 ≤ s.gross + cost - s.gross ∧
      s.gross + cost - s.gross ≤ s.total - (s.gross - s.refunded) := ha
  have h1 := ha'.1
  have h2 := ha'.2
  apply hc
  show 0 ≤ cost ∧ cost ≤ s.total - (s.gross - s.refunded)
  exact ⟨by omega, by omega⟩

/-! ## Reachability -/

/-- Every state reached by steps from a fresh ledger is `Reachable`. -/
theorem reachable_of_steps {minCost total : Int} {s : BudgetState} (hTotal : 0 ≤ total)
    (h : Steps minCost (initial total) s) : Reachable minCost s := by
  induction h with
  | refl => exact Reachable.init total hTotal
  | tail _ hStep ih => exact Reachable.step ih hStep

/-- Every `Reachable` state is reached by steps from a fresh ledger. -/
theorem steps_of_reachable {minCost : Int} {s : BudgetState} (h : Reachable minCost s) :
    ∃ total : Int, 0 ≤ total ∧ Steps minCost (initial total) s := by
  induction h with
  | init total hTotal => exact ⟨total, hTotal, Steps.refl⟩
  | step _ hStep ih =>
    cases ih with
    | intro total hRun => exact ⟨total, hRun.1, Steps.tail hRun.2 hStep⟩

/-- `Reachable` is exactly the reflexive-transitive closure of `Step` from fresh ledgers. -/
theorem reachable_iff_steps {minCost : Int} {s : BudgetState} :
    Reachable minCost s ↔ ∃ total : Int, 0 ≤ total ∧ Steps minCost (initial total) s := by
  constructor
  · exact steps_of_reachable
  · intro h
    cases h with
    | intro total hRun => exact reachable_of_steps hRun.1 hRun.2

/-- Steps from a reachable state lead to reachable states. -/
theorem reachable_steps {minCost : Int} {s t : BudgetState} (hs : Reachable minCost s)
    (h : Steps minCost s t) : Reachable minCost t := by
  induction h with
  | refl => exact hs
  | tail _ hStep ih => exact Reachable.step ih hStep

/-! ## T1: budget safety in every reachable state -/

/-- Every reachable state is budget-safe (induction over `Reachable`). -/
theorem reachable_budgetSafe {minCost : Int} {s : BudgetState} (h : Reachable minCost s) :
    budgetSafe s := by
  induction h with
  | init total hTotal => exact initial_budgetSafe total hTotal
  | step _ hStep ih => exact step_preserves_budgetSafe hStep ih

/-- **T1** (budget safety): in every reachable state, net spend is at most the total. -/
theorem reachable_net_le_total {minCost : Int} {s : BudgetState} (h : Reachable minCost s) :
    net s ≤ s.total := by
  have hs : 0 ≤ s.refunded ∧ 0 ≤ net s ∧ net s ≤ s.total := reachable_budgetSafe h
  exact hs.2.2

/-- Net spend is never negative in a reachable state. -/
theorem reachable_net_nonneg {minCost : Int} {s : BudgetState} (h : Reachable minCost s) :
    0 ≤ net s := by
  have hs : 0 ≤ s.refunded ∧ 0 ≤ net s ∧ net s ≤ s.total := reachable_budgetSafe h
  exact hs.2.1

/-- Refunds never exceed gross spend in a reachable state (the C++ class invariant). -/
theorem reachable_refunded_le_gross {minCost : Int} {s : BudgetState}
    (h : Reachable minCost s) : 0 ≤ s.refunded ∧ s.refunded ≤ s.gross := by
  have hs : 0 ≤ s.refunded ∧ 0 ≤ s.gross - s.refunded ∧ s.gross - s.refunded ≤ s.total :=
    reachable_budgetSafe h
  have h1 := hs.1
  have h2 := hs.2.1
  exact ⟨h1, by omega⟩

/-! ## T4: gross spend never decreases -/

/-- A refund leaves gross spend unchanged. -/
theorem refund_gross_eq (s : BudgetState) (amount : Int) :
    (refund s amount).gross = s.gross := rfl

/-- A charge of a non-negative cost does not decrease gross spend. C++:
`CLAMPAI_ALWAYS_ASSERT(gross_ >= old_gross)` in `charge`. -/
theorem charge_gross_monotone (s : BudgetState) (cost : Int) (hc : 0 ≤ cost) :
    s.gross ≤ (charge s cost).gross := by
  show s.gross ≤ s.gross + cost
  omega

/-- **T4** (monotone gross spend): no step decreases gross spend. -/
theorem step_gross_monotone {minCost : Int} {s t : BudgetState} (h : Step minCost s t) :
    s.gross ≤ t.gross := by
  cases h with
  | chargeStep cost _ _ hAfford =>
    have hc : 0 ≤ cost ∧ cost ≤ s.total - (s.gross - s.refunded) := hAfford
    have h1 := hc.1
    show s.gross ≤ s.gross + cost
    omega
  | refundStep _ _ =>
    show s.gross ≤ s.gross
    omega
  | rejectStep =>
    show s.gross ≤ s.gross
    omega
  | emergencyStep _ =>
    show s.gross ≤ s.gross + 0
    omega

/-- T4 along any run of steps: gross spend at the end is at least gross spend at the start. -/
theorem steps_gross_monotone {minCost : Int} {s t : BudgetState} (h : Steps minCost s t) :
    s.gross ≤ t.gross := by
  induction h with
  | refl => omega
  | tail _ hStep ih =>
    have h1 := step_gross_monotone hStep
    omega

/-- Gross spend is never negative in a reachable state (as `0 ≤ refunded ≤ gross`). -/
theorem reachable_gross_nonneg {minCost : Int} {s : BudgetState} (h : Reachable minCost s) :
    0 ≤ s.gross := by
  have hs := reachable_refunded_le_gross h
  have h1 := hs.1
  have h2 := hs.2
  omega

end ClampAI.Budget
