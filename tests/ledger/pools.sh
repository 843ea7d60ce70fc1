#!/usr/bin/env bash
# Budget pools on the PostgreSQL ledger (issue 41), each scenario run by ctest through
# scripts/with-postgres.sh (a throwaway cluster on a Unix socket: no TCP port):
#   pools.sh CLAMPAI FAULT_AGENT SCENARIO
# Scenarios:
#   cli     `clampai ledger pools apply` (created, idempotent, raised, lowered, never below what
#           is spent, a parent never changes), `show`, `--pools` with `--ledger` refused, a run
#           refused by a pool (`budget_exceeded`, subject `pool:NAME`, recorded and replayed),
#           refunds at every level.
#   faults  8 processes on 3 levels (4 tasks, 2 teams, 1 organisation: 2 pool rows a charge), one killed inside a
#           commit's transaction (holding the pools' locks), the server restarted while another
#           is inside its transaction and six more are about to commit: no level is ever
#           overspent, the pool rows agree with the tasks' rows and with the charges recorded.
#   serve   `serve --ledger` with a task in a pool: the pool's refusal is the answer's reason.
# Waits are for files the agents create at their pause points, never for a duration.
# (pid_NAME is set by agent(), through eval.)
# shellcheck source=tests/ledger/common.sh disable=SC2154
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

# spec NAME POOL TOTAL: a counter task of budget TOTAL in pool POOL, one unit per step.
spec() {
  cat >"$work/$1.json" <<JSON
{"name": "$1", "variables": {"n": {"type": "int", "initial": 0, "min": 0}},
 "actions": [{"id": "inc", "cost": 1, "effects": [{"variable": "n", "mode": "increment", "value": 1}]}],
 "budget": {"total": $3, "min_action_cost": 1, "pool": "$2"}}
JSON
}

