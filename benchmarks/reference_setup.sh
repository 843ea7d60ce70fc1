# Sourced by compare.sh and compare_agent.sh: finds the Python reference and a benchmark binary.
# Before sourcing: `script` (the caller's name, for messages), `target` (the benchmark, e.g.
# bench_kernel) and the positional arguments. Sets repo, reference, build, python, bench and
# tmp (removed on exit); exits 2 when the reference or the binary is missing.
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
default_reference="$repo/../shared/reference/clampai-1.0.1"
# A git worktree under wt/ sits one level deeper than the main checkout.
[[ -d "$default_reference" ]] || default_reference="$repo/../../shared/reference/clampai-1.0.1"
reference="${1:-${CLAMPAI_REFERENCE:-$default_reference}}"
build="${BUILD_DIR:-$repo/build/rel}"
python="${PYTHON:-/usr/bin/python3}"
bench="$build/benchmarks/$target"

if [[ ! -d "$reference/clampai" ]]; then
  echo "$script: no Python reference at \`$reference\` (expected a clampai/ package there);" \
    "pass its directory as the argument or set CLAMPAI_REFERENCE" >&2
  exit 2
fi
if [[ ! -x "$bench" ]]; then
  echo "$script: \`$bench\` is missing: build it first (cmake --build $build --target $target)," \
    "or set BUILD_DIR" >&2
  exit 2
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
