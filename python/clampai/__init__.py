"""ClampAI for Python: the C++ safety kernel, verifier, lookahead, repair and composition,
with the seed's vocabulary (docs/PYTHON.md).

    from clampai import TaskDefinition, State, ActionSpec, Effect, Invariant, SafetyKernel

A rejected action is a value (`Decision.approved` is False, with reasons); exceptions mean bad
input (`SpecError`, `FileError`, ...), with the command line's messages.
"""

from __future__ import annotations

import dataclasses as _dataclasses
import hashlib as _hashlib
import json as _json
from collections.abc import Mapping as _AbcMapping
from decimal import Decimal as _Decimal
from typing import (Any as _Any, Callable as _Callable, Dict as _Dict, List as _List,
                    Mapping as _Mapping, Optional as _Optional, Tuple as _Tuple, Union as _Union)

from . import _clampai
from ._clampai import Decision, Reason, Receipt, State, TaskModel
from ._opaque import install as _install_opaque

_install_opaque()  # states hold any value, as the Python ClampAI's (python/clampai/_opaque.py)
from ._errors import (ClampAIError, FileError, InternalError, InvalidArgument, SpecError,
                      TraceError)
from ._task import ActionSpec, Effect, Expr, Invariant, TaskDefinition, build_model
from ._reference_api import (FORMAL_CLAIMS, HARDENING_CLAIMS, REASONING_CLAIMS,
                             AsyncSafetyKernel, BudgetController, CheckResult, Claim,
                             ExecutionTrace,
                             FormalKernel as _FormalKernel, GuaranteeLevel, MetricsBackend,
                             NoOpMetrics, RejectionFormatter, SafetyBarrierViolation,
                             SafetyHarness, SafetyVerdict, SafetyViolation, clampai_safe,
                             make_action, make_state, safe)
from ._barriers import (ActiveHJBBarrier, AuthoritativeHJBBarrier, CaptureBasin,
                        ControlBarrierFunction, HJBBarrierCheck, HJBEnforcementCheck,
                        PerInvariantBudget, QPProjector, RecoveryStrategy, SafeHoverSignal,
                        SafeHoverState, choose_recovery_strategy)
from ._composition import (CompositionType, ContractSpecification, InterfaceSignature,
                           OperadicComposition, SuperTask, TaskComposer,
                           VerificationCertificate)
from ._inverse import (InverseAlgebra, InverseEffect, RollbackRecord,
                       action_with_inverse_guarantee)

__version__ = "0.1.0"

__all__ = [
    "State", "Effect", "Expr", "ActionSpec", "Invariant", "TaskDefinition", "TaskModel",
    "SafetyKernel", "Decision", "Outcome", "Receipt", "Reason", "BudgetStatus", "TraceEntry",
    "PoolTree", "Pool", "PoolStatus",
    "Result", "VerifyReport", "LookaheadReport", "RepairReport", "ComposeReport", "TraceCheck",
    "load_spec", "build_model", "verify", "lookahead", "repair", "compose", "verify_trace_file",
    "ClampAIError", "SpecError", "FileError", "TraceError", "InvalidArgument", "InternalError",
    "Orchestrator", "ExecutionResult", "LLMAdapter",
    # The reference's formal layer (python/clampai/_reference_api.py).
    "BudgetController", "CheckResult", "Claim", "ExecutionTrace", "FORMAL_CLAIMS",
    "GuaranteeLevel", "HARDENING_CLAIMS", "REASONING_CLAIMS", "SafetyBarrierViolation",
    "SafetyHarness", "SafetyVerdict", "SafetyViolation", "clampai_safe", "make_action",
    "make_state", "safe", "MetricsBackend", "NoOpMetrics", "RejectionFormatter",
    "AsyncSafetyKernel",
    # The reference's inverse effects (python/clampai/_inverse.py).
    "InverseAlgebra", "InverseEffect", "RollbackRecord", "action_with_inverse_guarantee",
    # The reference's composition (python/clampai/_composition.py).
    "CompositionType", "ContractSpecification", "InterfaceSignature", "OperadicComposition",
    "SuperTask", "TaskComposer", "VerificationCertificate",
    # The reference's barriers (python/clampai/_barriers.py).
    "ActiveHJBBarrier", "AuthoritativeHJBBarrier", "CaptureBasin", "ControlBarrierFunction",
    "HJBBarrierCheck", "HJBEnforcementCheck", "PerInvariantBudget", "QPProjector",
    "RecoveryStrategy", "SafeHoverSignal", "SafeHoverState", "choose_recovery_strategy",
]