# agent NAME TASK STEPS [PHASE:K]: a fault agent on task TASK in the background; its output goes
# to $work/NAME.out, its pause files to $work/NAME/.
agent() {
  local name="$1" task="$2" steps="$3"
  mkdir -p "$work/$name"
  if [[ $# -ge 4 ]]; then
    "$agent" "$DATABASE_URL" "$work/$task.json" inc "$steps" "$4" "$work/$name" >"$work/$name.out" &
  else
    "$agent" "$DATABASE_URL" "$work/$task.json" inc "$steps" >"$work/$name.out" &
  fi
  pids+=($!)
  eval "pid_$name=$!"
}

summary() { tail -n 1 "$work/$1.out"; }
field() { summary "$1" | sed -E "s/.*\"$2\": \"?([a-z_0-9:-]*)\"?.*/\1/"; }

# pools FILE-BODY: writes $work/pools.json.
pools() { echo "$1" >"$work/pools.json"; }

# The invariants of the pool rows, whatever happened: T1 at every level; each pool's net and
# gross spend are those of the tasks under it (their head rows); the charges recorded with the
# entries add up to each pool's figures, one per level for every executed (rolled back) entry
# that cost something; every task's chain verifies and replays.
check_pools() {
  local bad
  bad="$(sql "SELECT name FROM clampai_ledger_pools WHERE net < 0 OR net > total OR net > gross")"
  [[ -z "$bad" ]] || fail "pool(s) $bad spent beyond their total"
  # Each task's pool is in its spec (the genesis line); a pool's tasks are those whose pool is
  # it or a descendant.
  bad="$(sql "WITH task_pool AS (
                SELECT t.task, t.net, t.gross, (SELECT e.line FROM clampai_ledger_entries e
                                                WHERE e.task = t.task AND e.seq = 0) AS genesis
                FROM clampai_ledger_tasks t),
              under (pool, task) AS (
                SELECT c.pool, c.task FROM (SELECT DISTINCT pool, task FROM clampai_ledger_pool_charges) c)
              SELECT p.name FROM clampai_ledger_pools p
              WHERE p.net <> coalesce((SELECT sum(t.net) FROM task_pool t JOIN under u ON u.task = t.task
                                       WHERE u.pool = p.name), 0)
                 OR p.gross <> coalesce((SELECT sum(t.gross) FROM task_pool t JOIN under u ON u.task = t.task
                                         WHERE u.pool = p.name), 0)
                 OR p.net <> coalesce((SELECT sum(CASE WHEN c.refund THEN -c.amount ELSE c.amount END)
                                       FROM clampai_ledger_pool_charges c WHERE c.pool = p.name), 0)
                 OR p.gross <> coalesce((SELECT sum(c.amount) FROM clampai_ledger_pool_charges c
                                         WHERE c.pool = p.name AND NOT c.refund), 0)")"
  [[ -z "$bad" ]] || fail "pool(s) $bad disagree with their tasks or their charges"
  # Every executed or rolled-back entry of a task in a pool charged every level of its path.
  bad="$(sql "SELECT e.task || '/' || e.seq FROM clampai_ledger_entries e
              WHERE e.kind IN ('executed', 'rolled_back')
                AND (SELECT count(*) FROM clampai_ledger_pool_charges c
                     WHERE c.task = e.task AND c.seq = e.seq AND c.refund = (e.kind = 'rolled_back'))
                    <> $1")"
  [[ -z "$bad" ]] || fail "entries $bad did not charge the $1 levels of their path"
  local task
  for task in "${@:2}"; do
    "$clampai" trace verify "$DATABASE_URL#$task" --spec "$work/$task.json" >/dev/null ||
      fail "the chain of $task does not verify"
  done
}

case "$scenario" in
  cli)
    pools '{"pools": {"org": {"total": 10}, "team-a": {"total": 4, "parent": "org"}}}'
    out="$("$clampai" ledger pools apply "$work/pools.json" --ledger "$DATABASE_URL")"
    [[ "$out" == *"created org: total 10"* && "$out" == *"created team-a: total 4"* ]] ||
      fail "apply did not create the pools: $out"
    # Idempotent.
    out="$("$clampai" ledger pools apply "$work/pools.json" --ledger "$DATABASE_URL")"
    [[ "$out" == *"unchanged org"* && "$out" == *"unchanged team-a"* && "$out" == *"ok: 0 of 2"* ]] ||
      fail "a second apply changed something: $out"
    [[ "$(sql "SELECT count(*) FROM clampai_ledger_pools")" == 2 ]] || fail "pools duplicated"
    # --pools with --ledger: refused, pointing at the command.
    spec t1 team-a 10
    if err="$("$clampai" run "$work/t1.json" --ledger "$DATABASE_URL" --pools "$work/pools.json" 2>&1)"; then
      fail "--pools with --ledger was accepted"
    fi
    [[ "$err" == *"ledger pools apply"* ]] || fail "unclear refusal of --pools with --ledger: $err"
    # A task in a pool the ledger lacks is refused, naming it.
    spec t9 team-z 10
    if err="$("$clampai" run "$work/t9.json" --ledger "$DATABASE_URL" 2>&1)"; then
      fail "a task in an unknown pool ran"
    fi
    [[ "$err" == *"no budget pool \`team-z\`"* ]] || fail "unclear refusal of an unknown pool: $err"
    # A run refused by team-a (4 units), recorded, the rejection naming the level.
    out="$("$clampai" run "$work/t1.json" --ledger "$DATABASE_URL" --record-rejections --format json -q || true)"
    [[ "$(sql "SELECT net = 4 FROM clampai_ledger_pools WHERE name = 'team-a'")" == t ]] ||
      fail "team-a did not spend its 4 units: $out"
    # The run report's pools: the task's path as the ledger has it, parents first.
    [[ "$(python3 -c 'import json,sys; r=json.loads(sys.argv[1]); print(" ".join(p["name"] + ":" + p["net"] + "/" + p["total"] for p in r["pools"]))' "$out")" == "org:4.000/10.000 team-a:4.000/4.000" ]] ||
      fail "the run report's pools: $out"
    [[ "$(sql "SELECT count(*) FROM clampai_ledger_entries WHERE task = 't1' AND kind = 'rejected'
                 AND line LIKE '%\"subject\":\"pool:team-a\"%' AND line LIKE '%budget_exceeded%'")" -ge 1 ]] ||
      fail "no recorded rejection names pool:team-a"
    # A fault agent stops refused by the pool, naming it.
    agent x t1 5
    wait "$pid_x" || fail "agent x failed"
    [[ "$(field x refused)" == budget_exceeded && "$(field x subject)" == pool:team-a ]] ||
      fail "agent x stopped with $(field x refused) $(field x subject)"
    # Lowering below what is spent: refused, naming the pool and the figures; nothing applied.
    pools '{"pools": {"org": {"total": 20}, "team-a": {"total": 3, "parent": "org"}}}'
    if err="$("$clampai" ledger pools apply "$work/pools.json" --ledger "$DATABASE_URL" 2>&1)"; then
      fail "a total below the net spend was applied"
    fi
    [[ "$err" == *"pool \`team-a\`: cannot lower its total to 3: its net spend is 4.000"* ]] ||
      fail "unclear refusal of a total below what is spent: $err"
    [[ "$(sql "SELECT total = 10 FROM clampai_ledger_pools WHERE name = 'org'")" == t ]] ||
      fail "a refused apply changed org"
    # A changed parent: refused.
    pools '{"pools": {"org": {"total": 10}, "team-a": {"total": 4}}}'
    if err="$("$clampai" ledger pools apply "$work/pools.json" --ledger "$DATABASE_URL" 2>&1)"; then
      fail "a changed parent was applied"
    fi
    [[ "$err" == *"a pool's parent never changes"* ]] || fail "unclear refusal of a new parent: $err"
    # Raised at run time (and lowered to exactly what is spent): the task spends the new room.
    pools '{"pools": {"org": {"total": 8}, "team-a": {"total": 7, "parent": "org"}, "team-b": {"total": 1, "parent": "org"}}}'
    out="$("$clampai" ledger pools apply "$work/pools.json" --ledger "$DATABASE_URL" --format json)"
    [[ "$out" == *'"name":"team-a","parent":"org","action":"changed","previous_total":"4","total":"7"'* ]] ||
      fail "team-a was not raised: $out"
    [[ "$out" == *'"name":"team-b","parent":"org","action":"created"'* ]] || fail "team-b not created: $out"
    agent y t1 10
    wait "$pid_y" || fail "agent y failed"
    [[ "$(field y committed)" == 3 && "$(field y subject)" == pool:team-a ]] ||
      fail "agent y committed $(field y committed) (expected the 3 new units), stopped by $(field y subject)"
    # Refunds at every level: a task in team-b rolls back every commit at once (net falls back,
    # gross grows), the last one refused by org (8 = 7 spent by t1 and 1 by t2).
    spec t2 team-b 10
    CLAMPAI_ROLLBACK_EVERY=1 agent z t2 3
    wait "$pid_z" || fail "agent z failed"
    [[ "$(field z committed)" == 3 && "$(field z rolled_back)" == 3 ]] ||
      fail "agent z committed $(field z committed), rolled back $(field z rolled_back)"
    [[ "$(sql "SELECT net = 0 AND gross = 3 FROM clampai_ledger_pools WHERE name = 'team-b'")" == t ]] ||
      fail "team-b was not refunded: $(sql "SELECT net, gross FROM clampai_ledger_pools WHERE name = 'team-b'")"
    out="$("$clampai" ledger pools show --ledger "$DATABASE_URL")"
    [[ "$out" == *"org: total 8, net 7.000, gross 10.000"* && "$out" == *"team-b: total 1, net 0.000, gross 3.000, in org"* ]] ||
      fail "show: $out"
    check_pools 2 t1 t2
    echo "ok ($scenario)"
    ;;
  faults)
    # org 50 over team-a 30 (t1, t2) and team-b 25 (t3, t4), each task 20: whatever the
    # interleaving, every level holds, and the organisation ends exactly spent (both teams full
    # would be 55).
    pools '{"pools": {"org": {"total": 50}, "team-a": {"total": 30, "parent": "org"},
                      "team-b": {"total": 25, "parent": "org"}}}'
    "$clampai" ledger pools apply "$work/pools.json" --ledger "$DATABASE_URL" >/dev/null
    spec t1 team-a 20
    spec t2 team-a 20
    spec t3 team-b 20
    spec t4 team-b 20
    # p1 pauses inside its first charge's transaction (its 2nd: the genesis is the 1st), holding
    # the pools' row locks; p5 starts behind it. p1 is killed there: its charge never happened.
    agent p1 t1 1000 transaction:2
    wait_for "$work/p1/paused"
    agent p5 t3 1000 transaction:2
    kill -9 "$pid_p1"
    wait "$pid_p1" 2>/dev/null || true
    [[ "$(grep -c '^committed' "$work/p1.out")" == 0 ]] || fail "the killed process committed"
    # p5, alone now, pauses inside its first charge; six more processes open the ledger and
    # decide their first action; the server restarts under all of them.
    wait_for "$work/p5/paused"
    for p in p2:t1 p3:t2 p4:t2 p6:t3 p7:t4 p8:t4; do
      agent "${p%%:*}" "${p##*:}" 1000 decided:1
    done
    for p in p2 p3 p4 p6 p7 p8; do wait_for "$work/$p/paused"; done
    # shellcheck disable=SC2086
    $CLAMPAI_PG_AS "$CLAMPAI_PG_BINDIR/pg_ctl" -D "$PGDATA" -m fast -w restart >/dev/null
    # p1 again (a new process on t1), and everyone goes on: 8 processes on 3 levels.
    agent p1b t1 1000
    for p in p2 p3 p4 p5 p6 p7 p8; do touch "$work/$p/go"; done
    org_refusals=0
    for p in p1b p2 p3 p4 p5 p6 p7 p8; do
      wait "$(eval echo "\$pid_$p")" || fail "process $p failed: $(cat "$work/$p.out")"
      [[ "$(field "$p" refused)" == budget_exceeded ]] || fail "process $p stopped with $(field "$p" refused)"
      [[ "$(field "$p" subject)" == pool:org ]] && org_refusals=$((org_refusals + 1))
    done
    [[ "$(field p5 in_doubt)" -ge 1 ]] || fail "p5's lost commit was not read back"
    [[ "$org_refusals" -ge 1 ]] || fail "no process was refused by pool:org"
    [[ "$(sql "SELECT net = 50 FROM clampai_ledger_pools WHERE name = 'org'")" == t ]] ||
      fail "org ended at $(sql "SELECT net FROM clampai_ledger_pools WHERE name = 'org'"), not exactly spent"
    # Nothing committed is lost: every commit a process was told of is an executed entry.
    for out in "$work"/p*.out; do
      name="$(basename "$out" .out)"
      case "$name" in p1* | p2) task=t1 ;; p3 | p4) task=t2 ;; p5 | p6) task=t3 ;; *) task=t4 ;; esac
      while read -r word seq; do
        [[ "$word" == committed ]] || continue
        [[ "$(sql "SELECT kind FROM clampai_ledger_entries WHERE task = '$task' AND seq = $seq")" == executed ]] ||
          fail "entry $task/$seq, committed according to $name, is not in the ledger"
      done <"$out"
    done
    check_pools 2 t1 t2 t3 t4
    echo "ok ($scenario): 8 processes, a kill in a commit, a restart: every level within its total, rows agree"
    ;;
  serve)
    # `serve --ledger` with a task in a pool: the ledger's pool refuses, named in the answer.
    pools '{"pools": {"org": {"total": 5}, "team-a": {"total": 2, "parent": "org"}}}'
    "$clampai" ledger pools apply "$work/pools.json" --ledger "$DATABASE_URL" >/dev/null
    spec t1 team-a 10
    "$clampai" serve --spec "$work/t1.json" --ledger "$DATABASE_URL" --port 0 --insecure-no-auth \
      >"$work/serve.out" 2>"$work/serve.err" &
    pids+=($!)
    until grep -q '^listening on ' "$work/serve.out"; do
      kill -0 "${pids[-1]}" 2>/dev/null || fail "the server died: $(cat "$work/serve.err")"
      sleep 0.01
    done
    url="$(sed -n 's/^listening on //p' "$work/serve.out")"
    answers=""
    for _ in 1 2 3; do
      answers+="$(curl -sS -X POST -H 'Content-Type: application/json' -d '{"action": "inc"}' \
        "$url/v1/tasks/t1/execute" |
        python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["executed"], *[r["code"] + "@" + r["subject"] for r in d.get("reasons", [])])') "
    done
    [[ "$answers" == "True True False budget_exceeded@pool:team-a " ]] || fail "serve answered: $answers"
    [[ "$(sql "SELECT net = 2 FROM clampai_ledger_pools WHERE name = 'org'")" == t ]] || fail "org not charged"
    # GET /v1/pools and /metrics show the ledger's rows, parents first.
    listed="$(curl -sS "$url/v1/pools" | python3 -c 'import json,sys
