(** * The kernel's decision on one action (T1-T5, T7)

    The ledger of [Ledger.v] extended to [SafetyKernel]'s decision
    (kernel/src/decision/decide.cpp, [decide_at]; kernel/src/safety_kernel.cpp, [execute],
    [rollback]):
    - a state maps variables (numbered 0, 1, ...) to integers, kept as the list of their values;
    - an action has a cost, an emergency flag, a reversible flag and effects, each setting its
      variable to a constant or incrementing it by a constant; every effect reads the state
      before the action, and an action has at most one effect per variable (the C++
      [build_model] refuses two), so the first effect on a variable is the one that counts;
    - blocking invariants are linear constraints [sum of coef * var <= bound], the verifier's
      fragment;
    - the decision approves iff the cost is at least the minimum action cost (emergency actions
      are exempt), the cost is affordable, the step limit allows the step (emergency actions are
      exempt) and every blocking invariant holds on the successor;
    - rollback undoes the most recent committed action still in effect: it computes the state
      before it from the declared effects (the algebraic inverse: increments are subtracted,
      assigned variables get their old value back) and refunds the cost.

    [check_afford] selects the model: [true] is the kernel; [false] is the variant without the
    affordability check, the twin of tla/BudgetSafetyBroken.tla. *)

From Coq Require Import ZArith Bool List Lia.
From ClampAI Require Import Ledger.
Import ListNotations.
Open Scope Z_scope.

(** C++ [EffectMode::set] and [EffectMode::increment]. *)
Inductive mode := Assign | Increment.

(** C++ [Effect]: [e_var] changed by [e_mode] with the constant [e_value]. *)
Record effect := mk_effect { e_var : nat; e_mode : mode; e_value : Z }.

(** C++ [Action] with a constant cost (in budget units). *)
Record action := mk_action {
  a_cost : Z;
  a_emergency : bool;
  a_reversible : bool;
  a_effects : list effect
}.

(** A blocking invariant [sum of coef * var <= bound]; a term is a pair (variable, coef). *)
Record invariant := mk_invariant { i_terms : list (nat * Z); i_bound : Z }.

(** C++ [TaskModel]: budget total and minimum action cost (budget units), an optional declared
    [max_steps], the initial values of the variables, the actions and the blocking invariants. *)
Record task := mk_task {
  t_total : Z;
  t_min_cost : Z;
  t_max_steps : option Z;
  t_init : list Z;
  t_actions : list action;
  t_invariants : list invariant
}.

(** One undo record: the action and the state before it (C++ [SafetyKernel::Undo]). *)
Record undo := mk_undo { u_action : action; u_before : list Z }.

(** C++ [Situation] plus the undo stack: variables, ledger, step counters. *)
Record kstate := mk_kstate {
  k_vars : list Z;
  k_ledger : ledger;
  k_steps : Z;
  k_emergency_steps : Z;
  k_undo : list undo
}.

(** The failing checks of a decision, as the C++ [Decision::reasons] lists them:
    [below_min_cost], [budget_exceeded], [step_limit] and the indices of the blocking
    invariants that would be violated ([invariant_violated]). *)
Record decision := mk_decision {
  d_below_min_cost : bool;
  d_budget_exceeded : bool;
  d_step_limit : bool;
  d_violated : list nat
}.

Definition approved (d : decision) : bool :=
  negb (d_below_min_cost d) && negb (d_budget_exceeded d) && negb (d_step_limit d) &&
  match d_violated d with [] => true | _ => false end.

(** ** Effects *)

Definition read (vars : list Z) (x : nat) : Z := nth x vars 0.

Fixpoint find_effect (effs : list effect) (x : nat) : option effect :=
  match effs with
  | [] => None
  | e :: rest => if Nat.eqb (e_var e) x then Some e else find_effect rest x
  end.

Definition effect_value (eff : option effect) (old : Z) : Z :=
  match eff with
  | None => old
  | Some e => match e_mode e with Assign => e_value e | Increment => old + e_value e end
  end.

(** The successor state: every variable from its effect on the state before (a parallel
    assignment, as the C++ simulates it). *)
Fixpoint apply_from (effs : list effect) (x : nat) (vars : list Z) : list Z :=
  match vars with
  | [] => []
  | v :: rest => effect_value (find_effect effs x) v :: apply_from effs (S x) rest
  end.

Definition apply_effects (effs : list effect) (vars : list Z) : list Z := apply_from effs 0 vars.

(** The algebraic inverse of one effect: from the value before and the value now. *)
Definition inverse_value (eff : option effect) (before now : Z) : Z :=
  match eff with
  | None => now
  | Some e => match e_mode e with Assign => before | Increment => now - e_value e end
  end.

