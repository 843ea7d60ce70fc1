----------------------------- MODULE SharedPools -----------------------------
(***************************************************************************)
(* Budgets that nest, on the shared ledger: several tasks, each with its  *)
(* own budget and hash-chained trace (SharedLedger.tla), grouped in pools *)
(* (two teams under one organisation). Processes serve any task: each     *)
(* decides on a replica of the task's chain and on the pool rows as it    *)
(* read them, then commits in one transaction: compare-and-set on the     *)
(* task's head, and (locks taken root first) every pool row of the task's *)
(* path checked and updated with the entry. A conflict on the head or a  *)
(* pool that cannot afford the charge changes nothing; the process       *)
(* decides afresh. A rollback refunds every level of the path. Processes *)
(* crash at any point.                                                    *)
(*                                                                         *)
(* A replica is a prefix of the chain (SharedLedger.tla follows its       *)
(* length through refreshes and crashes); here a decision is made on any *)
(* prefix, which includes every replica a process can hold: the checked   *)
(* behaviours include those of the protocol, in fewer states.            *)
(*                                                                         *)
(* Lost connections and their read-back are as in SharedLedger.tla (the *)
(* pool rows are written in the same transaction as the entry, so they   *)
(* add nothing there) and are not repeated here.                          *)
(*                                                                         *)
(* CheckPools = FALSE (SharedPoolsBroken.cfg) trusts the pool rows read  *)
(* at decision time instead of checking them in the transaction (the     *)
(* levels checked one after the other, outside the commit): TLC must      *)
(* then find a pool spent beyond its total.                               *)
(***************************************************************************)
EXTENDS Integers, Sequences, FiniteSets, TLC

CONSTANTS
    Procs,       \* the processes
    TasksA,      \* the tasks in pool "teamA"
    TasksB,      \* the tasks in pool "teamB"; both teams are in pool "org"
    TaskTotal,   \* each task's own budget
    TeamATotal, TeamBTotal, OrgTotal,
    Costs,       \* the costs an action may have (each > 0)
    MaxEntries,  \* entries in all chains together (keeps the model finite)
    MaxCrashes,  \* crashes in a behaviour (keeps the model finite)
    CheckPools   \* TRUE: the protocol; FALSE: the broken variant

ASSUME /\ TasksA \cap TasksB = {}
       /\ {TaskTotal, TeamATotal, TeamBTotal, OrgTotal, MaxEntries, MaxCrashes} \subseteq Nat
       /\ Costs \subseteq Nat \ {0}
       /\ CheckPools \in BOOLEAN

Tasks == TasksA \cup TasksB
PoolNames == {"teamA", "teamB", "org"}
Levels == Tasks \cup PoolNames

\* A task's path: its own budget, its team, the organisation (the root).
Path(t) == {t, IF t \in TasksA THEN "teamA" ELSE "teamB", "org"}
Total(l) == CASE l \in Tasks -> TaskTotal
              [] l = "teamA" -> TeamATotal
              [] l = "teamB" -> TeamBTotal
              [] l = "org" -> OrgTotal

None == [kind |-> "none"]

VARIABLES
    chain,    \* chain[t]: task t's committed entries, in order
    net,      \* net[l]: the row of level l (a task's head row, a pool's row): its net spend
    gross,    \* gross[l]: its gross spend
    pc,       \* "idle", "decided" (about to commit), "sent" (committed, not yet told)
    dec,      \* dec[p]: the entry p decided, or None
    told,     \* told[p]: the <<task, sequence>> pairs p was told it committed
    crashes

vars == <<chain, net, gross, pc, dec, told, crashes>>

RECURSIVE NetOf(_)
NetOf(s) == IF s = <<>> THEN 0
            ELSE LET e == s[Len(s)] IN
                 NetOf(SubSeq(s, 1, Len(s) - 1)) + (IF e.kind = "exec" THEN e.cost ELSE -e.cost)

RECURSIVE GrossOf(_)
GrossOf(s) == IF s = <<>> THEN 0
              ELSE LET e == s[Len(s)] IN
                   GrossOf(SubSeq(s, 1, Len(s) - 1)) + (IF e.kind = "exec" THEN e.cost ELSE 0)

RECURSIVE UndoStack(_)
UndoStack(s) == IF s = <<>> THEN <<>>
                ELSE LET rest == UndoStack(SubSeq(s, 1, Len(s) - 1)) IN
                     IF s[Len(s)].kind = "exec" THEN Append(rest, Len(s))
                     ELSE SubSeq(rest, 1, Len(rest) - 1)

RECURSIVE SumLen(_)
SumLen(S) == IF S = {} THEN 0
             ELSE LET t == CHOOSE x \in S : TRUE IN Len(chain[t]) + SumLen(S \ {t})

\* The net and gross spend of a finite set of tasks, together.
RECURSIVE SumNet(_)
SumNet(S) == IF S = {} THEN 0
             ELSE LET t == CHOOSE x \in S : TRUE IN NetOf(chain[t]) + SumNet(S \ {t})
RECURSIVE SumGross(_)
SumGross(S) == IF S = {} THEN 0
               ELSE LET t == CHOOSE x \in S : TRUE IN GrossOf(chain[t]) + SumGross(S \ {t})

\* The tasks under level l (l itself when it is a task).
Under(l) == {t \in Tasks : l \in Path(t)}

\* The entries of all chains.
Entries == SumLen(Tasks)

\* A replica of t's chain: a prefix of length k.
Replica(t, k) == SubSeq(chain[t], 1, k)

Entry == [by: Procs, task: Tasks, kind: {"exec", "undo"}, cost: Nat, prev: Nat,
          target: Nat]

TypeOK == /\ chain \in [Tasks -> Seq(Entry)]
          /\ net \in [Levels -> Int] /\ gross \in [Levels -> Nat]
          /\ pc \in [Procs -> {"idle", "decided", "sent"}]
          /\ dec \in [Procs -> Entry \cup {None}]
          /\ told \in [Procs -> SUBSET (Tasks \X Nat)]

Init == /\ chain = [t \in Tasks |-> <<>>]
        /\ net = [l \in Levels |-> 0]
        /\ gross = [l \in Levels |-> 0]
        /\ pc = [p \in Procs |-> "idle"]
        /\ dec = [p \in Procs |-> None]
        /\ told = [p \in Procs |-> {}]
        /\ crashes = 0

(* Decide(p, t, c, k): on a replica of t of length k and the pool rows   *)
(* as it reads them now, p approves an action of cost c on task t.        *)
Decide(p, t, c, k) == /\ pc[p] = "idle"
                      /\ Entries < MaxEntries
                      /\ NetOf(Replica(t, k)) + c <= TaskTotal
                      /\ \A l \in Path(t) \ {t} : net[l] + c <= Total(l)
                      /\ dec' = [dec EXCEPT ![p] = [by |-> p, task |-> t,
                                                    kind |-> "exec", cost |-> c, prev |-> k,
                                                    target |-> 0]]
                      /\ pc' = [pc EXCEPT ![p] = "decided"]
                      /\ UNCHANGED <<chain, net, gross, told, crashes>>