class Result:
    """A dataclass-like view of a JSON report (the command line's schema): its keys are
    attributes (nested objects are Results too), `to_dict()` returns the plain data."""

    __slots__ = ("_data",)

    def __init__(self, data: _Mapping[str, _Any]) -> None:
        object.__setattr__(self, "_data", dict(data))

    def __getattr__(self, name: str) -> _Any:
        try:
            return _wrap(self._data[name])
        except KeyError:
            raise AttributeError(f"{type(self).__name__} has no field `{name}`") from None

    def __setattr__(self, name: str, value: _Any) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable")

    def __getitem__(self, name: str) -> _Any:
        return _wrap(self._data[name])

    def __contains__(self, name: object) -> bool:
        return name in self._data

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other._data == self._data  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash(_json.dumps(self._data, sort_keys=True, default=str))

    def __dir__(self) -> _List[str]:
        return sorted(set(self._data) | {"to_dict", "to_json"})

    def keys(self) -> _List[str]:
        return list(self._data)

    def to_dict(self) -> _Dict[str, _Any]:
        return _json.loads(_json.dumps(self._data, default=str))

    def to_json(self) -> str:
        return _json.dumps(self._data, default=str)

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v!r}" for k, v in list(self._data.items())[:6])
        more = ", ..." if len(self._data) > 6 else ""
        return f"{type(self).__name__}({fields}{more})"


def _wrap(value: _Any) -> _Any:
    if isinstance(value, dict):
        return Result(value)
    if isinstance(value, list):
        return [_wrap(v) for v in value]
    return value


class VerifyReport(Result):
    """`verify`: the obligations (base case, preservation, budget facts, lints) with verdicts."""

    __slots__ = ()

    @property
    def all_proved(self) -> bool:
        """True iff no obligation is refuted or unknown (`clampai verify` exits 0)."""
        summary = self._data["summary"]
        return summary["refuted"] == 0 and summary["unknown"] == 0


class LookaheadReport(Result):
    """`lookahead`: traps, dead ends and the cheapest plan ahead of a proposal."""

    __slots__ = ()


class RepairReport(Result):
    """`repair`: the closest approvable parameters, with a certificate, or the conflict."""

    __slots__ = ()


class ComposeReport(Result):
    """`compose`: the tasks' certificates and the composition obligations."""

    __slots__ = ()


class TraceEntry(Result):
    """One hash-chained trace entry (T6), as in a trace file: seq, kind, action, params,
    changes, cost, step, gross, net, prev, hash, ...

    Also the reference's form, the entries of a reference-form kernel's `ExecutionTrace`:
    `TraceEntry(step, action_id, action_name, state_before_fp, state_after_fp, cost, timestamp,
    approved, rejection_reasons=(), reasoning_summary="", prev_hash="")`, with `compute_hash()`
    (the SHA-256 of the whole entry)."""

    __slots__ = ()
    _FIELDS = ("step", "action_id", "action_name", "state_before_fp", "state_after_fp", "cost",
               "timestamp", "approved", "rejection_reasons", "reasoning_summary", "prev_hash")
    _DEFAULTS = {"rejection_reasons": (), "reasoning_summary": "", "prev_hash": ""}

    def __init__(self, *args: _Any, **fields: _Any) -> None:
        if len(args) == 1 and isinstance(args[0], (dict, _AbcMapping)) and not fields:
            super().__init__(args[0])
            return
        if len(args) > len(self._FIELDS):
            raise TypeError(f"TraceEntry takes at most {len(self._FIELDS)} fields")
        for name, value in zip(self._FIELDS, args):
            if name in fields:
                raise TypeError(f"TraceEntry got two values for `{name}`")
            fields[name] = value
        unknown = sorted(set(fields) - set(self._FIELDS))
        missing = [n for n in self._FIELDS if n not in fields and n not in self._DEFAULTS]
        if unknown:
            raise TypeError(f"TraceEntry: unknown fields {unknown}")
        if missing:
            raise TypeError(f"TraceEntry: missing fields {missing}")
        data = dict(self._DEFAULTS, **fields)
        data["rejection_reasons"] = tuple(data["rejection_reasons"])
        super().__init__({n: data[n] for n in self._FIELDS})

    def compute_hash(self) -> str:
        """The SHA-256 (hex) of the entry's canonical JSON, `prev_hash` included (T6)."""
        digest = _clampai._canonical_sha256(self._data)  # the same bytes, written in C++
        if digest is None:  # a value only Python's encoder writes (default=str)
            digest = _hashlib.sha256(_CANONICAL.encode(self._data).encode()).hexdigest()
        return digest


