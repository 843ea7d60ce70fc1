#!/usr/bin/env bash
# Checks the formal models; see coq/README.md, lean/README.md and tla/README.md.
#   1. Always: no .lean file contains `sorry`, `admit` or `axiom`.
#   2. `lake build` in lean/, when `lake` is on PATH.
#   3. TLC, when TLA2TOOLS_JAR names an existing jar: every tla/*.cfg (see below); says plainly
#      when it skips. tla/BudgetSafety.cfg must pass with the expected number of distinct states.
#      (SharedLedger and Escrow, the shared ledger's protocols, each with a *Broken.cfg TLC must
#      reject, run this way too.)
#   4. Coq, when coqc and coq_makefile exist: no Admitted, admit, Axiom, Parameter or Hypothesis
#      in coq/; coq/ builds; every named theorem ends in Qed and is closed under the global
#      context. Says plainly when it skips.
# Exits non-zero on the first failed check.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# Distinct states of tla/BudgetSafety.cfg; tests/kernel/test_budget_model.cpp asserts the same.
expected_states=35524

fail() {
  echo "check-formal: $*" >&2
  exit 1
}

# 1. Honesty: a proof with a hole or a new axiom is no proof.
lean_files=()
while IFS= read -r -d '' file; do
  lean_files+=("$file")
