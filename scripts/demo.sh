#!/usr/bin/env bash
# The main job: install what is missing, build, then check and run an example task spec under
# the safety kernel, writing a hash-chained trace and verifying it.
set -euo pipefail
cd "$(dirname "$0")/.."

spec=${1:-examples/cloud_deploy.json}
./scripts/setup.sh
cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release -DCLAMPAI_BUILD_TESTS=OFF -DCLAMPAI_BUILD_BENCHMARKS=OFF >/dev/null
cmake --build build/release --target clampai >/dev/null

clampai=build/release/cli/clampai
mkdir -p out
trace=out/$(basename "$spec" .json).trace.jsonl
set -x
"$clampai" check "$spec"
"$clampai" run "$spec" --trace "$trace"
"$clampai" trace verify "$trace" --spec "$spec"