_CANONICAL = _json.JSONEncoder(sort_keys=True, separators=(",", ":"), default=str)


class TraceCheck(Result):
    """The result of verifying a trace: ok, message (and entries, sealed for a file)."""

    __slots__ = ()

    def __bool__(self) -> bool:
        return bool(self._data.get("ok"))


class BudgetStatus(Result):
    """The kernel's budget: budget (total), spent_gross, spent_net, remaining (Decimals)."""

    __slots__ = ()


class PoolStatus(Result):
    """One budget pool's figures (docs/POOLS.md): name, parent (None for a root), budget (its
    total), spent_gross, spent_net, remaining (Decimals, every task's spend) and tasks (the
    kernels bound to it directly)."""

    __slots__ = ()


class Pool:
    """Pool `name` of a PoolTree (`tree[name]`): what `SafetyKernel(task, pool=...)` takes, and
    its figures (`status`), read afresh each time."""

    __slots__ = ("tree", "name")

    def __init__(self, tree: "PoolTree", name: str) -> None:
        self.tree = tree
        self.name = name

    @property
    def status(self) -> PoolStatus:
        return self.tree.status()[self.name]

    def __repr__(self) -> str:
        return f"Pool({self.name!r})"


def _pool_total(value: _Any) -> _Any:
    # Exact: a Decimal or a float goes to the pools file's reader as its decimal text.
    if isinstance(value, bool):
        raise TypeError("a pool's total is a number, not a bool")
    return str(value) if isinstance(value, (_Decimal, float)) else value


class PoolTree:
    """Budget pools that nest (docs/POOLS.md): `PoolTree({"org": {"total": 100}, "team-a":
    {"total": 40, "parent": "org"}})`, or `PoolTree.load(path)` (a pools file). A kernel made
    with `pool=tree["team-a"]` commits a charge only if it fits its own budget and every pool
    from `team-a` up to the root; one tree is shared by every kernel bound to it. Raises
    SpecError naming the JSON path of a bad declaration (`pools.team-a.parent`)."""

    __slots__ = ("_tree",)

    def __init__(self, pools: _Mapping[str, _Mapping[str, _Any]]) -> None:
        decls = {name: {k: _pool_total(v) if k == "total" else v for k, v in dict(d).items()}
                 for name, d in dict(pools).items()}
        self._tree = _clampai._pools_from_json(_json.dumps({"pools": decls}))

    @classmethod
    def load(cls, path: _Any) -> "PoolTree":
        """Reads a pools file (JSON). Raises SpecError (`FILE:LINE:COLUMN: json.path: ...`) or
        FileError."""
        tree = cls.__new__(cls)
        tree._tree = _clampai._load_pools(str(path))
        return tree

    def status(self) -> _Dict[str, PoolStatus]:
        """Every pool's figures by name, parents before their children, read at one moment."""
        return {name: PoolStatus({"name": name, "parent": parent or None, "budget": total,
                                  "spent_gross": gross, "spent_net": net,
                                  "remaining": remaining, "tasks": tasks})
                for name, parent, total, gross, net, remaining, tasks in self._tree._status()}

    def set_total(self, name: str, total: _Any) -> None:
        """Raises or lowers pool `name`'s total at run time. Raises InvalidArgument below what
        it has spent (net), for a negative total, or one not exact at the pool's scale."""
        self._tree.set_total(str(name), str(_pool_total(total)))

    def __getitem__(self, name: str) -> Pool:
        if name not in self:
            raise KeyError(name)
        return Pool(self, name)

    def __contains__(self, name: object) -> bool:
        return name in self._tree.names

    def __iter__(self) -> _Any:
        return iter(self._tree.names)

    def __len__(self) -> int:
        return len(self._tree.names)

    def __repr__(self) -> str:
        return f"PoolTree({self._tree.names!r})"


