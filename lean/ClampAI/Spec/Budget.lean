/-!
# The budget ledger (T1, T4): definitions

A model of `BudgetController` (kernel/include/clampai/kernel/budget.hpp, kernel/src/decision/budget.cpp)
together with the step counters the kernel keeps around it. Amounts are the C++ `Amount`:
integers counting 10^-scale units, modelled as unbounded `Int`s (64-bit overflow of the C++
counters is outside this model).

Proofs are in `ClampAI/Thm/Budget.lean`. TLA+ counterpart: `tla/BudgetSafety.tla`.
-/

namespace ClampAI.Budget

/-- The ledger of one kernel plus its step counters.
C++: `BudgetController::total_`, `gross_`, `refunded_`; the kernel's `steps` and
`emergency_steps`. -/
structure BudgetState where
  /-- The total budget B0; never changes. -/
  total : Int
  /-- Everything ever charged. -/
  gross : Int
  /-- Everything ever refunded. -/
  refunded : Int
  /-- Committed non-emergency actions. -/
  steps : Int
  /-- Committed emergency actions. -/
  emergencySteps : Int
  deriving Repr

/-- A fresh ledger: `BudgetController(total)` with nothing spent and no step taken. -/
def initial (total : Int) : BudgetState :=
  { total := total, gross := 0, refunded := 0, steps := 0, emergencySteps := 0 }

/-- C++ `BudgetController::net`: net spend `gross - refunded`. -/
def net (s : BudgetState) : Int := s.gross - s.refunded

/-- C++ `BudgetController::can_afford`: `cost >= 0 && cost <= total - net`. -/
def canAfford (s : BudgetState) (cost : Int) : Prop :=
  0 ≤ cost ∧ cost ≤ s.total - net s

/-- C++ `BudgetController::can_refund`: `amount >= 0 && amount <= net`. -/
def canRefund (s : BudgetState) (amount : Int) : Prop :=
  0 ≤ amount ∧ amount ≤ net s

/-- C++ `BudgetController::charge` once its guard `can_afford` has passed: gross spend grows.
Only a `Step` when `canAfford s cost` holds (otherwise the C++ throws and nothing changes). -/
def charge (s : BudgetState) (cost : Int) : BudgetState :=
  { s with gross := s.gross + cost }

/-- C++ `BudgetController::refund` once its guard `can_refund` has passed: refunds grow and
gross spend does not change. Only a `Step` when `canRefund s amount` holds. -/
def refund (s : BudgetState) (amount : Int) : BudgetState :=
  { s with refunded := s.refunded + amount }

/-- A rejected action changes nothing. -/
def reject (s : BudgetState) : BudgetState := s

/-- The kernel counts a committed non-emergency action. -/
def countStep (s : BudgetState) : BudgetState :=
  { s with steps := s.steps + 1 }

/-- The kernel counts a committed emergency action. -/
def countEmergency (s : BudgetState) : BudgetState :=
  { s with emergencySteps := s.emergencySteps + 1 }

/-- The kernel's `max_steps = floor(total / min_action_cost)` (`Int` division; both operands
are non-negative in every use, where it is the floor). -/
def maxSteps (total minCost : Int) : Int := total / minCost

/-- One transition of the kernel's budget, for a given `min_action_cost`.
TLA+: the disjuncts of `Next` in `tla/BudgetSafety.tla`. -/
inductive Step (minCost : Int) (s : BudgetState) : BudgetState → Prop where
  /-- A committed non-emergency action of cost `cost`: at least `min_action_cost`, within the
  step limit and affordable; it is charged and counted. TLA+: `Charge(c)`. -/
  | chargeStep (cost : Int) (hMin : minCost ≤ cost)
      (hSteps : s.steps < maxSteps s.total minCost) (hAfford : canAfford s cost) :
      Step minCost s (countStep (charge s cost))
  /-- A rollback refunds exactly the rolled-back action's cost, at most the net spend; it does
  not decrease `steps`. TLA+: `Refund(a)`. -/
  | refundStep (amount : Int) (hRefund : canRefund s amount) :
      Step minCost s (refund s amount)
  /-- A rejected action: nothing changes. TLA+: `Reject`. -/
  | rejectStep : Step minCost s (reject s)
  /-- An emergency action costs exactly 0: it is charged 0 and counted apart from `steps`.
  TLA+: `Emergency`. -/
  | emergencyStep (hAfford : canAfford s 0) :
      Step minCost s (countEmergency (charge s 0))

/-- The reflexive-transitive closure of `Step`: `Steps minCost s t` iff a run of zero or more
steps leads from `s` to `t`. -/
inductive Steps (minCost : Int) (s : BudgetState) : BudgetState → Prop where
  | refl : Steps minCost s s
  | tail {t u : BudgetState} : Steps minCost s t → Step minCost t u → Steps minCost s u

/-- The states a kernel can be in: a fresh ledger with a non-negative total (the C++
constructor rejects a negative one), then any number of steps. Equivalent to
`∃ total, 0 ≤ total ∧ Steps minCost (initial total) s` (`reachable_iff_steps`). -/
inductive Reachable (minCost : Int) : BudgetState → Prop where
  | init (total : Int) (hTotal : 0 ≤ total) : Reachable minCost (initial total)
  | step {s t : BudgetState} : Reachable minCost s → Step minCost s t → Reachable minCost t

/-- T1 as an invariant over the fields, plus the C++ class invariant `0 <= refunded`:
`0 ≤ refunded`, `0 ≤ net` (so `refunded ≤ gross`) and `net ≤ total`.
C++: the `INVARIANT (budget-safe)` comment of `BudgetController`. TLA+: `BudgetSafe`. -/
def budgetSafe (s : BudgetState) : Prop :=
  0 ≤ s.refunded ∧ 0 ≤ net s ∧ net s ≤ s.total

end ClampAI.Budget
