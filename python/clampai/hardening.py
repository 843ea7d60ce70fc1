"""Seed layer 3 and the reference monitor, from the C++ library (docs/HARDENING.md): attestors
(`PredicateAttestor`, `SubprocessAttestor`, `MultiDimensionalAttestor`, gathered by an
`AttestationGate`) and the `ReferenceMonitor`, which wraps a kernel with the information-flow
gate (labels and sinks declared in the task) and the attestation gate. The Python ClampAI's
forms are here too, chosen by the arguments given: its attestors (`verify(state, goal)` ->
`Attestation` with an `AttestationResult`), its task-less `ReferenceMonitor()` (`enforce`, with
`DataLabel`s, a control barrier and capture basins), readiness probes and temporal
dependencies, environment reconciliation, dependency discovery and resource tracking. Where
this differs from the Python ClampAI's `clampai.hardening` and `clampai.reference_monitor`,
docs/PYTHON.md says so.

An attestor never raises for what it checks: a program that fails, hangs or is refused, or a
Python predicate that raises, is a failed `Attestation` with the reason in `error`.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import hashlib
import inspect
import json
import math
import os
import time
from dataclasses import dataclass
from decimal import Decimal
from typing import (Any, Callable, ClassVar, Collection, Dict, FrozenSet, Iterable, List, Mapping,
                    Optional, Sequence, Set, Tuple, Union)

from . import _clampai
from ._clampai import Decision, Outcome, State
from ._errors import ClampAIError
from ._reasoning import CausalGraph, CostAwarePriorFactory  # noqa: F401 (the Python ClampAI's)
from ._reference_api import HARDENING_CLAIMS  # noqa: F401 (the Python ClampAI's, here too)
from ._task import ActionSpec, Expr, TaskDefinition

__all__ = ["Attestor", "Attestation", "AttestationResult", "AttestationGate",
           "PredicateAttestor", "SubprocessAttestor", "MultiDimensionalAttestor",
           "QualityDimension", "QualityScore", "ReadinessProbe", "TemporalDependency",
           "TemporalCausalGraph", "EnvironmentProbe", "ReconciliationResult",
           "EnvironmentDriftError", "EnvironmentReconciler", "FailurePattern",
           "DependencyDiscovery", "ResourceState", "Permission", "ResourceDescriptor",
           "ResourceTracker", "SecurityLevel", "DataLabel", "LabelledData",
           "ReferenceMonitor", "MonitorOutcome", "GoalCheck"]


def _result_base() -> Any:
    from . import Result  # the package imports this module lazily: no cycle at import time
    return Result


def _exact(x: Any, what: str) -> Decimal:
    """A number as its exact decimal (a float by its shortest repr)."""
    if isinstance(x, bool) or not isinstance(x, (int, float, Decimal)):
        raise TypeError(f"{what} must be a number, not {type(x).__name__}")
    if isinstance(x, float):
        if not math.isfinite(x):
            raise ValueError(f"{what} must be finite, not {x!r}")
        return Decimal(repr(x))
    return Decimal(x)


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float, Decimal)) and not isinstance(x, bool)


# --- Attestations -------------------------------------------------------------------------------

class AttestationResult(enum.Enum):
    """The Python ClampAI's verdict of one attestation. `VERIFIED` is the only positive one;
    `ERROR` and `TIMEOUT` are attestations that could not decide (they fail closed)."""

    VERIFIED = enum.auto()
    FAILED = enum.auto()
    ERROR = enum.auto()
    TIMEOUT = enum.auto()
    SKIPPED = enum.auto()


def _fingerprint(result: AttestationResult, evidence: str) -> str:
    if result is AttestationResult.TIMEOUT:
        return "timeout"
    if result is AttestationResult.ERROR:
        return "error"
    return hashlib.sha256(evidence.encode()).hexdigest()[:32]


@dataclass(frozen=True)
class Attestation:
    """The outcome of one attestation: the Python ClampAI's frozen dataclass
    `Attestation(attestor_name, result, evidence, timestamp, fingerprint)`, with
    `is_positive()` (`result` is VERIFIED), and this project's view of it: `attestor` (the
    name), `passed` (also its truth value), `evidence` (what it saw, bounded), `error` (why it
    could not decide; empty iff it did) and `dimensions` (one Attestation per dimension of a
    MultiDimensionalAttestor).

    `result` is VERIFIED iff it passed, TIMEOUT or ERROR when it could not decide, else FAILED;
    `timestamp` defaults to now, `fingerprint` to the SHA-256 of the evidence (32 hex digits),
    or `timeout` / `error`, and `error` of an ERROR or TIMEOUT to its evidence. Also made from
    the mapping an attestor of the C++ library returns (`Attestation(data)`)."""

    attestor_name: str
    result: Optional[AttestationResult] = None
    evidence: str = ""
    timestamp: Optional[float] = None
    fingerprint: Optional[str] = None
    error: str = ""
    dimensions: Tuple["Attestation", ...] = ()

    def __post_init__(self) -> None:
        put = functools.partial(object.__setattr__, self)
        if isinstance(self.attestor_name, Mapping):  # from the C++ attestor
            data = self.attestor_name
            passed, error = bool(data["passed"]), str(data["error"])
            if passed:
                result = AttestationResult.VERIFIED
            elif error.startswith("timed out"):
                result = AttestationResult.TIMEOUT
            elif error:
                result = AttestationResult.ERROR
            else:
                result = AttestationResult.FAILED
            put("attestor_name", str(data["attestor"]))
            put("result", result)
            put("evidence", str(data["evidence"]))
            put("error", error)
            put("dimensions", tuple(Attestation(d) for d in data.get("dimensions", ())))
        elif not isinstance(self.result, AttestationResult):
            raise TypeError("Attestation(attestor_name, result, evidence, timestamp, "
                            "fingerprint): result must be an AttestationResult, not "
                            f"{type(self.result).__name__}")
        elif not self.error and self.result in (AttestationResult.ERROR,
                                                AttestationResult.TIMEOUT):
            put("error", self.evidence or self.result.name.lower())
        put("dimensions", tuple(self.dimensions))
        if self.timestamp is None:
            put("timestamp", time.time())
        if self.fingerprint is None:
            put("fingerprint", _fingerprint(self.result, self.evidence))

    @property
    def attestor(self) -> str:
        """The attestor's name (`attestor_name`)."""
        return self.attestor_name

    @property
    def passed(self) -> bool:
        """True iff the result is VERIFIED."""
        return self.result is AttestationResult.VERIFIED

    def is_positive(self) -> bool:
        """True iff the result is VERIFIED (`passed`)."""
        return self.passed

    def __bool__(self) -> bool:
        return self.passed

    def to_dict(self) -> Dict[str, Any]:
        return {"attestor": self.attestor, "passed": self.passed, "evidence": self.evidence,
                "error": self.error, "dimensions": [d.to_dict() for d in self.dimensions],
                "result": self.result.name, "timestamp": self.timestamp,  # type: ignore[union-attr]
                "fingerprint": self.fingerprint}


def _state_of(state: Any) -> Optional[State]:
    if state is None or isinstance(state, State):
        return state
    return State(dict(state))


def _reference_view(a: Attestation) -> Attestation:
    if a.error and not a.evidence:
        return dataclasses.replace(a, evidence=a.error, fingerprint=None)
    return a


