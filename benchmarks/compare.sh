#!/usr/bin/env bash
# Side by side, in one run: the Python reference and this kernel on the same task shapes.
#
# Usage: benchmarks/compare.sh [REFERENCE_DIR]
#   REFERENCE_DIR  the Python reference (clampai 1.0.1); default $CLAMPAI_REFERENCE, else
#                  ../shared/reference/clampai-1.0.1 relative to the repository (or
#                  ../../shared/... from a worktree under wt/).
# Environment: BUILD_DIR (default build/rel) holds benchmarks/bench_kernel (Release);
#              PYTHON (default /usr/bin/python3); SECONDS_PER_CASE (default 0.5).
# Prints a markdown table: each case's figure for the reference and for us, and the ratio
# (how many times faster we are). "cold" is a fresh process's first repetition: every
# benchmark whose memory grows (execute) is also run that way, beside the warm median; the
# "bounded memory" rows are the kernel with KernelOptions::trace_window and undo_depth set
# (memory does not grow). The reference keeps its whole trace in memory. Times are CPU time on
# both sides (a shared machine's wall time counts other jobs); trace verification is entries
# per second of wall time on both sides (ours hashes on every core).
set -euo pipefail

script=compare.sh
target=bench_kernel
source "$(dirname "${BASH_SOURCE[0]}")/reference_setup.sh"
seconds="${SECONDS_PER_CASE:-0.5}"

echo "reference: $reference" >&2
"$python" "$repo/benchmarks/reference_bench.py" "$reference" --seconds "$seconds" >"$tmp/ref.json"
echo "ours (warm: median of 3 repetitions): $bench" >&2
"$bench" --benchmark_filter='BM_Kernel_Evaluate/(10/1|10/100|1000/1)$|BM_Kernel_ExecuteAtomic(Bounded)?/(10|1000)$|BM_Trace_Verify/' \
  --benchmark_repetitions=3 --benchmark_min_time="$seconds" --benchmark_format=json \
  >"$tmp/warm.json" 2>/dev/null
for case in ExecuteAtomic/10 ExecuteAtomic/1000 ExecuteAtomicBounded/10 ExecuteAtomicBounded/1000; do
  echo "ours (cold: a fresh process, one repetition): BM_Kernel_$case" >&2
  "$bench" --benchmark_filter="BM_Kernel_$case\$" --benchmark_min_time=0.2 \
    --benchmark_format=json >"$tmp/cold${case//\//_}.json" 2>/dev/null
done

"$python" - "$tmp" <<'EOF'
import json, platform, subprocess, sys, datetime
tmp = sys.argv[1]
ref = json.load(open(f"{tmp}/ref.json"))
warm = json.load(open(f"{tmp}/warm.json"))

def ours(name, field="cpu_time"):
    rows = [b for b in warm["benchmarks"]
            if b.get("run_name") == name and b.get("aggregate_name") == "median"]
    if not rows:
        rows = [b for b in warm["benchmarks"] if b.get("run_name") == name]
    return rows[0][field]

def cold(case):
    b = json.load(open(f"{tmp}/cold{case.replace('/', '_')}.json"))["benchmarks"][0]
    return b["cpu_time"]

def ns(x):
    if x >= 1e6: return f"{x / 1e6:.2f} ms"
    if x >= 1e3: return f"{x / 1e3:.2f} µs"
    return f"{x:.0f} ns"

rows = [
    ("evaluate, 10 variables, 1 invariant", ref["evaluate/10/1"]["ns"], ours("BM_Kernel_Evaluate/10/1")),
    ("evaluate, 10 variables, 100 invariants", ref["evaluate/10/100"]["ns"], ours("BM_Kernel_Evaluate/10/100")),
    ("evaluate, 1,000 variables, 1 invariant", ref["evaluate/1000/1"]["ns"], ours("BM_Kernel_Evaluate/1000/1")),
    ("atomic execute, 10 variables (warm)", ref["execute/10"]["ns"], ours("BM_Kernel_ExecuteAtomic/10")),
    ("atomic execute, 10 variables (cold)", ref["execute/10"]["ns"], cold("ExecuteAtomic/10")),
    ("atomic execute, 10 variables, bounded memory (warm)", ref["execute/10"]["ns"], ours("BM_Kernel_ExecuteAtomicBounded/10")),
    ("atomic execute, 10 variables, bounded memory (cold)", ref["execute/10"]["ns"], cold("ExecuteAtomicBounded/10")),
    ("atomic execute, 1,000 variables (warm)", ref["execute/1000"]["ns"], ours("BM_Kernel_ExecuteAtomic/1000")),
    ("atomic execute, 1,000 variables (cold)", ref["execute/1000"]["ns"], cold("ExecuteAtomic/1000")),
    ("atomic execute, 1,000 variables, bounded memory (warm)", ref["execute/1000"]["ns"], ours("BM_Kernel_ExecuteAtomicBounded/1000")),
    ("atomic execute, 1,000 variables, bounded memory (cold)", ref["execute/1000"]["ns"], cold("ExecuteAtomicBounded/1000")),
]
cpu = "unknown"
try:
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip(); break
except OSError:
    pass
now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
print(f"Machine: {cpu}, {subprocess.run(['nproc'], capture_output=True, text=True).stdout.strip()} cores, "
      f"Python {platform.python_version()}; {now}; load average {open('/proc/loadavg').read().split()[0]}")
print()
print("CPU time per call (trace verification: entries per second of wall time).")
print()
print("| case | Python reference | C++ kernel | ratio (reference / C++) |")
print("|---|---|---|---|")
for name, r, o in rows:
    print(f"| {name} | {ns(r)} | {ns(o)} | {r / o:,.0f}× |")
rv = ref["trace_verify"]["items_per_second"]
ov = ours("BM_Trace_Verify/real_time", "items_per_second")
print(f"| trace verification, 1,001 entries (entries/s) | {rv / 1e3:,.0f} k/s | {ov / 1e6:.2f} M/s | {ov / rv:,.0f}× |")
EOF
