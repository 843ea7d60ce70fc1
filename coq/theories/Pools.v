(** * Nested budget pools (T1 and T4 at every level)

    A model of budgets that nest: an organisation's pool, a team's pool under it, a task's own
    budget under that. Every level is a ledger of [Ledger.v]; the levels are numbered, and a
    charge names its path: the levels it must fit, the task's own budget first and the root
    last. A charge commits only if it fits every level of its path, and then at every level; a
    refund returns to every level of its path; a level's total may be raised or lowered,
    never below what it has spent. A refused operation changes no level.

    An implementation takes the locks of a path root first and checks every level before
    changing any (one transaction on the shared ledger). The model charges the levels one after the other and
    keeps the result only if every level accepted: for a path without repeated levels the two
    agree, and for one with repetitions the model is the stricter (each repetition must fit what
    the earlier ones left), so the theorems hold for any path a caller names.

    [unchecked] selects the model: [None] is the kernel; [Some k] charges level [k] without its
    guard, the broken variant ([broken_pools_overspend]). *)

From Coq Require Import ZArith Bool List Lia.
From ClampAI Require Import Ledger.
Import ListNotations.
Open Scope Z_scope.

(** The levels (pools and tasks' budgets), by number. *)
Definition levels := list ledger.

(** [ls] with level [i] replaced by [l] (unchanged when there is no level [i]). *)
Fixpoint set_level (ls : levels) (i : nat) (l : ledger) : levels :=
  match ls, i with
  | [], _ => []
  | _ :: rest, O => l :: rest
  | x :: rest, S j => x :: set_level rest j l
  end.

Definition is_unchecked (unchecked : option nat) (i : nat) : bool :=
  match unchecked with
  | Some k => Nat.eqb i k
  | None => false
  end.

(** A charge of [c] at level [i]: refused ([None]) when there is no level [i] or it cannot
    afford [c] (unless it is the unchecked level). *)
Definition charge_level (unchecked : option nat) (ls : levels) (i : nat) (c : Z)
  : option levels :=
  match nth_error ls i with
  | None => None
  | Some l =>
      if is_unchecked unchecked i then Some (set_level ls i (charge l c))
      else match try_charge l c with
           | Some l' => Some (set_level ls i l')
           | None => None
           end
  end.

(** A refund of [a] at level [i]: refused when there is no level [i] or it cannot refund [a]. *)
Definition refund_level (ls : levels) (i : nat) (a : Z) : option levels :=
  match nth_error ls i with
  | None => None
  | Some l =>
      match try_refund l a with
      | Some l' => Some (set_level ls i l')
      | None => None
      end
  end.

(** A charge along a path: every level, or (on the first refusal) none. *)
Fixpoint charge_path (unchecked : option nat) (ls : levels) (path : list nat) (c : Z)
  : option levels :=
  match path with
  | [] => Some ls
  | i :: rest =>
      match charge_level unchecked ls i c with
      | Some ls' => charge_path unchecked ls' rest c
      | None => None
      end
  end.

Fixpoint refund_path (ls : levels) (path : list nat) (a : Z) : option levels :=
  match path with
  | [] => Some ls
  | i :: rest =>
      match refund_level ls i a with
      | Some ls' => refund_path ls' rest a
      | None => None
      end
  end.

(** A new total [t] for level [i]: refused below what the level has spent (or below 0). *)
Definition set_total (ls : levels) (i : nat) (t : Z) : option levels :=
  match nth_error ls i with
  | None => None
  | Some l =>
      if (0 <=? t) && (net l <=? t) then Some (set_level ls i (mk_ledger t (gross l) (refunded l)))
      else None
  end.

