#!/usr/bin/env bash
# `--ledger` on `agent` and `serve` (issue 21), each scenario run by ctest through
# scripts/with-postgres.sh:
#   wire.sh CLAMPAI SCENARIO
# Scenarios:
#   agent-share  two `clampai agent --llm mock --ledger` processes on one task share one budget:
#                their committed actions add up to the shared trace, which verifies, and T1 holds.
#   serve-race   two `clampai serve --ledger` processes on one task race for the last unit of
#                budget: exactly one wins; both then answer on the shared head.
#   serve-signed two `clampai serve --ledger --signing-key --checkpoint-every 2` processes on
#                one task: their checkpoints in the shared trace, one at each shutdown, verify
#                with the group's public key (`trace verify URL#TASK --public-key`), not another.
#   approvals    `clampai run --ledger --approvals`: a run leaves its ticket waiting in the shared
#                trace, a second run asks and is granted; the trace verifies and replays.
# Waits are for the processes and the servers' `listening on` lines, never for a duration.
set -euo pipefail

clampai="$1"
scenario="$2"
: "${DATABASE_URL:?run me through scripts/with-postgres.sh}"

work="$(mktemp -d)"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

fail() {
  echo "FAIL ($scenario): $*" >&2
  exit 1
}

sql() { psql -X -At -v ON_ERROR_STOP=1 -c "$1"; }
json() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$@"; }

# A counter with a budget of BUDGET units, one unit per step, and a goal out of its reach.
spec() {
  cat >"$work/spec.json" <<JSON
{"name": "wire", "goal": "n >= 1000",
 "variables": {"n": {"type": "int", "initial": 0, "min": 0}},
 "actions": [{"id": "inc", "cost": 1, "effects": [{"variable": "n", "mode": "increment", "value": 1}]}],
 "budget": {"total": $1, "min_action_cost": 1}}
JSON
}

# The shared trace verifies and replays; EXECUTED executed entries; net spend = EXECUTED <= total.
check() {
  "$clampai" trace verify "$DATABASE_URL#wire" --spec "$work/spec.json" ||
    fail "the chain does not verify"
  local got
  got="$(sql "SELECT count(*) FROM clampai_ledger_entries WHERE task = 'wire' AND kind = 'executed'")"
  [[ "$got" == "$1" ]] || fail "$got executed entries in the ledger, expected $1"
  [[ "$(sql "SELECT net = $1 AND net <= total FROM clampai_ledger_tasks WHERE task = 'wire'")" == t ]] ||
    fail "the head row's net spend is not $1 within the total (T1)"
}

