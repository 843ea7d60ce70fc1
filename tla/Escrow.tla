------------------------------- MODULE Escrow -------------------------------
(***************************************************************************)
(* Escrow mode of the shared ledger (docs/LEDGER.md, "Escrow mode"): N     *)
(* processes share one task's budget through a pool in the database. A    *)
(* process leases a slice (at most what the pool has free), decides        *)
(* locally against its slice (no round trip), and makes its spend durable  *)
(* by flushing: a transaction that writes the lease's spend only while the *)
(* lease is active. Rollbacks refund to the lease. A lease ends once:      *)
(* closed by its holder (after a flush) or expired by the database (its    *)
(* lifetime passed: the holder crashed or stalled); either way what it did *)
(* not durably spend returns to the pool, and a flush after that fails     *)
(* (its pending decisions were never counted). Expiry may strike any      *)
(* active lease at any time: safety does not depend on clocks. A process   *)
(* can crash at any point, losing what it had not flushed.                 *)
(*                                                                         *)
(* C++: ledger/src/escrow.cpp (EscrowKernel).                              *)
(* ExpiryReturnsUnspent = FALSE (EscrowBroken.cfg) makes an expiry return  *)
(* the whole slice, even what was spent: TLC must find a double spend.     *)
(***************************************************************************)
EXTENDS Integers, FiniteSets, TLC

CONSTANTS
    Procs,                 \* the processes
    Budget,                \* the pool's total
    Slice,                 \* the slice a process asks for
    MaxLeases,             \* leases in a behaviour (keeps the model finite)
    MaxCrashes,            \* crashes in a behaviour (keeps the model finite)
    ExpiryReturnsUnspent   \* TRUE: the protocol; FALSE: the broken variant

ASSUME /\ Budget \in Nat /\ Slice \in Nat \ {0} /\ MaxLeases \in Nat /\ MaxCrashes \in Nat
       /\ ExpiryReturnsUnspent \in BOOLEAN

Ids == 1..MaxLeases
Unused == [status |-> "unused", owner |-> "none", slice |-> 0, spent |-> 0]
Min(a, b) == IF a < b THEN a ELSE b

VARIABLES
    reserved,  \* the pool row: active leases' slices + ended leases' spend
    leases,    \* the lease rows: status, holder, slice, durable spend
    next,      \* leases created so far
    held,      \* held[p]: the lease p holds (0: none)
    local,     \* local[p]: p's net spend on its lease, flushed or not
    told,      \* told[l]: the spend of lease l its holder was told is durable
    crashes

vars == <<reserved, leases, next, held, local, told, crashes>>

TypeOK == /\ reserved \in Int
          /\ leases \in [Ids -> [status: {"unused", "active", "closed", "expired"},
                                  owner: Procs \cup {"none"}, slice: Nat, spent: Nat]]
          /\ next \in 0..MaxLeases
          /\ held \in [Procs -> 0..MaxLeases]
          /\ local \in [Procs -> Nat]
          /\ told \in [Ids -> Nat]

Init == /\ reserved = 0
        /\ leases = [l \in Ids |-> Unused]
        /\ next = 0
        /\ held = [p \in Procs |-> 0]
        /\ local = [p \in Procs |-> 0]
        /\ told = [l \in Ids |-> 0]
        /\ crashes = 0

(* Lease(p): in one transaction, a lease of min(Slice, free) if any is    *)
(* free (expired leases are swept by Expire, which models the sweep).     *)
Lease(p) == LET grant == Min(Slice, Budget - reserved) IN
            /\ held[p] = 0
            /\ next < MaxLeases
            /\ grant > 0
            /\ next' = next + 1
            /\ leases' = [leases EXCEPT ![next + 1] =
                            [status |-> "active", owner |-> p, slice |-> grant, spent |-> 0]]
            /\ reserved' = reserved + grant
            /\ held' = [held EXCEPT ![p] = next + 1]
            /\ local' = [local EXCEPT ![p] = 0]
            /\ UNCHANGED <<told, crashes>>

(* Spend(p): a local decision of cost 1 against the slice p was granted  *)
(* (p cannot see whether its lease is still active).                      *)
Spend(p) == /\ held[p] # 0
            /\ local[p] + 1 <= leases[held[p]].slice
            /\ local' = [local EXCEPT ![p] = @ + 1]
            /\ UNCHANGED <<reserved, leases, next, held, told, crashes>>

(* Refund(p): a local rollback of an action of the lease: its cost       *)
(* returns to the lease.                                                   *)
Refund(p) == /\ held[p] # 0
             /\ local[p] > 0
             /\ local' = [local EXCEPT ![p] = @ - 1]
             /\ UNCHANGED <<reserved, leases, next, held, told, crashes>>

(* Flush(p): UPDATE the lease's spend WHERE it is active (and renew it); *)
(* p is told it is durable.                                               *)
Flush(p) == LET l == held[p] IN
            /\ l # 0
            /\ leases[l].status = "active"
            /\ leases' = [leases EXCEPT ![l].spent = local[p]]
            /\ told' = [told EXCEPT ![l] = local[p]]
            /\ UNCHANGED <<reserved, next, held, local, crashes>>

(* LeaseLost(p): the flush (or close) finds the lease ended: no row      *)
(* updated; what p had not flushed was never counted; p drops the lease.  *)
LeaseLost(p) == LET l == held[p] IN
                /\ l # 0
                /\ leases[l].status # "active"
                /\ held' = [held EXCEPT ![p] = 0]
                /\ local' = [local EXCEPT ![p] = 0]
                /\ UNCHANGED <<reserved, leases, next, told, crashes>>

(* Close(p): after a flush, the lease ends WHERE it is active; what it    *)
(* did not spend returns to the pool.                                     *)
Close(p) == LET l == held[p] IN
            /\ l # 0
            /\ leases[l].status = "active"
            /\ local[p] = leases[l].spent
            /\ leases' = [leases EXCEPT ![l].status = "closed"]
            /\ reserved' = reserved - (leases[l].slice - leases[l].spent)
            /\ held' = [held EXCEPT ![p] = 0]
            /\ UNCHANGED <<next, local, told, crashes>>

(* Expire(l): the database ends an active lease whose lifetime passed    *)
(* (at any time: its holder crashed, or is slow). The protocol returns    *)
(* the unspent part; the broken variant the whole slice.                  *)
Expire(l) == /\ leases[l].status = "active"
             /\ leases' = [leases EXCEPT ![l].status = "expired"]
             /\ reserved' = reserved - (IF ExpiryReturnsUnspent
                                        THEN leases[l].slice - leases[l].spent
                                        ELSE leases[l].slice)
             /\ UNCHANGED <<next, held, local, told, crashes>>

(* Crash(p): kill -9 at any point: p loses its lease's pending spend and  *)
(* forgets the lease (which stays active until it expires).               *)
Crash(p) == /\ crashes < MaxCrashes
            /\ crashes' = crashes + 1
            /\ held' = [held EXCEPT ![p] = 0]
            /\ local' = [local EXCEPT ![p] = 0]
            /\ UNCHANGED <<reserved, leases, next, told>>

Next == \/ \E p \in Procs : Lease(p) \/ Spend(p) \/ Refund(p) \/ Flush(p) \/ LeaseLost(p)
                             \/ Close(p) \/ Crash(p)
        \/ \E l \in Ids : Expire(l)

Spec == Init /\ [][Next]_vars

Symmetry == Permutations(Procs)

RECURSIVE SumOf(_, _)
\* The sum of f[l] over the leases 1..n.
SumOf(f, n) == IF n = 0 THEN 0 ELSE f[n] + SumOf(f, n - 1)

Spent == SumOf([l \in Ids |-> leases[l].spent], MaxLeases)
Held == SumOf([l \in Ids |-> CASE leases[l].status = "active" -> leases[l].slice
                               [] leases[l].status \in {"closed", "expired"} -> leases[l].spent
                               [] OTHER -> 0], MaxLeases)

\* T1 for the group: the durable spend of all leases never exceeds the budget.
BudgetSafe == Spent <= Budget
\* The pool's row is what its leases hold, within [0, Budget]: each lease's unspent part
\* returned once.
PoolAccounts == /\ reserved = Held
                /\ 0 <= reserved /\ reserved <= Budget
\* A lease's durable spend is within its slice, and so is a holder's local spend.
LeaseSafe == /\ \A l \in Ids : leases[l].spent <= leases[l].slice
             /\ \A p \in Procs : held[p] # 0 => local[p] <= leases[held[p]].slice
\* What a holder was told is durable is the lease's spend in the database.
NoLostCommit == \A l \in Ids : leases[l].spent = told[l]
\* An ended lease never changes again (its spend is final; it ends once).
EndedFinal == [][\A l \in Ids : leases[l].status \in {"closed", "expired"} =>
                                    leases'[l] = leases[l]]_vars
=============================================================================
