#!/usr/bin/env bash
# Escrow mode's tests (issue 21, docs/LEDGER.md "Escrow mode"), each run by ctest through
# scripts/with-postgres.sh:   escrow.sh CLAMPAI ESCROW_AGENT SCENARIO
# Scenarios: race, cli-race, return-on-exit, kill, kill-in-flush, kill-batched, refunds,
# expire-alive, refusals.
# After each: every lease's chain verifies and replays (`clampai trace verify URL#TASK/lease-ID
# --spec`), the leases' durable spend is the chains' executed entries, the pool's accounting
# adds up (reserved = active leases' slices + ended leases' spend, within the total: T1), and
# every commit an agent was told of is in its chain. Waits are for files the agents create or
# for the database's clock to pass a lease's expiry, never for a fixed duration.
# shellcheck source=tests/ledger/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

# A task whose decisions read no state: only the budget (BUDGET units, one per call) is shared.
spec() {
  cat >"$work/spec.json" <<JSON
{"name": "escrow", "variables": {"last": {"type": "int", "initial": 0}},
 "actions": [{"id": "call", "cost": 1, "effects": [{"variable": "last", "mode": "set", "value": 1}]}],
 "budget": {"total": $1, "min_action_cost": 1}}
JSON
}

# agent NAME STEPS URL_PARAMS [POINT:K]: an escrow agent in the background.
agent() {
  local name="$1" steps="$2" params="$3"
  mkdir -p "$work/$name"
  if [[ $# -ge 4 ]]; then
    "$agent" "$DATABASE_URL&$params" "$work/spec.json" "${action:-call}" "$steps" "$4" "$work/$name" >"$work/$name.out" &
  else
    "$agent" "$DATABASE_URL&$params" "$work/spec.json" "${action:-call}" "$steps" >"$work/$name.out" &
  fi
  pids+=($!)
  eval "pid_$name=$!"
}

field() { tail -n 1 "$work/$1.out" | sed -E "s/.*\"$2\": \"?([a-z_0-9]*)\"?.*/\1/"; }

# Waits until every active lease of the task has passed its expiry by the database's clock.
wait_expired() {
  until [[ "$(sql "SELECT coalesce(bool_and(expires_at < clock_timestamp()), true)
                   FROM clampai_escrow_leases WHERE task = 'escrow' AND status = 'active'")" == t ]]; do
    sleep 0.05
  done
}

# The invariants. SPENT: the units durably spent in all (executed minus rolled back), expected.
check() {
  local spent="$1" chain executed=0 n
  for chain in $(sql "SELECT 'escrow/lease-' || id FROM clampai_escrow_leases WHERE task = 'escrow' ORDER BY id"); do
    "$clampai" trace verify "$DATABASE_URL#$chain" --spec "$work/spec.json" >/dev/null ||
      fail "the chain $chain does not verify"
    n="$(sql "SELECT count(*) FILTER (WHERE kind = 'executed') - count(*) FILTER (WHERE kind = 'rolled_back')
              FROM clampai_ledger_entries WHERE task = '$chain'")"
    [[ "$(sql "SELECT spent = $n AND (status <> 'active' OR spent <= slice) FROM clampai_escrow_leases
               WHERE task = 'escrow' AND 'escrow/lease-' || id = '$chain'")" == t ]] ||
      fail "the lease of $chain does not record its $n durable executions (net of rollbacks)"
    executed=$((executed + n))
  done
  [[ "$executed" == "$spent" ]] ||
    fail "$executed executed entries (net of rollbacks) in the leases' chains, expected $spent"
  [[ "$(sql "SELECT p.reserved = (SELECT coalesce(sum(CASE status WHEN 'active' THEN slice ELSE spent END), 0)
                                  FROM clampai_escrow_leases l WHERE l.task = p.task)
                    AND p.reserved <= p.total
                    AND (SELECT sum(spent) FROM clampai_escrow_leases l WHERE l.task = p.task) <= p.total
             FROM clampai_escrow_pools p WHERE p.task = 'escrow'")" == t ]] ||
    fail "the pool's accounting does not add up (or exceeds the total)"
  local out chain_seq seq word
  shopt -s nullglob
  for out in "$work"/*.out; do
    while read -r word chain_seq seq; do
      [[ "$word" == committed ]] || continue
      [[ "$(sql "SELECT kind FROM clampai_ledger_entries WHERE task = '$chain_seq' AND seq = $seq")" == executed ]] ||
        fail "entry $seq of $chain_seq, committed according to $(basename "$out" .out), is not in the ledger"
    done <"$out"
  done
  echo "ok ($scenario): chains verified, pool adds up, $spent spent, no commit lost"
}

# A lease killed holding it: stays active (nothing returns it but its expiry), then expires.
killed() {
  local name="$1" durable="$2"
  wait_for "$work/$name/paused"
  kill -9 "$(eval echo "\$pid_$name")"
  wait "$(eval echo "\$pid_$name")" 2>/dev/null || true
  [[ "$(sql "SELECT status || ' ' || spent::int FROM clampai_escrow_leases WHERE task = 'escrow'")" == "active $durable" ]] ||
    fail "the killed agent's lease is not active with $durable spent"
  [[ "$(sql "SELECT total - reserved FROM clampai_escrow_pools WHERE task = 'escrow'")" == 0.000 ]] ||
    fail "the pool is not all leased while the killed agent's lease is active"
}

case "$scenario" in
  race)
    # Four agents with slices of 3 race for 40 units: exactly 40 are spent, over 14 leases (the
    # last slice is the 1 unit left), all closed at the end.
    spec 40
    for n in a b c d; do agent "$n" 1000 escrow=3; done
    total=0
    for n in a b c d; do
      wait "$(eval echo "\$pid_$n")" || fail "agent $n failed: $(cat "$work/$n.out")"
      [[ "$(field "$n" refused)" == budget_exceeded ]] || fail "agent $n stopped with $(field "$n" refused)"
      # EscrowKernel::pool: once the budget is exhausted nothing is free (a unit of scale 3: 0).
      [[ "$(field "$n" pool_free)" == 0 ]] || fail "agent $n saw $(field "$n" pool_free) free in the pool at its end"
      total=$((total + $(field "$n" committed)))
    done
    [[ "$total" == 40 ]] || fail "the agents committed $total, not 40"
    [[ "$(sql "SELECT count(*) || ' ' || count(*) FILTER (WHERE status = 'closed') FROM clampai_escrow_leases")" == "14 14" ]] ||
      fail "not 14 leases, all closed"
    check 40
    ;;
  cli-race)
    # Four `clampai run` processes in escrow mode: their `actions` add up to the budget.
    spec 40
    total="$(four_runs "$DATABASE_URL&escrow=5")"
    for i in 1 2 3 4; do
      python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["ledger"]["mode"] == "escrow"' "$work/run$i.json" ||
        fail "run $i did not run in escrow mode"
    done
    [[ "$total" == 40 ]] || fail "the runs' actions add up to $total, not 40"
    check 40
    ;;
  return-on-exit)
    # A run that stops early (--max-steps 3) with a slice of 10 returns the 7 it did not spend
    # when it exits; another run then spends exactly those 7.
    spec 10
    "$clampai" run "$work/spec.json" --ledger "$DATABASE_URL&escrow=10#escrow" --max-steps 3 -q >"$work/first.txt" ||
      [[ $? -eq 1 ]] || fail "the first run failed"
    [[ "$(sql "SELECT status || ' ' || spent::int || ' ' || slice::int FROM clampai_escrow_leases")" == "closed 3 10" ]] ||
      fail "the first run's lease was not closed with 3 of 10 spent"
    [[ "$(sql "SELECT reserved::int FROM clampai_escrow_pools")" == 3 ]] || fail "the unspent 7 did not return"
    "$clampai" run "$work/spec.json" --ledger "$DATABASE_URL&escrow=10" --format json -q >"$work/second.json" ||
      [[ $? -eq 1 ]] || fail "the second run failed"
    n="$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["actions"]))' "$work/second.json")"
    [[ "$n" == 7 ]] || fail "the second run spent $n, not the 7 returned"
    check 10
    ;;
  kill | kill-in-flush | kill-batched)
    # An agent holding the whole budget (slice 10 of 10, a lease of 1 s) is killed with SIGKILL:
    # after 3 durable commits (kill), inside its 4th flush's transaction (kill-in-flush: the 4th
    # is never counted), or after 6 decisions with flushes of 4 (kill-batched: 4 durable, 2
    # never counted). Its lease stays active until it expires; then another agent's lease
    # expires it, gets back what was not durably spent, and spends exactly that.
    spec 10
    case "$scenario" in
      kill) agent a 100 "escrow=10&escrow_lease=1" after:3 && durable=3 ;;
      kill-in-flush) agent a 100 "escrow=10&escrow_lease=1" flush:4 && durable=3 ;;
      kill-batched) agent a 100 "escrow=10&escrow_lease=1&escrow_batch=4" after:6 && durable=4 ;;
    esac
    killed a "$durable"
    wait_expired
    agent b 100 escrow=10
    wait "$pid_b" || fail "agent b failed: $(cat "$work/b.out")"
    [[ "$(field b committed)" == $((10 - durable)) ]] ||
      fail "agent b committed $(field b committed), expected the $((10 - durable)) units not durably spent"
    [[ "$(field b expired)" == 1 ]] || fail "agent b did not expire the killed agent's lease"
    [[ "$(field b pool_active)" == 0 ]] || fail "agent b saw $(field b pool_active) active leases after its close"
    [[ "$(sql "SELECT string_agg(status || ' ' || spent::int, ',' ORDER BY id) FROM clampai_escrow_leases")" == "expired $durable,closed $((10 - durable))" ]] ||
      fail "the leases are not (expired $durable, closed $((10 - durable)))"
    check 10
    ;;
  refunds)
    # Two agents with slices of 3 roll back every second action right after committing it:
    # each refund returns to its lease and, through the lease's end, to the pool once; the 10
    # units end up spent exactly, net of the rollbacks.
    spec 10
    action='call!undo'
    agent a 1000 escrow=3
    agent b 1000 escrow=3
    wait "$pid_a" || fail "agent a failed: $(cat "$work/a.out")"
    wait "$pid_b" || fail "agent b failed: $(cat "$work/b.out")"
    [[ $(($(field a committed) + $(field b committed))) == 10 ]] ||
      fail "the agents' net commits add up to $(($(field a committed) + $(field b committed))), not 10"
    rolled=$(($(field a rolled_back) + $(field b rolled_back)))
    [[ "$rolled" -ge 8 ]] || fail "only $rolled rollbacks"  # one per two executions of each agent
    [[ "$(sql "SELECT count(*) FROM clampai_ledger_entries WHERE task LIKE 'escrow/lease-%' AND kind = 'rolled_back'")" == "$rolled" ]] ||
      fail "the chains do not hold the $rolled rollbacks"
    check 10
    ;;
  expire-alive)
    # A live agent whose lease expires while it waits (after 2 commits, lease of 1 s): its next
    # decision finds the lease gone, so it decides again on a new lease (expiring its old one,
    # which gives back the 8 it did not spend) and ends with the whole budget spent.
    spec 10
    agent a 100 "escrow=10&escrow_lease=1" after:2
    wait_for "$work/a/paused"
    wait_expired
    touch "$work/a/go"
    wait "$pid_a" || fail "agent a failed: $(cat "$work/a.out")"
    [[ "$(field a committed)" == 10 ]] || fail "agent a committed $(field a committed), not 10"
    [[ "$(sql "SELECT string_agg(status || ' ' || spent::int, ',' ORDER BY id) FROM clampai_escrow_leases")" == "expired 2,closed 8" ]] ||
      fail "the leases are not (expired 2, closed 8)"
    check 10
    ;;
  refusals)
    # A spec whose decisions read the state is refused, naming why; a task in one mode cannot
    # be opened in the other.
    spec 10
    python3 - "$work/spec.json" >"$work/inv.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
s["invariants"] = [{"name": "few", "check": "last <= 1"}]
print(json.dumps(s))
PY
    if "$clampai" run "$work/inv.json" --ledger "$DATABASE_URL&escrow=3" 2>"$work/err"; then
      fail "a spec with an invariant ran in escrow mode"
    fi
    grep -q "escrow mode shares only the budget" "$work/err" && grep -q "invariant \`few\`" "$work/err" ||
      fail "the refusal does not say why: $(cat "$work/err")"
    if "$clampai" run "$work/spec.json" --ledger "$DATABASE_URL&escrow=0" 2>"$work/err"; then
      fail "escrow=0 was accepted"
    fi
    grep -q "escrow=0 is not a slice of budget > 0" "$work/err" || fail "escrow=0: $(cat "$work/err")"
    "$clampai" run "$work/spec.json" --ledger "$DATABASE_URL#shared" -q >/dev/null || [[ $? -eq 1 ]] ||
      fail "the shared run failed"
    if "$clampai" run "$work/spec.json" --ledger "$DATABASE_URL&escrow=3#shared" 2>"$work/err"; then
      fail "escrow mode opened a task of the shared mode"
    fi
    grep -q "is in the shared mode" "$work/err" || fail "shared task: $(cat "$work/err")"
    "$clampai" run "$work/spec.json" --ledger "$DATABASE_URL&escrow=3" -q >/dev/null || [[ $? -eq 1 ]] ||
      fail "the escrow run failed"
    if "$clampai" run "$work/spec.json" --ledger "$DATABASE_URL" 2>"$work/err"; then
      fail "the shared mode opened a task of escrow mode"
    fi
    grep -q "is in escrow mode" "$work/err" || fail "escrow task: $(cat "$work/err")"
    check 10
    ;;
  *)
    fail "unknown scenario"
    ;;
esac
