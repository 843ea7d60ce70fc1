(** * The kernel's theorems, proved on the model of [Kernel.v]

    Every theorem ends in [Qed] and [Print Assumptions] says it is closed under the global
    context (scripts/check-formal.sh checks both). States are compared as lists of values, so
    equality of states is plain equality, without extensionality. *)

From Coq Require Import ZArith Bool List Lia.
From ClampAI Require Import Ledger Kernel.
Import ListNotations.
Open Scope Z_scope.

(** ** Facts about one decision *)

Lemma approved_spec : forall d,
  approved d = true <->
  d_below_min_cost d = false /\ d_budget_exceeded d = false /\ d_step_limit d = false /\
  d_violated d = [].
Proof.
  intros [b u l v]. unfold approved; simpl.
  destruct b, u, l, v; simpl; intuition congruence.
Qed.

Lemma exec_cases : forall c t s a,
  (approved (decide_with c t s a) = true /\ snd (exec_with c t s a) = commit s a) \/
  (approved (decide_with c t s a) = false /\ snd (exec_with c t s a) = s).
Proof.
  intros c t s a. unfold exec_with. destruct (approved (decide_with c t s a)); auto.
Qed.

Lemma approved_affordable : forall t s a,
  approved (decide t s a) = true -> can_afford (k_ledger s) (a_cost a) = true.
Proof.
  intros t s a H. apply approved_spec in H. destruct H as [_ [H _]].
  unfold decide, decide_with in H; simpl in H.
  destruct (can_afford (k_ledger s) (a_cost a)); simpl in H; congruence.
Qed.

Lemma approved_step_limit : forall c t s a,
  approved (decide_with c t s a) = true -> a_emergency a = false ->
  k_steps s < step_limit t.
Proof.
  intros c t s a H He. apply approved_spec in H. destruct H as [_ [_ [H _]]].
  unfold decide_with in H; simpl in H. rewrite He in H; simpl in H.
  apply Z.leb_gt in H. exact H.
Qed.

Lemma violated_from_nil : forall invs i vars,
  violated_from invs i vars = [] -> all_hold invs vars.
Proof.
  unfold all_hold. induction invs as [|inv rest IH]; intros i vars H; simpl in *.
  - constructor.
  - destruct (holds inv vars) eqn:Hh; [|discriminate]. constructor; eauto.
Qed.

Lemma approved_invariants : forall c t s a,
  approved (decide_with c t s a) = true ->
  all_hold (t_invariants t) (apply_effects (a_effects a) (k_vars s)).
Proof.
  intros c t s a H. apply approved_spec in H. destruct H as [_ [_ [_ H]]].
  unfold decide_with in H; simpl in H. eapply violated_from_nil; eauto.
Qed.

(** ** Rollback computes the state before *)

Lemma inverse_value_effect_value : forall eff b,
  inverse_value eff b (effect_value eff b) = b.
Proof.
  intros [[x [|] v]|] b; simpl; lia.
Qed.

Lemma inverse_apply : forall effs vars x,
  inverse_from effs x vars (apply_from effs x vars) = vars.
Proof.
  intros effs vars. induction vars as [|v rest IH]; intro x; simpl.
  - reflexivity.
  - rewrite inverse_value_effect_value, IH. reflexivity.
Qed.

Lemma inverse_effects_apply : forall effs vars,
  inverse_effects effs vars (apply_effects effs vars) = vars.
Proof. intros. apply inverse_apply. Qed.

(** ** T1: [0 <= net <= total] in every reachable state *)

Definition ledger_ok (t : task) (s : kstate) : Prop :=
  total (k_ledger s) = t_total t /\ budget_safe (k_ledger s).