def load_spec(path: str) -> TaskModel:
    """Loads and checks a JSON task spec file (docs/SPEC.md).
    Raises SpecError (`FILE:LINE:COLUMN: json.path: message`, as `clampai check` prints it) or
    FileError."""
    return _clampai._load_spec_file(str(path))


_Task = _Union[TaskDefinition, TaskModel, _Mapping[str, _Any], str]


def _model_of(task: _Any) -> _Tuple[TaskModel, _Optional["SafetyKernel"], str]:
    if isinstance(task, SafetyKernel):
        return task.model, task, task.model.name
    if isinstance(task, str):
        return load_spec(task), None, task
    if hasattr(task, "__fspath__"):
        return load_spec(str(task)), None, str(task)
    model = build_model(task)
    return model, None, model.name


def _is_reference_form(args: _Tuple[_Any, ...], kwargs: _Mapping[str, _Any]) -> bool:
    """`SafetyKernel(budget, invariants, ...)` (a number first) rather than `SafetyKernel(task)`."""
    if args:
        return isinstance(args[0], (int, float, _Decimal)) and not isinstance(args[0], bool)
    return "budget" in kwargs or "invariants" in kwargs


class _KernelType(type(_clampai.SafetyKernel)):  # type: ignore[misc]
    """SafetyKernel's metaclass: chooses the form by the arguments (docs/PYTHON.md)."""

    def __call__(cls, *args: _Any, **kwargs: _Any) -> _Any:
        if cls is SafetyKernel:
            if _is_reference_form(args, kwargs):
                return _FormalKernel(*args, **kwargs)
            if len(args) > 1:  # the reference's form, with something else than a budget
                raise TypeError("SafetyKernel(budget, invariants, ...): the budget must be a "
                                f"number, not {type(args[0]).__name__}; SafetyKernel(task) "
                                "takes one argument")
        return super().__call__(*args, **kwargs)

    def __instancecheck__(cls, obj: _Any) -> bool:
        return super().__instancecheck__(obj) or (cls is SafetyKernel
                                                  and isinstance(obj, _FormalKernel))