case "$scenario" in
  agent-share)
    spec 40
    for i in 1 2; do
      "$clampai" agent "$work/spec.json" --llm mock --ledger "$DATABASE_URL" --format json -q \
        >"$work/agent$i.json" &
      pids+=($!)
    done
    for p in "${pids[@]}"; do wait "$p" || [[ $? -eq 1 ]] || fail "an agent failed"; done
    pids=()
    total=0
    for i in 1 2; do
      executed="$(json "$work/agent$i.json" 'd["executed"]')"
      approved="$(json "$work/agent$i.json" 'sum(1 for s in d["log"] if s["approved"])')"
      [[ "$executed" == "$approved" ]] || fail "agent $i: executed $executed, but $approved approved steps"
      [[ "$(json "$work/agent$i.json" 'd["termination"]')" =~ ^(budget_exhausted|step_limit)$ ]] ||
        fail "agent $i stopped with $(json "$work/agent$i.json" 'd["termination"]')"
      [[ "$(json "$work/agent$i.json" 'd["trace"]["verified"]')" == True ]] ||
        fail "agent $i: its replica of the trace does not verify"
      total=$((total + executed))
    done
    [[ "$total" == 40 ]] || fail "the agents' committed actions add up to $total, not the 40 of the budget"
    # Both end on the same head: the last one to stop has seen every entry.
    check 40
    echo "ok ($scenario): two agents committed $total actions on one budget of 40"
    ;;
  serve-race)
    spec 3
    for s in a b; do
      "$clampai" serve --spec "$work/spec.json" --ledger "$DATABASE_URL" --port 0 \
        --insecure-no-auth >"$work/$s.out" 2>"$work/$s.err" &
      pids+=($!)
    done
    for s in a b; do
      until grep -q '^listening on ' "$work/$s.out"; do
        kill -0 "${pids[0]}" "${pids[1]}" 2>/dev/null || fail "a server died: $(cat "$work"/*.err)"
        sleep 0.01
      done
      eval "url_$s=\"\$(sed -n 's/^listening on //p' \"\$work/\$s.out\")\""
    done
    # url_a and url_b are set by the eval above.
    # shellcheck disable=SC2154
    execute() { curl -sS -X POST -H 'Content-Type: application/json' -d '{"action": "inc"}' \
      "$1/v1/tasks/wire/execute"; }
    # Two units spent through server a, then both servers race for the last one.
    # shellcheck disable=SC2154
    for _ in 1 2; do
      [[ "$(execute "$url_a" | python3 -c 'import json,sys; print(json.load(sys.stdin)["executed"])')" == True ]] ||
        fail "server a refused a unit within the budget"
    done
    # shellcheck disable=SC2154
    execute "$url_a" >"$work/race_a.json" &
    ra=$!
    # shellcheck disable=SC2154
    execute "$url_b" >"$work/race_b.json" &
    rb=$!
    wait "$ra" || fail "the request to server a failed"
    wait "$rb" || fail "the request to server b failed"
    won=0
    for s in a b; do
      if [[ "$(json "$work/race_$s.json" 'd["executed"]')" == True ]]; then
        won=$((won + 1))
      else
        [[ "$(json "$work/race_$s.json" '"budget_exceeded" in [r["code"] for r in d["reasons"]]')" == True ]] ||
          fail "server $s refused the last unit for $(cat "$work/race_$s.json"), not budget_exceeded"
      fi
    done
    [[ "$won" == 1 ]] || fail "$won servers won the last unit"
    # Both answer on the shared head: all 3 units spent; each streams the whole shared trace.
    for s in a b; do
      eval "url=\$url_$s"
      [[ "$(curl -sS "$url/v1/tasks/wire/state" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["budget"]["net"], d["state"]["n"])')" == "3.000 3" ]] ||
        fail "server $s does not answer on the shared head: $(curl -sS "$url/v1/tasks/wire/state")"
      [[ "$(curl -sS "$url/v1/tasks/wire/trace" | wc -l)" == "$(sql "SELECT length FROM clampai_ledger_tasks WHERE task = 'wire'")" ]] ||
        fail "server $s's /trace is not the shared trace"
    done
    check 3
    echo "ok ($scenario): one of two servers won the last unit"
    ;;
  serve-signed)
    spec 40
    "$clampai" keygen "$work/key.pem" >/dev/null
    "$clampai" keygen "$work/other.pem" >/dev/null
    for s in a b; do
      "$clampai" serve --spec "$work/spec.json" --ledger "$DATABASE_URL" --port 0 \
        --insecure-no-auth --signing-key "$work/key.pem" --checkpoint-every 2 \
        >"$work/$s.out" 2>"$work/$s.err" &
      pids+=($!)
    done
    for s in a b; do
      until grep -q '^listening on ' "$work/$s.out"; do
        kill -0 "${pids[0]}" "${pids[1]}" 2>/dev/null || fail "a server died: $(cat "$work"/*.err)"
        sleep 0.01
      done
      eval "url_$s=\"\$(sed -n 's/^listening on //p' \"\$work/\$s.out\")\""
    done
    # shellcheck disable=SC2154
    for url in "$url_a" "$url_b" "$url_a" "$url_b" "$url_a"; do
      [[ "$(curl -sS -X POST -H 'Content-Type: application/json' -d '{"action": "inc"}' \
        "$url/v1/tasks/wire/execute" | python3 -c 'import json,sys; print(json.load(sys.stdin)["executed"])')" == True ]] ||
        fail "a server refused a unit within the budget"
    done
    # Stopped one after the other: a checkpoint at each shutdown unless the ledger ends in one.
    for i in 0 1; do
      kill -TERM "${pids[$i]}"
      wait "${pids[$i]}" || fail "a server did not stop cleanly: $(cat "$work"/*.err)"
    done
    pids=()
    check 5
    [[ "$(sql "SELECT count(*) >= 2 FROM clampai_ledger_entries WHERE task = 'wire' AND kind = 'checkpoint'")" == t ]] ||
      fail "fewer than 2 checkpoints in the shared trace"
    [[ "$(sql "SELECT kind FROM clampai_ledger_entries WHERE task = 'wire' ORDER BY seq DESC LIMIT 1")" == checkpoint ]] ||
      fail "the shared trace does not end in a checkpoint"
    "$clampai" trace verify "$DATABASE_URL#wire" --public-key "$work/key.pem.pub" >"$work/verify.out" ||
      fail "the checkpoints do not verify: $(cat "$work/verify.out")"
    grep -q "covering every entry" "$work/verify.out" || fail "$(cat "$work/verify.out")"
    if "$clampai" trace verify "$DATABASE_URL#wire" --public-key "$work/other.pem.pub" >"$work/other.out"; then
      fail "the checkpoints verify with another key"
    fi
    grep -q "does not verify with the public key" "$work/other.out" || fail "$(cat "$work/other.out")"
    echo "ok ($scenario): the servers' checkpoints verify with the group's key"
    ;;
  approvals)
    cat >"$work/spec.json" <<JSON
{"name": "wire-approvals", "goal": "deployed",
 "variables": {"built": {"type": "bool", "initial": false},
               "deployed": {"type": "bool", "initial": false}},
 "actions": [{"id": "build", "cost": 1, "requires": "!built",
              "effects": [{"variable": "built", "mode": "set", "value": true}]},
             {"id": "deploy", "cost": 2, "requires": "built", "approval": {"ttl_s": 300},
              "effects": [{"variable": "deployed", "mode": "set", "value": true}]}],
 "budget": {"total": 10, "min_action_cost": 1}}
JSON
    rc=0
    "$clampai" run "$work/spec.json" --ledger "$DATABASE_URL" --approvals skip --format json \
      </dev/null >"$work/skip.json" || rc=$?
    [[ "$rc" == 1 ]] || fail "the run left waiting exited with $rc"
    [[ "$(json "$work/skip.json" 'len(d["approvals"]["waiting"])')" == 1 ]] ||
      fail "the first run left no ticket waiting"
    echo y | "$clampai" run "$work/spec.json" --ledger "$DATABASE_URL" --approvals prompt \
      --format json >"$work/grant.json" || fail "the granted run did not reach the goal"
    [[ "$(json "$work/grant.json" 'd["approvals"]["granted"]')" == 1 ]] || fail "nothing granted"
    "$clampai" trace verify "$DATABASE_URL#wire-approvals" --spec "$work/spec.json" ||
      fail "the shared trace does not verify"
    kinds="$(sql "SELECT string_agg(kind, ' ' ORDER BY seq) FROM clampai_ledger_entries WHERE task = 'wire-approvals'")"
    [[ "$kinds" == "genesis executed approval_requested approval_requested approval_granted executed" ]] ||
      fail "the shared trace holds $kinds"
    echo "ok ($scenario): a ticket left waiting and one granted, in the shared trace"
    ;;
  *)
    fail "unknown scenario"
    ;;
esac