Lemma step_ledger_ok : forall t s s', ledger_ok t s -> Step t s s' -> ledger_ok t s'.
Proof.
  intros t s s' [Ht Hs] H. destruct H as [a _ | s' Hr].
  - destruct (exec_cases true t s a) as [[Ha ->] | [_ ->]].
    + split; [exact Ht|]. apply charge_budget_safe; [exact Hs|].
      exact (approved_affordable t s a Ha).
    + split; assumption.
  - unfold rollback in Hr. destruct (k_undo s) as [|u rest]; [discriminate|].
    destruct (a_reversible (u_action u)); [|discriminate].
    destruct (try_refund (k_ledger s) (a_cost (u_action u))) as [l|] eqn:Hl; [|discriminate].
    inversion Hr; subst. unfold ledger_ok; simpl. split.
    + destruct (try_refund_gross _ _ _ Hl) as [_ Htot]. rewrite Htot. exact Ht.
    + eapply try_refund_budget_safe; eauto.
Qed.

Lemma reachable_ledger_ok : forall t s, Reachable t s -> ledger_ok t s.
Proof.
  intros t s H. induction H as [Ht | s s' _ IH Hs].
  - split; [reflexivity|]. now apply initial_budget_safe.
  - eapply step_ledger_ok; eauto.
Qed.

Theorem reachable_net_le_total : forall t s,
  Reachable t s -> 0 <= net (k_ledger s) <= t_total t.
Proof.
  intros t s H. destruct (reachable_ledger_ok t s H) as [Ht [_ [H1 H2]]]. lia.
Qed.

(** ** T2: [steps <= floor(total / min_cost)] in every reachable state *)

Lemma step_limit_le : forall t, step_limit t <= t_total t / t_min_cost t.
Proof.
  intro t. unfold step_limit. destruct (t_max_steps t); [apply Z.le_min_l | lia].
Qed.

Theorem reachable_steps_le_bound : forall t s,
  0 < t_min_cost t -> Reachable t s -> k_steps s <= t_total t / t_min_cost t.
Proof.
  intros t s Hmin H. induction H as [Ht | s s' _ IH Hs].
  - simpl. apply Z.div_pos; lia.
  - destruct Hs as [a _ | s' Hr].
    + destruct (exec_cases true t s a) as [[Ha ->] | [_ ->]]; [|exact IH].
      unfold commit; simpl. destruct (a_emergency a) eqn:He; [exact IH|].
      pose proof (approved_step_limit true t s a Ha He). pose proof (step_limit_le t). lia.
    + unfold rollback in Hr. destruct (k_undo s); [discriminate|].
      destruct (a_reversible (u_action u)); [|discriminate].
      destruct (try_refund (k_ledger s) (a_cost (u_action u))); [|discriminate].
      inversion Hr; subst; simpl. exact IH.
Qed.

(** ** T3: blocking invariants that hold initially hold in every reachable state *)

(** The undo stack matches the state: each record's action, applied to its state before, gives
    the state after it (the current state, for the top record). *)
Fixpoint undo_ok (vars : list Z) (stack : list undo) : Prop :=
  match stack with
  | [] => True
  | u :: rest => vars = apply_effects (a_effects (u_action u)) (u_before u) /\ undo_ok (u_before u) rest
  end.

Definition invariants_ok (t : task) (s : kstate) : Prop :=
  all_hold (t_invariants t) (k_vars s) /\
  Forall (fun u => all_hold (t_invariants t) (u_before u)) (k_undo s) /\
  undo_ok (k_vars s) (k_undo s).

Lemma step_invariants_ok : forall t s s', invariants_ok t s -> Step t s s' -> invariants_ok t s'.
Proof.
  intros t s s' [Hv [Hu Hk]] H. destruct H as [a _ | s' Hr].
  - destruct (exec_cases true t s a) as [[Ha ->] | [_ ->]].
    + unfold commit, invariants_ok; simpl. split; [|split].
      * exact (approved_invariants true t s a Ha).
      * constructor; assumption.
      * split; [reflexivity | assumption].
    + split; [|split]; assumption.
  - unfold rollback in Hr. destruct (k_undo s) as [|u rest] eqn:Hs; [discriminate|].
    destruct (a_reversible (u_action u)); [|discriminate].
    destruct (try_refund (k_ledger s) (a_cost (u_action u))); [|discriminate].
    inversion Hr; subst; clear Hr. simpl in Hk. destruct Hk as [Hvars Hrest].
    inversion Hu; subst. unfold invariants_ok; simpl.
    rewrite Hvars, inverse_effects_apply. auto.
Qed.

Theorem reachable_invariants_hold : forall t s,
  all_hold (t_invariants t) (t_init t) -> Reachable t s -> all_hold (t_invariants t) (k_vars s).
Proof.
  intros t s Hinit H.
  assert (invariants_ok t s) as [Hv _]; [|exact Hv].
  induction H as [Ht | s s' _ IH Hs].
  - unfold invariants_ok; simpl. auto.
  - eapply step_invariants_ok; eauto.
Qed.

(** ** T4: gross spend never decreases along any run *)

Lemma step_gross_monotone : forall t s s',
  Step t s s' -> gross (k_ledger s) <= gross (k_ledger s').
Proof.
  intros t s s' H. destruct H as [a _ | s' Hr].
  - destruct (exec_cases true t s a) as [[Ha ->] | [_ ->]]; [|lia].
    apply approved_affordable, can_afford_spec in Ha. simpl. lia.
  - unfold rollback in Hr. destruct (k_undo s) as [|u rest]; [discriminate|].
    destruct (a_reversible (u_action u)); [|discriminate].
    destruct (try_refund (k_ledger s) (a_cost (u_action u))) as [l|] eqn:Hl; [|discriminate].
    inversion Hr; subst; simpl. destruct (try_refund_gross _ _ _ Hl) as [Hg _]. lia.
Qed.

Theorem steps_gross_monotone : forall t s u,
  Steps t s u -> gross (k_ledger s) <= gross (k_ledger u).
Proof.
  intros t s u H. induction H as [| u v _ IH Hs]; [lia|].
  pose proof (step_gross_monotone t u v Hs). lia.
Qed.

(** ** T5: a rejected decision leaves state, budget and counters unchanged *)

Theorem rejected_step_unchanged : forall t s a,
  approved (decide t s a) = false -> exec t s a = (decide t s a, s).
Proof.
  intros t s a H. unfold exec, exec_with. fold (decide t s a). rewrite H. reflexivity.
Qed.

(** ** T7: an approved action followed by its rollback gives back the state and net spend *)

Theorem rollback_restores : forall t s a,
  Reachable t s -> approved (decide t s a) = true -> a_reversible a = true ->
  exists s', rollback (snd (exec t s a)) = Some s' /\
    k_vars s' = k_vars s /\ net (k_ledger s') = net (k_ledger s) /\
    total (k_ledger s') = total (k_ledger s) /\ k_undo s' = k_undo s /\
    gross (k_ledger s') = gross (k_ledger s) + a_cost a.
Proof.
  intros t s a Hr Ha Hrev.
  pose proof (reachable_net_le_total t s Hr) as Hn.
  pose proof (approved_affordable t s a Ha) as Hc. apply can_afford_spec in Hc.
  unfold exec, exec_with. fold (decide t s a). rewrite Ha; simpl.
  unfold rollback, commit; simpl. rewrite Hrev.
  unfold try_refund.
  assert (can_refund (charge (k_ledger s) (a_cost a)) (a_cost a) = true) as ->.
  { apply can_refund_spec. unfold charge, net in *; simpl. lia. }
  eexists; split; [reflexivity|]. simpl.
  rewrite inverse_effects_apply. unfold net in *; simpl. repeat split; lia.
Qed.

(** ** Without the affordability check, T1 fails *)

(** The twin of tla/BudgetSafetyBroken.tla: with [check_afford = false], one action costing
    more than the whole budget is approved from the initial state. T1's proof depends on the
    check. *)
Theorem broken_reachable_net_gt_total : exists t s,
  reachable_with false t s /\ net (k_ledger s) > t_total t.
Proof.
  set (a := mk_action 2 false true []).
  set (t := mk_task 1 1 None [] [a] []).
  exists t, (snd (exec_with false t (initial_state t) a)). split.
  - apply reach_step with (s := initial_state t).
    + apply reach_init. simpl. lia.
    + apply step_exec. simpl. auto.
  - vm_compute. reflexivity.
Qed.
