import ClampAI.Spec.Kernel

/-!
# The kernel's decision on one action: proofs

The Lean twin of `coq/theories/Theorems.v`, with the same theorem names: T1
`reachable_net_le_total`, T2 `reachable_steps_le_bound`, T3 `reachable_invariants_hold`, T4
`steps_gross_monotone`, T5 `rejected_step_unchanged`, T7 `rollback_restores`, and
`broken_reachable_net_gt_total`. Coq checks its proofs in CI; these have not been checked by
Lean (see `lean/README.md`).
-/

namespace ClampAI.Kernel

open Ledger

/-! ## One decision -/

theorem approved_spec (d : Decision) :
    d.approved = true ↔
      d.belowMinCost = false ∧ d.budgetExceeded = false ∧ d.stepLimit = false ∧ d.violated = [] := by
  cases d with
  | mk b u l v =>
    cases b <;> cases u <;> cases l <;> cases v <;> simp [Decision.approved]

theorem exec_cases (c : Bool) (t : Task) (s : KState) (a : Action) :
    ((decideWith c t s a).approved = true ∧ (execWith c t s a).2 = commit s a) ∨
    ((decideWith c t s a).approved = false ∧ (execWith c t s a).2 = s) := by
  unfold execWith
  cases h : (decideWith c t s a).approved <;> simp [h]

theorem approved_affordable (t : Task) (s : KState) (a : Action)
    (h : (decideWith true t s a).approved = true) : s.ledger.canAfford a.cost = true := by
  have h' := ((approved_spec _).1 h).2.1
  simp [decideWith] at h'
  exact h'

theorem approved_step_limit (c : Bool) (t : Task) (s : KState) (a : Action)
    (h : (decideWith c t s a).approved = true) (he : a.emergency = false) :
    s.steps < stepLimit t := by
  have h' := ((approved_spec _).1 h).2.2.1
  simp [decideWith, he] at h'
  exact h'

theorem violatedFrom_nil (invs : List Invariant) (i : Nat) (vars : List Int)
    (h : violatedFrom invs i vars = []) : allHold invs vars := by
  induction invs generalizing i with
  | nil => intro inv hin; cases hin
  | cons inv rest ih =>
    intro inv' hin
    unfold violatedFrom at h
    cases hh : holds inv vars with
    | false => simp [hh] at h
    | true =>
      simp [hh] at h
      cases hin with
      | head => exact hh
      | tail _ hrest => exact ih (i + 1) h inv' hrest

theorem approved_invariants (c : Bool) (t : Task) (s : KState) (a : Action)
    (h : (decideWith c t s a).approved = true) :
    allHold t.invariants (applyEffects a.effects s.vars) := by
  have h' := ((approved_spec _).1 h).2.2.2
  exact violatedFrom_nil _ 0 _ h'

/-! ## Rollback computes the state before -/

theorem inverseValue_effectValue (eff : Option Effect) (b : Int) :
    inverseValue eff b (effectValue eff b) = b := by
  cases eff with
  | none => rfl
  | some e =>
    cases hm : e.mode <;> simp [inverseValue, effectValue, hm]

theorem inverse_apply (effs : List Effect) (vars : List Int) (x : Nat) :
    inverseFrom effs x vars (applyFrom effs x vars) = vars := by
  induction vars generalizing x with
  | nil => simp [applyFrom, inverseFrom]
  | cons v rest ih => simp [applyFrom, inverseFrom, inverseValue_effectValue, ih]

theorem inverseEffects_apply (effs : List Effect) (vars : List Int) :
    inverseEffects effs vars (applyEffects effs vars) = vars :=
  inverse_apply effs vars 0

/-! ## T1 -/

def ledgerOk (t : Task) (s : KState) : Prop := s.ledger.total = t.total ∧ s.ledger.budgetSafe

theorem rollback_some {s s' : KState} (h : rollback s = some s') :
    ∃ u rest l, s.undo = u :: rest ∧ u.action.reversible = true ∧
      s.ledger.tryRefund u.action.cost = some l ∧
      s' = { vars := inverseEffects u.action.effects u.before s.vars, ledger := l,
             steps := s.steps, emergencySteps := s.emergencySteps, undo := rest } := by
  unfold rollback at h
  split at h
  · cases h
  · rename_i u rest hu
    split at h
    · rename_i hr
      split at h
      · rename_i l hl
        cases h
        exact ⟨u, rest, l, hu, hr, hl, rfl⟩
      · cases h
    · cases h