class Attestor:
    """An independent check of the world. `attest(state=None, action="")` runs it (the GIL is
    released while it runs) and returns an Attestation; `verify(state, goal_description,
    timeout_s=30.0)` is the Python ClampAI's call for a goal. Give attestors to a
    `ReferenceMonitor` for the task's `external` attestors (a TaskDefinition's `attestors`
    may hold them directly), or to an `AttestationGate`."""

    def __init__(self, impl: Any) -> None:
        self._impl = impl

    @property
    def name(self) -> str:
        return self._impl.name

    def attest(self, state: Optional[State] = None, action: str = "") -> Attestation:
        return Attestation(self._impl.attest(_state_of(state), action))

    def verify(self, state: Any, goal_description: str = "",
               timeout_s: float = 30.0) -> Attestation:
        """The attestation of the goal in `state` (the Python ClampAI's form). `timeout_s`
        bounds a SubprocessAttestor of the Python ClampAI's form; the others keep their own
        limits (a Python predicate is never interrupted). An attestation that could not
        decide (ERROR, TIMEOUT) has its error as its evidence."""
        return _reference_view(self.attest(state, ""))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


def _normalised(fn: Callable[..., Any], threshold: Optional[float]) -> Callable[..., Any]:
    """`fn()`, `fn(state)` or `fn(state, action)` -> (passed, evidence). A bool is the verdict,
    a number a score that passes at `threshold` (the reference's dimensions), a pair (verdict,
    evidence) both."""
    try:
        params = inspect.signature(fn).parameters.values()
        positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        varargs = any(p.kind == p.VAR_POSITIONAL for p in params)
        arity = 2 if varargs or len(positional) >= 2 else len(positional)
    except (TypeError, ValueError):
        arity = 1

    def call(state: Optional[State], action: str) -> Any:
        r = fn(state, action) if arity == 2 else fn(state) if arity == 1 else fn()
        if isinstance(r, tuple):
            return bool(r[0]), str(r[1]) if len(r) > 1 else ""
        if isinstance(r, bool) or threshold is None:
            return bool(r), ""
        score = float(r)
        return score >= threshold, f"score {score:g} (at least {threshold:g} passes)"

    return call


class PredicateAttestor(Attestor):
    """An attestor given as a Python callable `check_fn()` (the Python ClampAI's form),
    `check_fn(state)` or `check_fn(state, action)`, returning a bool or (bool, evidence). It
    passes iff the callable returns true; a callable that raises fails with the exception as
    its error (`ValueError: ...`; the Python ClampAI's result ERROR). The callable runs with
    the GIL held, on whatever thread the monitor runs."""

    def __init__(self, name: str, check_fn: Callable[..., Any]) -> None:
        if not callable(check_fn):
            raise TypeError("a PredicateAttestor needs a callable")
        self._name, self._check_fn = name, check_fn
        super().__init__(_clampai._predicate_attestor(name, _normalised(check_fn, None)))


_DEFAULT_COMMAND_ALLOWLIST: FrozenSet[str] = frozenset({
    "ls", "cat", "wc", "head", "tail", "grep", "find", "file", "curl", "wget", "node",
    "python3", "python", "npm", "pytest", "go", "cargo", "make", "test", "stat", "du", "df",
    "pg_isready", "redis-cli", "mysql", "psql", "docker", "kubectl", "terraform", "sha256sum",
    "md5sum", "diff"})


def _failing_attestor(name: str, why: str) -> Any:
    def fail(state: Any, action: str) -> Any:
        raise RuntimeError(why)
    return _clampai._predicate_attestor(name, fail)


class SubprocessAttestor(Attestor):
    """Runs a program (never a shell): passes iff it exits 0 within the limits. Two forms:

    - `SubprocessAttestor(command, allowed_binaries, timeout_s=30.0, max_output_bytes=8192, *,
      name=None, environment=None)`: `command` the argument vector, argv[0] the program's
      resolved absolute path, which must be in `allowed_binaries`. Arguments may refer to
      state variables as `{name}`. The program runs with only `environment` (default
      PATH=/usr/bin:/bin, LC_ALL=C), its process group killed at the timeout and the output
      cap. Raises InvalidArgument for an allowlist entry that is not an absolute, existing,
      executable file not writable by group or others.
    - the Python ClampAI's `SubprocessAttestor(name, command, success_pattern="",
      working_dir=None, command_allowlist=None)` (a name first): the program's base name must be
      in `command_allowlist` (default `_DEFAULT_COMMAND_ALLOWLIST`), else ValueError; it is
      looked up once, here, in `SAFE_PATH` and pinned as the allowlist entry; it passes iff it
      exits 0 and its output contains `success_pattern`; `verify(..., timeout_s)` bounds it.
      Its arguments are literal (no `{name}`), its environment HOME, LANG, TERM, USER and
      `SAFE_PATH`, its directory `working_dir` (which must exist) if given; output is kept
      up to MAX_OUTPUT_BYTES (more output is not a failure)."""

    MAX_OUTPUT_BYTES: ClassVar[int] = 8192
    SAFE_ENV_KEYS: ClassVar[FrozenSet[str]] = frozenset({"HOME", "LANG", "TERM", "USER"})
    SAFE_PATH: ClassVar[str] = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    command: Tuple[str, ...] = ()  # the argument vector, as given

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        reference = (bool(args) and isinstance(args[0], str)) or bool(
            {"success_pattern", "working_dir", "command_allowlist"} & set(kwargs)) or (
            not args and "allowed_binaries" not in kwargs and "name" in kwargs)
        if reference:
            self._init_reference(*args, **kwargs)
        else:
            self._init_own(*args, **kwargs)

    def _init_own(self, command: Sequence[str], allowed_binaries: Collection[str],
                  timeout_s: float = 30.0, max_output_bytes: int = 8192, *,
                  name: Optional[str] = None,
                  environment: Optional[Mapping[str, str]] = None) -> None:
        argv = [str(a) for a in command]
        if not argv:
            raise ValueError("a SubprocessAttestor needs a command")
        if timeout_s <= 0:
            raise ValueError(f"timeout_s must be positive, not {timeout_s!r}")
        self.command = tuple(argv)
        self._by_timeout: Optional[Dict[int, Any]] = None
        super().__init__(_clampai._subprocess_attestor(
            name or os.path.basename(argv[0]), argv, sorted(str(b) for b in allowed_binaries),
            max(1, int(round(timeout_s * 1000))), int(max_output_bytes),
            dict(environment) if environment is not None else None))

    def _init_reference(self, name: str, command: Sequence[str], success_pattern: str = "",
                        working_dir: Optional[str] = None,
                        command_allowlist: Optional[Collection[str]] = None) -> None:
        if not command:
            raise ValueError("Command cannot be empty")
        allowlist = frozenset(command_allowlist or _DEFAULT_COMMAND_ALLOWLIST)
        binary = os.path.basename(str(command[0]))
        if binary not in allowlist:
            raise ValueError(f"'{binary}' not in allowlist: {sorted(allowlist)}")
        if working_dir is not None and not os.path.isdir(working_dir):
            raise ValueError(f"Working dir does not exist: {working_dir}")
        self._name = str(name)
        self.command = self._command = tuple(str(c) for c in command)
        self._success_pattern = str(success_pattern)
        self._working_dir = os.path.realpath(working_dir) if working_dir is not None else ""
        self._program = self._resolve(self.command[0])
        self._env = {k: v for k, v in os.environ.items() if k in self.SAFE_ENV_KEYS}
        self._env["PATH"] = self.SAFE_PATH
        self._by_timeout = {}
        super().__init__(self._reference_impl(30.0))

    def _resolve(self, program: str) -> Optional[str]:
        """The program's absolute path, symlinks resolved: as given if absolute, else the first
        executable of that name in SAFE_PATH (None if there is none)."""
        candidates = [program] if os.path.isabs(program) else (
            [os.path.join(d, program) for d in self.SAFE_PATH.split(":")] if "/" not in program
            else [])
        for c in candidates:
            if os.path.isfile(c) and os.access(c, os.X_OK):
                return os.path.realpath(c)
        return None

    def _reference_impl(self, timeout_s: float) -> Any:
        timeout_ms = max(1, int(round(timeout_s * 1000)))
        impl = self._by_timeout.get(timeout_ms)  # type: ignore[union-attr]
        if impl is not None:
            return impl
        if self._program is None:
            impl = _failing_attestor(self._name, f"[Errno 2] No such file or directory: "
                                                 f"'{self.command[0]}'")
        else:
            literal = [a.replace("{", "{{").replace("}", "}}") for a in self.command[1:]]
            try:
                impl = _clampai._subprocess_attestor(
                    self._name, [self._program, *literal], [self._program], timeout_ms,
                    1 << 20, self._env, self._working_dir)
            except ClampAIError as err:
                impl = _failing_attestor(self._name, str(err))
        if self._success_pattern:
            inner, pattern = impl, self._success_pattern

            def matched(state: Any, action: str) -> Tuple[bool, str]:
                a = inner.attest(state, action)
                if a["error"]:
                    raise RuntimeError(a["error"])
                return a["passed"] and pattern in a["evidence"], a["evidence"]

            impl = _clampai._predicate_attestor(self._name, matched)
        self._by_timeout[timeout_ms] = impl  # type: ignore[index]
        return impl

    def verify(self, state: Any, goal_description: str = "",
               timeout_s: float = 30.0) -> Attestation:
        if self._by_timeout is None:
            return super().verify(state, goal_description, timeout_s)
        a = Attestation(self._reference_impl(timeout_s).attest(_state_of(state), ""))
        evidence = (a.evidence or a.error)[:self.MAX_OUTPUT_BYTES]
        if a.result is AttestationResult.TIMEOUT:
            evidence = f"Timed out after {timeout_s}s"
        return dataclasses.replace(a, evidence=evidence, fingerprint=None)


