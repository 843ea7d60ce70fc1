#!/usr/bin/env bash
# Installs what ClampAI needs from Debian 12 packages, if anything is missing.
set -euo pipefail

packages=(build-essential cmake ninja-build pkg-config clang-format
          libssl-dev nlohmann-json3-dev libcli11-dev libboost-graph-dev libz3-dev
          catch2 libbenchmark-dev libvalijson-dev libxml2-utils default-jre-headless
          clang libclang-rt-14-dev   # the fuzzers: clang 14 and libFuzzer's runtime
          libcurl4-openssl-dev       # the LLM adapters and the HTTP attestor
          libre2-dev                 # the pattern invariants
          libboost-dev               # Boost.Beast (the server)
          libpqxx-dev postgresql     # the shared ledger and its throwaway test clusters
          pybind11-dev python3-pybind11 python3-dev python3-setuptools python3-venv
          python3-pytest python3-hypothesis   # the Python bindings and their tests
          python3-fastapi python3-httpx       # clampai.adapters' middleware and its tests
          ccache                     # the pip install test reuses the Release build's objects
          coq libzarith-ocaml-dev ocaml-findlib  # the machine-checked proofs and their extraction
          graphviz                   # `clampai report` lays its graphs out with dot
          chromium                   # `clampai report` tested in a real browser (headless)
          wrk linux-perf)            # load tests and profiles

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  exit 0
fi

as_root=()
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "setup: need root (or sudo) to install: ${missing[*]}" >&2; exit 2; }
  as_root=(sudo)
fi
echo "setup: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
"${as_root[@]}" apt-get update -qq
"${as_root[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
