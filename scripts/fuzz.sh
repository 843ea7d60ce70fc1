#!/usr/bin/env bash
# Fuzzes every entry of fuzz/entries.hpp with libFuzzer for SECONDS each (default 60):
#   scripts/fuzz.sh [SECONDS] [TARGET...]     TARGET: expression spec trace manifest params service mcp
#   principals bindings
# Builds build/fuzz with clang (-fsanitize=fuzzer,address,undefined), seeds each target from
# examples/, tests/data and fuzz/seeds, and keeps the corpus it grows in build/fuzz/corpus.
# A crash stops with the input saved under build/fuzz/crashes/<target>/: fix it, then keep the
# input as fuzz/regressions/<target>/<name> (ctest replays it). See docs/FUZZING.md.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
shift || true
targets=("$@")
((${#targets[@]})) || targets=(expression spec trace manifest params service mcp principals bindings)
[[ $seconds =~ ^[0-9]+$ ]] || { echo "fuzz.sh: SECONDS must be a whole number, not \`$seconds\`" >&2; exit 2; }

command -v clang++ >/dev/null || { echo "fuzz.sh: clang++ not found (scripts/setup.sh installs it)" >&2; exit 2; }
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
CC=clang CXX=clang++ cmake -S . -B build/fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCLAMPAI_BUILD_FUZZERS=ON -DCLAMPAI_BUILD_TESTS=OFF -DCLAMPAI_BUILD_BENCHMARKS=OFF \
  "${launcher[@]}" >/dev/null
cmake --build build/fuzz -j "$(nproc)" --target "${targets[@]/#/fuzz_}"

seeds() {
  case $1 in
    expression) echo fuzz/seeds/expression ;;
    spec) echo examples examples/compose tests/data ;;
    trace) echo fuzz/seeds/trace ;;
    manifest) echo examples/compose tests/data/compose/* ;;
    params) echo fuzz/seeds/params ;;
    service) echo fuzz/seeds/service ;;
    mcp) echo fuzz/seeds/mcp ;;
  esac
}

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
for t in "${targets[@]}"; do
  corpus=build/fuzz/corpus/$t crashes=build/fuzz/crashes/$t
  mkdir -p "$corpus" "$crashes"
  echo "== fuzz $t for ${seconds} s"
  # shellcheck disable=SC2046  # the seed directories are words
  if ! build/fuzz/fuzz/fuzz_"$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
      -max_len=65536 -print_final_stats=1 -artifact_prefix="$crashes/" \
      "$corpus" $(seeds "$t") >build/fuzz/"$t".log 2>&1; then
    tail -n 60 build/fuzz/"$t".log >&2
    echo "fuzz.sh: $t found a failing input in $crashes/ (log: build/fuzz/$t.log);" \
         "fix it and keep the input as fuzz/regressions/$t/" >&2
    exit 1
  fi
  grep -E "stat::number_of_executed_units|stat::new_units_added" build/fuzz/"$t".log | tr '\n' ' '
  echo
done
