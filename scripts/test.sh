#!/usr/bin/env bash
# Every test: install what is missing, then
#   1. a format check (clang-format 14, the project's .clang-format);
#   2. a Release build with warnings as errors and the Python bindings, and every test (ctest:
#      the C++ tests, the CLI, the server end to end and with the MCP SDK's client, the pytest
#      suites and the pip install, the shared ledger's faults on throwaway PostgreSQL clusters,
#      the C++ kernel against the model extracted from the Coq proofs); every benchmark once;
#   3. an AddressSanitizer + UndefinedBehaviorSanitizer Debug build, and every test;
#   4. a ThreadSanitizer build of the concurrency tests (kernel, ledger, composition), and those;
#   5. the Coq proofs, and the Lean and TLA+ checks where those tools exist (each says plainly
#      when it skips);
#   6. every libFuzzer target for 20 s (clang; scripts/fuzz.sh runs longer on demand).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)

./scripts/setup.sh

echo "== format"
mapfile -t sources < <(git ls-files '*.cpp' '*.hpp' 2>/dev/null || find kernel cli tests benchmarks examples -name '*.[ch]pp')
clang-format --dry-run --Werror "${sources[@]}"

echo "== release build, warnings as errors"
# With the Python bindings; ccache lets the pip install test reuse this build's objects.
cmake -S . -B build/ci-release -G Ninja -DCMAKE_BUILD_TYPE=Release -DCLAMPAI_WERROR=ON \
  -DCLAMPAI_BUILD_PYTHON=ON -DCMAKE_CXX_COMPILER_LAUNCHER=ccache >/dev/null
cmake --build build/ci-release -j "$jobs"
ctest --test-dir build/ci-release --output-on-failure -j "$jobs"

echo "== benchmarks run once, at a minimal duration (they must keep working; nothing is timed)"
for b in build/ci-release/benchmarks/bench_*; do
  [[ -x $b ]] && "$b" --benchmark_min_time=0.001 >/dev/null
done
PYTHONPATH=build/ci-release/python /usr/bin/python3 benchmarks/bench_python.py --iterations 200 --repeats 1 >/dev/null

echo "== address + undefined behaviour sanitizers"
cmake -S . -B build/ci-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCLAMPAI_WERROR=ON \
      -DCLAMPAI_SANITIZE=address,undefined -DCLAMPAI_BUILD_BENCHMARKS=OFF >/dev/null
cmake --build build/ci-asan -j "$jobs"
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build/ci-asan --output-on-failure -j "$jobs"

echo "== thread sanitizer (the kernel's concurrency test; trace files verified by threads; composition with worker threads; progress)"
cmake -S . -B build/ci-tsan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCLAMPAI_WERROR=ON \
      -DCLAMPAI_SANITIZE=thread -DCLAMPAI_BUILD_BENCHMARKS=OFF >/dev/null
cmake --build build/ci-tsan -j "$jobs" --target test_concurrency test_kernel_bounded test_composition test_report test_ledger_units \
  test_trace_file_pieces
TSAN_OPTIONS=halt_on_error=1 ./build/ci-tsan/tests/test_concurrency
TSAN_OPTIONS=halt_on_error=1 ./build/ci-tsan/tests/test_report
TSAN_OPTIONS=halt_on_error=1 ./build/ci-tsan/tests/test_kernel_bounded
TSAN_OPTIONS=halt_on_error=1 ./build/ci-tsan/tests/test_ledger_units  # kernels sharing a ledger
TSAN_OPTIONS=halt_on_error=1 ./build/ci-tsan/tests/test_trace_file_pieces  # verifying threads
TSAN_OPTIONS=halt_on_error=1 ./build/ci-tsan/tests/test_composition "[concurrency]"

echo "== formal specs"
./scripts/check-formal.sh

echo "== fuzzing, 20 s per target (docs/FUZZING.md)"
./scripts/fuzz.sh 20

echo "== all tests passed"
