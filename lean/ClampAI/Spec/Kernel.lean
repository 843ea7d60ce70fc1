import ClampAI.Spec.Budget

/-!
# The kernel's decision on one action: definitions

The Lean twin of the Coq model `coq/theories/Ledger.v` and `coq/theories/Kernel.v`, with the same
definitions under lowerCamelCase names (Coq `can_afford` is `Ledger.canAfford` here). Coq checks
its model in CI (`scripts/check-formal.sh`); this file has not been checked by Lean (see
`lean/README.md`).

The ledger of `ClampAI/Spec/Budget.lean` extended to `SafetyKernel`'s decision: a state maps
variables (numbered 0, 1, ...) to integers; an action has a cost and effects (set or increment by a
constant); blocking invariants are linear constraints `sum of coef * var ≤ bound`; the decision
approves iff the cost is at least the minimum (emergency actions are exempt), affordable, the step
limit allows it (emergency actions are exempt) and every blocking invariant holds on the
successor; rollback computes the state before from the declared effects and refunds the cost.
Amounts are integers in units of the budget's fixed-point scale, as the C++ `Amount`.

`checkAfford = false` is the variant without the affordability check
(`tla/BudgetSafetyBroken.tla`).
-/

namespace ClampAI.Kernel

/-- C++ `BudgetController`: `total_`, `gross_`, `refunded_`. -/
structure Ledger where
  total : Int
  gross : Int
  refunded : Int
  deriving Repr

namespace Ledger

def initial (t : Int) : Ledger := { total := t, gross := 0, refunded := 0 }

def net (l : Ledger) : Int := l.gross - l.refunded

/-- C++ `BudgetController::can_afford`. -/
def canAfford (l : Ledger) (cost : Int) : Bool :=
  decide (0 ≤ cost) && decide (cost ≤ l.total - l.net)

/-- C++ `BudgetController::can_refund`. -/
def canRefund (l : Ledger) (amount : Int) : Bool :=
  decide (0 ≤ amount) && decide (amount ≤ l.net)

def charge (l : Ledger) (cost : Int) : Ledger := { l with gross := l.gross + cost }

def refund (l : Ledger) (amount : Int) : Ledger := { l with refunded := l.refunded + amount }

/-- C++ `BudgetController::charge`: refused (`none`) unless affordable. -/
def tryCharge (l : Ledger) (cost : Int) : Option Ledger :=
  if l.canAfford cost then some (l.charge cost) else none

/-- C++ `BudgetController::refund`: refused (`none`) unless at most the net spend. -/
def tryRefund (l : Ledger) (amount : Int) : Option Ledger :=
  if l.canRefund amount then some (l.refund amount) else none

def budgetSafe (l : Ledger) : Prop := 0 ≤ l.refunded ∧ 0 ≤ l.net ∧ l.net ≤ l.total

end Ledger

/-- C++ `EffectMode::set` and `EffectMode::increment`. -/
inductive Mode where
  | assign
  | increment
  deriving Repr, DecidableEq

structure Effect where
  var : Nat
  mode : Mode
  value : Int
  deriving Repr

structure Action where
  cost : Int
  emergency : Bool
  reversible : Bool
  effects : List Effect
  deriving Repr

/-- `sum of coef * var ≤ bound`; a term is (variable, coefficient). -/
structure Invariant where
  terms : List (Nat × Int)
  bound : Int
  deriving Repr

structure Task where
  total : Int
  minCost : Int
  maxSteps : Option Int
  init : List Int
  actions : List Action
  invariants : List Invariant
  deriving Repr

structure Undo where
  action : Action
  before : List Int
  deriving Repr

structure KState where
  vars : List Int
  ledger : Ledger
  steps : Int
  emergencySteps : Int
  undo : List Undo
  deriving Repr

/-- The failing checks: C++ `below_min_cost`, `budget_exceeded`, `step_limit` and the indices
of the violated blocking invariants (`invariant_violated`). -/
structure Decision where
  belowMinCost : Bool
  budgetExceeded : Bool
  stepLimit : Bool
  violated : List Nat
  deriving Repr

def Decision.approved (d : Decision) : Bool :=
  !d.belowMinCost && !d.budgetExceeded && !d.stepLimit && d.violated.isEmpty

def read (vars : List Int) (x : Nat) : Int := vars.getD x 0

def findEffect : List Effect → Nat → Option Effect
  | [], _ => none
  | e :: rest, x => if e.var = x then some e else findEffect rest x

def effectValue : Option Effect → Int → Int
  | none, old => old
  | some e, old => match e.mode with
    | .assign => e.value
    | .increment => old + e.value

