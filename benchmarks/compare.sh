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
# both sides (a shared machine's wall time counts other jobs), except our atomic execute: its
# entry is hashed after it returns, by the kernel's background thread, so the table gives the
# caller's wall time per execute and, in the last column, the CPU time of all our threads per
# execute. Trace verification is entries per second of wall time on both sides (ours hashes on
# every core), of the kept lines and of the trace file (`clampai trace verify`).
set -euo pipefail

script=compare.sh
target=bench_kernel
source "$(dirname "${BASH_SOURCE[0]}")/reference_setup.sh"
seconds="${SECONDS_PER_CASE:-0.5}"

echo "reference: $reference" >&2
"$python" "$repo/benchmarks/reference_bench.py" "$reference" --seconds "$seconds" >"$tmp/ref.json"
echo "ours (warm: median of 3 repetitions): $bench" >&2
"$bench" --benchmark_filter='BM_Kernel_Evaluate/(10/1|10/100|1000/1)$|BM_Kernel_ExecuteAtomic(Bounded)?/(10|1000)/process_time$|BM_Trace_Verify/|BM_Trace_VerifyFile/1000/' \
  --benchmark_repetitions=3 --benchmark_min_time="$seconds" --benchmark_format=json \
  >"$tmp/warm.json" 2>/dev/null
for case in ExecuteAtomic/10 ExecuteAtomic/1000 ExecuteAtomicBounded/10 ExecuteAtomicBounded/1000; do
  echo "ours (cold: a fresh process, one repetition): BM_Kernel_$case" >&2
  "$bench" --benchmark_filter="BM_Kernel_$case/process_time\$" --benchmark_min_time=0.2 \
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

def cold(case, field="real_time"):
    b = json.load(open(f"{tmp}/cold{case.replace('/', '_')}.json"))["benchmarks"][0]
    return b[field]

def ns(x):
    if x >= 1e6: return f"{x / 1e6:.2f} ms"
    if x >= 1e3: return f"{x / 1e3:.2f} µs"
    return f"{x:.0f} ns"

E = "BM_Kernel_ExecuteAtomic"
rows = [
    ("evaluate, 10 variables, 1 invariant", ref["evaluate/10/1"]["ns"], ours("BM_Kernel_Evaluate/10/1"), None),
    ("evaluate, 10 variables, 100 invariants", ref["evaluate/10/100"]["ns"], ours("BM_Kernel_Evaluate/10/100"), None),
    ("evaluate, 1,000 variables, 1 invariant", ref["evaluate/1000/1"]["ns"], ours("BM_Kernel_Evaluate/1000/1"), None),
]
for n in ("10", "1000"):
    for bounded in ("", "Bounded"):
        label = f"atomic execute, {int(n):,} variables" + (", bounded memory" if bounded else "")
        name = f"{E}{bounded}/{n}/process_time"
        rows.append((label + " (warm)", ref[f"execute/{n}"]["ns"], ours(name, "real_time"), ours(name)))
        case = f"ExecuteAtomic{bounded}/{n}"
        rows.append((label + " (cold)", ref[f"execute/{n}"]["ns"], cold(case), cold(case, "cpu_time")))
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
print("CPU time per call; our atomic execute: the caller's wall time per call, and the CPU time")
print("of all our threads per call in the last column; trace verification: entries per second of")
print("wall time.")
print()
print("| case | Python reference | C++ kernel | ratio (reference / C++) | C++ CPU, all threads |")
print("|---|---|---|---|---|")
for name, r, o, c in rows:
    print(f"| {name} | {ns(r)} | {ns(o)} | {r / o:,.0f}× | {ns(c) if c else ''} |")
rv = ref["trace_verify"]["items_per_second"]
for label, name in (("kept lines", "BM_Trace_Verify/real_time"),
                    ("trace file", "BM_Trace_VerifyFile/1000/real_time")):
    ov = ours(name, "items_per_second")
    print(f"| trace verification, 1,001 entries, {label} (entries/s) | {rv / 1e3:,.0f} k/s | "
          f"{ov / 1e6:.2f} M/s | {ov / rv:,.0f}× | |")
EOF
