---------------------------- MODULE SharedLedger ----------------------------
(***************************************************************************)
(* The shared-ledger protocol of docs/LEDGER.md: N processes share one    *)
(* task's budget, state and hash-chained trace through a database.        *)
(* Each process decides on the latest head it knows (its local replica:   *)
(* a prefix of the ledger), then commits by compare-and-set on the head   *)
(* inside one transaction (the entry and the head row's budget together); *)
(* a conflict makes it catch up and decide afresh. A connection can be    *)
(* lost before or after the transaction commits (the process then reads   *)
(* the ledger back to learn which), and a process can crash at any point  *)
(* (restarting with an empty replica). Rollbacks refund the most recent   *)
(* action still in effect.                                                *)
(*                                                                         *)
(* C++: kernel/src/ledger.cpp (SharedKernel), ledger/src/postgres.cpp.    *)
(* CheckHead = FALSE (SharedLedgerBroken.cfg) drops the head check from   *)
(* the commit: TLC must then find a fork and a double spend.              *)
(***************************************************************************)
EXTENDS Integers, Sequences, FiniteSets, TLC

CONSTANTS
    Procs,       \* the processes
    Budget,      \* the total budget
    Costs,       \* the costs an action may have (each >= MinCost > 0)
    MaxSteps,    \* the T2 step bound (floor(Budget / MinCost))
    MaxEntries,  \* processes decide only on heads shorter than this (keeps the model finite)
    MaxCrashes,  \* crashes in a behaviour (keeps the model finite)
    CheckHead    \* TRUE: the protocol; FALSE: the broken variant

ASSUME /\ Budget \in Nat /\ MaxSteps \in Nat /\ MaxEntries \in Nat /\ MaxCrashes \in Nat
       /\ Costs \subseteq Nat \ {0}
       /\ CheckHead \in BOOLEAN

None == [kind |-> "none"]

VARIABLES
    ledger,   \* the committed entries, in order (the entries table)
    dbNet,    \* the head row's net spend, written in the commit's transaction
    known,    \* known[p]: the length of p's local replica (a prefix of the ledger)
    pc,       \* "idle", "decided" (about to commit), "sent" (committed, not yet told), "indoubt"
    dec,      \* dec[p]: the entry p decided, or None
    told,     \* told[p]: the sequence numbers p was told it committed
    crashes

vars == <<ledger, dbNet, known, pc, dec, told, crashes>>

\* The budget, steps and undo stack of a prefix of the ledger, as a replica replays them.
RECURSIVE NetOf(_)
NetOf(s) == IF s = <<>> THEN 0
            ELSE LET e == s[Len(s)] IN
                 NetOf(SubSeq(s, 1, Len(s) - 1)) + (IF e.kind = "exec" THEN e.cost ELSE -e.cost)

RECURSIVE StepsOf(_)
StepsOf(s) == IF s = <<>> THEN 0
              ELSE StepsOf(SubSeq(s, 1, Len(s) - 1)) + (IF s[Len(s)].kind = "exec" THEN 1 ELSE 0)

\* The indices of the executed entries still in effect, most recent last.
RECURSIVE UndoStack(_)
UndoStack(s) == IF s = <<>> THEN <<>>
                ELSE LET rest == UndoStack(SubSeq(s, 1, Len(s) - 1)) IN
                     IF s[Len(s)].kind = "exec" THEN Append(rest, Len(s))
                     ELSE SubSeq(rest, 1, Len(rest) - 1)

Replica(p) == SubSeq(ledger, 1, known[p])

\* An entry: who decided it, in which epoch (crashes so far: with the decision's head, what
\* identifies it, as the hash of its time and content does in C++), what it does, and the head
\* (`prev`: the ledger's length) it was decided on.
Entry == [by: Procs, epoch: Nat, kind: {"exec", "undo"}, cost: Nat, prev: Nat, target: Nat]

TypeOK == /\ ledger \in Seq(Entry)
          /\ known \in [Procs -> Nat]
          /\ \A p \in Procs : known[p] <= Len(ledger)
          /\ pc \in [Procs -> {"idle", "decided", "sent", "indoubt"}]
          /\ dec \in [Procs -> Entry \cup {None}]
          /\ told \in [Procs -> SUBSET Nat]

Init == /\ ledger = <<>>
        /\ dbNet = 0
        /\ known = [p \in Procs |-> 0]
        /\ pc = [p \in Procs |-> "idle"]
        /\ dec = [p \in Procs |-> None]
        /\ told = [p \in Procs |-> {}]
        /\ crashes = 0

(* Decide(p, c): on its replica, p approves an action of cost c: the      *)
(* budget (T1) and the step bound (T2) allow it.                          *)
Decide(p, c) == /\ pc[p] = "idle"
                /\ known[p] < MaxEntries
                /\ NetOf(Replica(p)) + c <= Budget
                /\ StepsOf(Replica(p)) < MaxSteps
                /\ dec' = [dec EXCEPT ![p] = [by |-> p, epoch |-> crashes, kind |-> "exec",
                                              cost |-> c, prev |-> known[p], target |-> 0]]
                /\ pc' = [pc EXCEPT ![p] = "decided"]
                /\ UNCHANGED <<ledger, dbNet, known, told, crashes>>

(* DecideUndo(p): p rolls back the most recent action still in effect on  *)
(* its replica, if it committed it (it holds the receipt): a refund of    *)
(* that action's cost.                                                    *)
DecideUndo(p) == LET st == UndoStack(Replica(p)) IN
                 /\ pc[p] = "idle"
                 /\ known[p] < MaxEntries
                 /\ st # <<>>
                 /\ ledger[st[Len(st)]].by = p
                 /\ dec' = [dec EXCEPT ![p] = [by |-> p, epoch |-> crashes, kind |-> "undo",
                                               cost |-> ledger[st[Len(st)]].cost,
                                               prev |-> known[p], target |-> st[Len(st)]]]
                  /\ pc' = [pc EXCEPT ![p] = "decided"]
                 /\ UNCHANGED <<ledger, dbNet, known, told, crashes>>

(* Commit(p): the transaction. UPDATE the head row WHERE the head is the   *)
(* one p decided on, INSERT the entry, COMMIT: atomically.                *)
Commit(p) == /\ pc[p] = "decided"
             /\ CheckHead => Len(ledger) = dec[p].prev
             /\ ledger' = Append(ledger, dec[p])
             /\ dbNet' = NetOf(ledger')
             /\ pc' = [pc EXCEPT ![p] = "sent"]
             /\ UNCHANGED <<dec, known, told, crashes>>

