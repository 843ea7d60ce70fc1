#!/usr/bin/env bash
# Throughput of the shared ledger (issue 21; figures in BENCHMARKS.md): commits per second and
# conflict retries per commit with 1, 2, 4 and 8 processes, all on one task and spread over 8
# tasks, on PostgreSQL (a throwaway cluster: scripts/with-postgres.sh) and on the file ledger
# beside it (`file:PATH`, one file per task, processes on one machine).
#   scripts/bench-ledger.sh [BUILD_DIR] [COMMITS_PER_PROCESS]
# BUILD_DIR (default build/rel) must hold tests/fault_agent (the agent the fault tests use: it
# commits one action repeatedly and prints its counters). Prints a Markdown table.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$root/build/rel}"
per="${2:-200}"
agent="$build/tests/fault_agent"
[[ -x "$agent" ]] || {
  echo "bench-ledger.sh: $agent not found: build the fault_agent target" >&2
  exit 2
}

if [[ -z "${DATABASE_URL:-}" ]]; then
  exec "$root/scripts/with-postgres.sh" "$0" "$build" "$per"
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# No goal, a budget no run exhausts: every step commits.
cat >"$work/spec.json" <<'JSON'
{"name": "bench", "variables": {"n": {"type": "int", "initial": 0, "min": 0}},
 "actions": [{"id": "inc", "cost": 1, "effects": [{"variable": "n", "mode": "increment", "value": 1}]}],
 "budget": {"total": 100000000, "min_action_cost": 1}}
JSON

# run LEDGER PROCS TASKS: PROCS agents, agent i on task i mod TASKS; prints
# `commits seconds conflicts`.
run() {
  local ledger="$1" procs="$2" tasks="$3" i pids=() url start end
  rm -f "$work"/*.out "$work"/*.jsonl
  start="$(date +%s.%N)"
  for ((i = 0; i < procs; i++)); do
    if [[ "$ledger" == pg ]]; then
      url="$DATABASE_URL#bench-$procs-$tasks-$((i % tasks))"
    else
      url="file:$work/task-$((i % tasks)).jsonl"
    fi
    "$agent" "$url" "$work/spec.json" inc "$per" >"$work/$i.out" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p"; done
  end="$(date +%s.%N)"
  local commits=0 conflicts=0 c k
  for ((i = 0; i < procs; i++)); do
    c="$(tail -n 1 "$work/$i.out" | sed -E 's/.*"committed": ([0-9]+).*/\1/')"
    k="$(tail -n 1 "$work/$i.out" | sed -E 's/.*"conflicts": ([0-9]+).*/\1/')"
    commits=$((commits + c))
    conflicts=$((conflicts + k))
  done
  echo "$commits $(awk -v a="$start" -v b="$end" 'BEGIN { print b - a }') $conflicts"
}

echo "| ledger | tasks | processes | commits | commits/s | conflict retries per commit |"
echo "| --- | --- | ---: | ---: | ---: | ---: |"
for ledger in pg file; do
  for tasks in 1 8; do
    for procs in 1 2 4 8; do
      read -r commits seconds conflicts < <(run "$ledger" "$procs" "$tasks")
      awk -v l="$([[ $ledger == pg ]] && echo PostgreSQL || echo file)" \
        -v t="$([[ $tasks == 1 ]] && echo one || echo "8 (process i on task i mod 8)")" \
        -v p="$procs" -v c="$commits" -v s="$seconds" -v k="$conflicts" \
        'BEGIN { printf "| %s | %s | %d | %d | %.0f | %.2f |\n", l, t, p, c, c / s, k / c }'
    done
  done
done
