#!/usr/bin/env bash
# The shared ledger's fault tests (issue 21), each run by ctest through scripts/with-postgres.sh:
#   faults.sh CLAMPAI FAULT_AGENT SCENARIO
# Scenarios: kill-decided, kill-in-transaction, restart, drop-connection, last-unit, cli-race,
# long-chain.
# After each: the chain verifies and replays (`clampai trace verify URL#TASK --spec`), the
# budget adds up (the entries' costs, the head row and the last entry agree, within the total),
# and every commit an agent was told of is in the ledger. Waits are for files the agents create
# at the fault point, never for a duration.
# shellcheck source=tests/ledger/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

# A counter with a budget of BUDGET units, one unit per step.
spec() {
  cat >"$work/spec.json" <<JSON
{"name": "faults", "variables": {"n": {"type": "int", "initial": 0, "min": 0}},
 "actions": [{"id": "inc", "cost": 1, "effects": [{"variable": "n", "mode": "increment", "value": 1}]}],
 "budget": {"total": $1, "min_action_cost": 1}}
JSON
}

# agent NAME STEPS [PHASE:K]: starts a fault agent in the background; its output goes to
# $work/NAME.out, its pause files to $work/NAME/.
agent() {
  local name="$1" steps="$2"
  mkdir -p "$work/$name"
  if [[ $# -ge 3 ]]; then
    "$agent" "$DATABASE_URL" "$work/spec.json" inc "$steps" "$3" "$work/$name" >"$work/$name.out" &
  else
    "$agent" "$DATABASE_URL" "$work/spec.json" inc "$steps" >"$work/$name.out" &
  fi
  pids+=($!)
  eval "pid_$name=$!"
}

# The invariants after every fault. EXECUTED: the number of executed entries expected.
check() {
  local executed="$1"
  "$clampai" trace verify "$DATABASE_URL#faults" --spec "$work/spec.json" ||
    fail "the chain does not verify"
  local got
  got="$(sql "SELECT count(*) FROM clampai_ledger_entries WHERE task = 'faults' AND kind = 'executed'")"
  [[ "$got" == "$executed" ]] || fail "$got executed entries, expected $executed"
  # The budget adds up: the net spend of the head row is the sum of the entries' costs (executed
  # minus rolled back), the last entry says the same, and it is within the total (T1).
  local row
  row="$(sql "SELECT t.net = coalesce((SELECT sum(CASE e.kind WHEN 'executed' THEN (e.line::json->>'cost')::numeric
                                                         WHEN 'rolled_back' THEN -(e.line::json->>'cost')::numeric
                                                         ELSE 0 END)
                                      FROM clampai_ledger_entries e WHERE e.task = t.task), 0)
                    AND t.net = (SELECT (e.line::json->>'net')::numeric FROM clampai_ledger_entries e
                                 WHERE e.task = t.task ORDER BY e.seq DESC LIMIT 1)
                    AND t.net <= t.total
                    AND t.length = (SELECT count(*) FROM clampai_ledger_entries e WHERE e.task = t.task)
                    AND t.state = '{\"n\":' || (SELECT count(*) FROM clampai_ledger_entries e
                                                WHERE e.task = t.task AND e.kind = 'executed') || '}'
             FROM clampai_ledger_tasks t WHERE t.task = 'faults'")"
  [[ "$row" == "t" ]] || fail "the budget does not add up (or the head row disagrees with the entries)"
  # Nothing committed is lost: every commit an agent was told of is an executed entry.
  local seq out
  shopt -s nullglob
  for out in "$work"/*.out; do
    while read -r word seq; do
      [[ "$word" == committed ]] || continue
      [[ "$(sql "SELECT kind FROM clampai_ledger_entries WHERE task = 'faults' AND seq = $seq")" == executed ]] ||
        fail "entry $seq, committed according to $(basename "$out" .out), is not in the ledger"
    done <"$out"
  done
  echo "ok ($scenario): chain verified, budget adds up, $executed executed, no commit lost"
}

summary() { tail -n 1 "$work/$1.out"; }
field() { summary "$1" | sed -E "s/.*\"$2\": \"?([a-z_0-9]*)\"?.*/\1/"; }

case "$scenario" in
  kill-decided | kill-in-transaction)
    # An agent killed with SIGKILL after deciding its 3rd action (or inside the 3rd commit's
    # transaction, the head already updated but not committed): its first two commits stay, the
    # third never happened; another agent then spends the rest of the budget, exactly.
    spec 10
    # (The agent that finds the ledger empty commits the genesis entry first: one more
    # transaction.)
    point=decided:3
    [[ "$scenario" == kill-in-transaction ]] && point=transaction:4
    agent a 100 "$point"
    wait_for "$work/a/paused"
    kill -9 "$pid_a"
    wait "$pid_a" 2>/dev/null || true
    [[ "$(grep -c committed "$work/a.out")" == 2 ]] || fail "the killed agent committed $(grep -c committed "$work/a.out") times"
    agent b 100
    wait "$pid_b" || fail "agent b failed"
    [[ "$(field b committed)" == 8 ]] || fail "agent b committed $(field b committed), expected the 8 units left"
    [[ "$(field b refused)" == budget_exceeded ]] || fail "agent b stopped with $(field b refused)"
    check 10
    ;;
  restart | drop-connection)
    # The server restarted (or the agent's connection terminated) while an agent is inside its
    # 5th commit's transaction: the transaction is lost, the agent reconnects, reads the ledger
    # back to learn that its commit did not happen, decides afresh and finishes the budget.
    spec 12
    agent a 100 transaction:6  # the genesis entry's transaction, then 5 commits
    wait_for "$work/a/paused"
    if [[ "$scenario" == restart ]]; then
      # shellcheck disable=SC2086
      $CLAMPAI_PG_AS "$CLAMPAI_PG_BINDIR/pg_ctl" -D "$PGDATA" -m fast -w restart >/dev/null
    else
      [[ "$(sql "SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                 WHERE application_name = 'clampai-ledger') t")" -ge 1 ]] ||
        fail "no ledger connection to drop"
    fi
    touch "$work/a/go"
    wait "$pid_a" || fail "agent a did not survive: $(cat "$work/a.out")"
    [[ "$(field a committed)" == 12 ]] || fail "agent a committed $(field a committed), expected 12"
    [[ "$(field a reconnects)" -ge 1 ]] || fail "agent a never reconnected"
    [[ "$(field a in_doubt)" -ge 1 ]] || fail "agent a's lost commit was not read back"
    check 12
    ;;
  last-unit)
    # Two agents decide on the same head with one unit of budget left; exactly one commits, the
    # other's compare-and-set fails, it decides afresh and is refused (budget_exceeded).
    spec 3
    agent first 2
    wait "$pid_first" || fail "agent first failed"
    agent a 1 decided:1
    agent b 1 decided:1
    wait_for "$work/a/paused"
    wait_for "$work/b/paused"
    touch "$work/a/go" "$work/b/go"
    wait "$pid_a" || fail "agent a failed"
    wait "$pid_b" || fail "agent b failed"
    won=$(($(field a committed) + $(field b committed)))
    [[ "$won" == 1 ]] || fail "$won agents won the last unit"
    [[ "$(field a refused)$(field b refused)" == budget_exceeded ]] ||
      fail "the loser was refused for `$(field a refused)$(field b refused)`, not budget_exceeded"
    [[ $(($(field a conflicts) + $(field b conflicts))) -ge 1 ]] || fail "no conflict seen"
    check 3
    ;;
  cli-race)
    # Four `clampai run --ledger` processes on one budget: their `actions` add up to the trace.
    spec 40
    total="$(four_runs "$DATABASE_URL")"
    [[ "$total" == 40 ]] || fail "the runs' actions add up to $total, not 40"
    check 40
    ;;
  long-chain)
    # A chain of more than two pages (`trace verify URL#TASK` and a process's start read the
    # ledger 4,096 rows at a time, streaming): it verifies and replays, and a second process
    # replays it all before it finds nothing left to do.
    sql "ALTER DATABASE \"$PGDATABASE\" SET synchronous_commit = off" >/dev/null
    spec 9000
    # (No goal: each run ends when nothing is approvable, exit 1.)
    out="$("$clampai" run "$work/spec.json" --ledger "$DATABASE_URL#faults" --format json -q || true)"
    [[ "$out" == *'"commits": 9001'* ]] || fail "the long run did not commit its 9001 entries"
    out="$("$clampai" run "$work/spec.json" --ledger "$DATABASE_URL#faults" --format json -q || true)"
    [[ "$out" == *'"commits": 0'* ]] ||
      fail "the second run did not start from the ledger's head: $out"
    check 9000
    ;;
  *)
    fail "unknown scenario"
    ;;
esac
