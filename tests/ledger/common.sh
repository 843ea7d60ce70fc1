# shellcheck shell=bash
# The tests of the shared ledger (tests/ledger/faults.sh, tests/ledger/escrow.sh) source this:
#   SCRIPT CLAMPAI AGENT SCENARIO
# sets `clampai`, `agent` and `scenario`; a work folder `$work`, removed at exit with every
# background process listed in `pids` killed; `fail MESSAGE`; `wait_for FILE` (no time limit of
# its own: ctest's TIMEOUT bounds the test); `sql QUERY` (psql, one value per line);
# `four_runs LEDGER`.
set -euo pipefail

clampai="$1"
# shellcheck disable=SC2034  # used by the scripts that source this
agent="$2"
scenario="$3"
: "${DATABASE_URL:?run me through scripts/with-postgres.sh}"

work="$(mktemp -d)"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

fail() {
  echo "FAIL ($scenario): $*" >&2
  exit 1
}

wait_for() {
  until [[ -e "$1" ]]; do
    sleep 0.01
  done
}

sql() { psql -X -At -v ON_ERROR_STOP=1 -c "$1"; }

# Runs four `clampai run $work/spec.json --ledger LEDGER --format json` at once and prints how
# many actions their reports list in all (each lists what its process committed).
four_runs() {
  local i p n total=0 runs=()
  for i in 1 2 3 4; do
    "$clampai" run "$work/spec.json" --ledger "$1" --format json -q >"$work/run$i.json" &
    runs+=($!)
    pids+=($!)
  done
  for p in "${runs[@]}"; do wait "$p" || [[ $? -eq 1 ]] || fail "a run failed"; done
  for i in 1 2 3 4; do
    n="$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["actions"]))' "$work/run$i.json")"
    total=$((total + n))
  done
  echo "$total"
}
