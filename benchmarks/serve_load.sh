#!/usr/bin/env bash
# Load test of `clampai serve` with wrk on 127.0.0.1, bounded in time, and of the Python
# reference's server (clampai.server) under the same load in the same run, for comparison.
#
# Usage: benchmarks/serve_load.sh [--check] [REFERENCE_DIR]
#   (default)  requests/s, p50 and p99 of `evaluate` and `execute` with 1, 16 and 64
#              connections on one task and on 16 tasks, then the reference's /evaluate and
#              /execute (one kernel: it has no tasks) at 1, 16 and 64 connections; a markdown
#              table on stdout. Afterwards, untimed: T1 (net spend <= budget) on every task and
#              every trace's chain replayed (`clampai trace verify --spec`).
#   --check    a short load (1 s of execute on 16 tasks, 16 connections) and the same untimed
#              checks, exit 1 if one fails: what ctest runs (serve_load_invariants).
# Environment: BUILD_DIR (default build/rel), DURATION seconds per case (default 5),
#              PYTHON (default /usr/bin/python3), CLAMPAI_REFERENCE (the reference's folder),
#              WRK_THREADS (default 2; 1 for one connection), SERVE_THREADS (the server's
#              --threads; default: its own, one per core), PIN_CPUS=1 (the servers on the
#              first core and wrk on the second, with taskset: client and server then never
#              take each other's core; use with SERVE_THREADS=1 WRK_THREADS=1).
# Client and server share the machine's cores, so the figures are a lower bound of the
# server's own throughput. The load average is printed before and after, and the server's CPU
# time per request (user + system, from /proc) over all its cases.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
check=0
if [[ "${1:-}" == "--check" ]]; then
  check=1
  shift
fi
default_reference="$repo/../shared/reference/clampai-1.0.1"
[[ -d "$default_reference" ]] || default_reference="$repo/../../shared/reference/clampai-1.0.1"
reference="${1:-${CLAMPAI_REFERENCE:-$default_reference}}"
build="${BUILD_DIR:-$repo/build/rel}"
clampai="${CLAMPAI:-$build/cli/clampai}"
python="${PYTHON:-/usr/bin/python3}"
duration="${DURATION:-5}"
command -v wrk > /dev/null || { echo "serve_load.sh: wrk is not installed (apt install wrk)" >&2; exit 2; }
[[ -x "$clampai" ]] || { echo "serve_load.sh: no clampai at \`$clampai\` (set BUILD_DIR)" >&2; exit 2; }

# PIN_CPUS=1: each side on a core of its own.
pin_server=()
pin_client=()
if [[ "${PIN_CPUS:-0}" == 1 && "$(nproc)" -ge 2 ]]; then
  pin_server=(taskset -c 0)
  pin_client=(taskset -c 1)
fi

work="$(mktemp -d)"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2> /dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

# 16 tasks of one shape: a counter, a budget that lasts (a step costs 0.001 of 10^9).
mkdir "$work/data" "$work/specs"
for i in $(seq 0 15); do
  cat > "$work/specs/load$i.json" << SPEC
{"name": "load$i",
 "variables": {"n": {"type": "int", "initial": 0, "min": 0}},
 "actions": [{"id": "tick", "cost": 0.001, "effects": [{"variable": "n", "mode": "increment", "value": 1}]}],
 "invariants": [{"name": "non_negative", "check": "n >= 0"}],
 "budget": {"total": 1000000000, "min_action_cost": 0.001}}
SPEC
done
spec_args=()
for i in $(seq 0 15); do spec_args+=(--spec "$work/specs/load$i.json"); done
[[ -n "${SERVE_THREADS:-}" ]] && spec_args+=(--threads "$SERVE_THREADS")
"${pin_server[@]}" "$clampai" serve --insecure-no-auth --port 0 --data-dir "$work/data" "${spec_args[@]}" \
  > "$work/serve.out" 2> "$work/serve.err" &
server=$!
pids+=("$server")
for _ in $(seq 100); do grep -q '^listening on' "$work/serve.out" && break; sleep 0.1; done
url="$(sed -n 's/^listening on //p' "$work/serve.out")"
[[ -n "$url" ]] || { cat "$work/serve.err" >&2; exit 2; }

# A wrk script: POST BODY to PATH_PREFIX${i}SUFFIX over TASKS tasks in turn (or PATH alone).
write_lua() {  # file path body tasks
  cat > "$1" << LUA
local i = 0
local tasks = $4
local body = '$3'
local headers = {["Content-Type"] = "application/json"}
request = function()
  i = i + 1
  local path = string.gsub("$2", "{i}", tostring(i % tasks))
  return wrk.format("POST", path, headers, body)
end
done = function(summary, latency, requests)
  local errors = summary.errors.connect + summary.errors.read + summary.errors.write +
                 summary.errors.status + summary.errors.timeout
  io.write(string.format("RESULT %.0f %.3f %.3f %d %d\n", summary.requests / (summary.duration / 1e6),
                         latency:percentile(50) / 1000, latency:percentile(99) / 1000, errors,
                         summary.requests))
end
LUA
}

