"""Seed layer 3 and the reference monitor, from the C++ library (docs/HARDENING.md): attestors
(`PredicateAttestor`, `SubprocessAttestor`, `MultiDimensionalAttestor`) and the
`ReferenceMonitor`, which wraps a kernel with the information-flow gate (labels and sinks
declared in the task) and the attestation gate. Where this differs from the reference's
`clampai.hardening` and `clampai.reference_monitor`, docs/PYTHON.md says so.

An attestor never raises for what it checks: a program that fails, hangs or is refused, or a
Python predicate that raises, is a failed `Attestation` with the reason in `error`.
"""

from __future__ import annotations

import json
import os
from typing import Any, Callable, Collection, Dict, List, Mapping, Optional, Sequence, Union

from . import _clampai
from ._clampai import Decision, Outcome, State
from ._task import TaskDefinition

__all__ = ["Attestor", "Attestation", "PredicateAttestor", "SubprocessAttestor",
           "MultiDimensionalAttestor", "ReferenceMonitor", "MonitorOutcome", "GoalCheck"]


def _result_base() -> Any:
    from . import Result  # the package imports this module lazily: no cycle at import time
    return Result


class Attestation:
    """The outcome of one attestation: `attestor`, `passed` (also its truth value), `evidence`
    (what it saw, bounded), `error` (why it could not decide; empty iff it did) and
    `dimensions` (one Attestation per dimension of a MultiDimensionalAttestor)."""

    __slots__ = ("attestor", "passed", "evidence", "error", "dimensions")

    def __init__(self, data: Mapping[str, Any]) -> None:
        self.attestor: str = data["attestor"]
        self.passed: bool = bool(data["passed"])
        self.evidence: str = data["evidence"]
        self.error: str = data["error"]
        self.dimensions: List[Attestation] = [Attestation(d) for d in data["dimensions"]]

    def __bool__(self) -> bool:
        return self.passed

    def to_dict(self) -> Dict[str, Any]:
        return {"attestor": self.attestor, "passed": self.passed, "evidence": self.evidence,
                "error": self.error, "dimensions": [d.to_dict() for d in self.dimensions]}

    def __repr__(self) -> str:
        verdict = "passed" if self.passed else "failed"
        return f"Attestation({self.attestor!r}, {verdict}, evidence={self.evidence!r})"


class Attestor:
    """An independent check of the world. `attest(state=None, action="")` runs it (the GIL is
    released while it runs) and returns an Attestation. Give attestors to a
    `ReferenceMonitor` for the task's `external` attestors (a TaskDefinition's `attestors`
    may hold them directly)."""

    def __init__(self, impl: Any) -> None:
        self._impl = impl

    @property
    def name(self) -> str:
        return self._impl.name

    def attest(self, state: Optional[State] = None, action: str = "") -> Attestation:
        return Attestation(self._impl.attest(state, action))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


def _normalised(fn: Callable[..., Any], threshold: Optional[float]) -> Callable[..., Any]:
    """`fn(state)` or `fn(state, action)` -> (passed, evidence). A bool is the verdict, a
    number a score that passes at `threshold` (the reference's dimensions), a pair (verdict,
    evidence) both."""
    try:
        import inspect
        takes_action = len(inspect.signature(fn).parameters) >= 2
    except (TypeError, ValueError):
        takes_action = False

    def call(state: Optional[State], action: str) -> Any:
        r = fn(state, action) if takes_action else fn(state)
        if isinstance(r, tuple):
            return bool(r[0]), str(r[1]) if len(r) > 1 else ""
        if isinstance(r, bool) or threshold is None:
            return bool(r), ""
        score = float(r)
        return score >= threshold, f"score {score:g} (at least {threshold:g} passes)"

    return call