(* Conflict(p): no row matched: nothing changed; p catches up and will    *)
(* decide afresh.                                                         *)
Conflict(p) == /\ pc[p] = "decided"
               /\ CheckHead
               /\ Len(ledger) # dec[p].prev
               /\ known' = [known EXCEPT ![p] = Len(ledger)]
               /\ pc' = [pc EXCEPT ![p] = "idle"]
               /\ dec' = [dec EXCEPT ![p] = None]
               /\ UNCHANGED <<ledger, dbNet, told, crashes>>

(* Ack(p): the commit is acknowledged; p applies its entry.               *)
Ack(p) == /\ pc[p] = "sent"
          /\ told' = [told EXCEPT ![p] = @ \cup {dec[p].prev + 1}]
          /\ known' = [known EXCEPT ![p] = dec[p].prev + 1]
          /\ pc' = [pc EXCEPT ![p] = "idle"]
          /\ dec' = [dec EXCEPT ![p] = None]
          /\ UNCHANGED <<ledger, dbNet, crashes>>

(* The connection is lost before the transaction commits (it is rolled    *)
(* back), or after (the acknowledgement is lost).                         *)
LoseBefore(p) == /\ pc[p] = "decided"
                 /\ pc' = [pc EXCEPT ![p] = "indoubt"]
                 /\ UNCHANGED <<ledger, dbNet, known, dec, told, crashes>>