class SafetyKernel(_clampai.SafetyKernel, metaclass=_KernelType):
    """The runtime safety kernel for one task: decides each proposed action (budget, steps,
    dependencies, requires, effects, bounds, invariants) and commits approved ones atomically
    with a SHA-256 chained trace. Thread-safe; one kernel may be shared by Python threads.

    `evaluate(action, params=None)` -> Decision, `execute(action, params=None)` -> Outcome,
    `rollback(receipt)` -> Outcome. `action` is an id or an ActionSpec.

    `SafetyKernel(budget, invariants, *, min_action_cost=0.001, emergency_actions=None,
    metrics=None, reconcile_fn=None)` (a number first, or `budget=`) is the reference's form
    instead: `evaluate(state, action)` -> SafetyVerdict, `execute(state, action)` -> (State,
    TraceEntry), raising SafetyViolation when rejected (docs/PYTHON.md)."""

    def __init__(self, task: _Task, *, record_rejections: bool = False,
                 trace_file: _Optional[str] = None,
                 pool: _Union[Pool, PoolTree, None] = None) -> None:
        model, _, _ = _model_of(task)
        model, tree = _in_pool(task, model, pool)
        super().__init__(model, record_rejections, str(trace_file) if trace_file else "",
                         tree._tree if tree is not None else None)
        self._pool = Pool(tree, model.budget_pool) if tree is not None else None
        self._source = task
        self._preconditions: _List[_Tuple[str, _Callable[..., _Any]]] = []

    def evaluate_and_execute_atomic(self, action: _Any,
                                    params: _Optional[_Mapping[str, _Any]] = None,
                                    reasoning: str = "") -> Outcome:
        """The reference's atomic evaluate-and-commit: here every `execute` is atomic (T5), so
        this is `execute` (`reasoning` is accepted and not recorded)."""
        return self.execute(action, params)

    def add_precondition(self, fn: _Callable[..., _Any], name: _Optional[str] = None) -> None:
        """Registers `fn(state, action) -> (bool, str)` (or a bool), consulted, under the
        kernel's lock, after every decision that would approve a non-emergency action
        (`evaluate`, `evaluate_in`, `execute`). False rejects it with `precondition_failed`
        (the message is the string returned); a raise rejects it with `invariant_error`.
        `action` is the task's ActionSpec (a bare one with the id when the kernel was not built
        from a TaskDefinition). Preconditions run in the order added; the first that fails
        decides. The GIL is then released around every call into this kernel."""
        if not callable(fn):
            raise TypeError("a precondition is a callable fn(state, action) -> (bool, str)")
        label = name or getattr(fn, "__name__", "") or f"precondition_{len(self._preconditions)}"
        if label == "<lambda>":
            label = f"precondition_{len(self._preconditions)}"
        self._preconditions.append((label, fn))
        self._set_gate(self._gate)

    def _gate(self, state: State, action_id: str) -> _Any:
        spec = _action_spec(self._source, action_id)
        for label, fn in list(self._preconditions):
            try:
                verdict = fn(state, spec)
                if isinstance(verdict, tuple):
                    ok, why = bool(verdict[0]), str(verdict[1]) if len(verdict) > 1 else ""
                else:
                    ok, why = bool(verdict), ""
            except Exception as err:  # noqa: BLE001 - fail closed, as invariants do
                detail = f"{type(err).__name__}: {err}" if str(err) else type(err).__name__
                return ("invariant_error", label,
                        f"precondition `{label}` of `{action_id}` raised {detail}")
            if not ok:
                return ("precondition_failed", action_id,
                        f"precondition `{label}` of `{action_id}` failed"
                        + (f": {why}" if why else ""))
        return None

    def register_emergency_action(self, action_id: str) -> None:
        """Marks `action_id` as an emergency action (T8: exempt from the minimum cost, the step
        limit and dependencies; it must cost 0). The kernel is bound to its model, whose digest
        the trace's genesis records, so this rebuilds the kernel: only before the first action,
        never with a trace file, and not while other threads use the kernel. Prefer declaring
        them in the task (`emergency_actions`)."""
        action_id = _action_id(action_id)
        if action_id in self.model.emergency_actions:
            return
        source = _with_emergency_source(self._source, action_id)
        # In the same pool: the rebuilt model names it as the first did.
        self._reset(_in_pool(source, build_model(source), self._pool)[0])
        self._source = source

    @property
    def pool(self) -> _Optional[Pool]:
        """The pool the kernel's budget sits in (`pool.status`: its figures), or None."""
        return self._pool

    @property
    def budget(self) -> BudgetStatus:
        total, gross, net, remaining = self._budget()
        return BudgetStatus({"budget": total, "spent_gross": gross, "spent_net": net,
                             "remaining": remaining})

    @property
    def trace(self) -> _List[TraceEntry]:
        """The trace so far (genesis first), as entries."""
        return [TraceEntry(_json.loads(line)) for line in self._trace_lines()]

    def verify_trace(self) -> TraceCheck:
        """Re-checks the in-memory hash chain (T6)."""
        ok, message = self._verify_trace()
        return TraceCheck({"ok": ok, "message": message})

    def status(self) -> str:
        b = self.budget
        return (f"steps {self.step_count}/{self.max_steps}, budget {b.spent_net} of {b.budget} "
                f"spent, trace {self.trace_length} entries")


def verify(task: _Task, *, depth: int = 0, timeout_ms: int = 10000, jobs: int = 1) -> VerifyReport:
    """Proves (with Z3) that every action preserves every blocking invariant, the base case,
    the budget facts and the lints, as `clampai verify --format json` does. Python-callable
    invariants are opaque: their obligations are `unknown`, never proved. The GIL is released
    while Z3 runs."""
    model, _, name = _model_of(task)
    return VerifyReport(_json.loads(_clampai._verify(model, name, timeout_ms, jobs, depth)))