(* DecideUndo(p, t, k): p rolls back the most recent action of t still in *)
(* effect on a replica of length k, if it committed it: a refund of its   *)
(* cost.                                                                  *)
DecideUndo(p, t, k) == LET st == UndoStack(Replica(t, k)) IN
                       /\ pc[p] = "idle"
                       /\ Entries < MaxEntries
                       /\ st # <<>>
                       /\ chain[t][st[Len(st)]].by = p
                       /\ dec' = [dec EXCEPT ![p] = [by |-> p, task |-> t,
                                                     kind |-> "undo",
                                                     cost |-> chain[t][st[Len(st)]].cost,
                                                     prev |-> k, target |-> st[Len(st)]]]
                       /\ pc' = [pc EXCEPT ![p] = "decided"]
                       /\ UNCHANGED <<chain, net, gross, told, crashes>>

\* In the transaction: the head is the one p decided on, and (the protocol) every pool of the
\* path can afford an executed action's cost on its row as it is now, under its lock.
Fits(p) == LET d == dec[p] IN
           /\ Len(chain[d.task]) = d.prev
           /\ (CheckPools /\ d.kind = "exec") =>
                \A l \in Path(d.task) \ {d.task} : net[l] + d.cost <= Total(l)

(* Commit(p): the transaction: the entry appended, every row of the path  *)
(* charged (or refunded), atomically.                                     *)
Commit(p) == LET d == dec[p]
                 delta == IF d.kind = "exec" THEN d.cost ELSE -d.cost IN
             /\ pc[p] = "decided"
             /\ Fits(p)
             /\ chain' = [chain EXCEPT ![d.task] = Append(@, d)]
             /\ net' = [l \in Levels |-> IF l \in Path(d.task) THEN net[l] + delta ELSE net[l]]
             /\ gross' = [l \in Levels |-> IF l \in Path(d.task) /\ d.kind = "exec"
                                           THEN gross[l] + d.cost ELSE gross[l]]
             /\ pc' = [pc EXCEPT ![p] = "sent"]
             /\ UNCHANGED <<dec, told, crashes>>

