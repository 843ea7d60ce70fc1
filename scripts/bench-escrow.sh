#!/usr/bin/env bash
# Throughput of escrow mode beside the shared (compare-and-set) mode (issue 21; figures in
# BENCHMARKS.md): commits per second with 1, 2 and 4 processes on one task, on a throwaway
# PostgreSQL cluster (scripts/with-postgres.sh). Shared: tests/fault_agent (every commit a
# compare-and-set on the task's head). Escrow: tests/escrow_agent with a slice of 1000 per
# lease, flushing every decision (escrow_batch=1: each commit durable before it returns) and
# every 32 (escrow_batch=32). The clock runs from the processes' start to the last one's end
# (connection, schema check and leases included).
#   scripts/bench-escrow.sh [BUILD_DIR] [COMMITS_PER_PROCESS]
# Prints a Markdown table.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$root/build/rel}"
per="${2:-400}"
for a in fault_agent escrow_agent; do
  [[ -x "$build/tests/$a" ]] || {
    echo "bench-escrow.sh: $build/tests/$a not found: build the $a target" >&2
    exit 2
  }
done

if [[ -z "${DATABASE_URL:-}" ]]; then
  exec "$root/scripts/with-postgres.sh" "$0" "$build" "$per"
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# Decisions that read no state (what escrow mode accepts), a budget no run exhausts.
cat >"$work/spec.json" <<'JSON'
{"name": "bench", "variables": {"last": {"type": "int", "initial": 0}},
 "actions": [{"id": "call", "cost": 1, "effects": [{"variable": "last", "mode": "set", "value": 1}]}],
 "budget": {"total": 100000000, "min_action_cost": 1}}
JSON

# run MODE PROCS: prints `commits seconds`.
run() {
  local mode="$1" procs="$2" i pids=() start end task="bench-$1-$2"
  start="$(date +%s.%N)"
  for ((i = 0; i < procs; i++)); do
    case "$mode" in
      shared) "$build/tests/fault_agent" "$DATABASE_URL#$task" "$work/spec.json" call "$per" ;;
      escrow-1) "$build/tests/escrow_agent" "$DATABASE_URL&escrow=1000#$task" "$work/spec.json" call "$per" ;;
      escrow-32) "$build/tests/escrow_agent" "$DATABASE_URL&escrow=1000&escrow_batch=32#$task" "$work/spec.json" call "$per" ;;
    esac >"$work/$i.out" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p"; done
  end="$(date +%s.%N)"
  local commits=0 c
  for ((i = 0; i < procs; i++)); do
    c="$(tail -n 1 "$work/$i.out" | sed -E 's/.*"committed": ([0-9]+).*/\1/')"
    commits=$((commits + c))
  done
  echo "$commits $(awk -v a="$start" -v b="$end" 'BEGIN { print b - a }')"
}

echo "| mode | processes | commits | commits/s |"
echo "| --- | ---: | ---: | ---: |"
for mode in shared escrow-1 escrow-32; do
  for procs in 1 2 4; do
    read -r commits seconds < <(run "$mode" "$procs")
    awk -v m="$mode" -v p="$procs" -v c="$commits" -v s="$seconds" \
      'BEGIN { printf "| %s | %d | %d | %.0f |\n", m, p, c, c / s }'
  done
done