class QualityDimension(enum.Enum):
    """A dimension of a goal's quality, for the Python ClampAI's MultiDimensionalAttestor."""

    EXISTENCE = "existence"
    COMPLETENESS = "completeness"
    CORRECTNESS = "correctness"
    QUALITY = "quality"
    SAFETY = "safety"
    REGRESSION = "regression"


@dataclass(frozen=True)
class QualityScore:
    """One dimension's score in [0, 1] and what the check said."""

    dimension: QualityDimension
    score: float
    detail: str


class MultiDimensionalAttestor(Attestor):
    """Several checks, the dimensions of one judgement. Two forms:

    - `MultiDimensionalAttestor(dimensions, min_dimension_score=0.3, *,
      name="multi_dimensional", quorum=0)`: passes iff at least `quorum` dimensions pass (all by
      default); every dimension runs and each one's Attestation is in `dimensions`. A dimension
      is an Attestor or a callable `fn(state) -> float` (a score that passes at
      `min_dimension_score`) or `-> bool` (the C++ MultiDimensionalAttestor).
    - the Python ClampAI's `MultiDimensionalAttestor(name, threshold=0.7)` (a name first) with
      `add_check(dimension, weight, check_fn)`, `check_fn() -> (score, detail)`: passes iff the
      weighted mean of the scores (each clamped to [0, 1]; a check that raises scores 0) is at
      least `threshold` and no score is 0. The mean is computed exactly (decimal)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        reference = (bool(args) and isinstance(args[0], str)) or "threshold" in kwargs or (
            not args and "dimensions" not in kwargs and "name" in kwargs)
        if reference:
            self._init_reference(*args, **kwargs)
        else:
            self._init_own(*args, **kwargs)

    def _init_own(self, dimensions: Sequence[Union[Attestor, Callable[..., Any]]],
                  min_dimension_score: float = 0.3, *, name: str = "multi_dimensional",
                  quorum: int = 0) -> None:
        self._checks: Optional[List[Tuple[QualityDimension, float, Callable[[], Any]]]] = None
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

    def _init_reference(self, name: str, threshold: float = 0.7) -> None:
        self._name, self._threshold = str(name), threshold
        _exact(threshold, "threshold")
        self._checks = []
        super().__init__(_clampai._predicate_attestor(str(name), lambda s, a: self._judge()))

    def add_check(self, dimension: QualityDimension, weight: float,
                  check_fn: Callable[[], Tuple[float, str]]) -> None:
        """Adds a dimension (the Python ClampAI's form): `check_fn() -> (score, detail)`."""
        if self._checks is None:
            raise TypeError("add_check is for MultiDimensionalAttestor(name, threshold); this "
                            "one was given its dimensions")
        _exact(weight, "weight")
        self._checks.append((dimension, weight, check_fn))

    def scores(self) -> List[QualityScore]:
        """Every check's score now (clamped to [0, 1]; 0 with the error for one that raises)."""
        out = []
        for dimension, _, fn in self._checks or ():
            try:
                score, detail = fn()
                score = max(0.0, min(1.0, float(score)))
            except Exception as err:  # noqa: BLE001 - a failing check scores 0
                score, detail = 0.0, f"Error: {err}"
            out.append(QualityScore(dimension, score, str(detail)))
        return out

    def _judge(self) -> Tuple[bool, str]:
        scores = self.scores()
        weights = [_exact(w, "weight") for _, w, _ in self._checks or ()]
        total = sum(weights, Decimal(0))
        weighted = sum((_exact(s.score, "score") * w for s, w in zip(scores, weights)),
                       Decimal(0))
        overall = weighted / max(total, Decimal("0.01"))
        passed = overall >= _exact(self._threshold, "threshold") and all(
            s.score != 0.0 for s in scores)
        evidence = f"Overall={float(overall):.3f} | " + " | ".join(
            f"{s.dimension.value}={s.score:.2f}" for s in scores)
        return passed, evidence


class AttestationGate:
    """The Python ClampAI's gate of a goal: `verify_goal` passes iff the goal predicate holds
    and at least `quorum` of the attestors verify it (every attestor runs)."""

    def __init__(self, quorum: int = 1):
        self.quorum = quorum
        self._attestors: List[Any] = []
        self._history: List[List[Attestation]] = []

    def add_attestor(self, attestor: Any) -> None:
        """An Attestor, or any object with `name` and `verify(state, goal_description,
        timeout_s)`."""
        if not callable(getattr(attestor, "verify", None)):
            raise TypeError(f"an attestor has a verify(state, goal_description, timeout_s) "
                            f"method; {type(attestor).__name__} has none")
        self._attestors.append(attestor)

    def verify_goal(self, state: Any, goal_description: str,
                    goal_predicate: Callable[[Any], bool],
                    timeout_per_attestor: float = 30.0) -> Tuple[bool, List[Attestation]]:
        """`(passed, attestations)`: `(False, [])` if the predicate does not hold; with no
        attestor, `(True, [SKIPPED])` (a weak goal check, said so); else whether at least
        `quorum` attestations are positive. Each run is kept in `attestation_history`."""
        if not goal_predicate(state):
            return False, []
        if not self._attestors:
            return True, [Attestation("predicate_only", AttestationResult.SKIPPED,
                                      "No attestors registered (WEAK).", time.time(), "none")]
        attestations = [a.verify(state, goal_description, timeout_per_attestor)
                        for a in self._attestors]
        self._history.append(attestations)
        return sum(1 for a in attestations if a.is_positive()) >= self.quorum, attestations

    @property
    def attestation_history(self) -> List[List[Attestation]]:
        return list(self._history)


# --- Readiness and temporal dependencies ----------------------------------------------------

@dataclass(frozen=True)
class ReadinessProbe:
    """Whether a resource is ready, not merely provisioned: `check_fn() -> (ready, detail)`
    polled up to `max_retries` times, the interval growing by `backoff_factor` (at most 30 s)
    after `initial_delay_s`. (A task's readiness probes are the C++ monitor's, declared in the
    spec's `readiness`.)"""

    name: str
    check_fn: Callable[[], Tuple[bool, str]]
    initial_delay_s: float = 0.0
    interval_s: float = 1.0
    max_retries: int = 10
    backoff_factor: float = 1.5

    def wait_until_ready(self, simulated_time: float = 0.0,
                         use_real_time: bool = False) -> Tuple[bool, str, float]:
        """`(ready, detail, seconds waited)`. The waits are counted, not slept, unless
        `use_real_time`. A check that raises counts as not ready."""
        waited = self.initial_delay_s
        if use_real_time and self.initial_delay_s > 0:
            time.sleep(self.initial_delay_s)
        interval = self.interval_s
        for _ in range(self.max_retries):
            try:
                ready, detail = self.check_fn()
                if ready:
                    return True, detail, waited
            except Exception as err:  # noqa: BLE001 - a probe that raises is not ready
                detail = f"Probe error: {err}"
            waited += interval
            if use_real_time:
                time.sleep(interval)
            interval = min(interval * self.backoff_factor, 30.0)
        return False, f"Not ready after {self.max_retries} attempts", waited


class TemporalDependency:
    """A dependency on `required_action_id` that also needs `min_delay_s` to have passed since
    it completed and, if given, its readiness probe to pass."""

    def __init__(self, required_action_id: str, reason: str,
                 readiness_probe: Optional[ReadinessProbe] = None, min_delay_s: float = 0.0):
        self.required_action_id = required_action_id
        self.reason = reason
        self.readiness_probe = readiness_probe
        self.min_delay_s = min_delay_s
        self._completion_time: Optional[float] = None

    def mark_completed(self, at_time: float) -> None:
        self._completion_time = at_time

    def is_satisfied(self, current_time: float,
                     use_real_time: bool = False) -> Tuple[bool, str]:
        """`(True, "")`, or `(False, why)`: not completed, too recent, or not ready."""
        if self._completion_time is None:
            return False, f"{self.required_action_id} not completed"
        elapsed = current_time - self._completion_time
        if _exact(current_time, "current_time") - _exact(self._completion_time, "at_time")                 < _exact(self.min_delay_s, "min_delay_s"):
            return False, (f"{self.required_action_id}: {elapsed:.1f}s elapsed, "
                           f"need {self.min_delay_s:.1f}s")
        if self.readiness_probe is not None:
            ready, detail, _ = self.readiness_probe.wait_until_ready(
                simulated_time=current_time, use_real_time=use_real_time)
            if not ready:
                return False, f"{self.required_action_id}: exists but not ready ({detail})"
        return True, ""


class TemporalCausalGraph:
    """A CausalGraph with temporal dependencies: an action can execute when its graph
    dependencies have completed and each temporal dependency is satisfied at the graph's time
    (`set_time`). Without temporal dependencies it is the graph."""

    def __init__(self, base_graph: Optional[CausalGraph] = None):
        self._base = base_graph if base_graph is not None else CausalGraph()
        self._temporal: Dict[str, List[TemporalDependency]] = {}
        self._current_time = 0.0

    def add_temporal_dep(self, action_id: str, dep: TemporalDependency) -> None:
        self._temporal.setdefault(action_id, []).append(dep)

    def add_temporal_dependency(self, action_id: str, dep: TemporalDependency) -> None:
        """`add_temporal_dep` (the Python ClampAI's docs/API.md name)."""
        self.add_temporal_dep(action_id, dep)

    def set_time(self, t: float) -> None:
        self._current_time = t

    def mark_completed(self, action_id: str, at_time: Optional[float] = None) -> None:
        """Completes `action_id` in the graph, at `at_time` (default: the graph's time)."""
        t = self._current_time if at_time is None else at_time
        self._base.mark_completed(action_id)
        for deps in self._temporal.values():
            for dep in deps:
                if dep.required_action_id == action_id:
                    dep.mark_completed(t)

    def can_execute(self, action_id: str,
                    use_real_time: bool = False) -> Tuple[bool, List[str]]:
        """`(ready, unmet)`: the graph's unmet dependencies (ids) if any, else why each
        temporal dependency is not satisfied."""
        ok, unmet = self._base.can_execute(action_id)
        if not ok:
            return False, list(unmet)
        reasons = []
        for dep in self._temporal.get(action_id, []):
            satisfied, why = dep.is_satisfied(self._current_time, use_real_time)
            if not satisfied:
                reasons.append(why)
        return not reasons, reasons

    def wait_for_ready(self, action_id: str, use_real_time: bool = False) -> Tuple[bool, List[str]]:
        """`can_execute` (the Python ClampAI's docs/API.md name)."""
        return self.can_execute(action_id, use_real_time)

    def ready_actions(self, available: List[str], use_real_time: bool = False) -> List[str]:
        return [a for a in available if self.can_execute(a, use_real_time)[0]]


# --- Environment reconciliation -------------------------------------------------------------

@dataclass(frozen=True)
class EnvironmentProbe:
    """Reads the world's value of `variable_name` (`read_fn()`), not the model's."""

    variable_name: str
    read_fn: Callable[[], Any]
    description: str = ""


@dataclass(frozen=True)
class ReconciliationResult:
    """`(variable, model's value, world's value)` of each probed variable that matches and each
    that does not, and the state's variables no probe reads. True iff consistent."""

    matches: List[Tuple[str, Any, Any]]
    mismatches: List[Tuple[str, Any, Any]]
    unprobed: List[str]
    timestamp: float = 0.0

    @property
    def is_consistent(self) -> bool:
        return not self.mismatches

    @property
    def drift_severity(self) -> float:
        """The share of probed variables that drifted (0 without probes)."""
        total = len(self.matches) + len(self.mismatches)
        return len(self.mismatches) / total if total else 0.0

    def __bool__(self) -> bool:
        return self.is_consistent


class EnvironmentDriftError(Exception):
    """Raised by `EnvironmentReconciler.reconcile` when the world drifted from the model;
    `result` is the ReconciliationResult."""

    def __init__(self, message: str, result: ReconciliationResult):
        super().__init__(message)
        self.result = result


_PROBE_ERROR = "PROBE_ERROR:"


class EnvironmentReconciler:
    """Compares the model's state with the world's, read by probes, after an action: a probe's
    value that differs from the model's (a number by more than `tolerance`, exactly; anything
    else at all), or a probe that raises, is drift. When the share of drifted variables exceeds
    `drift_threshold` and `halt_on_drift`, `reconcile` raises EnvironmentDriftError. (A task's
    probes are the C++ monitor's, declared in the spec's `probes`.)"""

    def __init__(self, drift_threshold: float = 0.0, halt_on_drift: bool = True, *,
                 tolerance: float = 0.0):
        self.drift_threshold = drift_threshold
        self.halt_on_drift = halt_on_drift
        self.tolerance = tolerance
        self._tolerance = _exact(tolerance, "tolerance")
        if self._tolerance < 0:
            raise ValueError(f"tolerance must not be negative, not {tolerance!r}")
        self._probes: Dict[str, EnvironmentProbe] = {}
        self._history: List[ReconciliationResult] = []

    def add_probe(self, probe: EnvironmentProbe) -> None:
        self._probes[probe.variable_name] = probe

    def register_probe(self, key: str, probe_fn: Callable[[], Any]) -> None:
        """`add_probe(EnvironmentProbe(key, probe_fn))` (the Python ClampAI's docs/API.md)."""
        self.add_probe(EnvironmentProbe(key, probe_fn))

    def snapshot(self) -> Dict[str, Any]:
        """Every probe's reading; `PROBE_ERROR:...` for one that raised."""
        snap: Dict[str, Any] = {}
        for name, probe in self._probes.items():
            try:
                snap[name] = probe.read_fn()
            except Exception as err:  # noqa: BLE001 - an unreadable world is drift
                snap[name] = f"{_PROBE_ERROR}{err}"
        return snap

    def _same(self, model: Any, world: Any) -> bool:
        if _is_number(model) and _is_number(world):
            try:
                return abs(_exact(model, "model") - _exact(world, "world")) <= self._tolerance
            except ValueError:  # NaN or an infinity: only equal to itself
                return bool(model == world)
        return bool(model == world)

    def reconcile(self, expected_state: Any, label: str = "") -> ReconciliationResult:
        """The comparison now, kept in `reconciliation_history`; raises EnvironmentDriftError
        on drift beyond the threshold when `halt_on_drift`."""
        actual = self.snapshot()
        matches: List[Tuple[str, Any, Any]] = []
        mismatches: List[Tuple[str, Any, Any]] = []
        for name in self._probes:
            expected, world = expected_state.get(name), actual.get(name)
            unreadable = isinstance(world, str) and world.startswith(_PROBE_ERROR)
            if not unreadable and self._same(expected, world):
                matches.append((name, expected, world))
            else:
                mismatches.append((name, expected, world))
        unprobed = [k for k in expected_state.keys()
                    if k not in self._probes and not k.startswith("_")]
        result = ReconciliationResult(matches, mismatches, unprobed, time.time())
        self._history.append(result)
        if self.halt_on_drift and _exact(result.drift_severity, "severity") > _exact(
                self.drift_threshold, "drift_threshold"):
            details = "; ".join(f"{v}: exp={e}, got={a}" for v, e, a in mismatches)
            raise EnvironmentDriftError(f"DRIFT ({label}): {details}", result)
        return result

    @property
    def reconciliation_history(self) -> List[ReconciliationResult]:
        return list(self._history)


# --- Dependency discovery -------------------------------------------------------------------

@dataclass
class FailurePattern:
    """The 2x2 table of one action's outcomes against whether another had completed:
    `*_with_missing` counts runs where `action_missing` had not completed."""

    action_failed: str
    action_missing: str
    observations: int = 0
    failures_with_missing: int = 0
    failures_without_missing: int = 0
    successes_with_missing: int = 0
    successes_without_missing: int = 0


# The chi-squared test's critical values (one degree of freedom) and their p-values.
_CHI2_TABLE = ((10.83, 0.001), (6.63, 0.01), (5.02, 0.025), (3.84, 0.05), (2.71, 0.1),
               (1.32, 0.25), (0.455, 0.5), (0.0, 1.0))


class DependencyDiscovery:
    """Finds dependencies nobody declared: an action that fails more often when another has not
    completed (by more than 0.2, with a chi-squared p-value under `significance_threshold`,
    after `min_observations` runs) depends on it."""

    def __init__(self, significance_threshold: float = 0.05, min_observations: int = 5):
        self.threshold = significance_threshold
        self.min_obs = min_observations
        self._patterns: Dict[Tuple[str, str], FailurePattern] = {}
        self._discovered: Dict[str, List[Tuple[str, float, float]]] = {}

    def observe(self, action_id: str, succeeded: bool, completed_actions: Set[str],
                all_known_actions: Set[str]) -> None:
        """Records one run of `action_id` against every other known action."""
        for other in all_known_actions:
            if other == action_id:
                continue
            p = self._patterns.setdefault((action_id, other), FailurePattern(action_id, other))
            p.observations += 1
            done = other in completed_actions
            if succeeded:
                if done:
                    p.successes_without_missing += 1
                else:
                    p.successes_with_missing += 1
            elif done:
                p.failures_without_missing += 1
            else:
                p.failures_with_missing += 1

    def discover(self) -> Dict[str, List[Tuple[str, float, float]]]:
        """`{action: [(dependency, p-value, effect), ...]}`."""
        found: Dict[str, List[Tuple[str, float, float]]] = {}
        for (action, other), p in self._patterns.items():
            if p.observations < self.min_obs:
                continue
            missing = p.failures_with_missing + p.successes_with_missing
            present = p.failures_without_missing + p.successes_without_missing
            if not missing or not present:
                continue
            effect = p.failures_with_missing / missing - p.failures_without_missing / present
            if effect <= 0:
                continue
            pvalue = self._chi2p(p)
            if pvalue < self.threshold and effect > 0.2:
                found.setdefault(action, []).append((other, pvalue, effect))
        self._discovered = found
        return found

    def inject_into_graph(self, graph: CausalGraph) -> List[Tuple[str, str, float]]:
        """Adds each discovered dependency the graph lacks; returns `(action, dependency,
        p-value)` of each added."""
        injected = []
        for action, deps in self.discover().items():
            for dep, pvalue, _ in deps:
                existing = graph._deps.get(action, ())
                if dep in {d.required_action_id for d in existing}:
                    continue
                graph.add_action(action, [(d.required_action_id, d.reason) for d in existing]
                                 + [(dep, f"DISCOVERED: p={pvalue:.4f}")])
                injected.append((action, dep, pvalue))
        return injected

    @staticmethod
    def _chi2p(p: FailurePattern) -> float:
        """The p-value of Pearson's chi-squared on the table (from the critical values; beyond
        10, exp(-chi2/2)); 1.0 when a row or column is empty."""
        cells = (p.successes_without_missing, p.successes_with_missing,
                 p.failures_without_missing, p.failures_with_missing)
        n = sum(cells)
        rows = (cells[0] + cells[1], cells[2] + cells[3])
        cols = (cells[0] + cells[2], cells[1] + cells[3])
        if n == 0 or 0 in rows or 0 in cols:
            return 1.0
        chi2 = 0.0
        for i, observed in enumerate(cells):
            expected = rows[i // 2] * cols[i % 2] / n
            chi2 += (observed - expected) ** 2 / expected
        if chi2 > 10:
            return math.exp(-chi2 / 2)
        return next(pv for critical, pv in _CHI2_TABLE if chi2 >= critical)

    def summary(self) -> str:
        if not self._discovered:
            self.discover()
        lines = [f"  {a}→{d} (p={p:.4f}, Δ={e:.2f})"
                 for a, deps in self._discovered.items() for d, p, e in deps]
        return "\n".join(["Discovered Dependencies:", *lines]) if lines else "  (none yet)"


# --- Resources ------------------------------------------------------------------------------

class ResourceState(enum.Enum):
    ABSENT = "absent"
    CREATING = "creating"
    READY = "ready"
    DEGRADED = "degraded"
    DELETING = "deleting"
    FAILED = "failed"


class Permission(enum.Enum):
    NONE = "none"
    READ = "read"
    WRITE = "write"
    EXECUTE = "execute"
    ADMIN = "admin"


@dataclass(frozen=True)
class ResourceDescriptor:
    """A resource an agent provisions, in its lifecycle state."""

    kind: str
    identifier: str
    state: ResourceState = ResourceState.ABSENT
    permissions: FrozenSet[Permission] = frozenset()
    health_endpoint: str = ""
    created_at: float = 0.0
    metadata: str = ""

    def to_dict(self) -> Dict[str, Any]:
        return {"kind": self.kind, "identifier": self.identifier, "state": self.state.value,
                "permissions": sorted(p.value for p in self.permissions)}


_S = ResourceState


class ResourceTracker:
    """Resources by identifier, moved only along their lifecycle's transitions
    (`VALID_TRANSITIONS`)."""

    VALID_TRANSITIONS: ClassVar[Dict[ResourceState, Set[ResourceState]]] = {
        _S.ABSENT: {_S.CREATING},
        _S.CREATING: {_S.READY, _S.FAILED},
        _S.READY: {_S.DEGRADED, _S.DELETING},
        _S.DEGRADED: {_S.READY, _S.DELETING, _S.FAILED},
        _S.DELETING: {_S.ABSENT, _S.FAILED},
        _S.FAILED: {_S.CREATING, _S.DELETING, _S.ABSENT},
    }

    def __init__(self) -> None:
        self._resources: Dict[str, ResourceDescriptor] = {}

    def register(self, r: ResourceDescriptor) -> None:
        self._resources[r.identifier] = r

    def transition(self, rid: str, ns: ResourceState) -> Tuple[bool, str]:
        """`(True, "id: old→new")`, or `(False, why)` for an unknown resource or a transition
        its lifecycle does not allow (nothing changes). Entering CREATING stamps `created_at`."""
        current = self._resources.get(rid)
        if current is None:
            return False, f"{rid} not registered"
        if ns not in self.VALID_TRANSITIONS.get(current.state, set()):
            return False, f"Invalid: {current.state.value}→{ns.value}"
        created = time.time() if ns is ResourceState.CREATING else current.created_at
        self._resources[rid] = dataclasses.replace(current, state=ns, created_at=created)
        return True, f"{rid}: {current.state.value}→{ns.value}"

    def get(self, rid: str) -> Optional[ResourceDescriptor]:
        return self._resources.get(rid)

    def all_ready(self, ids: Optional[List[str]] = None) -> bool:
        """Whether every resource of `ids` (default, or empty: every one registered) is READY;
        an unknown one is not."""
        wanted = ids or list(self._resources)
        return all(rid in self._resources and self._resources[rid].state is ResourceState.READY
                   for rid in wanted)

    def summary(self) -> str:
        return "\n".join(f"  [{r.state.value:>10}] {r.kind}:{rid}"
                         for rid, r in sorted(self._resources.items()))


# --- Information-flow labels (the Python ClampAI's reference_monitor) --------------------------

class SecurityLevel(enum.Enum):
    """The information-flow lattice, a chain (the C++ kernel's SecurityLabel): PUBLIC ⊑ INTERNAL
    ⊑ PII ⊑ SECRET."""

    PUBLIC = 0
    INTERNAL = 1
    PII = 2
    SECRET = 3


class DataLabel:
    """A security label: a level and a set of tags. `a <= b` iff data labelled `a` may flow to
    a place labelled `b` (its level is at most b's and its tags are among b's)."""

    def __init__(self, level: SecurityLevel, tags: Optional[Iterable[str]] = None):
        if not isinstance(level, SecurityLevel):
            raise TypeError(f"a DataLabel's level is a SecurityLevel, not {type(level).__name__}")
        self.level = level
        self.tags: FrozenSet[str] = frozenset(tags or ())

    def __le__(self, other: "DataLabel") -> bool:
        return self.level.value <= other.level.value and self.tags <= other.tags

    def __ge__(self, other: "DataLabel") -> bool:
        return other <= self

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DataLabel) and (self.level, self.tags) == (other.level,
                                                                             other.tags)

    def __hash__(self) -> int:
        return hash((self.level, self.tags))

    def __repr__(self) -> str:
        tags = f" [{','.join(sorted(self.tags))}]" if self.tags else ""
        return f"Label({self.level.name}{tags})"

    @staticmethod
    def join(*labels: "DataLabel") -> "DataLabel":
        """The least upper bound: the highest level, every tag."""
        if not labels:
            raise ValueError("DataLabel.join needs at least one label")
        level = SecurityLevel(max(label.level.value for label in labels))
        return DataLabel(level, set().union(*(label.tags for label in labels)))


_PUBLIC = DataLabel(SecurityLevel.PUBLIC)


class LabelledData:
    """A value with its security label (immutable). An Effect whose value is LabelledData
    writes the value and carries the label (the monitor checks it against the target's)."""

    __slots__ = ("_value", "_label")

    def __init__(self, value: Any, label: DataLabel):
        object.__setattr__(self, "_value", value)
        object.__setattr__(self, "_label", label)

    @property
    def value(self) -> Any:
        return self._value

    @property
    def label(self) -> DataLabel:
        return self._label

    def __setattr__(self, *_: Any) -> None:
        raise AttributeError("LabelledData is immutable")

    def __repr__(self) -> str:
        return f"LabelledData({self._value!r}, {self._label})"

    def __deepcopy__(self, memo: Dict[int, Any]) -> "LabelledData":
        return self


class MonitorOutcome:
    """What `ReferenceMonitor.execute` did: the kernel's `outcome` (`approved`, `decision`,
    `state`, `receipt` as in `SafetyKernel.execute`), the `attestations` that ran for it, and
    the `drift` the reconciliation found after it (then the monitor halted)."""

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
    """The reference monitor, in two forms chosen by the arguments given.

    `ReferenceMonitor(task, *, attestors=None, allowed_programs=(), timeout_ms=5000,
    max_output_bytes=65536, enforce_information_flow=True, record_rejections=False)` (a task
    first: a TaskDefinition, a spec dict or file, a TaskModel) is the kernel of one task wrapped
    with the runtime gates its spec declares (docs/HARDENING.md): information flow (the
    variables' `label`s and `element_label`s, the `sinks`, the actions' `emits`) and
    attestations (the actions' and the goal's `attestations`). Every veto is a kernel rejection
    with its reason code (`information_flow`, `attestation_failed`): nothing changes (T5), and
    it is traced with `record_rejections`. `attestors` implements the task's `external`
    attestors by name (a TaskDefinition's `attestors` may hold Attestor objects: they are taken
    from there too); `allowed_programs` are the programs its `command` attestors may run.
    `reconciler` (an EnvironmentReconciler) adds its probes to the spec's reconciliation
    probes, with its `tolerance`: after each committed action the monitor reads them and halts
    on any drift (`environment_drift`). `readiness` maps an action to the ReadinessProbe an
    action depending on it waits for (`dependency_not_ready` when it never passes), polled with
    the probe's backoff (really slept) until its retries' total wait has passed. Its calls:
    `evaluate`, `execute`, `check_goal`, `reconcile`, `drift`, `downward_flows`, `halted`,
    `state`, `step_count`, `trace`.

    `ReferenceMonitor(ifc_enabled=True, cbf_enabled=True, hjb_enabled=True,
    cbf_binary_search_tol=1e-6, cbf_max_iterations=20)` (no task) is the Python ClampAI's
    task-less monitor: `set_ifc_label` (or `add_label`), `add_cbf`, `add_capture_basin`,
    `register_contract`, and `enforce(action, state, candidate_next_actions=None,
    budget_remaining=inf) -> (safe, reason, repaired_action)`. Its information-flow check is
    the C++ kernel's exact data flow (what each effect reads), not the Python ClampAI's rule
    that blocks every write while any higher-labelled variable exists (docs/PYTHON.md)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if (args and not isinstance(args[0], bool)) or "task" in kwargs:
            self._init_task(*args, **kwargs)
            return
        (ifc_enabled, cbf_enabled, hjb_enabled, cbf_binary_search_tol,
         cbf_max_iterations) = _reference_monitor_options(*args, **kwargs)
        if cbf_binary_search_tol <= 0:
            raise ValueError(f"cbf_binary_search_tol must be > 0, got {cbf_binary_search_tol}")
        if cbf_max_iterations < 1:
            raise ValueError(f"cbf_max_iterations must be ≥ 1, got {cbf_max_iterations}")
        self._impl = None
        self.ifc_enabled = ifc_enabled
        self.cbf_enabled = cbf_enabled
        self.hjb_enabled = hjb_enabled
        self.cbf_binary_search_tol = cbf_binary_search_tol
        self.cbf_max_iterations = cbf_max_iterations
        self.ifc_labels: Dict[str, DataLabel] = {}
        self.cbf_budget: Any = None
        self.capture_basins: List[Any] = []
        self.contracts: Dict[str, Any] = {}
        self._flow_cache: Dict[Any, Optional[List[Tuple[str, str]]]] = {}

    def _init_task(self, task: Any, *, attestors: Optional[Mapping[str, Attestor]] = None,
                   allowed_programs: Collection[str] = (), timeout_ms: int = 5000,
                   max_output_bytes: int = 64 * 1024, enforce_information_flow: bool = True,
                   record_rejections: bool = False,
                   reconciler: Optional[EnvironmentReconciler] = None,
                   readiness: Optional[Mapping[str, ReadinessProbe]] = None) -> None:
        from . import _model_of  # noqa: PLC0415 (the package imports this module)
        model, _, _ = _model_of(task)
        probes = []
        if reconciler is not None:
            if not isinstance(reconciler, EnvironmentReconciler):
                raise TypeError(f"reconciler: an EnvironmentReconciler, not "
                                f"{type(reconciler).__name__}")
            if reconciler.drift_threshold != 0 or not reconciler.halt_on_drift:
                raise ValueError("reconciler: the monitor halts on any drift; give it an "
                                 "EnvironmentReconciler(drift_threshold=0, halt_on_drift=True)")
            probes = [(name, probe.read_fn, format(reconciler._tolerance, "f"))
                      for name, probe in reconciler._probes.items()]
        waits = []
        for dependency, probe in (readiness or {}).items():
            if not isinstance(probe, ReadinessProbe):
                raise TypeError(f"readiness.{dependency}: a ReadinessProbe, not "
                                f"{type(probe).__name__}")
            waits.append((dependency, _readiness_check(probe), *_backoff_ms(probe)))
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
                                       bool(enforce_information_flow), bool(record_rejections),
                                       probes, waits)

    def _task_monitor(self, call: str) -> Any:
        if self._impl is None:
            raise TypeError(f"ReferenceMonitor.{call} is for a monitor of a task "
                            f"(ReferenceMonitor(task)); this one is the Python ClampAI's "
                            f"task-less form: use enforce(action, state)")
        return self._impl

    def _reference_form(self, call: str) -> None:
        if self._impl is not None:
            raise TypeError(f"ReferenceMonitor.{call} is for the Python ClampAI's task-less "
                            f"form (ReferenceMonitor()); a monitor of a task takes its labels, "
                            f"sinks and attestations from the task")

    # -- The task's monitor -------------------------------------------------------------------

    def evaluate(self, action: Any, params: Optional[Mapping[str, Any]] = None) -> Decision:
        """The kernel's decision with the information-flow gate; runs no attestation."""
        return self._task_monitor("evaluate").evaluate(_id(action),
                                                       dict(params) if params else None)

    def execute(self, action: Any, params: Optional[Mapping[str, Any]] = None) -> MonitorOutcome:
        """Every gate, then the kernel's execute: the action's attestations run on the state
        it starts from (the GIL is released while they run)."""
        outcome, attestations, drift = self._task_monitor("execute")._execute(
            _id(action), dict(params) if params else None)
        return MonitorOutcome(outcome, [Attestation(a) for a in attestations], drift)

    def check_goal(self) -> GoalCheck:
        """Whether the goal may be declared reached: it holds and its attestations passed."""
        return GoalCheck(self._task_monitor("check_goal")._check_goal())

    @property
    def downward_flows(self) -> List[Any]:
        """The downward information flows the monitor rejects (as `clampai verify` lists
        them): action, source, source_label, target, target_label, path, expression."""
        return [_result_base()(f) for f in self._task_monitor("downward_flows")._downward_flows]

    @property
    def halted(self) -> bool:
        """True once the reconciliation found drift: every later action but the emergency ones
        is rejected (`environment_drift`)."""
        return self._task_monitor("halted").halted

    def reconcile(self) -> List[Dict[str, Any]]:
        """Runs the reconciliation probes now (the spec's `probes` and the `reconciler`'s);
        drift halts the monitor. Returns the drift found: `variable`, `model`, `world` (None
        when the probe could not read it) and `detail`, one dict per variable."""
        monitor = self._task_monitor("reconcile")
        return monitor._reconcile()

    @property
    def drift(self) -> List[Dict[str, Any]]:
        """The drift that halted the monitor ([] while it runs)."""
        return self._task_monitor("drift")._drift

    @property
    def state(self) -> State:
        return self._task_monitor("state").state

    @property
    def step_count(self) -> int:
        return self._task_monitor("step_count").step_count

    @property
    def trace(self) -> List[Any]:
        from . import TraceEntry  # noqa: PLC0415
        return [TraceEntry(json.loads(line))
                for line in self._task_monitor("trace")._trace_lines()]

    # -- The Python ClampAI's task-less form --------------------------------------------------

    def set_ifc_label(self, var_name: str, label: DataLabel) -> None:
        """Labels a state variable (unlabelled ones are PUBLIC)."""
        self._reference_form("set_ifc_label")
        if not isinstance(label, DataLabel):
            raise TypeError(f"the label of `{var_name}` is a DataLabel, not "
                            f"{type(label).__name__}")
        self.ifc_labels[var_name] = label
        self._flow_cache.clear()

    def add_label(self, variable: str, label: DataLabel) -> None:
        """`set_ifc_label` (the Python ClampAI's docs/API.md name)."""
        self.set_ifc_label(variable, label)

    def add_cbf(self, h: Callable[[Any], float], alpha: float = 0.1) -> None:
        """Sets the control barrier function (`h(state) > 0` is safe; one at a time)."""
        from ._barriers import ControlBarrierFunction  # noqa: PLC0415
        self._reference_form("add_cbf")
        self.cbf_budget = ControlBarrierFunction(h, alpha)

    def add_capture_basin(self, basin: Any) -> None:
        self._reference_form("add_capture_basin")
        self.capture_basins.append(basin)

    def register_contract(self, spec: Any) -> None:
        self._reference_form("register_contract")
        self.contracts[spec.name] = spec

    def enforce(self, action: ActionSpec, state: Any,
                candidate_next_actions: Optional[List[ActionSpec]] = None,
                budget_remaining: float = float("inf")
                ) -> Tuple[bool, str, Optional[ActionSpec]]:
        """`(safe, reasons, repaired)`: information flow (an effect's LabelledData payload and
        what each effect reads, against the target's label), then the control barrier (a
        transition that breaks it is repaired by lowering the effects' amounts, by bisection,
        or rejected), then the capture basins (from `state`, with the action and the
        candidates). `repaired` is the repaired action, or None when the action is kept."""
        self._reference_form("enforce")
        if not isinstance(state, State):
            state = State(dict(state))
        reasons = []
        if self.ifc_enabled:
            ok, message = self._check_ifc(action, state)
            if not ok:
                return False, message, None
            reasons.append(message)
        repaired = action
        if self.cbf_enabled and self.cbf_budget is not None:
            ok, message = self.cbf_budget.evaluate(state, _unlabelled(action).simulate(state))
            if ok:
                reasons.append(message)
            else:
                from ._barriers import QPProjector  # noqa: PLC0415
                safe_values = self._safe_effect_values(action, state)
                repaired, was_repaired = QPProjector().project_action(
                    action, state, [], safe_effect_values=safe_values,
                    budget_remaining=budget_remaining)
                if not was_repaired:
                    return False, message, None
                reasons.append("CBF: action repaired")
        if self.hjb_enabled:
            candidates = [_unlabelled(a) for a in [repaired, *(candidate_next_actions or [])]]
            for basin in self.capture_basins:
                ok, message = basin.evaluate_reachability(state, candidates)
                if not ok:
                    return False, message, None
                reasons.append(message)
        return True, "; ".join(reasons), (repaired if repaired != action else None)

    def _check_ifc(self, action: ActionSpec, state: State) -> Tuple[bool, str]:
        for effect in action.effects:
            if isinstance(effect.value, LabelledData):
                target = self.ifc_labels.get(effect.variable, _PUBLIC)
                if not effect.value.label <= target:
                    return False, (f"IFC VIOLATION: payload ({effect.value.label}) cannot flow "
                                   f"to {effect.variable} ({target})")
        flows = self._flows(action, state)
        if flows is None:  # not expressible as a task: every labelled variable may flow
            sources = [k for k in state.keys() if k in self.ifc_labels]
            flows = [(s, e.variable) for s in sources for e in action.effects]
        for source, target in flows:
            source_label = self.ifc_labels.get(source, _PUBLIC)
            target_label = self.ifc_labels.get(target, _PUBLIC)
            if not source_label <= target_label:
                return False, (f"IFC VIOLATION: {source} ({source_label}) cannot flow to "
                               f"{target} ({target_label})")
        return True, "IFC: all flows permitted"

    def _flows(self, action: ActionSpec, state: State) -> Optional[List[Tuple[str, str]]]:
        """`(source, target)` of every flow of a labelled variable in the action's effects, by
        the C++ kernel's data-flow analysis (`information_flows`) of the action as a task over
        `state`; None when it is not expressible as one."""
        labelled = sorted(k for k in state.keys() if k in self.ifc_labels)
        if not labelled:
            return []
        try:
            key: Any = (action, tuple(state.keys()), tuple(labelled))
            hash(key)
        except TypeError:
            key = None
        if key is not None:
            cached = self._flow_cache.get(key, _UNCACHED)
            if cached is not _UNCACHED:
                return cached  # type: ignore[return-value]
        plain = dataclasses.replace(
            action, effects=tuple(e for e in action.effects
                                  if not isinstance(e.value, LabelledData)),
            attestations=(), cost=1)
        # A variable the action creates with a literal is declared by that value.
        created = {e.variable: e.value for e in plain.effects
                   if e.mode == "set" and e.variable not in state and e.value is not None
                   and not isinstance(e.value, Expr)}
        try:
            initial = state.with_updates(created) if created else state
            model = TaskDefinition(goal="", initial_state=initial, available_actions=[plain],
                                   budget=1, min_action_cost=1,
                                   variables={k: {"label": "SECRET"} for k in labelled}).build()
            flows: Optional[List[Tuple[str, str]]] = [
                (f["source"].removesuffix("[]"), f["target"].removesuffix("[]"))
                for f in _clampai._information_flows(model, False)
                if not f["target"].startswith("sink:")]
        except (ClampAIError, TypeError, ValueError):
            flows = None
        if key is not None:
            if len(self._flow_cache) >= 256:
                self._flow_cache.clear()
            self._flow_cache[key] = flows
        return flows

    def _safe_effect_values(self, action: ActionSpec, state: State) -> Dict[str, Any]:
        """For each numeric increment, decrement or multiply, the largest amount in [0, the
        amount] (by bisection, `cbf_max_iterations` steps down to `cbf_binary_search_tol`) whose
        transition keeps the barrier, when that is not the amount itself."""
        safe: Dict[str, Any] = {}
        for effect in action.effects:
            current = state.get(effect.variable)
            if (effect.mode not in ("increment", "decrement", "multiply")
                    or not _is_number(effect.value) or not _is_number(current)):
                continue
            low, high, best = 0.0, float(effect.value), 0.0
            for _ in range(self.cbf_max_iterations):
                mid = (low + high) / 2.0
                trial = state.with_updates({effect.variable: _applied(effect.mode, current,
                                                                       mid)})
                if self.cbf_budget.evaluate(state, trial)[0]:
                    best = low = mid
                else:
                    high = mid
                if high - low < self.cbf_binary_search_tol:
                    break
            if best != float(effect.value):
                safe[effect.variable] = best
        return safe


def _readiness_check(probe: ReadinessProbe) -> Callable[[], Tuple[bool, str]]:
    def check() -> Tuple[bool, str]:
        ready, detail = probe.check_fn()
        return bool(ready), str(detail)
    return check


def _backoff_ms(probe: ReadinessProbe) -> Tuple[int, float, int, int]:
    """A ReadinessProbe's schedule as the C++ monitor's: (first wait, multiplier, longest wait,
    deadline) in ms; the deadline is the probe's `initial_delay_s` and the waits between its
    `max_retries` checks."""
    if probe.max_retries < 1 or probe.interval_s <= 0 or probe.backoff_factor < 1:
        raise ValueError(f"readiness probe `{probe.name}`: needs max_retries >= 1, "
                         f"interval_s > 0 and backoff_factor >= 1")
    total, interval = probe.initial_delay_s, probe.interval_s
    for _ in range(probe.max_retries - 1):
        total += interval
        interval = min(interval * probe.backoff_factor, 30.0)
    first = max(1, int(round(probe.interval_s * 1000)))
    return first, float(probe.backoff_factor), max(first, 30000), int(round(total * 1000))


_UNCACHED = object()


def _unlabelled(action: ActionSpec) -> ActionSpec:
    """`action` with each LabelledData payload replaced by its value (what the effect writes)."""
    if not any(isinstance(e.value, LabelledData) for e in action.effects):
        return action
    return dataclasses.replace(action, effects=tuple(
        dataclasses.replace(e, value=e.value.value) if isinstance(e.value, LabelledData) else e
        for e in action.effects))


def _reference_monitor_options(ifc_enabled: bool = True, cbf_enabled: bool = True,
                               hjb_enabled: bool = True, cbf_binary_search_tol: float = 1e-6,
                               cbf_max_iterations: int = 20) -> Tuple[bool, bool, bool, float, int]:
    return ifc_enabled, cbf_enabled, hjb_enabled, cbf_binary_search_tol, cbf_max_iterations


def _applied(mode: str, current: Any, amount: float) -> Any:
    """`current` changed by `mode` with `amount` (a float), in `current`'s kind of number."""
    if isinstance(current, Decimal):
        x = Decimal(repr(amount))
    else:
        current, x = float(current), amount
    if mode == "increment":
        return current + x
    if mode == "decrement":
        return current - x
    return current * x


def _id(action: Any) -> str:
    return action if isinstance(action, str) else str(getattr(action, "id"))