theorem tryRefund_some {l l' : Ledger} {a : Int} (h : l.tryRefund a = some l') :
    0 ≤ a ∧ a ≤ l.net ∧ l' = l.refund a := by
  unfold tryRefund at h
  cases hc : l.canRefund a with
  | false => simp [hc] at h
  | true =>
    simp [hc] at h
    simp [canRefund] at hc
    exact ⟨hc.1, hc.2, h.symm⟩

theorem step_ledgerOk {t : Task} {s s' : KState} (hs : ledgerOk t s) (h : Step t s s') :
    ledgerOk t s' := by
  cases h with
  | execStep a _ =>
    rcases exec_cases true t s a with ⟨ha, he⟩ | ⟨_, he⟩
    · rw [he]
      have hc := approved_affordable t s a ha
      simp [canAfford] at hc
      have h1 := hs.2.1
      have h2 := hs.2.2.1
      have h3 := hs.2.2.2
      simp only [ledgerOk, commit, charge, budgetSafe, net] at *
      omega
    · rw [he]; exact hs
  | rollbackStep s' hr =>
    rcases rollback_some hr with ⟨u, rest, l, _, _, hl, rfl⟩
    rcases tryRefund_some hl with ⟨h1, h2, rfl⟩
    have h3 := hs.1
    have h4 := hs.2.1
    have h5 := hs.2.2.1
    have h6 := hs.2.2.2
    simp only [ledgerOk, refund, budgetSafe, net] at *
    omega

theorem reachable_ledgerOk {t : Task} {s : KState} (h : Reachable t s) : ledgerOk t s := by
  induction h with
  | init ht =>
    simp only [ledgerOk, initialState, Ledger.initial, budgetSafe, net]
    omega
  | step _ hstep ih => exact step_ledgerOk ih hstep

/-- T1: `0 ≤ net ≤ total` in every reachable state. -/
theorem reachable_net_le_total {t : Task} {s : KState} (h : Reachable t s) :
    0 ≤ s.ledger.net ∧ s.ledger.net ≤ t.total := by
  have ⟨h1, _, h2, h3⟩ := reachable_ledgerOk h
  exact ⟨h2, h1 ▸ h3⟩

/-! ## T2 -/

theorem stepLimit_le (t : Task) : stepLimit t ≤ t.total / t.minCost := by
  unfold stepLimit
  cases t.maxSteps with
  | none => exact Int.le_refl _
  | some m => exact Int.min_le_left _ _

/-- T2: `steps ≤ total / minCost` in every reachable state, for `minCost > 0`. -/
theorem reachable_steps_le_bound {t : Task} {s : KState} (hmin : 0 < t.minCost)
    (h : Reachable t s) : s.steps ≤ t.total / t.minCost := by
  induction h with
  | init ht =>
    show (0 : Int) ≤ t.total / t.minCost
    exact Int.ediv_nonneg ht (Int.le_of_lt hmin)
  | step _ hstep ih =>
    cases hstep with
    | execStep a _ =>
      rcases exec_cases true t _ a with ⟨ha, he⟩ | ⟨_, he⟩
      · rw [he]
        cases hem : a.emergency with
        | true => simp [commit, hem]; exact ih
        | false =>
          have hl := approved_step_limit true t _ a ha hem
          have hb := stepLimit_le t
          simp [commit, hem]
          omega
      · rw [he]; exact ih
    | rollbackStep s' hr =>
      rcases rollback_some hr with ⟨_, _, _, _, _, _, rfl⟩
      exact ih

/-! ## T3 -/

def undoOk : List Int → List Undo → Prop
  | _, [] => True
  | vars, u :: rest => vars = applyEffects u.action.effects u.before ∧ undoOk u.before rest

def invariantsOk (t : Task) (s : KState) : Prop :=
  allHold t.invariants s.vars ∧ (∀ u ∈ s.undo, allHold t.invariants u.before) ∧ undoOk s.vars s.undo

theorem step_invariantsOk {t : Task} {s s' : KState} (hs : invariantsOk t s) (h : Step t s s') :
    invariantsOk t s' := by
  have ⟨hv, hu, hk⟩ := hs
  cases h with
  | execStep a _ =>
    rcases exec_cases true t s a with ⟨ha, he⟩ | ⟨_, he⟩
    · rw [he]
      refine ⟨approved_invariants true t s a ha, ?_, ?_⟩
      · intro u hin
        cases hin with
        | head => exact hv
        | tail _ hrest => exact hu u hrest
      · exact ⟨rfl, hk⟩
    · rw [he]; exact hs
  | rollbackStep s' hr =>
    rcases rollback_some hr with ⟨u, rest, _, hundo, _, _, rfl⟩
    rw [hundo] at hu hk
    have ⟨hvars, hrest⟩ := hk
    refine ⟨?_, ?_, ?_⟩
    · show allHold t.invariants (inverseEffects u.action.effects u.before s.vars)
      rw [hvars, inverseEffects_apply]
      exact hu u (List.Mem.head _)
    · intro u' hin
      exact hu u' (List.Mem.tail _ hin)
    · show undoOk (inverseEffects u.action.effects u.before s.vars) rest
      rw [hvars, inverseEffects_apply]
      exact hrest