def lookahead(task: _Task, action: _Any, params: _Optional[_Mapping[str, _Any]] = None, *,
              depth: int = 3, engine: str = "explicit", state: _Optional[State] = None,
              timeout_ms: int = 1000) -> LookaheadReport:
    """What lies `depth` steps ahead of a proposal: capture basins entered or reachable, dead
    ends, the cheapest plan to the goal (`clampai lookahead --format json`). From a kernel's
    current situation when `task` is a SafetyKernel, else from the initial one (or `state`)."""
    model, kernel, _ = _model_of(task)
    return LookaheadReport(_json.loads(_clampai._lookahead(
        model, kernel, _action_id(action), dict(params or {}), state, depth, engine, timeout_ms)))


def repair(task: _Task, action: _Any, params: _Mapping[str, _Any], *, norm: _Optional[str] = None,
           weights: _Optional[_Mapping[str, _Any]] = None, state: _Optional[State] = None,
           timeout_ms: int = 10000) -> RepairReport:
    """The parameter values closest to `params` that the kernel approves, with a certificate,
    or the constraints that conflict (`clampai repair --format json`)."""
    model, kernel, _ = _model_of(task)
    return RepairReport(_json.loads(_clampai._repair(
        model, kernel, _action_id(action), dict(params), state, norm or "", dict(weights or {}),
        timeout_ms)))


def compose(manifest: str, *, cache: _Optional[str] = None, jobs: int = 1,
            timeout_ms: int = 10000) -> ComposeReport:
    """Checks a composition manifest of task specs through their interface contracts
    (`clampai compose --format json`)."""
    return ComposeReport(_json.loads(_clampai._compose(str(manifest), cache or "", jobs,
                                                      timeout_ms)))


def verify_trace_file(path: str) -> TraceCheck:
    """Verifies a JSON Lines trace file's hash chain (`clampai trace verify`); an unsealed
    trace is accepted."""
    ok, entries, sealed, message = _clampai._verify_trace_file(str(path))
    return TraceCheck({"ok": ok, "entries": entries, "sealed": sealed, "message": message})


def _action_spec(task: _Any, action_id: str) -> _Any:
    if isinstance(task, TaskDefinition):
        for a in task.available_actions:
            if a.id == action_id:
                return a
    return ActionSpec(id=action_id)


def _spec_of(task: _Any) -> _Optional[_Dict[str, _Any]]:
    """A copy of the spec dict of a spec file or a spec dict (None for anything else)."""
    if isinstance(task, str) or hasattr(task, "__fspath__"):
        with open(str(task), encoding="utf-8") as f:
            task = _json.load(f)
    return dict(task) if isinstance(task, _Mapping) else None


def _with_emergency_source(task: _Any, action_id: str) -> _Any:
    """`task` with `action_id` among its emergency actions (a TaskDefinition or a spec dict)."""
    if isinstance(task, TaskDefinition):
        return _dataclasses.replace(task,
                                    emergency_actions=list(task.emergency_actions) + [action_id])
    spec = _spec_of(task)
    if spec is not None:
        spec["emergency_actions"] = list(spec.get("emergency_actions", [])) + [action_id]
        return spec
    raise InvalidArgument(
        "register_emergency_action needs the task the kernel was built from (a TaskDefinition, "
        "a spec dict or a spec file), not a TaskModel: declare the emergency actions in the task")


def _in_pool(task: _Any, model: TaskModel,
             pool: _Union[Pool, PoolTree, None]) -> _Tuple[TaskModel, _Optional[PoolTree]]:
    """The model whose budget sits in `pool` (rebuilt from `task` with `budget.pool` when the
    task names none), and the tree to bind it in."""
    named = model.budget_pool
    if pool is None:
        if named:
            raise SpecError(f"budget.pool: the budget is in pool `{named}`: give pool= (a "
                            "PoolTree, or one of its pools: tree[name]) (docs/POOLS.md)")
        return model, None
    if isinstance(pool, PoolTree):
        if not named:
            raise InvalidArgument("pool= is a PoolTree, but the task's budget names no pool: "
                                  "give one of its pools (tree[name]), or name it in the task "
                                  "(budget.pool)")
        return model, pool
    if not isinstance(pool, Pool):
        raise TypeError(f"pool= is a Pool (tree[name]) or a PoolTree, not {type(pool).__name__}")
    if named:
        if named != pool.name:
            raise InvalidArgument(f"the task's budget is in pool `{named}`, not in pool= "
                                  f"`{pool.name}`")
        return model, pool.tree
    if isinstance(task, TaskDefinition):
        return _dataclasses.replace(task, budget_pool=pool.name).build(), pool.tree
    spec = _spec_of(task)
    if spec is None:
        raise InvalidArgument(
            f"pool={pool!r} needs the task the kernel is built from (a TaskDefinition, a spec "
            "dict or a spec file), not a TaskModel: name the pool in its budget (budget.pool)")
    spec["budget"] = dict(spec.get("budget", {}), pool=pool.name)
    return build_model(spec), pool.tree


