#!/usr/bin/env bash
# Before and after on a noisy machine: runs bench_kernel of two builds in turn, ROUNDS times
# (and each execute benchmark the filter selects again in a fresh process: "cold"), then
# prints, per benchmark, the best and the median of the rounds for each build, and the ratio
# of the bests.
#
# Usage: benchmarks/interleave.sh BASE_BUILD_DIR NEW_BUILD_DIR [ROUNDS]   (default 4 rounds)
# Environment: FILTER (a --benchmark_filter; default: the issue-16 rows), MIN_TIME (default 0.2).
# Times are the benchmarks' own: the caller's wall time ("wall") and CPU time ("cpu": the
# process's for the rows named process_time, else the calling thread's).
set -euo pipefail
[[ $# -ge 2 ]] || { sed -n '2,10p' "$0" >&2; exit 2; }
base="$1/benchmarks/bench_kernel"
new="$2/benchmarks/bench_kernel"
rounds="${3:-4}"
for b in "$base" "$new"; do
  [[ -x $b ]] || { echo "interleave.sh: no benchmark at \`$b\`" >&2; exit 2; }
done
filter="${FILTER:-BM_Kernel_Evaluate/(10/1|10/100|1000/1)$|BM_Kernel_ExecuteAtomic(Bounded)?(Caller)?/(10|1000)(/process_time)?$|BM_Kernel_ExecuteAtomicThreads|BM_Kernel_ExecuteAtomicSeparate|BM_Trace_Verify/|BM_Trace_VerifyFile/1000/}"
min_time="${MIN_TIME:-0.2}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq "$rounds"); do
  for v in base new; do
    b="$base"
    [[ $v == new ]] && b="$new"
    "$b" --benchmark_filter="$filter" --benchmark_min_time="$min_time" --benchmark_format=json \
      > "$tmp/$v.$r.json" 2> /dev/null
    for c in ExecuteAtomic/10 ExecuteAtomicBounded/10; do
      # Only the cold runs of rows that the filter selects.
      grep -qE -- "$filter" <<< "BM_Kernel_$c/process_time" || continue
      "$b" --benchmark_filter="BM_Kernel_$c/process_time\$" --benchmark_min_time="$min_time" \
        --benchmark_format=json > "$tmp/$v.$r.cold.${c//\//_}.json" 2> /dev/null
    done
  done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
/usr/bin/python3 - "$tmp" << 'PY'
import collections, glob, json, statistics, sys
tmp = sys.argv[1]
rows = collections.defaultdict(lambda: collections.defaultdict(list))
for v in ("base", "new"):
    for f in glob.glob(f"{tmp}/{v}.*.json"):
        cold = ".cold." in f
        for b in json.load(open(f))["benchmarks"]:
            rows[b["name"] + (" [cold]" if cold else "")][v].append(b)
def cell(bs, key):
    if not bs:
        return "-"
    xs = [b[key] for b in bs]
    return f"{min(xs):,.0f} / {statistics.median(xs):,.0f}"
def rate(bs):
    xs = [b.get("items_per_second", 0) for b in bs]
    return f"{max(xs) / 1e3:,.0f} k/s" if xs and max(xs) else ""
print("| benchmark | base wall: best / median | new wall: best / median | new / base | base cpu | new cpu | items/s (best: base, new) |")
print("|---|---|---|---|---|---|---|")
for name in sorted(rows):
    r = rows[name]
    ratio = ""
    if r["base"] and r["new"]:
        ratio = f"{min(b['real_time'] for b in r['new']) / min(b['real_time'] for b in r['base']):.2f}"
    print(f"| `{name}` | {cell(r['base'], 'real_time')} | {cell(r['new'], 'real_time')} | {ratio} | "
          f"{cell(r['base'], 'cpu_time')} | {cell(r['new'], 'cpu_time')} | {rate(r['base'])} {rate(r['new'])} |")
PY
