#!/usr/bin/env bash
# The main job: install what is missing, build, then check an example task spec, verify it
# statically with Z3, run it under the safety kernel writing a hash-chained trace, and verify
# the trace; then check the example composition of six tasks (examples/compose/pipeline.json),
# and let the mock LLM drive examples/agent_release.json through the agent loop (no network).
set -euo pipefail
cd "$(dirname "$0")/.."

spec=${1:-examples/cloud_deploy.json}
./scripts/setup.sh
cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release -DCLAMPAI_BUILD_TESTS=OFF -DCLAMPAI_BUILD_BENCHMARKS=OFF >/dev/null
cmake --build build/release --target clampai >/dev/null
set +e  # a refuted obligation (exit 1) is a finding to show, not a failure of the demo

clampai=build/release/cli/clampai
mkdir -p out
trace=out/$(basename "$spec" .json).trace.jsonl
set -x
"$clampai" check "$spec" || exit
"$clampai" verify "$spec" --depth 6; [[ $? -le 1 ]] || exit
"$clampai" run "$spec" --trace "$trace" --force; [[ $? -le 1 ]] || exit  # the demo rewrites its own trace
"$clampai" trace verify "$trace" --spec "$spec" || exit
"$clampai" compose examples/compose/pipeline.json --cache out/certificates || exit
"$clampai" agent examples/agent_release.json --llm mock