def _action_id(action: _Any) -> str:
    if isinstance(action, str):
        return action
    return str(getattr(action, "id"))


from ._orchestrator import (AsyncOrchestrator, ExecutionResult, LLMAdapter,  # noqa: E402
                            Orchestrator)  # (uses SafetyKernel)
from ._gradients import (BoundarySeverity, GradientReport, GradientScore,  # noqa: E402
                         GradientTracker, JacobianFusion, JacobianReport, JacobianScore,
                         SensitivityLevel)
from ._shared_budget import ProcessSharedBudgetController  # noqa: E402
# The reasoning layer (python/clampai/_reasoning.py); its `Outcome` is also the kernel's.
from ._reasoning import (ActionValue, ActionValueComputer, Belief, BeliefState,  # noqa: E402
                         CausalGraph, ClampAI_SYSTEM_PROMPT, CostAwarePriorFactory, Dependency,
                         MockLLMAdapter, Outcome, OutcomeType, ProgressMonitor, ReasoningRequest,
                         ReasoningResponse, SaliencyEngine, SaliencyResult, TerminationReason,
                         parse_llm_response)
from . import hardening, invariants  # noqa: E402
from .invariants import *  # noqa: E402,F401,F403 (the reference exports its factories at the top)
# The reference exports its attestors and its monitor at the top too.
from .hardening import (Attestation, AttestationGate, AttestationResult,  # noqa: E402
                        Attestor, DataLabel, DependencyDiscovery, EnvironmentDriftError,
                        EnvironmentProbe, EnvironmentReconciler, FailurePattern, LabelledData,
                        MultiDimensionalAttestor, Permission, PredicateAttestor,
                        QualityDimension, QualityScore, ReadinessProbe, ReconciliationResult,
                        ReferenceMonitor, ResourceDescriptor, ResourceState, ResourceTracker,
                        SecurityLevel, SubprocessAttestor, TemporalCausalGraph,
                        TemporalDependency)

__all__ += ["ActionValue", "ActionValueComputer", "Belief", "BeliefState", "CausalGraph",
            "ClampAI_SYSTEM_PROMPT", "CostAwarePriorFactory", "Dependency", "MockLLMAdapter",
            "OutcomeType", "ProgressMonitor", "ReasoningRequest", "ReasoningResponse",
            "SaliencyEngine", "SaliencyResult", "TerminationReason", "parse_llm_response"]
__all__ += ["AsyncOrchestrator", "ProcessSharedBudgetController", "BoundarySeverity",
            "GradientReport", "GradientScore", "GradientTracker", "JacobianFusion",
            "JacobianReport", "JacobianScore", "SensitivityLevel"]
__all__ += invariants.__all__
__all__ += ["Attestation", "Attestor", "MultiDimensionalAttestor", "PredicateAttestor",
            "ReferenceMonitor", "SubprocessAttestor"]
__all__ += ["AttestationGate", "AttestationResult", "DataLabel", "DependencyDiscovery",
            "EnvironmentDriftError", "EnvironmentProbe", "EnvironmentReconciler",
            "FailurePattern", "LabelledData", "Permission", "QualityDimension", "QualityScore",
            "ReadinessProbe", "ReconciliationResult", "ResourceDescriptor", "ResourceState",
            "ResourceTracker", "SecurityLevel", "TemporalCausalGraph", "TemporalDependency"]

del annotations  # the __future__ import's name: not part of the API