class PredicateAttestor(Attestor):
    """An attestor given as a Python callable `fn(state)` or `fn(state, action)` returning a
    bool or (bool, evidence). It passes iff the callable returns true; a callable that raises
    fails with the exception as its error (`ValueError: ...`). The callable runs with the GIL
    held, on whatever thread the monitor runs."""

    def __init__(self, name: str, fn: Callable[..., Any]) -> None:
        if not callable(fn):
            raise TypeError("a PredicateAttestor needs a callable")
        super().__init__(_clampai._predicate_attestor(name, _normalised(fn, None)))


class SubprocessAttestor(Attestor):
    """Runs a program (never a shell): passes iff it exits 0 within the limits. The reference's
    signature: `command` (the argument vector; argv[0] the program's resolved absolute path,
    which must be in `allowed_binaries`), `timeout_s`, `max_output_bytes`. Arguments may refer
    to state variables as `{name}`. The program runs with only `environment` (default
    PATH=/usr/bin:/bin, LC_ALL=C), its process group killed at the timeout and the output cap.
    Raises InvalidArgument for an allowlist entry that is not an absolute, existing,
    executable file not writable by group or others."""

    def __init__(self, command: Sequence[str], allowed_binaries: Collection[str],
                 timeout_s: float = 30.0, max_output_bytes: int = 8192, *,
                 name: Optional[str] = None,
                 environment: Optional[Mapping[str, str]] = None) -> None:
        argv = [str(a) for a in command]
        if not argv:
            raise ValueError("a SubprocessAttestor needs a command")
        if timeout_s <= 0:
            raise ValueError(f"timeout_s must be positive, not {timeout_s!r}")
        self.command = tuple(argv)
        super().__init__(_clampai._subprocess_attestor(
            name or os.path.basename(argv[0]), argv, sorted(str(b) for b in allowed_binaries),
            max(1, int(round(timeout_s * 1000))), int(max_output_bytes),
            dict(environment) if environment is not None else None))


class MultiDimensionalAttestor(Attestor):
    """Several attestors, the dimensions of one judgement: passes iff at least `quorum` of them
    pass (all by default). Every dimension runs; each one's Attestation is in `dimensions`.
    A dimension is an Attestor or, as in the reference, a callable `fn(state) -> float`
    (a score that passes at `min_dimension_score`) or `-> bool`."""

    def __init__(self, dimensions: Sequence[Union[Attestor, Callable[..., Any]]],
                 min_dimension_score: float = 0.3, *, name: str = "multi_dimensional",
                 quorum: int = 0) -> None:
        impls = []
        for i, d in enumerate(dimensions):
            if isinstance(d, Attestor):
                impls.append(d._impl)
            elif callable(d):
                label = getattr(d, "__name__", "") or ""
                label = f"dimension_{i}" if label in ("", "<lambda>") else label
                impls.append(_clampai._predicate_attestor(
                    label, _normalised(d, float(min_dimension_score))))
            else:
                raise TypeError(f"dimensions[{i}]: an Attestor or a callable, not "
                                f"{type(d).__name__}")
        super().__init__(_clampai._multi_attestor(name, impls, int(quorum)))


class MonitorOutcome:
    """What `ReferenceMonitor.execute` did: the kernel's `outcome` (`approved`, `decision`,
    `state`, `receipt` as in `SafetyKernel.execute`), the `attestations` that ran for it, and
    `drift` (always empty here: reconciliation probes are C++ only)."""

    __slots__ = ("outcome", "attestations", "drift")

    def __init__(self, outcome: Outcome, attestations: List[Attestation],
                 drift: List[Dict[str, Any]]) -> None:
        self.outcome = outcome
        self.attestations = attestations
        self.drift = drift

    @property
    def approved(self) -> bool:
        return self.outcome.approved

    @property
    def decision(self) -> Decision:
        return self.outcome.decision

    @property
    def state(self) -> State:
        return self.outcome.state

    def __bool__(self) -> bool:
        return self.outcome.approved

    def to_dict(self) -> Dict[str, Any]:
        return {"outcome": self.outcome.to_dict(),
                "attestations": [a.to_dict() for a in self.attestations],
                "drift": list(self.drift)}

    def __repr__(self) -> str:
        return f"MonitorOutcome({self.outcome!r}, {len(self.attestations)} attestations)"