run_wrk() {  # url lua connections seconds -> "req/s p50 p99 errors requests"
  local threads=${WRK_THREADS:-2}
  [[ "$3" -lt 2 ]] && threads=1
  "${pin_client[@]}" wrk -t"$threads" -c"$3" -d"$4"s --timeout 5s -s "$2" "$1" 2> /dev/null | sed -n 's/^RESULT //p'
}

cpu_ticks() {  # the user + system time of process $1, in clock ticks
  awk '{print $14 + $15}' "/proc/$1/stat"
}

requests=0
row() {  # server op tasks conns result
  read -r rps p50 p99 errors count <<< "$5"
  requests=$((requests + count))
  printf '| %s | %s | %s | %s | %s | %s | %s | %s |\n' "$1" "$2" "$3" "$4" \
    "$(printf "%'.0f" "$rps")" "$p50" "$p99" "$errors"
}

if [[ $check == 1 ]]; then
  write_lua "$work/execute16.lua" "/v1/tasks/load{i}/execute" '{"action": "tick"}' 16
  run_wrk "$url" "$work/execute16.lua" 16 1 > /dev/null
else
  echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) cores; wrk ${WRK_THREADS:-2} threads; serve --threads ${SERVE_THREADS:-default}; pinned: ${PIN_CPUS:-0}"
  echo
  echo "| server | operation | tasks | connections | requests/s | p50 (ms) | p99 (ms) | errors |"
  echo "|---|---|---:|---:|---:|---:|---:|---:|"
  for op in evaluate execute; do
    for tasks in 1 16; do
      write_lua "$work/$op$tasks.lua" "/v1/tasks/load{i}/$op" '{"action": "tick"}' "$tasks"
      for conns in 1 16 64; do
        row "clampai serve" "$op" "$tasks" "$conns" "$(run_wrk "$url" "$work/$op$tasks.lua" "$conns" "$duration")"
      done
    done
  done
  ticks=$(cpu_ticks "$server")
  serve_cpu="$(awk -v t="$ticks" -v hz="$(getconf CLK_TCK)" -v n="$requests" \
    'BEGIN { printf "%.1f", t / hz / n * 1e6 }')"
fi

# Untimed: T1 on every task, then SIGTERM (sealed, flushed) and every chain replayed.
status=0
for i in $(seq 0 15); do
  state="$(curl -s "$url/v1/tasks/load$i/state")"
  "$python" - "$state" << 'PY' || status=1
import json, sys
from decimal import Decimal
s = json.loads(sys.argv[1])
b = s["budget"]
ok = Decimal(b["net"]) <= Decimal(b["total"]) and Decimal(b["net"]) == Decimal(s["steps"]) * Decimal("0.001") \
     and s["state"]["n"] == s["steps"]
if not ok:
    print(f"T1 or the counters do not hold for {s['task']}: {s}", file=sys.stderr)
sys.exit(0 if ok else 1)
PY
done
kill -TERM "$server"
wait "$server" || status=1
for i in $(seq 0 15); do
  "$clampai" trace verify "$work/data/load$i.jsonl" --spec "$work/specs/load$i.json" --max-input-bytes 8G > /dev/null ||
    { echo "the trace of load$i does not verify" >&2; status=1; }
done
if [[ $check == 1 ]]; then
  [[ $status == 0 ]] && echo "after the load: T1 holds on 16 tasks and their 16 traces verify and replay"
  exit $status
fi
[[ $status == 0 ]] || echo "the checks after the load FAILED" >&2

# The reference's server, the same load on its one kernel.
if [[ -d "$reference/clampai" ]]; then
  port="$("$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
  PYTHONPATH="$reference" "${pin_server[@]}" "$python" -m clampai.server --budget 1000000000 --min-cost 0.001 \
    --port "$port" > "$work/ref.out" 2>&1 &
  pids+=("$!")
  disown "$!"  # killed at the end without a job notice
  for _ in $(seq 100); do curl -s "http://127.0.0.1:$port/health" > /dev/null && break; sleep 0.1; done
  body='{"state": {"n": 0}, "action": {"id": "tick", "cost": 0.001, "effects": [{"variable": "n", "mode": "increment", "value": 1}]}}'
  for op in evaluate execute; do
    write_lua "$work/ref$op.lua" "/$op" "$body" 1
    for conns in 1 16 64; do
      row "reference (Python)" "$op" 1 "$conns" "$(run_wrk "http://127.0.0.1:$port" "$work/ref$op.lua" "$conns" "$duration")"
    done
  done
else
  echo "serve_load.sh: no Python reference at \`$reference\`: its server was not measured" >&2
fi
echo
echo "clampai serve's CPU time (user + system) per request over its cases: ${serve_cpu} µs"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "after the load (untimed): T1 and the counters on 16 tasks, 16 sealed traces replayed: $([[ $status == 0 ]] && echo ok || echo FAILED)"
exit $status