(* Refused(p): the head moved or a pool cannot afford the charge: nothing *)
(* changed; p will decide afresh.                                         *)
Refused(p) == /\ pc[p] = "decided"
              /\ ~Fits(p)
              /\ pc' = [pc EXCEPT ![p] = "idle"]
              /\ dec' = [dec EXCEPT ![p] = None]
              /\ UNCHANGED <<chain, net, gross, told, crashes>>

Ack(p) == /\ pc[p] = "sent"
          /\ told' = [told EXCEPT ![p] = @ \cup {<<dec[p].task, dec[p].prev + 1>>}]
          /\ pc' = [pc EXCEPT ![p] = "idle"]
          /\ dec' = [dec EXCEPT ![p] = None]
          /\ UNCHANGED <<chain, net, gross, crashes>>

(* Crash(p): kill -9 at any point; an open transaction is rolled back by  *)
(* the database (Commit not taken); what p was told stays claimed.        *)
Crash(p) == /\ crashes < MaxCrashes
            /\ crashes' = crashes + 1
            /\ pc' = [pc EXCEPT ![p] = "idle"]
            /\ dec' = [dec EXCEPT ![p] = None]
            /\ UNCHANGED <<chain, net, gross, told>>

Next == \E p \in Procs :
          \/ \E t \in Tasks : \E k \in 0..Len(chain[t]) :
               \/ \E c \in Costs : Decide(p, t, c, k)
               \/ DecideUndo(p, t, k)
          \/ Commit(p)
          \/ Refused(p)
          \/ Ack(p)
          \/ Crash(p)

Spec == Init /\ [][Next]_vars

Symmetry == Permutations(Procs) \cup Permutations(TasksA)

\* T1 at every level: each task's budget, each team's pool and the organisation's.
PoolsSafe == \A l \in Levels : 0 <= net[l] /\ net[l] <= Total(l)
\* The rows agree with the entries: a level's net and gross spend are those of the tasks under it.
RowsAgree == \A l \in Levels :
               /\ net[l] = SumNet(Under(l))
               /\ gross[l] = SumGross(Under(l))
\* No fork in any task's chain.
NoFork == \A t \in Tasks : \A i \in 1..Len(chain[t]) : chain[t][i].prev = i - 1
\* What a process was told it committed is in the chain, as its entry.
NoLostCommit == \A p \in Procs : \A ts \in told[p] :
                  ts[2] <= Len(chain[ts[1]]) /\ chain[ts[1]][ts[2]].by = p
\* T4 at every level: gross spend never decreases.
GrossMonotone == [][\A l \in Levels : gross'[l] >= gross[l]]_vars
=============================================================================