LoseAfter(p) == /\ pc[p] = "sent"
                /\ pc' = [pc EXCEPT ![p] = "indoubt"]
                /\ UNCHANGED <<ledger, dbNet, known, dec, told, crashes>>

(* Resolve(p): reconnected, p reads the ledger at its entry's sequence:   *)
(* its own entry there means committed; anything else, not.               *)
Resolve(p) == LET s == dec[p].prev + 1 IN
              /\ pc[p] = "indoubt"
              /\ IF s <= Len(ledger) /\ ledger[s] = dec[p]
                 THEN /\ told' = [told EXCEPT ![p] = @ \cup {s}]
                      /\ known' = [known EXCEPT ![p] = s]
                 ELSE /\ known' = [known EXCEPT ![p] = Len(ledger)]
                      /\ UNCHANGED told
              /\ pc' = [pc EXCEPT ![p] = "idle"]
              /\ dec' = [dec EXCEPT ![p] = None]
              /\ UNCHANGED <<ledger, dbNet, crashes>>

(* Refresh(p): p replays what the others committed.                       *)
Refresh(p) == /\ pc[p] = "idle"
              /\ known[p] < Len(ledger)
              /\ known' = [known EXCEPT ![p] = Len(ledger)]
              /\ UNCHANGED <<ledger, dbNet, pc, dec, told, crashes>>

(* Crash(p): kill -9 at any point; p restarts with an empty replica. A    *)
(* transaction it had open is rolled back by the database (not modelled:  *)
(* it is Commit not taken). What p was told stays claimed.                *)
Crash(p) == /\ crashes < MaxCrashes
            /\ crashes' = crashes + 1
            /\ known' = [known EXCEPT ![p] = 0]
            /\ pc' = [pc EXCEPT ![p] = "idle"]
            /\ dec' = [dec EXCEPT ![p] = None]
            /\ UNCHANGED <<ledger, dbNet, told>>

Next == \E p \in Procs :
          \/ \E c \in Costs : Decide(p, c)
          \/ DecideUndo(p)
          \/ Commit(p)
          \/ Conflict(p)
          \/ Ack(p)
          \/ LoseBefore(p)
          \/ LoseAfter(p)
          \/ Resolve(p)
          \/ Refresh(p)
          \/ Crash(p)

Spec == Init /\ [][Next]_vars

\* The processes are interchangeable: TLC explores one behaviour per permutation of them.
Symmetry == Permutations(Procs)

\* T1 for the group: net spend within [0, Budget], and the head row agrees with the entries.
BudgetSafe == /\ 0 <= NetOf(ledger) /\ NetOf(ledger) <= Budget
              /\ dbNet = NetOf(ledger)
\* T2 for the group.
StepBound == StepsOf(ledger) <= MaxSteps
\* No fork: every entry extends the head it was decided on (its `prev` is the entry before).
NoFork == \A i \in 1..Len(ledger) : ledger[i].prev = i - 1
\* No lost commit: what a process was told it committed is in the ledger, as its entry.
NoLostCommit == \A p \in Procs : \A s \in told[p] : s <= Len(ledger) /\ ledger[s].by = p
\* T7: a rollback refunds an executed action, and no action is refunded twice.
RefundOnce == /\ \A i \in 1..Len(ledger) :
                    ledger[i].kind = "undo" => /\ ledger[i].target < i
                                               /\ ledger[ledger[i].target].kind = "exec"
              /\ \A i, j \in 1..Len(ledger) :
                    (i # j /\ ledger[i].kind = "undo" /\ ledger[j].kind = "undo")
                        => ledger[i].target # ledger[j].target
\* The ledger is append-only (T4, T6: nothing committed is ever changed or removed).
AppendOnly == [][Len(ledger') >= Len(ledger) /\ SubSeq(ledger', 1, Len(ledger)) = ledger]_vars
=============================================================================