done < <(find "$root/lean" -name '*.lean' -not -path '*/.lake/*' -print0)
[[ ${#lean_files[@]} -gt 0 ]] || fail "no .lean file found under lean/"
if grep -nE 'sorry|admit|axiom' "${lean_files[@]}"; then
  fail "the .lean lines above contain sorry, admit or axiom"
fi
echo "honesty: ok (${#lean_files[@]} .lean files without sorry, admit or axiom)"

# 2. Lean.
if command -v lake >/dev/null 2>&1; then
  (cd "$root/lean" && lake build) || fail "lean: lake build failed"
  echo "lean: ok"
else
  echo "lean: skipped (lake not installed)"
fi

# 3. TLA+: every configuration in tla/ through TLC. X.cfg checks X.tla, or the spec its
# `\* spec: NAME` line names. A configuration whose name ends in `Broken` must fail: on the
# invariant its `\* expect: violated NAME` line names (any violated invariant without one);
# every other must pass. BudgetSafety.cfg must also have the expected number of distinct states.
# Runs TLC on copies in a temporary folder, so that TLC's states/ folder and trace files stay out
# of the tree. Prints TLC's output; returns TLC's status.
run_tlc() {
  local spec="$1" cfg="$2" work status=0
  work="$(mktemp -d)"
  cp "$root/tla/$spec.tla" "$root/tla/$cfg.cfg" "$work/"
  (cd "$work" && java -XX:+UseParallelGC -cp "$TLA2TOOLS_JAR" tlc2.TLC -workers 1 \
    -config "$cfg.cfg" "$spec.tla") || status=$?
  rm -rf "$work"
  return "$status"
}

cfgs=()
while IFS= read -r -d '' file; do
  cfgs+=("$file")
done < <(find "$root/tla" -maxdepth 1 -name '*.cfg' -print0 | sort -z)
names=()
for cfg in "${cfgs[@]}"; do names+=("$(basename "$cfg" .cfg)"); done

if [[ -z "${TLA2TOOLS_JAR:-}" ]]; then
  echo "tla: SKIPPED, TLC did not run (TLA2TOOLS_JAR not set): ${names[*]} not checked"
elif [[ ! -f "$TLA2TOOLS_JAR" ]]; then
  echo "tla: SKIPPED, TLC did not run (TLA2TOOLS_JAR=$TLA2TOOLS_JAR is not an existing file):" \
    "${names[*]} not checked"
elif ! command -v java >/dev/null 2>&1; then
  echo "tla: SKIPPED, TLC did not run (no java on PATH): ${names[*]} not checked"
else
  for name in "${names[@]}"; do
    cfg_file="$root/tla/$name.cfg"
    spec="$name"
    if [[ ! -f "$root/tla/$spec.tla" ]]; then
      spec="$(sed -nE 's/^\\\* spec: *([A-Za-z0-9_]+).*/\1/p' "$cfg_file" | head -n 1)"
      [[ -n "$spec" && -f "$root/tla/$spec.tla" ]] ||
        fail "tla: $name.cfg has no $name.tla and no \`\\* spec: NAME\` line naming one"
    fi
    status=0
    output="$(run_tlc "$spec" "$name" 2>&1)" || status=$?
    echo "$output"
    if [[ "$name" == *Broken ]]; then
      expected="$(sed -nE 's/^\\\* expect: violated *([A-Za-z0-9_]+).*/\1/p' "$cfg_file" | head -n 1)"
      [[ $status -ne 0 ]] || fail "tla: $name.cfg passed TLC, but it must fail"
      if [[ -n "$expected" ]]; then
        grep -q "Invariant $expected is violated" <<<"$output" ||
          fail "tla: $name.cfg failed, but not on invariant $expected"
        echo "tla: $name fails as it must ($expected is violated)"
      else
        grep -qE "Invariant [A-Za-z0-9_]+ is violated" <<<"$output" ||
          fail "tla: $name.cfg failed, but not on a violated invariant"
        echo "tla: $name fails as it must (an invariant is violated)"
      fi
      continue
    fi
    [[ $status -eq 0 ]] || fail "tla: TLC failed on $name.cfg (status $status)"
    grep -q 'No error has been found' <<<"$output" ||
      fail "tla: TLC did not report success on $name.cfg"
    states="$(tr -d ',' <<<"$output" | sed -nE 's/.* ([0-9]+) distinct states found.*/\1/p' | tail -n 1)"
    if [[ "$name" == BudgetSafety ]]; then
      # Some TLC versions group digits with commas: compared without them.
      [[ "$states" == "$expected_states" ]] ||
        fail "tla: BudgetSafety.cfg should have $expected_states distinct states, TLC found ${states:-none}"
    fi
    echo "tla: $name ok (${states:-?} distinct states)"
  done
fi

# 4. Coq (coq/README.md): always, the forbidden words; with coqc, the build of coq/ by
#    coq_makefile in a temporary copy, then `Print Assumptions` of every theorem below must say
#    "Closed under the global context" (no axiom at all, not even the standard library's).
coq_theorems=(reachable_net_le_total reachable_steps_le_bound reachable_invariants_hold
  steps_gross_monotone rejected_step_unchanged rollback_restores broken_reachable_net_gt_total
  reachable_pools_net_le_total pools_gross_monotone broken_pools_overspend)
# Text files only (-I): a stray build product is not a source.
if grep -rnIE 'Admitted|admit|Axiom|Parameter|Hypothesis' "$root/coq"; then
  fail "the coq/ lines above contain Admitted, admit, Axiom, Parameter or Hypothesis"
fi
echo "coq honesty: ok (no Admitted, admit, Axiom, Parameter or Hypothesis in coq/)"
if ! command -v coqc >/dev/null 2>&1 || ! command -v coq_makefile >/dev/null 2>&1; then
  echo "coq: skipped (coqc or coq_makefile not installed; scripts/setup.sh installs Debian's coq)"
else
  coq_work="$(mktemp -d)"
  trap 'rm -rf "$coq_work"' EXIT
  cp -r "$root/coq/." "$coq_work/"
  start=$SECONDS
  (cd "$coq_work" && coq_makefile -f _CoqProject -o Makefile.coq &&
    make -f Makefile.coq -j "${CLAMPAI_COQ_JOBS:-2}") || fail "coq: the build of coq/ failed"
  {
    echo 'From ClampAI Require Import Theorems Pools.'
    for name in "${coq_theorems[@]}"; do
      grep -qE "^(Theorem|Lemma) $name " "$coq_work"/theories/*.v ||
        fail "coq: no Theorem named $name in coq/theories"
      echo "Print Assumptions $name."
    done
  } >"$coq_work/Assumptions.v"
  output="$(cd "$coq_work" && coqc -Q theories ClampAI Assumptions.v)" ||
    fail "coq: Print Assumptions failed"
  echo "$output"
  closed="$(grep -c '^Closed under the global context$' <<<"$output" || true)"
  [[ $closed -eq ${#coq_theorems[@]} ]] ||
    fail "coq: $closed of ${#coq_theorems[@]} theorems are closed under the global context"
  # Each theorem ends in Qed: the proof after its statement reaches Qed before any Defined.
  for name in "${coq_theorems[@]}"; do
    ending="$(awk -v n="$name" '$0 ~ "^(Theorem|Lemma) " n " " {on=1}
      on && /^(Qed|Defined)\./ {print $1; exit}' "$coq_work"/theories/*.v)"
    [[ $ending == "Qed." ]] || fail "coq: $name does not end in Qed"
  done
  echo "coq: ok (${#coq_theorems[@]} theorems end in Qed, closed under the global context;" \
    "$((SECONDS - start)) s)"
fi
