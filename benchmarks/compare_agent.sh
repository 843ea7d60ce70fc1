#!/usr/bin/env bash
# Side by side, in one run: the Python reference's orchestrator with its own mock LLM and ours
# with the mock, on the same task (50 actions, 20 variables, 200 steps to the T2 bound).
#
# Usage: benchmarks/compare_agent.sh [REFERENCE_DIR]
#   REFERENCE_DIR  the Python reference (clampai 1.0.1); default $CLAMPAI_REFERENCE, else
#                  ../shared/reference/clampai-1.0.1 relative to the repository (or
#                  ../../shared/... from a worktree under wt/).
# Environment: BUILD_DIR (default build/rel) holds benchmarks/bench_agent (Release);
#              PYTHON (default /usr/bin/python3); RUNS (default 3, the reference's runs).
# Prints a markdown table: CPU time per step of each loop (the kernel's execute included), and
# the ratio. Ours: BM_Agent_Step (the dominant-action rule on) and BM_Agent_StepAskLlm (the mock
# is asked every step: the prompt, the tools and the answer's parsing are paid each time).
set -euo pipefail

script=compare_agent.sh
target=bench_agent
source "$(dirname "${BASH_SOURCE[0]}")/reference_setup.sh"
runs="${RUNS:-3}"

echo "reference: $reference" >&2
"$python" "$repo/benchmarks/reference_agent_bench.py" "$reference" --runs "$runs" >"$tmp/ref.json"
echo "ours (median of 3 repetitions): $bench" >&2
"$bench" --benchmark_repetitions=3 --benchmark_format=json >"$tmp/ours.json" 2>/dev/null

"$python" - "$tmp" <<'PY'
import json, sys
tmp = sys.argv[1]
ref = json.load(open(f"{tmp}/ref.json"))["agent_step"]
ours = json.load(open(f"{tmp}/ours.json"))
def median(name):
    for b in ours["benchmarks"]:
        if b.get("run_name") == name and b.get("aggregate_name") == "median":
            return b["per_step"] * 1e9  # seconds per step -> ns
    raise SystemExit(f"no median for {name}")
def us(ns):
    return f"{ns / 1000:,.1f} µs" if ns < 1e6 else f"{ns / 1e6:,.2f} ms"
print("| loop step (50 actions, 20 variables) | reference (Python) | ours | ratio |")
print("|---|---|---|---|")
for name, label in (("BM_Agent_Step", "default (dominant-action rule on)"),
                    ("BM_Agent_StepAskLlm", "the mock asked every step")):
    o = median(name)
    print(f"| {label} | {us(ref['ns'])} | {us(o)} | {ref['ns'] / o:,.0f}× |")
print(f"\nreference: {ref['steps']:.0f} steps per run, {ref['runs']} runs, CPU time of Orchestrator.run()")
PY