/-- T3: blocking invariants that hold initially hold in every reachable state. -/
theorem reachable_invariants_hold {t : Task} {s : KState} (hinit : allHold t.invariants t.init)
    (h : Reachable t s) : allHold t.invariants s.vars := by
  have hok : invariantsOk t s := by
    induction h with
    | init _ => exact ⟨hinit, fun _ hin => by cases hin, trivial⟩
    | step _ hstep ih => exact step_invariantsOk ih hstep
  exact hok.1

/-! ## T4 -/

theorem step_gross_monotone {t : Task} {s s' : KState} (h : Step t s s') :
    s.ledger.gross ≤ s'.ledger.gross := by
  cases h with
  | execStep a _ =>
    rcases exec_cases true t s a with ⟨ha, he⟩ | ⟨_, he⟩
    · rw [he]
      have hc := approved_affordable t s a ha
      simp [canAfford] at hc
      simp only [commit, charge]
      omega
    · rw [he]; exact Int.le_refl _
  | rollbackStep s' hr =>
    rcases rollback_some hr with ⟨_, _, _, _, _, hl, rfl⟩
    rcases tryRefund_some hl with ⟨_, _, rfl⟩
    exact Int.le_refl _

/-- T4: gross spend never decreases along any run. -/
theorem steps_gross_monotone {t : Task} {s u : KState} (h : Steps t s u) :
    s.ledger.gross ≤ u.ledger.gross := by
  induction h with
  | refl => exact Int.le_refl _
  | tail _ hstep ih => exact Int.le_trans ih (step_gross_monotone hstep)

/-! ## T5 -/

/-- T5: a rejected decision leaves state, budget and counters unchanged. -/
theorem rejected_step_unchanged (t : Task) (s : KState) (a : Action)
    (h : (decideAction t s a).approved = false) : exec t s a = (decideAction t s a, s) := by
  simp only [exec, execWith, decideAction] at *
  simp [h]

/-! ## T7 -/

/-- T7: an approved action followed by its rollback gives back the previous state and net
spend (gross keeps the charge, T4). -/
theorem rollback_restores {t : Task} {s : KState} {a : Action} (hr : Reachable t s)
    (ha : (decideAction t s a).approved = true) (hrev : a.reversible = true) :
    ∃ s', rollback (exec t s a).2 = some s' ∧ s'.vars = s.vars ∧
      s'.ledger.net = s.ledger.net ∧ s'.ledger.total = s.ledger.total ∧ s'.undo = s.undo ∧
      s'.ledger.gross = s.ledger.gross + a.cost := by
  have hn := (reachable_net_le_total hr).1
  have hc := approved_affordable t s a ha
  simp [canAfford] at hc
  have hexec : (exec t s a).2 = commit s a := by
    simp only [exec, execWith]
    simp only [decideAction] at ha
    simp [ha]
  have hrefund : (s.ledger.charge a.cost).canRefund a.cost = true := by
    simp only [canRefund, charge, net] at *
    simp
    omega
  refine ⟨{ vars := s.vars, ledger := (s.ledger.charge a.cost).refund a.cost,
            steps := (commit s a).steps, emergencySteps := (commit s a).emergencySteps,
            undo := s.undo }, ?_, rfl, ?_, rfl, rfl, rfl⟩
  · rw [hexec]
    simp [rollback, commit, hrev, tryRefund, hrefund, inverseEffects_apply]
  · simp only [net, refund, charge]
    omega

/-! ## Without the affordability check, T1 fails -/

/-- The twin of `tla/BudgetSafetyBroken.tla`: without `canAfford`, one action costing more than
the whole budget is approved from the initial state. -/
theorem broken_reachable_net_gt_total :
    ∃ t s, ReachableWith false t s ∧ s.ledger.net > t.total := by
  let a : Action := { cost := 2, emergency := false, reversible := true, effects := [] }
  let t : Task := { total := 1, minCost := 1, maxSteps := none, init := [], actions := [a],
                    invariants := [] }
  refine ⟨t, (execWith false t (initialState t) a).2, ?_, ?_⟩
  · exact ReachableWith.step (ReachableWith.init (by decide))
      (StepWith.execStep a (List.Mem.head _))
  · decide

end ClampAI.Kernel
