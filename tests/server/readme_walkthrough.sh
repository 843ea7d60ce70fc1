#!/bin/sh
# Runs the curl walkthrough of README.md ("The kernel as a service") as it stands, in a fresh
# directory with `clampai` first on PATH, and checks what it printed.
# Usage: readme_walkthrough.sh SOURCE_DIR CLAMPAI
set -eu
source_dir=$1
clampai=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
awk '/<!-- serve walkthrough/ {found=1; next} found && /^```sh$/ {inside=1; next}
     inside && /^```$/ {exit} inside {print}' "$source_dir/README.md" > "$work/walkthrough.sh"
test -s "$work/walkthrough.sh" || { echo "README.md: no serve walkthrough block"; exit 1; }
mkdir "$work/bin"
ln -s "$clampai" "$work/bin/clampai"
ln -s "$source_dir/examples" "$work/examples"
cd "$work"
PATH="$work/bin:$PATH" bash -eu walkthrough.sh > out.txt 2> err.txt || {
  echo "the walkthrough failed:"; cat out.txt err.txt; exit 1; }
cat out.txt
for expected in '"approved":true' '"executed":true' 'did you mean `process_batch`' \
    '"kind":"genesis"' '"code":"unauthorized"' 'ok: quickstart.jsonl: 3 entries, chain intact, sealed'; do
  grep -qF "$expected" out.txt || { echo "missing from the output: $expected"; exit 1; }
done
echo "the README walkthrough ran"
