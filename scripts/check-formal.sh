#!/usr/bin/env bash
# Checks the formal models of the budget ledger (T1, T4); see lean/README.md and tla/README.md.
#   1. Always: no .lean file contains `sorry`, `admit` or `axiom`.
#   2. `lake build` in lean/, when `lake` is on PATH.
#   3. TLC, when TLA2TOOLS_JAR names an existing jar: tla/BudgetSafety.cfg must pass with the
#      expected number of distinct states, tla/BudgetSafetyBroken.cfg must fail on BudgetSafe.
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

# 3. TLA+.
# Runs TLC on a copy of tla/<spec>.tla and .cfg in a temporary folder, so that TLC's states/
# folder and trace files stay out of the tree. Prints TLC's output; returns TLC's status.
run_tlc() {
  local spec="$1" work status=0
  work="$(mktemp -d)"
  cp "$root/tla/$spec.tla" "$root/tla/$spec.cfg" "$work/"
  (cd "$work" && java -cp "$TLA2TOOLS_JAR" tlc2.TLC -workers 1 -config "$spec.cfg" "$spec.tla") ||
    status=$?
  rm -rf "$work"
  return "$status"
}

if [[ -z "${TLA2TOOLS_JAR:-}" ]]; then
  echo "tla: skipped (TLA2TOOLS_JAR not set)"
elif [[ ! -f "$TLA2TOOLS_JAR" ]]; then
  echo "tla: skipped (TLA2TOOLS_JAR=$TLA2TOOLS_JAR is not an existing file)"
else
  status=0
  output="$(run_tlc BudgetSafety 2>&1)" || status=$?
  echo "$output"
  [[ $status -eq 0 ]] || fail "tla: TLC failed on BudgetSafety.cfg (status $status)"
  grep -q 'No error has been found' <<<"$output" ||
    fail "tla: TLC did not report success on BudgetSafety.cfg"
  # Some TLC versions group digits with commas: compare without them.
  tr -d ',' <<<"$output" | grep -qE "(^|[^0-9])${expected_states} distinct states found" ||
    fail "tla: BudgetSafety.cfg should have $expected_states distinct states"
  echo "tla: BudgetSafety ok ($expected_states distinct states)"

  status=0
  output="$(run_tlc BudgetSafetyBroken 2>&1)" || status=$?
  echo "$output"
  [[ $status -ne 0 ]] || fail "tla: BudgetSafetyBroken.cfg passed TLC, but it must fail"
  grep -q 'Invariant BudgetSafe is violated' <<<"$output" ||
    fail "tla: BudgetSafetyBroken.cfg failed, but not on invariant BudgetSafe"
  echo "tla: BudgetSafetyBroken fails as it must (BudgetSafe is violated)"
fi

# 4. Coq (coq/README.md): always, the forbidden words; with coqc, the build of coq/ by
#    coq_makefile in a temporary copy, then `Print Assumptions` of every theorem below must say
#    "Closed under the global context" (no axiom at all, not even the standard library's).
coq_theorems=(reachable_net_le_total reachable_steps_le_bound reachable_invariants_hold
  steps_gross_monotone rejected_step_unchanged rollback_restores broken_reachable_net_gt_total)
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
    echo 'From ClampAI Require Import Theorems.'
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