Inductive pool_op :=
  | PCharge (path : list nat) (c : Z)   (** a task's step charges its path *)
  | PRefund (path : list nat) (a : Z)   (** a rollback refunds it *)
  | PSetTotal (i : nat) (t : Z).        (** an operator changes a pool's total *)

(** One operation; a refused one changes nothing. *)
Definition apply_op (unchecked : option nat) (ls : levels) (op : pool_op) : levels :=
  let r := match op with
           | PCharge p c => charge_path unchecked ls p c
           | PRefund p a => refund_path ls p a
           | PSetTotal i t => set_total ls i t
           end in
  match r with
  | Some ls' => ls'
  | None => ls
  end.

Definition run_ops (unchecked : option nat) (ls : levels) (ops : list pool_op) : levels :=
  fold_left (apply_op unchecked) ops ls.

(** The states the levels can be in: every level at its initial total (non-negative, as the C++
    requires), then any operations. *)
Inductive pools_reachable_with (unchecked : option nat) (totals : list Z) : levels -> Prop :=
  | pools_init : Forall (fun t => 0 <= t) totals ->
                 pools_reachable_with unchecked totals (map initial totals)
  | pools_step : forall ls op, pools_reachable_with unchecked totals ls ->
                 pools_reachable_with unchecked totals (apply_op unchecked ls op).

Definition PoolsReachable := pools_reachable_with None.

(** ** Facts about levels *)

Lemma set_level_length : forall ls i l, length (set_level ls i l) = length ls.
Proof. induction ls as [|x rest IH]; intros [|j] l; simpl; auto. Qed.

Lemma nth_error_set_level : forall ls i j l,
  nth_error (set_level ls i l) j =
  if Nat.eqb i j then match nth_error ls j with Some _ => Some l | None => None end
  else nth_error ls j.
Proof.
  induction ls as [|x rest IH]; intros [|i] [|j] l; simpl; auto;
    destruct (Nat.eqb _ _); reflexivity.
Qed.

Lemma set_level_forall : forall (P : ledger -> Prop) ls i l,
  Forall P ls -> P l -> Forall P (set_level ls i l).
Proof.
  intros P ls. induction ls as [|x rest IH]; intros [|j] l Hall Hl; simpl; auto;
    inversion Hall; subst; constructor; auto.
Qed.

Lemma forall_nth_error : forall (P : ledger -> Prop) ls i l,
  Forall P ls -> nth_error ls i = Some l -> P l.
Proof.
  intros P ls i l Hall. revert i. induction Hall as [|x rest Hx _ IH]; intros [|j] H;
    simpl in H; try discriminate.
  - inversion H; subst; exact Hx.
  - eapply IH; eauto.
Qed.

(** ** T1 at every level *)

Lemma charge_level_safe : forall ls i c ls',
  Forall budget_safe ls -> charge_level None ls i c = Some ls' -> Forall budget_safe ls'.
Proof.
  unfold charge_level. intros ls i c ls' Hall H.
  destruct (nth_error ls i) as [l|] eqn:Hl; [|discriminate]. simpl in H.
  destruct (try_charge l c) as [l'|] eqn:Hc; inversion H; subst.
  apply set_level_forall; auto. eapply try_charge_budget_safe; eauto.
  eapply forall_nth_error; eauto.
Qed.

Lemma refund_level_safe : forall ls i a ls',
  Forall budget_safe ls -> refund_level ls i a = Some ls' -> Forall budget_safe ls'.
Proof.
  unfold refund_level. intros ls i a ls' Hall H.
  destruct (nth_error ls i) as [l|] eqn:Hl; [|discriminate].
  destruct (try_refund l a) as [l'|] eqn:Hr; inversion H; subst.
  apply set_level_forall; auto. eapply try_refund_budget_safe; eauto.
  eapply forall_nth_error; eauto.
Qed.

Lemma charge_path_safe : forall path ls c ls',
  Forall budget_safe ls -> charge_path None ls path c = Some ls' -> Forall budget_safe ls'.
Proof.
  induction path as [|i rest IH]; intros ls c ls' Hall H; simpl in H.
  - inversion H; subst; exact Hall.
  - destruct (charge_level None ls i c) as [m|] eqn:Hm; [|discriminate].
    eapply IH; [eapply charge_level_safe|]; eauto.
Qed.

Lemma refund_path_safe : forall path ls a ls',
  Forall budget_safe ls -> refund_path ls path a = Some ls' -> Forall budget_safe ls'.
Proof.
  induction path as [|i rest IH]; intros ls a ls' Hall H; simpl in H.
  - inversion H; subst; exact Hall.
  - destruct (refund_level ls i a) as [m|] eqn:Hm; [|discriminate].
    eapply IH; [eapply refund_level_safe|]; eauto.
Qed.

Lemma set_total_safe : forall ls i t ls',
  Forall budget_safe ls -> set_total ls i t = Some ls' -> Forall budget_safe ls'.
Proof.
  unfold set_total. intros ls i t ls' Hall H.
  destruct (nth_error ls i) as [l|] eqn:Hl; [|discriminate].
  destruct ((0 <=? t) && (net l <=? t)) eqn:Ht; inversion H; subst.
  apply andb_true_iff in Ht. destruct Ht as [H0 Hn]. apply Z.leb_le in H0, Hn.
  apply set_level_forall; auto.
  pose proof (forall_nth_error _ _ _ _ Hall Hl) as Hs.
  unfold budget_safe, net in *; simpl in *. lia.
Qed.

Lemma apply_op_safe : forall ls op,
  Forall budget_safe ls -> Forall budget_safe (apply_op None ls op).
Proof.
  intros ls [p c|p a|i t] Hall; unfold apply_op.
  - destruct (charge_path None ls p c) eqn:H; eauto using charge_path_safe.
  - destruct (refund_path ls p a) eqn:H; eauto using refund_path_safe.
  - destruct (set_total ls i t) eqn:H; eauto using set_total_safe.
Qed.

Lemma pools_reachable_safe : forall totals ls,
  PoolsReachable totals ls -> Forall budget_safe ls.
Proof.
  intros totals ls H. induction H as [Ht|ls op _ IH].
  - induction Ht as [|t rest Ht _ IH]; simpl; constructor; auto.
    apply initial_budget_safe; exact Ht.
  - now apply apply_op_safe.
Qed.

(** T1 at every level: in every reachable state, every level (every pool and every task's own
    budget) has [0 <= net <= total]. *)
Theorem reachable_pools_net_le_total : forall totals ls i l,
  PoolsReachable totals ls -> nth_error ls i = Some l -> 0 <= net l <= total l.
Proof.
  intros totals ls i l Hr Hl.
  pose proof (forall_nth_error _ _ _ _ (pools_reachable_safe totals ls Hr) Hl) as Hs.
  unfold budget_safe in Hs. lia.
Qed.

(** ** T4 at every level *)

(** What an operation may do to one level: its gross spend never decreases. *)
Definition gross_le (ls ls' : levels) : Prop :=
  length ls' = length ls /\
  forall i l, nth_error ls i = Some l ->
    exists l', nth_error ls' i = Some l' /\ gross l <= gross l'.

Lemma gross_le_refl : forall ls, gross_le ls ls.
Proof. intros ls. split; auto. intros i l H. exists l. split; auto. lia. Qed.

Lemma gross_le_trans : forall a b c, gross_le a b -> gross_le b c -> gross_le a c.
Proof.
  intros a b c [Hab Fab] [Hbc Fbc]. split; [lia|].
  intros i l Hl. destruct (Fab i l Hl) as [m [Hm Hlm]].
  destruct (Fbc i m Hm) as [n [Hn Hmn]]. exists n. split; auto. lia.
Qed.

(** Replacing a level by one with no less gross spend. *)
Lemma gross_le_set_level : forall ls i l l',
  nth_error ls i = Some l -> gross l <= gross l' -> gross_le ls (set_level ls i l').
Proof.
  intros ls i l l' Hl Hg. split; [apply set_level_length|].
  intros j m Hm. rewrite nth_error_set_level, Hm.
  destruct (Nat.eqb i j) eqn:E.
  - apply Nat.eqb_eq in E; subst. rewrite Hl in Hm. inversion Hm; subst.
    exists l'. split; auto.
  - exists m. split; auto. lia.
Qed.

Lemma charge_level_gross : forall u ls i c ls',
  0 <= c -> charge_level u ls i c = Some ls' -> gross_le ls ls'.
Proof.
  unfold charge_level. intros u ls i c ls' Hc H.
  destruct (nth_error ls i) as [l|] eqn:Hl; [|discriminate].
  destruct (is_unchecked u i).
  - inversion H; subst. eapply gross_le_set_level; eauto. unfold charge; simpl. lia.
  - unfold try_charge in H. destruct (can_afford l c); inversion H; subst.
    eapply gross_le_set_level; eauto. unfold charge; simpl. lia.
Qed.

Lemma charge_path_gross : forall path ls c ls',
  charge_path None ls path c = Some ls' -> gross_le ls ls'.
Proof.
  induction path as [|i rest IH]; intros ls c ls' H; simpl in H.
  - inversion H; subst. apply gross_le_refl.
  - destruct (charge_level None ls i c) as [m|] eqn:Hm; [|discriminate].
    apply gross_le_trans with m; [|eapply IH; eauto].
    unfold charge_level in Hm. simpl in Hm.
    destruct (nth_error ls i) as [l|] eqn:Hl; [|discriminate].
    unfold try_charge in Hm. destruct (can_afford l c) eqn:Ha; [|discriminate].
    inversion Hm; subst. apply can_afford_spec in Ha.
    eapply gross_le_set_level; eauto. unfold charge; simpl. lia.
Qed.

Lemma refund_path_gross : forall path ls a ls',
  refund_path ls path a = Some ls' -> gross_le ls ls'.
Proof.
  induction path as [|i rest IH]; intros ls a ls' H; simpl in H.
  - inversion H; subst. apply gross_le_refl.
  - destruct (refund_level ls i a) as [m|] eqn:Hm; [|discriminate].
    apply gross_le_trans with m; [|eapply IH; eauto].
    unfold refund_level in Hm.
    destruct (nth_error ls i) as [l|] eqn:Hl; [|discriminate].
    destruct (try_refund l a) as [l'|] eqn:Hr; inversion Hm; subst.
    apply try_refund_gross in Hr. eapply gross_le_set_level; eauto. lia.
Qed.

Lemma set_total_gross : forall ls i t ls',
  set_total ls i t = Some ls' -> gross_le ls ls'.
Proof.
  unfold set_total. intros ls i t ls' H.
  destruct (nth_error ls i) as [l|] eqn:Hl; [|discriminate].
  destruct ((0 <=? t) && (net l <=? t)); inversion H; subst.
  eapply gross_le_set_level; eauto. simpl. lia.
Qed.

Lemma apply_op_gross : forall ls op, gross_le ls (apply_op None ls op).
Proof.
  intros ls [p c|p a|i t]; unfold apply_op.
  - destruct (charge_path None ls p c) eqn:H; [eapply charge_path_gross|apply gross_le_refl]; eauto.
  - destruct (refund_path ls p a) eqn:H; [eapply refund_path_gross|apply gross_le_refl]; eauto.
  - destruct (set_total ls i t) eqn:H; [eapply set_total_gross|apply gross_le_refl]; eauto.
Qed.

(** T4 at every level: along any sequence of operations (charges, refunds, changes of a total,
    refused or not), no level's gross spend ever decreases, and no level disappears. *)
Theorem pools_gross_monotone : forall ops ls i l,
  nth_error ls i = Some l ->
  exists l', nth_error (run_ops None ls ops) i = Some l' /\ gross l <= gross l'.
Proof.
  intros ops. unfold run_ops.
  assert (forall ls, gross_le ls (fold_left (apply_op None) ops ls)) as G.
  { induction ops as [|op rest IH]; intros ls; simpl.
    - apply gross_le_refl.
    - eapply gross_le_trans; [apply apply_op_gross|apply IH]. }
  intros ls i l Hl. destruct (G ls) as [_ F]. exact (F i l Hl).
Qed.

(** A refused operation changes no level (T5 across levels). *)
Lemma refused_charge_unchanged : forall u ls p c,
  charge_path u ls p c = None -> apply_op u ls (PCharge p c) = ls.
Proof. intros u ls p c H. unfold apply_op. rewrite H. reflexivity. Qed.

(** ** With one level unchecked, some level overspends *)

(** A task's budget of 10 (level 0) in a pool of 5 (level 1) whose check is skipped: one charge
    of 10 fits the task and is approved, and the pool has spent 10 of 5. The pool's T1 depends
    on checking every level of the path, not only the task's. *)
Theorem broken_pools_overspend : exists totals ls i l,
  pools_reachable_with (Some 1%nat) totals ls /\ nth_error ls i = Some l /\ net l > total l.
Proof.
  exists [10; 5], (apply_op (Some 1%nat) (map initial [10; 5]) (PCharge [0%nat; 1%nat] 10)),
    1%nat, (mk_ledger 5 10 0).
  split; [|split].
  - apply pools_step. apply pools_init. repeat constructor; lia.
  - vm_compute. reflexivity.
  - unfold net; simpl. lia.
Qed.