print(" ".join(p["name"] + ":" + p["net"] + "/" + p["total"] for p in json.load(sys.stdin)["pools"]))')"
    [[ "$listed" == "org:2.000/5.000 team-a:2.000/2.000" ]] || fail "GET /v1/pools: $listed"
    curl -sS "$url/metrics" | grep -Eq '^clampai_pool_net\{pool="team-a"\} 2(\.0+)?$' ||
      fail "/metrics has no clampai_pool_net of team-a: $(curl -sS "$url/metrics" | grep pool)"
    check_pools 2 t1
    # The database gone: /metrics still answers a scrape, without the pools, and the log says so.
    $CLAMPAI_PG_AS "$CLAMPAI_PG_BINDIR/pg_ctl" -D "$PGDATA" -m fast -w stop >/dev/null
    scraped="$(curl -sS -w '\n%{http_code}' "$url/metrics")"
    [[ "${scraped##*$'\n'}" == 200 ]] || fail "/metrics without the database: ${scraped##*$'\n'}"
    grep -q '^clampai_' <<<"$scraped" || fail "/metrics without the database has no figures"
    if grep -q '^clampai_pool_' <<<"$scraped"; then fail "/metrics shows pools it cannot read"; fi
    grep -q "/metrics: the ledger's pools left out" "$work/serve.err" ||
      fail "the log does not say the pools were left out: $(cat "$work/serve.err")"
    echo "ok ($scenario)"
    ;;
  *)
    fail "unknown scenario"
    ;;
esac
