"""The package's public names against the reference's (issue 38): every name of the reference's
`__all__` (reference_all.txt, generated from clampai 1.0.1's `__init__.py`) is importable from
`clampai`, except those still PENDING below; and `clampai` exposes nothing else but this
project's own names (OWN) and its public submodules: no `Any`, `json`, `dataclasses` leaking.

PENDING only shrinks: a pending name that becomes available fails the test until it is
removed from the list."""

from pathlib import Path

import clampai

REFERENCE = [line.strip() for line in
             (Path(__file__).with_name("reference_all.txt")).read_text().splitlines()
             if line.strip() and not line.startswith("#")]

# This project's own public names (docs/PYTHON.md), beside the reference's.
OWN = {
    "BudgetStatus", "ClampAIError", "ComposeReport", "Decision", "Expr", "FileError",
    "InternalError", "InvalidArgument", "LookaheadReport", "Pool", "PoolStatus", "PoolTree",
    "Reason", "Receipt", "RepairReport",
    "Result", "SpecError", "TaskModel", "TraceCheck", "TraceError", "VerifyReport", "build_model",
    "compose", "load_spec", "lookahead", "repair", "secret_guard_invariant", "verify",
    "verify_trace_file",
}

# The public submodules (`from clampai.invariants import ...`, as in the reference); the first
# two are imported with the package, the others when code imports them.
SUBMODULES = {"hardening", "invariants", "formal", "testing", "api", "reference_monitor",
              "adapters",  # imported on first use (clampai.adapters), as are these:
              "active_hjb_barrier", "gradient_tracker", "inverse_algebra", "jacobian_fusion",
              "operadic_composition", "orchestrator", "reasoning", "safe_hover", "saliency",
              "server", "verification_log"}

# The Python ClampAI's modules and their public names (reference_modules.json, generated from
# clampai 1.0.1's sources), all importable from the same modules here, but `clampai.guards`
# (its precondition mini-language: here a guard is an expression of the spec's language,
# ActionSpec's `requires`; docs/PYTHON.md).
NOT_OFFERED_MODULES = {"guards"}

# The reference's names not implemented yet: none left (issue 38), and none may come back.
PENDING: set = set()


def test_the_reference_list_is_the_reference_all():
    assert len(REFERENCE) == len(set(REFERENCE)) == 132
    assert REFERENCE == sorted(REFERENCE)
    assert PENDING <= set(REFERENCE)
    assert not OWN & set(REFERENCE)


def test_every_reference_name_imports_but_the_pending_ones():
    missing = sorted(n for n in REFERENCE if n not in PENDING and not hasattr(clampai, n))
    assert not missing, f"not importable from clampai: {missing}"
    for name in REFERENCE:
        if name not in PENDING:
            exec(f"from clampai import {name}", {})  # the form user code uses
    available = sorted(n for n in PENDING if hasattr(clampai, n))
    assert not available, f"available now: remove from PENDING in {__file__}: {available}"


def test_all_is_the_reference_names_and_ours():
    declared = set(clampai.__all__)
    assert len(clampai.__all__) == len(declared), "a name is declared twice"
    assert declared == (set(REFERENCE) - PENDING) | OWN


def test_nothing_else_is_public():
    public = {n for n in vars(clampai) if not n.startswith("_")}
    modules = {n for n in public if type(getattr(clampai, n)).__name__ == "module"}
    assert {"hardening", "invariants"} <= modules <= SUBMODULES
    leaked = sorted(public - modules - set(clampai.__all__))
    assert not leaked, f"public but not in __all__: {leaked}"
    star = {}
    exec("from clampai import *", star)
    assert {n for n in star if not n.startswith("__")} == set(clampai.__all__)


def test_report_the_pending_names(capsys):
    """How far the package is from the reference's API (shown with `pytest -rP`)."""
    done = len(REFERENCE) - len(PENDING)
    print(f"{done} of {len(REFERENCE)} reference names available; pending: {sorted(PENDING)}")
    assert done + len(PENDING) == len(REFERENCE)


def test_the_reference_submodules_export_their_names():
    import importlib

    for module, names in {"formal": ["SafetyKernel", "GuaranteeLevel", "FORMAL_CLAIMS", "State",
                                     "BudgetController", "ExecutionTrace", "TraceEntry"],
                          "testing": ["SafetyHarness", "make_action", "make_state"],
                          "api": ["safe", "clampai_safe", "SafetyViolation"],
                          "invariants": ["rate_limit_invariant", "custom_invariant"]}.items():
        m = importlib.import_module(f"clampai.{module}")
        for name in names:
            assert getattr(m, name) is getattr(clampai, name), f"clampai.{module}.{name}"
        assert set(m.__all__) <= set(clampai.__all__)


def test_every_reference_module_imports_with_its_names():
    import importlib
    import json

    modules = json.loads(Path(__file__).with_name("reference_modules.json").read_text())
    assert len(modules) == 18 and NOT_OFFERED_MODULES <= set(modules)
    for module, names in modules.items():
        if module in NOT_OFFERED_MODULES:
            continue
        m = importlib.import_module(f"clampai.{module}")
        missing = [n for n in names if not hasattr(m, n)]
        assert not missing, f"clampai.{module} lacks {missing}"
        for name in names:
            exec(f"from clampai.{module} import {name}", {})
            if name in clampai.__all__:
                assert getattr(m, name) is getattr(clampai, name), f"clampai.{module}.{name}"
