(** * The budget ledger (T1, T4)

    A model of [BudgetController] (kernel/include/clampai/kernel/budget.hpp,
    kernel/src/decision/budget.cpp); the Coq twin of lean/ClampAI/Spec/Budget.lean. Amounts are
    the C++ [Amount]: integer counts of 10^-scale units of the budget's fixed-point scale
    (kernel/include/clampai/kernel/number.hpp), modelled as unbounded [Z]. Where the C++ int64
    cannot hold an amount of this model, the C++ refuses (the differential test checks that). *)

From Coq Require Import ZArith Bool Lia.
Open Scope Z_scope.

(** C++: [BudgetController::total_], [gross_], [refunded_]. *)
Record ledger := mk_ledger {
  total : Z;     (** the total budget; never changes *)
  gross : Z;     (** everything ever charged *)
  refunded : Z   (** everything ever refunded *)
}.

(** C++: [BudgetController(total)]. *)
Definition initial (t : Z) : ledger := mk_ledger t 0 0.

(** C++: [BudgetController::net]. *)
Definition net (l : ledger) : Z := gross l - refunded l.

(** C++: [BudgetController::can_afford]: [cost >= 0 && cost <= total - net]. *)
Definition can_afford (l : ledger) (cost : Z) : bool :=
  (0 <=? cost) && (cost <=? total l - net l).

(** C++: [BudgetController::can_refund]: [amount >= 0 && amount <= net]. *)
Definition can_refund (l : ledger) (amount : Z) : bool :=
  (0 <=? amount) && (amount <=? net l).

(** The effect of [charge] once its guard has passed: gross spend grows. *)
Definition charge (l : ledger) (cost : Z) : ledger :=
  mk_ledger (total l) (gross l + cost) (refunded l).

(** The effect of [refund] once its guard has passed: refunds grow, gross does not change. *)
Definition refund (l : ledger) (amount : Z) : ledger :=
  mk_ledger (total l) (gross l) (refunded l + amount).

(** C++ [BudgetController::charge]: throws (here [None]) and changes nothing unless
    [can_afford]. *)
Definition try_charge (l : ledger) (cost : Z) : option ledger :=
  if can_afford l cost then Some (charge l cost) else None.

(** C++ [BudgetController::refund]: throws (here [None]) and changes nothing unless
    [can_refund]. *)
Definition try_refund (l : ledger) (amount : Z) : option ledger :=
  if can_refund l amount then Some (refund l amount) else None.

(** T1 as an invariant of the fields (the C++ [INVARIANT (budget-safe)]). *)
Definition budget_safe (l : ledger) : Prop :=
  0 <= refunded l /\ 0 <= net l /\ net l <= total l.

Lemma can_afford_spec : forall l c,
  can_afford l c = true <-> 0 <= c /\ c <= total l - net l.
Proof.
  intros l c. unfold can_afford. rewrite andb_true_iff, !Z.leb_le. tauto.
Qed.

Lemma can_refund_spec : forall l a,
  can_refund l a = true <-> 0 <= a /\ a <= net l.
Proof.
  intros l a. unfold can_refund. rewrite andb_true_iff, !Z.leb_le. tauto.
Qed.

Lemma initial_budget_safe : forall t, 0 <= t -> budget_safe (initial t).
Proof. intros t Ht. unfold budget_safe, initial, net; simpl. lia. Qed.

Lemma charge_budget_safe : forall l c,
  budget_safe l -> can_afford l c = true -> budget_safe (charge l c).
Proof.
  intros l c Hs Hc. apply can_afford_spec in Hc.
  unfold budget_safe, charge, net in *; simpl in *. lia.
Qed.

Lemma refund_budget_safe : forall l a,
  budget_safe l -> can_refund l a = true -> budget_safe (refund l a).
Proof.
  intros l a Hs Ha. apply can_refund_spec in Ha.
  unfold budget_safe, refund, net in *; simpl in *. lia.
Qed.

Lemma try_charge_budget_safe : forall l c l',
  budget_safe l -> try_charge l c = Some l' -> budget_safe l'.
Proof.
  unfold try_charge. intros l c l' Hs H.
  destruct (can_afford l c) eqn:Hc; inversion H; subst. now apply charge_budget_safe.
Qed.

Lemma try_refund_budget_safe : forall l a l',
  budget_safe l -> try_refund l a = Some l' -> budget_safe l'.
Proof.
  unfold try_refund. intros l a l' Hs H.
  destruct (can_refund l a) eqn:Ha; inversion H; subst. now apply refund_budget_safe.
Qed.

Lemma try_refund_gross : forall l a l',
  try_refund l a = Some l' -> gross l' = gross l /\ total l' = total l.
Proof.
  unfold try_refund. intros l a l' H.
  destruct (can_refund l a); inversion H; subst. simpl. lia.
Qed.