def applyFrom (effs : List Effect) : Nat → List Int → List Int
  | _, [] => []
  | x, v :: rest => effectValue (findEffect effs x) v :: applyFrom effs (x + 1) rest

def applyEffects (effs : List Effect) (vars : List Int) : List Int := applyFrom effs 0 vars

def inverseValue : Option Effect → Int → Int → Int
  | none, _, now => now
  | some e, before, now => match e.mode with
    | .assign => before
    | .increment => now - e.value

def inverseFrom (effs : List Effect) : Nat → List Int → List Int → List Int
  | x, b :: rb, n :: rn => inverseValue (findEffect effs x) b n :: inverseFrom effs (x + 1) rb rn
  | _, _, _ => []

def inverseEffects (effs : List Effect) (before now : List Int) : List Int :=
  inverseFrom effs 0 before now

def lhs : List (Nat × Int) → List Int → Int
  | [], _ => 0
  | (x, c) :: rest, vars => c * read vars x + lhs rest vars

def holds (inv : Invariant) (vars : List Int) : Bool := decide (lhs inv.terms vars ≤ inv.bound)

def violatedFrom : List Invariant → Nat → List Int → List Nat
  | [], _, _ => []
  | inv :: rest, i, vars =>
    if holds inv vars then violatedFrom rest (i + 1) vars else i :: violatedFrom rest (i + 1) vars

def allHold (invs : List Invariant) (vars : List Int) : Prop := ∀ inv ∈ invs, holds inv vars = true

/-- C++ `Budget::step_limit`: `min(total / min_action_cost, max_steps)`. -/
def stepLimit (t : Task) : Int :=
  match t.maxSteps with
  | some m => min (t.total / t.minCost) m
  | none => t.total / t.minCost

def initialState (t : Task) : KState :=
  { vars := t.init, ledger := Ledger.initial t.total, steps := 0, emergencySteps := 0, undo := [] }

def decideWith (checkAfford : Bool) (t : Task) (s : KState) (a : Action) : Decision :=
  { belowMinCost := !a.emergency && decide (a.cost < t.minCost)
    budgetExceeded := checkAfford && !(s.ledger.canAfford a.cost)
    stepLimit := !a.emergency && decide (stepLimit t ≤ s.steps)
    violated := violatedFrom t.invariants 0 (applyEffects a.effects s.vars) }

def commit (s : KState) (a : Action) : KState :=
  { vars := applyEffects a.effects s.vars
    ledger := s.ledger.charge a.cost
    steps := if a.emergency then s.steps else s.steps + 1
    emergencySteps := if a.emergency then s.emergencySteps + 1 else s.emergencySteps
    undo := { action := a, before := s.vars } :: s.undo }

def execWith (checkAfford : Bool) (t : Task) (s : KState) (a : Action) : Decision × KState :=
  let d := decideWith checkAfford t s a
  if d.approved then (d, commit s a) else (d, s)

def decideAction (t : Task) (s : KState) (a : Action) : Decision := decideWith true t s a
def exec (t : Task) (s : KState) (a : Action) : Decision × KState := execWith true t s a

def rollback (s : KState) : Option KState :=
  match s.undo with
  | [] => none
  | u :: rest =>
    if u.action.reversible then
      match s.ledger.tryRefund u.action.cost with
      | some l => some { vars := inverseEffects u.action.effects u.before s.vars, ledger := l,
                         steps := s.steps, emergencySteps := s.emergencySteps, undo := rest }
      | none => none
    else none

inductive StepWith (checkAfford : Bool) (t : Task) (s : KState) : KState → Prop where
  | execStep (a : Action) (h : a ∈ t.actions) : StepWith checkAfford t s (execWith checkAfford t s a).2
  | rollbackStep (s' : KState) (h : rollback s = some s') : StepWith checkAfford t s s'

inductive StepsWith (checkAfford : Bool) (t : Task) (s : KState) : KState → Prop where
  | refl : StepsWith checkAfford t s s
  | tail {u v : KState} : StepsWith checkAfford t s u → StepWith checkAfford t u v →
      StepsWith checkAfford t s v

inductive ReachableWith (checkAfford : Bool) (t : Task) : KState → Prop where
  | init (h : 0 ≤ t.total) : ReachableWith checkAfford t (initialState t)
  | step {s s' : KState} : ReachableWith checkAfford t s → StepWith checkAfford t s s' →
      ReachableWith checkAfford t s'

abbrev Step := StepWith true
abbrev Steps := StepsWith true
abbrev Reachable := ReachableWith true

end ClampAI.Kernel
