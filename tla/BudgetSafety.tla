---------------------------- MODULE BudgetSafety ----------------------------
(***************************************************************************)
(* T1 (budget safety) and T4 (monotone gross spend) for ClampAI's budget   *)
(* ledger: BudgetController (kernel/src/decision/budget.cpp) plus the step *)
(* counters the kernel keeps around it. Amounts are fixed-point integers.  *)
(*                                                                         *)
(* Lean: lean/ClampAI/Spec/Budget.lean (definitions) and                   *)
(*       lean/ClampAI/Thm/Budget.lean (proofs for every total and cost).   *)
(* C++ mirror: tests/kernel/test_budget_model.cpp explores the same state  *)
(* space through the real BudgetController and asserts its size.           *)
(***************************************************************************)
EXTENDS Integers

CONSTANTS
    Budget,       \* the total budget B0 (BudgetController::total)
    MaxCost,      \* the largest cost of one action, and of one refund
    MinCost,      \* min_action_cost: every non-emergency action costs at least this
    MaxSteps,     \* the kernel's max_steps = floor(Budget / MinCost)
    MaxEmergency  \* a bound on emergency steps, only to keep the model finite

ASSUME /\ Budget \in Nat
       /\ MinCost \in Nat \ {0}
       /\ MaxCost \in Nat /\ MaxCost >= MinCost
       /\ MaxSteps = Budget \div MinCost
       /\ MaxEmergency \in Nat

VARIABLES
    gross,          \* everything ever charged (BudgetController::gross)
    refunded,       \* everything ever refunded (BudgetController::refunded)
    steps,          \* committed non-emergency actions
    emergencySteps  \* committed emergency actions

vars == <<gross, refunded, steps, emergencySteps>>

\* BudgetController::net
Net == gross - refunded

\* BudgetController::can_afford
CanAfford(c) == c >= 0 /\ c <= Budget - Net

\* BudgetController::can_refund
CanRefund(a) == a >= 0 /\ a <= Net

TypeOK == /\ gross \in 0..(MaxSteps * MaxCost)
          /\ refunded \in 0..(MaxSteps * MaxCost)
          /\ steps \in 0..MaxSteps
          /\ emergencySteps \in 0..MaxEmergency

\* T1: net spend stays within [0, Budget]. Lean: budgetSafe, reachable_net_le_total.
BudgetSafe == 0 <= Net /\ Net <= Budget

Init == /\ gross = 0
        /\ refunded = 0
        /\ steps = 0
        /\ emergencySteps = 0

(***************************************************************************)
(* Charge(c): a committed non-emergency action of cost c. It costs at      *)
(* least MinCost, the step limit is not reached, and BudgetController's    *)
(* can_afford(c) holds; then charge(c) adds c to gross and the kernel      *)
(* counts the step. Lean: Step.chargeStep.                                 *)
(***************************************************************************)
Charge(c) == /\ c >= MinCost
             /\ steps < MaxSteps
             /\ CanAfford(c)
             /\ gross' = gross + c
             /\ steps' = steps + 1
             /\ UNCHANGED <<refunded, emergencySteps>>

(***************************************************************************)
(* Refund(a): a rollback refunds exactly the rolled-back action's cost a,  *)
(* which can_refund(a) bounds by net spend. Gross is unchanged (T4) and    *)
(* steps does not decrease. Lean: Step.refundStep.                         *)
(***************************************************************************)
Refund(a) == /\ CanRefund(a)
             /\ refunded' = refunded + a
             /\ UNCHANGED <<gross, steps, emergencySteps>>

(***************************************************************************)
(* Reject: a rejected action changes nothing. Lean: Step.rejectStep.       *)
(***************************************************************************)
Reject == UNCHANGED vars

(***************************************************************************)
(* Emergency: an emergency action costs exactly 0. It is charged 0 (so     *)
(* can_afford(0) must hold, as in the C++) and counted in emergencySteps,  *)
(* not in steps. Lean: Step.emergencyStep.                                 *)
(***************************************************************************)
Emergency == /\ emergencySteps < MaxEmergency
             /\ CanAfford(0)
             /\ emergencySteps' = emergencySteps + 1
             /\ UNCHANGED <<gross, refunded, steps>>

Next == \/ \E c \in 0..MaxCost : Charge(c)
        \/ \E a \in 0..MaxCost : Refund(a)
        \/ Reject
        \/ Emergency

Spec == Init /\ [][Next]_vars

\* T4: gross spend never decreases. Lean: step_gross_monotone.
GrossMonotone == [][gross' >= gross]_vars

THEOREM Spec => [](TypeOK /\ BudgetSafe) /\ GrossMonotone
=============================================================================