class GoalCheck:
    """`reached` (the goal holds), `attested` (every goal attestation passed), `success`
    (both; also its truth value) and the `attestations`."""

    __slots__ = ("reached", "attested", "success", "attestations")

    def __init__(self, data: Mapping[str, Any]) -> None:
        self.reached: bool = data["reached"]
        self.attested: bool = data["attested"]
        self.success: bool = data["success"]
        self.attestations = [Attestation(a) for a in data["attestations"]]

    def __bool__(self) -> bool:
        return self.success

    def __repr__(self) -> str:
        return f"GoalCheck(reached={self.reached}, attested={self.attested})"


class ReferenceMonitor:
    """The kernel of one task wrapped with the runtime gates its spec declares
    (docs/HARDENING.md): information flow (the variables' `label`s and `element_label`s, the
    `sinks`, the actions' `emits`) and attestations (the actions' and the goal's
    `attestations`). Every veto is a kernel rejection with its reason code
    (`information_flow`, `attestation_failed`): nothing changes (T5), and it is traced with
    `record_rejections`.

    `attestors` implements the task's `external` attestors by name (a TaskDefinition's
    `attestors` may hold Attestor objects: they are taken from there too); `allowed_programs`
    are the programs its `command` attestors may run."""

    def __init__(self, task: Any, *, attestors: Optional[Mapping[str, Attestor]] = None,
                 allowed_programs: Collection[str] = (), timeout_ms: int = 5000,
                 max_output_bytes: int = 64 * 1024, enforce_information_flow: bool = True,
                 record_rejections: bool = False) -> None:
        from . import _model_of  # noqa: PLC0415 (the package imports this module)
        model, _, _ = _model_of(task)
        impls: Dict[str, Any] = {}
        if isinstance(task, TaskDefinition) and task.attestors:
            impls.update({n: a._impl for n, a in task.attestors.items()
                          if isinstance(a, Attestor)})
        for n, a in (attestors or {}).items():
            if not isinstance(a, Attestor):
                raise TypeError(f"attestors.{n}: an Attestor, not {type(a).__name__}")
            impls[n] = a._impl
        self.model = model
        self._impl = _clampai._Monitor(model, impls, [str(p) for p in allowed_programs],
                                       int(timeout_ms), int(max_output_bytes),
                                       bool(enforce_information_flow), bool(record_rejections))

    def evaluate(self, action: Any, params: Optional[Mapping[str, Any]] = None) -> Decision:
        """The kernel's decision with the information-flow gate; runs no attestation."""
        return self._impl.evaluate(_id(action), dict(params) if params else None)

    def execute(self, action: Any, params: Optional[Mapping[str, Any]] = None) -> MonitorOutcome:
        """Every gate, then the kernel's execute: the action's attestations run on the state
        it starts from (the GIL is released while they run)."""
        outcome, attestations, drift = self._impl._execute(_id(action),
                                                           dict(params) if params else None)
        return MonitorOutcome(outcome, [Attestation(a) for a in attestations], drift)

    def check_goal(self) -> GoalCheck:
        """Whether the goal may be declared reached: it holds and its attestations passed."""
        return GoalCheck(self._impl._check_goal())

    @property
    def downward_flows(self) -> List[Any]:
        """The downward information flows the monitor rejects (as `clampai verify` lists
        them): action, source, source_label, target, target_label, path, expression."""
        return [_result_base()(f) for f in self._impl._downward_flows]

    @property
    def halted(self) -> bool:
        return self._impl.halted

    @property
    def state(self) -> State:
        return self._impl.state

    @property
    def step_count(self) -> int:
        return self._impl.step_count

    @property
    def trace(self) -> List[Any]:
        from . import TraceEntry  # noqa: PLC0415
        return [TraceEntry(json.loads(line)) for line in self._impl._trace_lines()]


def _id(action: Any) -> str:
    return action if isinstance(action, str) else str(getattr(action, "id"))