Fixpoint inverse_from (effs : list effect) (x : nat) (before now : list Z) : list Z :=
  match before, now with
  | b :: rb, n :: rn => inverse_value (find_effect effs x) b n :: inverse_from effs (S x) rb rn
  | _, _ => []
  end.

Definition inverse_effects (effs : list effect) (before now : list Z) : list Z :=
  inverse_from effs 0 before now.

(** ** Invariants *)

Fixpoint lhs (terms : list (nat * Z)) (vars : list Z) : Z :=
  match terms with
  | [] => 0
  | (x, c) :: rest => c * read vars x + lhs rest vars
  end.

Definition holds (inv : invariant) (vars : list Z) : bool := lhs (i_terms inv) vars <=? i_bound inv.

(** The indices (from [i]) of the invariants violated in [vars]. *)
Fixpoint violated_from (invs : list invariant) (i : nat) (vars : list Z) : list nat :=
  match invs with
  | [] => []
  | inv :: rest =>
      if holds inv vars then violated_from rest (S i) vars else i :: violated_from rest (S i) vars
  end.

Definition all_hold (invs : list invariant) (vars : list Z) : Prop :=
  Forall (fun inv => holds inv vars = true) invs.

(** ** The decision *)

(** C++ [Budget::step_limit]: [min(floor(total / min_action_cost), max_steps)]. *)
Definition step_limit (t : task) : Z :=
  let q := t_total t / t_min_cost t in
  match t_max_steps t with Some m => Z.min q m | None => q end.

Definition initial_state (t : task) : kstate :=
  mk_kstate (t_init t) (initial (t_total t)) 0 0 [].

(** C++ [decide_at]: checks 0 (minimum cost), 1 (budget), 2 (step limit) and the invariants on
    the successor. *)
Definition decide_with (check_afford : bool) (t : task) (s : kstate) (a : action) : decision :=
  mk_decision
    (negb (a_emergency a) && (a_cost a <? t_min_cost t))
    (check_afford && negb (can_afford (k_ledger s) (a_cost a)))
    (negb (a_emergency a) && (step_limit t <=? k_steps s))
    (violated_from (t_invariants t) 0 (apply_effects (a_effects a) (k_vars s))).

(** C++ [execute]'s commit of an approved action. *)
Definition commit (s : kstate) (a : action) : kstate :=
  mk_kstate
    (apply_effects (a_effects a) (k_vars s))
    (charge (k_ledger s) (a_cost a))
    (if a_emergency a then k_steps s else k_steps s + 1)
    (if a_emergency a then k_emergency_steps s + 1 else k_emergency_steps s)
    (mk_undo a (k_vars s) :: k_undo s).

(** C++ [execute]: the decision, and the state after it (unchanged by a rejection). *)
Definition exec_with (check_afford : bool) (t : task) (s : kstate) (a : action)
  : decision * kstate :=
  let d := decide_with check_afford t s a in
  if approved d then (d, commit s a) else (d, s).

Definition decide := decide_with true.
Definition exec := exec_with true.

(** C++ [rollback] of the most recent committed action still in effect; [None] when the C++
    refuses (nothing to roll back, an irreversible action) and changes nothing. The step
    counters are not decreased. *)
Definition rollback (s : kstate) : option kstate :=
  match k_undo s with
  | [] => None
  | u :: rest =>
      if a_reversible (u_action u) then
        match try_refund (k_ledger s) (a_cost (u_action u)) with
        | Some l =>
            Some (mk_kstate (inverse_effects (a_effects (u_action u)) (u_before u) (k_vars s))
                            l (k_steps s) (k_emergency_steps s) rest)
        | None => None
        end
      else None
  end.

(** ** Runs *)

(** One transition: an action of the task is decided (and committed if approved), or the most
    recent action is rolled back. *)
Inductive step_with (check_afford : bool) (t : task) (s : kstate) : kstate -> Prop :=
  | step_exec : forall a, In a (t_actions t) -> step_with check_afford t s (snd (exec_with check_afford t s a))
  | step_rollback : forall s', rollback s = Some s' -> step_with check_afford t s s'.

Inductive steps_with (check_afford : bool) (t : task) (s : kstate) : kstate -> Prop :=
  | steps_refl : steps_with check_afford t s s
  | steps_tail : forall u v, steps_with check_afford t s u -> step_with check_afford t u v ->
                 steps_with check_afford t s v.

(** The states a kernel can be in: the initial state of a task with a non-negative total (the
    C++ refuses a negative one), then any number of steps. *)
Inductive reachable_with (check_afford : bool) (t : task) : kstate -> Prop :=
  | reach_init : 0 <= t_total t -> reachable_with check_afford t (initial_state t)
  | reach_step : forall s s', reachable_with check_afford t s -> step_with check_afford t s s' ->
                 reachable_with check_afford t s'.

Definition Step := step_with true.
Definition Steps := steps_with true.
Definition Reachable := reachable_with true.
