#!/usr/bin/env bash
# The Python test-suite (python/tests, as ctest's python_tests) against an AddressSanitizer +
# UndefinedBehaviorSanitizer Debug build of the extension, loaded into Debian's interpreter with
# the sanitizer's runtime preloaded (LD_PRELOAD of GCC's libasan and libstdc++, which the
# interpreter does not link; ASAN_OPTIONS=detect_leaks=0, since CPython leaves memory allocated
# at exit): python/tests/python_tests.cmake sets that environment in a sanitized build. The
# RSS check of test_no_leak_over_100000_calls is skipped there (ASan's quarantine keeps freed
# memory); its reference counts are still checked. Not part of scripts/test.sh: run it after a
# change to python/src. It builds only the extension and the command the tests call.
#
#   scripts/python-asan.sh [BUILD_DIR]      (default build/python-asan; JOBS=N, default 2)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/python-asan}
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCLAMPAI_WERROR=ON \
  -DCLAMPAI_SANITIZE=address,undefined -DCLAMPAI_BUILD_BENCHMARKS=OFF -DCLAMPAI_BUILD_PYTHON=ON \
  "${launcher[@]}" >/dev/null
cmake --build "$build" -j "${JOBS:-2}" --target _clampai clampai
ctest --test-dir "$build" -R '^python_tests$' --output-on-failure
