"""The reference's formal layer (clampai 1.0.1's `formal.py`, `api.py`, `testing.py`) on this
project's kernel: `SafetyKernel(budget=..., invariants=[...])` with `evaluate(state, action)`,
`execute(state, action)`; `BudgetController`, `ExecutionTrace`, `SafetyVerdict`,
`CheckResult`, the claims, `SafetyViolation`, `@safe`, `SafetyHarness`, `make_state`,
`make_action` (docs/PYTHON.md, "The reference's form").

Each decision is the C++ kernel's (`decide`): for the state and the action given, the package
builds a one-action model (the state's variables, the action, the kernel's invariants, the
kernel's budget), cached by the state's shape and the action's content, and decides it with the
budget and step counters of a C++ ledger (`_clampai._Ledger`). The budget is exact: fixed point,
never a float's rounding (the floats the reference returns are read from the exact amounts).
"""

from __future__ import annotations

import dataclasses
import decimal
import enum
import functools
import math
import re
import threading
import time
import uuid
import weakref
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Protocol, Sequence, Set, Tuple

from . import _clampai
from ._clampai import State
from . import _opaque
from ._errors import InvalidArgument, SpecError
from ._task import ActionSpec, Effect, Invariant, TaskDefinition, _number_text, _scale_of, _type_of

__all__ = [
    "AsyncSafetyKernel", "MetricsBackend", "NoOpMetrics", "RejectionFormatter",
    "GuaranteeLevel", "Claim", "FORMAL_CLAIMS", "HARDENING_CLAIMS", "REASONING_CLAIMS",
    "CheckResult", "SafetyVerdict", "SafetyViolation", "SafetyBarrierViolation",
    "BudgetController", "ExecutionTrace", "FormalKernel", "safe", "clampai_safe",
    "make_state", "make_action", "SafetyHarness", "check_invariant", "simulate",
    "violation_count",
]


# --- Claims ---------------------------------------------------------------------------------

class GuaranteeLevel(enum.Enum):
    """How a claim is known: proven (by construction or a checked proof), conditional (proven
    under stated assumptions), empirical (measured), heuristic (best effort)."""

    PROVEN = "proven"
    CONDITIONAL = "conditional"
    EMPIRICAL = "empirical"
    HEURISTIC = "heuristic"


@dataclass(frozen=True)
class Claim:
    """A claim about the system, with how it is known (`level`), where it is shown (`proof`)
    and what it assumes."""

    name: str
    statement: str
    level: GuaranteeLevel
    proof: str = ""
    assumptions: Tuple[str, ...] = ()

    def __repr__(self) -> str:
        return f"[{self.level.value.upper()}] {self.name}: {self.statement}"


_P, _C, _E, _H = (GuaranteeLevel.PROVEN, GuaranteeLevel.CONDITIONAL, GuaranteeLevel.EMPIRICAL,
                  GuaranteeLevel.HEURISTIC)

# The kernel's theorems as docs/THEOREMS.md states and checks them.
FORMAL_CLAIMS = [
    Claim("T1", "0 <= spent_net(t) <= B at every step", _P,
          "Coq reachable_net_le_total; TLC BudgetSafe; exact fixed-point amounts "
          "(docs/THEOREMS.md T1)."),
    Claim("T2", "at most floor(B / min_action_cost) non-emergency steps", _P,
          "Coq reachable_steps_le_bound (docs/THEOREMS.md T2).",
          assumptions=("min_action_cost > 0",)),
    Claim("T3", "blocking invariants hold in every reached state", _C,
          "Coq reachable_invariants_hold; Z3 per spec with `clampai verify` (docs/THEOREMS.md "
          "T3).", assumptions=("the initial state satisfies them",)),
    Claim("T4", "spent_gross never decreases", _P,
          "Coq steps_gross_monotone; TLC GrossMonotone (docs/THEOREMS.md T4)."),
    Claim("T5", "a rejected action changes nothing; an approved one commits all at once", _P,
          "Coq rejected_step_unchanged (docs/THEOREMS.md T5)."),
    Claim("T6", "the trace is hash-chained: a changed entry is detected", _P,
          "SHA-256 chain over each whole entry; property test (docs/THEOREMS.md T6)."),
    Claim("T7", "rollback(execute(s, a)) == s, refunding the cost once", _P,
          "Coq rollback_restores (docs/THEOREMS.md T7)."),
    Claim("T8", "an emergency action is never blocked by cost, steps or dependencies", _C,
          "Property test (docs/THEOREMS.md T8).",
          assumptions=("declared an emergency action", "cost 0",
                       "its effects keep the blocking invariants")),
]

# The hardening layer's (docs/HARDENING.md).
HARDENING_CLAIMS = [
    Claim("H1", "an attestor's command is fixed when it is made, run without a shell, its "
          "program on an allowlist", _P, "SubprocessAttestor; docs/HARDENING.md."),
    Claim("H2", "an action that moves labelled data to a lower label is rejected "
          "(information_flow)", _P, "The reference monitor's guard; docs/HARDENING.md.",
          assumptions=("the variables' labels are declared",)),
    Claim("H3", "an action whose attestation fails is not committed (attestation_failed)", _P,
          "The monitor's commit gate, under the kernel's lock; docs/HARDENING.md."),
    Claim("H4", "drift between the model and the world is detected after execution", _C,
          "Environment probes; docs/HARDENING.md.",
          assumptions=("the probes read the variables the actions change",)),
    Claim("H5", "a multi-dimensional attestation passes only if every dimension does", _P,
          "MultiDimensionalAttestor (quorum: all by default)."),
]

# The agent loop's (docs/AGENT.md).
REASONING_CLAIMS = [
    Claim("R1", "belief updates are exact Beta-Bernoulli conjugate updates", _P,
          "The agent's beliefs (docs/AGENT.md)."),
    Claim("R2", "an action whose dependencies have not completed is never executed", _P,
          "A kernel check (dependency_unmet), not only a planner hint."),
    Claim("R3", "the LLM chooses only among actions the kernel would approve", _P,
          "The loop offers approved actions; an unknown choice is a counted failure."),
    Claim("R4", "the LLM cannot override a kernel decision", _P,
          "Every choice goes through the kernel's execute (T5)."),
    Claim("R5", "action values reduce wasted spending", _H,
          "A scoring heuristic (docs/AGENT.md)."),
]


# --- Metrics --------------------------------------------------------------------------------

class MetricsBackend(Protocol):
    """What a reference-form kernel reports to (`SafetyKernel(..., metrics=backend)`): any
    object with these three methods. Names: `clampai_actions_total{status}`,
    `clampai_kernel_latency_seconds{operation}`, `clampai_budget_utilization_ratio`,
    `clampai_budget_remaining`,
    `clampai_step_count`, `clampai_invariant_violations_total{invariant, enforcement}`,
    `clampai_rollbacks_total`. What a backend raises is ignored: metrics never change a
    decision."""

    def increment(self, name: str, labels: Optional[Dict[str, str]] = None) -> None: ...

    def observe(self, name: str, value: float,
                labels: Optional[Dict[str, str]] = None) -> None: ...

    def gauge(self, name: str, value: float, labels: Optional[Dict[str, str]] = None) -> None: ...


class NoOpMetrics:
    """The backend that records nothing (the default)."""

    def increment(self, name: str, labels: Optional[Dict[str, str]] = None) -> None:
        return None

    def observe(self, name: str, value: float, labels: Optional[Dict[str, str]] = None) -> None:
        return None

    def gauge(self, name: str, value: float, labels: Optional[Dict[str, str]] = None) -> None:
        return None

    def __repr__(self) -> str:
        return "NoOpMetrics()"


# --- Verdicts and errors --------------------------------------------------------------------

class CheckResult(enum.Enum):
    """The result of one check of a verdict."""

    PASS = enum.auto()
    FAIL_BUDGET = enum.auto()
    FAIL_INVARIANT = enum.auto()
    FAIL_TERMINATION = enum.auto()
    FAIL_PRECONDITION = enum.auto()


class SafetyBarrierViolation(enum.Enum):
    """How a proposal meets a capture basin (the lookahead's traps)."""

    ALREADY_IN_BASIN = "already_in_basin"
    ACTION_DIRECTLY_ENTERS = "direct_entry"
    REACHABLE_IN_STEPS = "reachable_in_steps"
    NO_VIOLATION = "safe"


@dataclass
class SafetyVerdict:
    """The verdict on one proposed action: `approved`, every check as (name, CheckResult,
    detail), the state the action leads to (when approved) and its cost. `decision` is the
    kernel's own `Decision` (stable reason codes), when the kernel made the verdict."""

    approved: bool
    checks: List[Tuple[str, CheckResult, str]]
    simulated_next_state: Optional[State] = None
    cost: float = 0.0
    decision: Any = None

    @property
    def rejection_reasons(self) -> Tuple[str, ...]:
        return tuple(detail for _, result, detail in self.checks if result != CheckResult.PASS)

    def __getattr__(self, name: str) -> Any:
        # A verdict whose every check passed (`_passed_verdict`) writes its checks out when
        # they are first read: most approvals are never looked at beyond `approved`.
        pending = self.__dict__.get("_pending")
        if name != "checks" or pending is None:
            raise AttributeError(f"'SafetyVerdict' object has no attribute '{name}'")
        cost, remaining, scale, step, max_steps, invariants = pending
        checks = [("Budget", CheckResult.PASS,
                   f"{cost:f} <= {decimal.Decimal(remaining).scaleb(-scale)} remaining"),
                  ("Termination", CheckResult.PASS, f"Step {step + 1}/{max_steps}")]
        checks += [(f"Invariant:{inv.name}", CheckResult.PASS, "holds") for inv in invariants]
        self.checks = checks
        del self.__dict__["_pending"]
        return checks

    def summary(self) -> str:
        lines = [f"Safety Verdict: {'APPROVED' if self.approved else 'REJECTED'}"]
        for name, result, detail in self.checks:
            lines.append(f"  [{'ok' if result == CheckResult.PASS else '--'}] {name}: {detail}")
        return "\n".join(lines)


def _passed_verdict(cost: decimal.Decimal, next_state: Optional[State], decision: Any,
                    remaining: int, scale: int, step: int, max_steps: int,
                    invariants: Tuple[Invariant, ...]) -> SafetyVerdict:
    """An approved SafetyVerdict, every check passed, its checks written out when first read
    (the same checks `FormalKernel._verdict` writes)."""
    verdict = SafetyVerdict.__new__(SafetyVerdict)
    verdict.__dict__.update(approved=True, simulated_next_state=next_state, cost=float(cost),
                            decision=decision,
                            _pending=(cost, remaining, scale, step, max_steps, invariants))
    return verdict


class RejectionFormatter:
    """A rejected verdict as text for an LLM's next prompt, for a person, and as a JSON-ready
    record for an audit log."""

    @staticmethod
    def llm_message(verdict: SafetyVerdict, action: ActionSpec) -> str:
        reasons = verdict.rejection_reasons
        lines = [f"ACTION REJECTED: {action.name or action.id} (id={action.id!r})",
                 f"Reasons ({len(reasons)}):"]
        lines += [f"  - {r}" for r in reasons]
        lines.append("Propose another action that avoids every reason above; do not propose "
                     "this one again.")
        return "\n".join(lines)

    @staticmethod
    def user_message(verdict: SafetyVerdict, action: ActionSpec) -> str:
        reasons = verdict.rejection_reasons
        lines = [f"The action '{action.name or action.id}' was blocked by the safety kernel."]
        lines += [f"  - {r}" for r in reasons] or ["  (no reason recorded)"]
        return "\n".join(lines)

    @staticmethod
    def audit_record(verdict: SafetyVerdict, action: ActionSpec) -> Dict[str, Any]:
        record: Dict[str, Any] = {
            "action_id": action.id, "action_name": action.name, "approved": verdict.approved,
            "rejection_reasons": list(verdict.rejection_reasons),
            "checks": [{"name": n, "result": r.name, "detail": d} for n, r, d in verdict.checks],
            "cost": verdict.cost}
        if verdict.decision is not None:
            record["reason_codes"] = list(verdict.decision.reason_codes)
        return record


class SafetyViolation(RuntimeError):
    """A call the kernel rejected: `execute` of a rejected action, a `@safe` call. `verdict` is
    the SafetyVerdict (None if there was none). A RuntimeError, as the reference raises."""

    def __init__(self, reason: str, verdict: Optional[SafetyVerdict] = None) -> None:
        super().__init__(reason)
        self.verdict = verdict


# --- Amounts --------------------------------------------------------------------------------

def _exact(value: Any, what: str) -> decimal.Decimal:
    """A budget or cost as an exact Decimal (a float by its shortest repr)."""
    kind = type(value)
    if kind is float and math.isfinite(value):
        return decimal.Decimal(repr(value))
    if kind is int:
        return decimal.Decimal(value)
    if isinstance(value, bool) or not isinstance(value, (int, float, decimal.Decimal)):
        raise TypeError(f"{what} must be a number, not {type(value).__name__}")
    try:
        return decimal.Decimal(_number_text(value) if not isinstance(value, int) else value)
    except ValueError as err:
        raise ValueError(f"{what}: {err}") from None


_MAX_SCALE = 18
_MAX_UNITS = 2 ** 63 - 1


def _units(amount: decimal.Decimal, scale: int) -> int:
    return int(amount.scaleb(scale))


def _digits(amount: decimal.Decimal) -> int:
    """The digits after the point an exact amount needs."""
    return max(0, -int(amount.as_tuple().exponent))


class BudgetController:
    """The budget ledger (T1, T4), exact: the C++ kernel's BudgetController in fixed point with
    as many digits after the point as the amounts given need. Amounts read back are floats, as
    in the reference, converted from the exact amounts; `exact()` gives them as Decimals.
    Thread-safe."""

    def __init__(self, budget: float) -> None:
        total = _exact(budget, "budget")
        if total < 0:
            raise ValueError(f"Budget must be >= 0, got {budget}")
        self._scale = max(3, _digits(total))
        if self._scale > _MAX_SCALE or _units(total, self._scale) > _MAX_UNITS:
            raise ValueError(f"budget {budget} does not fit a 64-bit fixed-point amount with "
                             f"{self._scale} digits after the point")
        self._ledger = _clampai._Ledger(_units(total, self._scale), self._scale)
        self._log: List[Tuple[str, float, float]] = []
        self._lock = threading.RLock()

    def _fit(self, amount: decimal.Decimal) -> int:
        """`amount` in the ledger's units, refining its scale if needed (under the lock)."""
        need = _digits(amount)
        if need > _MAX_SCALE:
            raise ValueError(f"{amount} needs {need} digits after the point; a budget's amounts "
                             f"have at most {_MAX_SCALE}")
        if need > self._ledger.scale:
            self._ledger.rescale(need - self._ledger.scale)
        units = _units(amount, self._ledger.scale)
        if units > _MAX_UNITS:
            raise ValueError(f"{amount} does not fit a 64-bit fixed-point amount with "
                             f"{self._ledger.scale} digits after the point")
        return units

    def _amount(self, units: int) -> decimal.Decimal:
        return decimal.Decimal(units).scaleb(-self._ledger.scale)

    @property
    def budget(self) -> float:
        return float(self._amount(self._ledger.total))

    @property
    def spent_gross(self) -> float:
        return float(self._amount(self._ledger.gross))

    @property
    def spent_refunded(self) -> float:
        return float(self._amount(self._ledger.refunded))

    @property
    def spent_net(self) -> float:
        return float(self._amount(self._ledger.net))

    @property
    def spent(self) -> float:
        return self.spent_net

    @property
    def remaining(self) -> float:
        return float(self._amount(self._ledger.remaining))

    def exact(self) -> Dict[str, decimal.Decimal]:
        """budget, spent_gross, spent_refunded, spent_net, remaining as exact Decimals."""
        with self._lock:
            l = self._ledger
            return {"budget": self._amount(l.total), "spent_gross": self._amount(l.gross),
                    "spent_refunded": self._amount(l.refunded),
                    "spent_net": self._amount(l.net), "remaining": self._amount(l.remaining)}

    def can_afford(self, cost: float) -> Tuple[bool, str]:
        amount = _exact(cost, "cost")
        if amount < 0:
            raise ValueError(f"Cost must be >= 0, got {cost}")
        with self._lock:
            if self._ledger.can_afford(self._fit(amount)):
                return True, ""
            return False, (f"cannot afford {_number_text(amount)}: spent_net "
                           f"{self._amount(self._ledger.net)}, remaining "
                           f"{self._amount(self._ledger.remaining)}")

    def charge(self, action_id: str, cost: float) -> None:
        """Charges `cost` (T1: raises, changing nothing, if it does not fit)."""
        amount = _exact(cost, "cost")
        if amount < 0:
            raise ValueError("Cost must be >= 0")
        with self._lock:
            try:
                self._ledger.charge(self._fit(amount))
            except ValueError as err:
                raise RuntimeError(f"budget: {err}") from None
            self._log.append((action_id, float(amount), time.time()))

    def refund(self, action_id: str, cost: float) -> None:
        """Refunds `cost` (net spend falls, gross does not: T4). A refund of more than the net
        spend is refused with InvalidArgument (the reference ignores it silently)."""
        amount = _exact(cost, "cost")
        if amount < 0:
            raise ValueError("Cost must be >= 0")
        with self._lock:
            if not self._ledger.refund(self._fit(amount)):
                raise InvalidArgument(
                    f"cannot refund {_number_text(amount)} for `{action_id}`: more than the "
                    f"net spend {self._amount(self._ledger.net)}")
            self._log.append((f"REFUND:{action_id}", -float(amount), time.time()))

    def utilization(self) -> float:
        with self._lock:
            total = self._ledger.total
            return 0.0 if total == 0 else self._ledger.net / total

    @property
    def ledger(self) -> List[Tuple[str, float, float]]:
        return list(self._log)

    def summary(self) -> str:
        e = self.exact()
        return (f"Budget: {e['budget']} | Spent (gross): {e['spent_gross']} | Refunded: "
                f"{e['spent_refunded']} | Spent (net): {e['spent_net']} | Remaining: "
                f"{e['remaining']} | Utilization: {self.utilization():.1%}")

    def __repr__(self) -> str:
        return f"BudgetController({self.summary()})"


# --- The trace ------------------------------------------------------------------------------

_TRACE_ENTRY: Any = None


def _trace_entry_type() -> Any:
    global _TRACE_ENTRY
    if _TRACE_ENTRY is None:
        from . import TraceEntry  # the package's TraceEntry (both forms), defined after us
        _TRACE_ENTRY = TraceEntry
    return _TRACE_ENTRY


class ExecutionTrace:
    """The reference form's audit log: append-only, each entry linked to the SHA-256 of the
    one before (`prev_hash`, the genesis hash 64 zeros) over the whole entry (T6).
    Thread-safe."""

    GENESIS = "0" * 64

    def __init__(self) -> None:
        self._entries: List[Any] = []
        self._head = self.GENESIS
        self._lock = threading.Lock()

    def append(self, entry: Any) -> str:
        """Appends `entry` linked to the current head; returns its hash."""
        return self._append(entry)[1]

    def _append(self, entry: Any) -> Tuple[Any, str]:
        """(the entry as appended, its hash)."""
        entry_type = _trace_entry_type()
        if not isinstance(entry, entry_type):
            raise TypeError(f"a trace entry is a TraceEntry, not {type(entry).__name__}")
        return self._link(dict(entry._data))

    def _link(self, fields: Dict[str, Any]) -> Tuple[Any, str]:
        """Appends the entry of these (checked) fields, its `prev_hash` set to the head:
        (the entry, its hash)."""
        with self._lock:
            fields["prev_hash"] = self._head
            linked = _trace_entry_type()(fields)
            digest = linked.compute_hash()
            self._entries.append(linked)
            self._head = digest
            return linked, digest

    def verify_integrity(self) -> Tuple[bool, str]:
        """Walks the chain: (True, message) or (False, where it breaks)."""
        with self._lock:
            entries, head = list(self._entries), self._head
        prev = self.GENESIS
        for i, entry in enumerate(entries):
            if entry.prev_hash != prev:
                return False, f"Chain broken at entry {i}"
            prev = entry.compute_hash()
        if prev != head:
            return False, f"Chain broken at entry {len(entries) - 1} (the head's hash differs)"
        return True, f"Trace integrity verified ({len(entries)} entries)"

    @property
    def entries(self) -> List[Any]:
        with self._lock:
            return list(self._entries)

    @property
    def length(self) -> int:
        return len(self._entries)

    def last_n(self, n: int) -> List[Any]:
        with self._lock:
            return self._entries[-n:] if n > 0 else []

    def summary(self, last_n: int = 5) -> str:
        lines = [f"Trace: {self.length} entries"]
        for e in self.last_n(last_n):
            lines.append(f"  [{'ok' if e.approved else '--'}] step={e.step} {e.action_name} "
                         f"cost={e.cost}")
        return "\n".join(lines)


# --- The kernel -----------------------------------------------------------------------------

_MODEL_ACTION = "action"  # the id of the one action of a model built for a proposal
_REASON_CHECK = {
    "below_min_cost": ("MinCost", CheckResult.FAIL_TERMINATION),
    "budget_exceeded": ("Budget", CheckResult.FAIL_BUDGET),
    "step_limit": ("Termination", CheckResult.FAIL_TERMINATION),
}


def _shape(value: Any) -> Any:
    """What of a value decides its variable's declaration (type, decimal scale)."""
    if isinstance(value, list):
        return ("list", _shape(value[0]) if value else None)
    if isinstance(value, decimal.Decimal):
        return ("decimal", _scale_of(value))
    return type(value).__name__


def _key(value: Any) -> Any:
    try:
        hash(value)
        return value
    except TypeError:
        return repr(value)


# Where a model's error names an invariant: `invariants[N]`, its member and position, then ": ".
_INVARIANT_AT = re.compile(r"invariants\[(\d+)\][^:\s]*(?::\d+:\d+)?: ")
_UNKNOWN_VARIABLE = re.compile(r"unknown variable `([^`]+)`")
_OPAQUE_WHY = "`{}` holds a value the kernel's types do not include (a mapping, an object)"

# The template parameters that name variables, and the templates that an absent variable breaks.
_TEMPLATE_VARIABLES = ("variable", "variables", "count", "window_start", "clock")
_ABSENT_BREAKS = ("no_delete", "required_fields", "allowed_values")


def _family(value: Any) -> str:
    """The kind of value a model compares: bool, number, string or list."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float, decimal.Decimal)):
        return "number"
    return "string" if isinstance(value, str) else "list"


def _applicable(invariants: Sequence[Invariant], variables: Dict[str, Any],
                opaque: Sequence[str] = ()
                ) -> Tuple[List[Invariant], List[Tuple[Invariant, str, bool]]]:
    """The invariants a model of these variables can hold, and for each template over a
    variable the state lacks, (invariant, why, whether it holds): a state is not a task, so
    a template over a key it does not have reads nothing, as the reference's `get(key, 0)`
    does, except `no_delete`, `required_fields` and `allowed_values` (None is no allowed value),
    which an absent key breaks. A template over a key whose value the kernel does not read
    (`opaque`: a mapping, an object) is violated, but `no_delete` and `required_fields`, which
    it satisfies (the key is there)."""
    kept: List[Invariant] = []
    unread: List[Tuple[Invariant, str, bool]] = []
    for inv in invariants:
        if inv.is_template:
            names: List[str] = []
            for p in _TEMPLATE_VARIABLES:
                v = inv.predicate.get(p)
                names.extend([v] if isinstance(v, str) else list(v or ()))
            unreadable = [n for n in names if n in opaque]
            if unreadable:
                present = inv.predicate.get("template") in ("no_delete", "required_fields")
                if present and all(n in variables or n in opaque for n in names):
                    unread.append((inv, f"`{unreadable[0]}` is in the state", True))
                else:
                    unread.append((inv, _OPAQUE_WHY.format(unreadable[0]), False))
                continue
            missing = [n for n in names if n not in variables]
            if missing:
                unread.append((inv, f"`{missing[0]}` is not in the state",
                               inv.predicate.get("template") not in _ABSENT_BREAKS))
                continue
            if inv.predicate.get("template") == "allowed_values":
                # A Python set may mix types ({"ok", 1}); a value of another type than the
                # variable's can never be equal to it, so the model compares with the others.
                family = _family(variables[inv.predicate["variable"]])
                values = [v for v in inv.predicate.get("values", ()) if _family(v) == family]
                if not values:
                    unread.append((inv, f"`{inv.predicate['variable']}` holds a {family}, "
                                   "and no allowed value is one", False))
                    continue
                if len(values) != len(inv.predicate.get("values", ())):
                    inv = dataclasses.replace(inv, predicate=dict(inv.predicate, values=values))
        kept.append(inv)
    return kept, unread


class FormalKernel:
    """The reference's SafetyKernel: `SafetyKernel(budget, invariants, *, min_action_cost=0.001,
    emergency_actions=None, metrics=None, reconcile_fn=None)`. The state comes with every call;
    the kernel keeps the budget, the step count and the trace. Decisions are the C++ kernel's.
    Thread-safe: `execute` decides and commits under one lock (every execute is atomic)."""

    _CACHE_SIZE = 256

    def __init__(self, budget: float, invariants: Sequence[Invariant] = (), *,
                 min_action_cost: float = 0.001, emergency_actions: Optional[Set[str]] = None,
                 metrics: Any = None,
                 reconcile_fn: Optional[Callable[[State, ActionSpec, Any], Any]] = None) -> None:
        self._min_cost = _exact(min_action_cost, "min_action_cost")
        if self._min_cost <= 0:
            raise ValueError(
                f"min_action_cost must be > 0 for T2 (termination), got {min_action_cost}")
        self.budget = BudgetController(budget)
        self.budget._fit(self._min_cost)
        self.invariants: List[Invariant] = list(invariants)
        for inv in self.invariants:
            if not isinstance(inv, Invariant):
                raise TypeError(f"an invariant is an Invariant, not {type(inv).__name__}")
        self.min_action_cost = float(self._min_cost)
        self.emergency_actions: Set[str] = set(emergency_actions or ())
        self.trace = ExecutionTrace()
        self.max_steps = int(self.budget.exact()["budget"] / self._min_cost)
        self._metrics = metrics
        self._reconcile_fn = reconcile_fn
        self._preconditions: List[Callable[[State, ActionSpec], Any]] = []
        self._models: "OrderedDict[Any, Any]" = OrderedDict()
        # By identity (both are immutable; the entry holds the object, so its id stays its):
        # an action's checked cost and the ledger scale it was fitted at, and a state's
        # variables with the shape part of the model key. Cleared when full.
        self._actions: Dict[int, Tuple[Any, decimal.Decimal, int, Any]] = {}
        self._states: Dict[int, Tuple[Any, Dict[str, Any], List[str], Any, Any]] = {}
        self._opaque_now: Dict[str, Any] = {}  # the decision's state's (under the lock)
        self._committed: List[Tuple[str, str, str, decimal.Decimal]] = []
        # The budget's own lock: a direct `budget.charge` and a decision never interleave (a
        # predicate may release the GIL in the middle of a decision).
        self._lock = self.budget._lock

    # -- the reference's API

    @property
    def step_count(self) -> int:
        return self.budget._ledger.steps

    @property
    def emergency_steps(self) -> int:
        return self.budget._ledger.emergency_steps

    def add_precondition(self, fn: Callable[[State, ActionSpec], Any]) -> None:
        """`fn(state, action) -> (bool, str)` (or a bool), checked by every evaluate after the
        kernel's checks; a raise is a failed precondition."""
        if not callable(fn):
            raise TypeError("a precondition is a callable fn(state, action) -> (bool, str)")
        self._preconditions.append(fn)

    def register_emergency_action(self, action_id: str) -> None:
        """Marks `action_id` as an emergency action (T8). It must cost 0 (a SpecError when it
        is proposed otherwise)."""
        self.emergency_actions.add(action_id)

    def evaluate(self, state: State, action: ActionSpec) -> SafetyVerdict:
        """The verdict on `action` in `state`, changing nothing."""
        with self._lock:
            return self._decide(state, action, commit=False)[0]

    def execute(self, state: State, action: ActionSpec,
                reasoning_summary: str = "") -> Tuple[State, Any]:
        """Decides and, if approved, commits atomically (charge, step, trace entry); returns
        (new state, trace entry). Raises SafetyViolation (a RuntimeError), changing nothing, if
        the action is rejected."""
        return self.evaluate_and_execute_atomic(state, action, reasoning_summary)

    def evaluate_and_execute_atomic(self, state: State, action: ActionSpec,
                                    reasoning_summary: str = "") -> Tuple[State, Any]:
        """The same as `execute` (every execute is atomic here)."""
        with self._lock:
            verdict, new_state = self._decide(state, action, commit=True)
            if not verdict.approved:
                raise SafetyViolation(
                    f"SAFETY VIOLATION: {action.id} rejected. Reasons: "
                    f"{verdict.rejection_reasons}", verdict)
            cost = self._checked_cost(action)
            before, after = state.fingerprint, new_state.fingerprint
            entry = self.trace._link({
                "step": self.step_count, "action_id": action.id, "action_name": action.name,
                "state_before_fp": before, "state_after_fp": after, "cost": float(cost),
                "timestamp": time.time(), "approved": True, "rejection_reasons": (),
                "reasoning_summary": str(reasoning_summary)})[0]
            self._committed.append((action.id, before, after, cost))
        if self._metrics is not None:
            self._emit("gauge", "clampai_budget_utilization_ratio", self.budget.utilization())
            self._emit("gauge", "clampai_budget_remaining", self.budget.remaining)
            self._emit("gauge", "clampai_step_count", float(self.step_count))
        if self._reconcile_fn is not None:
            try:
                reconciled = self._reconcile_fn(new_state, action, entry)
                if reconciled is not None:
                    new_state = reconciled
            except Exception:  # noqa: BLE001 - the reference's contract: never affects safety
                pass
        return new_state, entry

    def record_rejection(self, state: State, action: ActionSpec, reasons: Sequence[str],
                         reasoning_summary: str = "") -> Any:
        """Appends a rejected entry (nothing else changes)."""
        entry = _trace_entry_type()(
            step=self.step_count, action_id=action.id, action_name=action.name,
            state_before_fp=state.fingerprint, state_after_fp=state.fingerprint, cost=0.0,
            timestamp=time.time(), approved=False, rejection_reasons=tuple(reasons),
            reasoning_summary=reasoning_summary)
        return self.trace._append(entry)[0]

    def rollback(self, state_before: State, state_after: State, action: ActionSpec) -> State:
        """Undoes the most recent commit of `action` from `state_before` to `state_after` (T7):
        refunds its cost once and returns `state_before`. The step count stays (T2 is not
        loosened). InvalidArgument if no such commit is in effect, or the action is not
        reversible."""
        if not action.reversible:
            raise InvalidArgument(f"`{action.id}` is not reversible")
        key = (action.id, state_before.fingerprint, state_after.fingerprint)
        with self._lock:
            for i in range(len(self._committed) - 1, -1, -1):
                if self._committed[i][:3] == key:
                    cost = self._committed.pop(i)[3]
                    self.budget.refund(action.id, cost)
                    self._emit("increment", "clampai_rollbacks_total")
                    return state_before
        raise InvalidArgument(
            f"no commit of `{action.id}` from that state to that state is in effect: nothing "
            "to roll back")

    def status(self) -> str:
        return (f"SafetyKernel: step={self.step_count}/{self.max_steps} | "
                f"{self.budget.summary()} | trace={self.trace.length} entries")

    # -- the decision

    def _emit(self, kind: str, name: str, *args: Any, **labels: Any) -> None:
        if self._metrics is None:
            return
        try:
            getattr(self._metrics, kind)(name, *args, labels=labels or None)
        except Exception:  # noqa: BLE001 - metrics never affect a decision
            pass

    def _model(self, variables: Dict[str, Any], shapes: Any, action: ActionSpec,
               opaque: Sequence[str] = ()) -> Any:
        """The one-action model for a state of this shape and this action (cached)."""
        emergency = action.id in self.emergency_actions
        scale = self.budget._ledger.scale
        known = self._actions.get(id(action))
        # The action's part of the key, remembered with its cost, except its parameters (a
        # mapping, which may change inside the frozen action).
        facts = (known[3] if known is not None and known[0] is action
                 else _key((action.cost, action.effects, action.reversible,
                            getattr(action, "requires", ""))))
        parameters = getattr(action, "parameters", None)
        key = (shapes, facts, None if parameters is None else _key(repr(parameters)), emergency,
               scale, tuple(map(id, self.invariants)))
        model = self._models.get(key)
        if model is not None:
            self._models.move_to_end(key)
            return model
        # Variables the action writes that the state lacks start as the reference's effects
        # take them: a list for append/remove, 0 for arithmetic, undefined for set.
        overrides: Dict[str, Dict[str, Any]] = {}
        pads: Dict[str, Any] = {}
        for e in action.effects:
            if e.variable not in variables and e.variable not in pads:
                if e.mode in ("append", "remove"):
                    pads[e.variable] = []
                    overrides[e.variable] = {"type": "list", "element": _type_of(
                        e.value, _scale_of(e.value), e.variable)}
                elif e.mode in ("increment", "decrement", "multiply"):
                    pads[e.variable] = (decimal.Decimal(0).quantize(_exact(e.value, e.variable))
                                        if isinstance(e.value, (float, decimal.Decimal)) else 0)
                elif e.mode == "set":
                    pads[e.variable] = None
                    value = e.value
                    overrides[e.variable] = dict(
                        {"type": "list", "element": _type_of(value[0] if value else "", 0,
                                                             e.variable)}
                        if isinstance(value, (list, tuple))
                        else _type_of(value, _scale_of(value), e.variable), optional=True)
            elif e.mode == "delete":
                overrides.setdefault(e.variable, {})["optional"] = True
            elif (e.mode in ("increment", "decrement", "multiply")
                  and isinstance(variables[e.variable], int)
                  and not isinstance(variables[e.variable], bool)
                  and isinstance(e.value, (float, decimal.Decimal)) and _scale_of(e.value) > 0):
                # Python mixes ints and floats: an int variable changed by a fraction is a
                # decimal one here, its values exact.
                overrides[e.variable] = {"type": "decimal", "scale": _scale_of(e.value)}
        initial = dict(variables, **pads)
        invariants, absent = _applicable(self.invariants, initial, opaque)
        if opaque:
            # A Python predicate reads the whole state: the values beyond the kernel's types
            # of the state being decided are given back to the state it is called with.
            invariants = [dataclasses.replace(inv, predicate=self._with_opaque(inv.predicate))
                          if callable(inv.predicate) else inv for inv in invariants]
        task = TaskDefinition(
            goal="", initial_state=initial,
            # This project's additions to an action (a guard, parameters with their
            # defaults) are kept: a guard is never dropped.
            available_actions=[ActionSpec(_MODEL_ACTION, name=action.name, effects=action.effects,
                                          cost=action.cost if not emergency else 0,
                                          reversible=action.reversible,
                                          requires=getattr(action, "requires", ""),
                                          parameters=getattr(action, "parameters", None))],
            invariants=invariants, budget=self.budget.exact()["budget"],
            min_action_cost=self._min_cost, budget_scale=scale,
            emergency_actions=[_MODEL_ACTION] if emergency else [], variables=overrides,
            name="reference_form")
        # The invariants are kept with the model: their ids in the key stay theirs while cached.
        model = (self._build(task, absent, opaque), pads, absent, tuple(self.invariants))
        self._models[key] = model
        if len(self._models) > self._CACHE_SIZE:
            self._models.popitem(last=False)
        return model

    def _with_opaque(self, predicate: Callable[[Any], Any]) -> Callable[[Any], Any]:
        def with_values(state: Any) -> Any:
            _opaque.attach(state, self._opaque_now)
            return predicate(state)
        return with_values

    @staticmethod
    def _build(task: TaskDefinition, unread: List[Tuple[Invariant, str, bool]],
               opaque: Sequence[str] = ()) -> Any:
        """`task`'s model. An invariant this state's values cannot feed (a template over a
        string where it counts numbers) is left out and added to `unread` as violated, as the
        Python ClampAI counts a predicate that raises (fail-safe), with the type error as the
        reason; any other error in the model is raised."""
        while True:
            try:
                return task.build()
            except SpecError as err:
                found = _INVARIANT_AT.match(str(err))
                checked = [inv for inv in task.invariants if not callable(inv.predicate)]
                if found is None or int(found.group(1)) >= len(checked):
                    raise
                broken = checked[int(found.group(1))]
                why = str(err)[found.end():]
                absent = _UNKNOWN_VARIABLE.match(why)
                if absent is not None and absent.group(1) in opaque:
                    unread.append((broken, _OPAQUE_WHY.format(absent.group(1)), False))
                elif absent is not None:
                    # An expression over a key the state lacks is violated (fail-safe), but
                    # `!FLAG`: a flag never raised (the Python ClampAI's `get(flag, False)`).
                    unread.append((broken, f"`{absent.group(1)}` is not in the state",
                                   broken.predicate.strip() == f"!{absent.group(1)}"))
                else:
                    unread.append((broken, f"it cannot be evaluated on this state: {why}",
                                   False))
                task.invariants = [inv for inv in task.invariants if inv is not broken]
                task._model = None

    def _decide(self, state: State, action: ActionSpec,
                commit: bool) -> Tuple[SafetyVerdict, Optional[State]]:
        started = time.monotonic() if self._metrics is not None else 0.0
        if not isinstance(state, State):
            raise TypeError(f"a state is a State, not {type(state).__name__}")
        cost = self._checked_cost(action)
        if action.id in self.emergency_actions and cost != 0:
            raise InvalidArgument(f"emergency action `{action.id}` must cost 0, not "
                                  f"{_number_text(cost)} (T8)")
        variables, absent, shapes, opaque = self._variables(state)
        if opaque:
            written = [e.variable for e in action.effects if e.variable in opaque]
            if written:
                raise InvalidArgument(
                    f"`{action.id}` writes `{written[0]}`, which holds a value the kernel's "
                    "types do not include (a mapping, an object): an effect reads and writes "
                    "None, bools, numbers, strings and lists")
        model, padded, unread, _ = self._model(variables, shapes, action, tuple(opaque))
        self._opaque_now = opaque
        state_in = State(dict(variables, **padded)) if padded or absent else state
        failed: List[Tuple[str, str]] = []
        for fn in self._preconditions:
            try:
                verdict = fn(state, action)
                ok, why = ((bool(verdict[0]), str(verdict[1]) if len(verdict) > 1 else "")
                           if isinstance(verdict, tuple) else (bool(verdict), ""))
            except Exception as err:  # noqa: BLE001 - a raise is a failed precondition
                ok, why = False, f"{type(err).__name__}: {err}"
            if not ok:
                failed.append(("Precondition", why or f"precondition of `{action.id}` failed"))
        decision, next_state = self.budget._ledger.decide(model, state_in, _MODEL_ACTION,
                                                          commit and not failed)
        if next_state is not None and (padded or absent or any(
                e.mode == "delete" for e in action.effects)):
            # A deleted variable is a key no more; the state's None values stay.
            d = {k: v for k, v in next_state.to_dict().items() if v is not None}
            next_state = State(dict({k: None for k in absent if k not in d}, **d))
        if next_state is not None and opaque:
            next_state = _opaque.attach(next_state, opaque)
        if decision.approved and not failed and not unread and not decision.warnings:
            # Every check passed: the verdict's checks are written out when first read.
            ledger = self.budget._ledger
            verdict = _passed_verdict(cost, next_state, decision, ledger.remaining, ledger.scale,
                                      self.step_count, self.max_steps, tuple(self.invariants))
        else:
            verdict = self._verdict(decision, action, cost, failed, next_state, unread)
        if self._metrics is not None:
            self._emit("increment", "clampai_actions_total",
                       status="approved" if verdict.approved else "rejected")
            self._emit("observe", "clampai_kernel_latency_seconds", time.monotonic() - started,
                       operation="execute" if commit else "evaluate")
        return verdict, (next_state if verdict.approved else None)

    def _checked_cost(self, action: ActionSpec) -> decimal.Decimal:
        """`action`'s cost, exact and fitted to the ledger's scale (remembered per action
        object and scale: an ActionSpec is immutable)."""
        known = self._actions.get(id(action))
        scale = self.budget._ledger.scale
        if known is not None and known[0] is action and known[2] == scale:
            return known[1]
        if not hasattr(action, "effects") or not hasattr(action, "cost"):
            raise TypeError(f"an action is an ActionSpec, not {type(action).__name__}")
        if getattr(action, "attestations", ()) or getattr(action, "emits", ()):
            raise InvalidArgument(
                f"`{action.id}` has attestations or emits to sinks: those gates are the "
                "reference monitor's (clampai.hardening.ReferenceMonitor, a task-bound kernel)")
        cost = _exact(action.cost, f"the cost of `{action.id}`")
        if cost >= 0:
            self.budget._fit(cost)
        if isinstance(action, ActionSpec):  # a duck-typed action may change: never remembered
            if len(self._actions) >= self._CACHE_SIZE:
                self._actions.clear()
            self._actions[id(action)] = (action, cost, self.budget._ledger.scale, _key((
                action.cost, action.effects, action.reversible, action.requires)))
        return cost

    def _variables(self, state: State
                   ) -> Tuple[Dict[str, Any], List[str], Any, Dict[str, Any]]:
        """The state's defined variables, its undefined ones, their shapes (the model key's
        part) and its values beyond the kernel's types, remembered per state object (a State
        is immutable)."""
        known = self._states.get(id(state))
        if known is not None and known[0] is state:
            return known[1], known[2], known[3], known[4]
        opaque = _opaque.opaque_of(state) or {}
        variables = state.to_dict()
        for k in opaque:
            del variables[k]
        # A None (an undefined value) is a key the model does not have: the reference's
        # `state.get(key, default)` finds no value there either.
        absent = [k for k, v in variables.items() if v is None]
        for k in absent:
            del variables[k]
        shapes = tuple((k, _shape(v)) for k, v in variables.items())
        if opaque:
            shapes += (("", tuple(opaque)),)  # no variable is named ""
        if len(self._states) >= self._CACHE_SIZE:
            self._states.clear()
        self._states[id(state)] = (state, variables, absent, shapes, opaque)
        return variables, absent, shapes, opaque

    def _verdict(self, decision: Any, action: ActionSpec, cost: decimal.Decimal,
                 failed: List[Tuple[str, str]], next_state: Optional[State],
                 unread: Sequence[Tuple[Invariant, str, bool]]) -> SafetyVerdict:
        checks: List[Tuple[str, CheckResult, str]] = []
        seen = set()
        blocked = False
        for inv, why, holds in unread:
            name = f"Invariant:{inv.name}"
            seen.add(name)
            if holds:
                checks.append((name, CheckResult.PASS, f"holds: {why}"))
            else:
                checks.append((name, CheckResult.FAIL_INVARIANT,
                               f"[{inv.enforcement}] invariant `{inv.name}` would be violated: "
                               f"{why}"))
                blocked = blocked or inv.enforcement == "blocking"
        for r in decision.reasons:
            name, result = _REASON_CHECK.get(r.code, ("", CheckResult.FAIL_PRECONDITION))
            if r.code in ("invariant_violated", "invariant_error"):
                name, result = f"Invariant:{r.subject}", CheckResult.FAIL_INVARIANT
                checks.append((name, result, f"[blocking] {r.message}"))
            else:
                checks.append((name or r.code, result, r.message.replace(
                    f"`{_MODEL_ACTION}`", f"`{action.id}`")))
            seen.add(name or r.code)
        for w in decision.warnings:
            name = f"Invariant:{w.subject}"
            checks.append((name, CheckResult.FAIL_INVARIANT, f"[monitoring] {w.message}"))
            seen.add(name)
        if "Budget" not in seen:
            checks.insert(0, ("Budget", CheckResult.PASS,
                              f"{cost:f} <= "
                              f"{self.budget._amount(self.budget._ledger.remaining)} "
                              "remaining"))
        if "Termination" not in seen:
            checks.insert(1, ("Termination", CheckResult.PASS,
                              f"Step {self.step_count + 1}/{self.max_steps}"))
        for inv in self.invariants:
            if f"Invariant:{inv.name}" not in seen:
                checks.append((f"Invariant:{inv.name}", CheckResult.PASS, "holds"))
        for name, why in failed:
            checks.append((name, CheckResult.FAIL_PRECONDITION, why))
        approved = decision.approved and not failed and not blocked
        for name, result, detail in checks:
            if result == CheckResult.FAIL_INVARIANT:
                inv_name = name[len("Invariant:"):]
                for inv in self.invariants:
                    if inv.name == inv_name:
                        _count_violation(inv)
                self._emit("increment", "clampai_invariant_violations_total",
                           invariant=inv_name,
                           enforcement=detail[1:detail.index("]")] if detail.startswith("[")
                           else "blocking")
        return SafetyVerdict(approved=approved, checks=checks,
                             simulated_next_state=next_state if approved else None,
                             cost=float(cost), decision=decision)

    def __repr__(self) -> str:
        return f"<SafetyKernel (reference form) {self.status()}>"


# Invariant.violation_count: the violations each invariant object has met in a reference-form
# kernel's verdicts and in its own check(), by the object's id (dropped with the object).
_VIOLATIONS: Dict[int, int] = {}
_VIOLATIONS_LOCK = threading.Lock()


def _count_violation(invariant: Invariant) -> None:
    key = id(invariant)
    with _VIOLATIONS_LOCK:
        if key not in _VIOLATIONS:
            weakref.finalize(invariant, _VIOLATIONS.pop, key, None)
        _VIOLATIONS[key] = _VIOLATIONS.get(key, 0) + 1


def violation_count(invariant: Invariant) -> int:
    return _VIOLATIONS.get(id(invariant), 0)


def simulate(action: ActionSpec, state: State) -> State:
    """`ActionSpec.simulate`: where `action` leads from `state`, by the kernel's `decide` and
    `advance` with no invariant and a budget of exactly its cost."""
    if not isinstance(state, State):
        state = State(dict(state))
    cost = _exact(action.cost, f"the cost of `{action.id}`")
    if cost > 0:
        kernel = FormalKernel(cost, [], min_action_cost=cost)
    else:
        kernel = FormalKernel(1, [], min_action_cost=1, emergency_actions={action.id})
    verdict = kernel.evaluate(state, action)
    if not verdict.approved:
        raise ValueError(f"`{action.id}` cannot be applied to this state: "
                         + "; ".join(verdict.rejection_reasons))
    assert verdict.simulated_next_state is not None
    return verdict.simulated_next_state


def check_invariant(invariant: Invariant, state: State) -> Tuple[bool, str]:
    """`Invariant.check` of an expression or a template: (holds, message) in `state`, decided
    by the kernel (a reference-form kernel with this invariant alone, on an action that changes
    nothing). The enforcement does not matter: a monitoring invariant that fails is (False,
    message) too."""
    if not isinstance(state, State):
        state = State(dict(state))
    kernel = FormalKernel(1, [invariant], min_action_cost=1)
    verdict = kernel.evaluate(state, ActionSpec("check", cost=1))
    for name, result, detail in verdict.checks:
        if name == f"Invariant:{invariant.name}" and result != CheckResult.PASS:
            return False, detail.split("] ", 1)[1] if detail.startswith("[") else detail
    return True, ""


# --- The async kernel -----------------------------------------------------------------------

class AsyncSafetyKernel:
    """The reference's async kernel: `AsyncSafetyKernel(budget, invariants, *,
    min_action_cost=0.001, emergency_actions=None, metrics=None, executor=None)`, a
    reference-form kernel whose `evaluate` and `execute_atomic` are coroutines.

    A decision that can block (the kernel has a Python invariant or a precondition, which may
    do anything) runs off the event loop, in `executor` (the loop's default when None); one that
    cannot (expressions and templates only: microseconds of C++) runs on the loop. Concurrent
    `execute_atomic` calls queue on an asyncio.Lock, never blocking the loop. Cancellation: a
    call cancelled before its commit has started changes nothing; one cancelled after lets the
    commit finish (the caller still gets CancelledError), so the kernel never holds half a
    commit and the next caller sees it. T1-T8 hold as for SafetyKernel.

    A trip to the executor costs tens of microseconds of CPU per call (BENCHMARKS.md):
    `offload=False` decides every call on the loop, as the Python ClampAI does, for
    predicates known never to block."""

    def __init__(self, budget: float, invariants: Sequence[Invariant] = (), *,
                 min_action_cost: float = 0.001, emergency_actions: Optional[Set[str]] = None,
                 metrics: Any = None, executor: Any = None, offload: bool = True) -> None:
        self._kernel = FormalKernel(budget, invariants, min_action_cost=min_action_cost,
                                    emergency_actions=emergency_actions, metrics=metrics)
        self._executor = executor
        self._offload = bool(offload)
        self._alock: Any = None

    @property
    def kernel(self) -> FormalKernel:
        """The synchronous kernel underneath (shared state: the same budget and trace)."""
        return self._kernel

    @property
    def budget(self) -> BudgetController:
        return self._kernel.budget

    @property
    def invariants(self) -> List[Invariant]:
        return self._kernel.invariants

    @property
    def step_count(self) -> int:
        return self._kernel.step_count

    @property
    def max_steps(self) -> int:
        return self._kernel.max_steps

    @property
    def trace(self) -> ExecutionTrace:
        return self._kernel.trace

    def _blocking(self) -> bool:
        return self._offload and (bool(self._kernel._preconditions) or any(
            callable(inv.predicate) for inv in self._kernel.invariants))

    def _lock(self) -> Any:
        import asyncio
        if self._alock is None:
            self._alock = asyncio.Lock()
        return self._alock

    async def evaluate(self, state: State, action: ActionSpec) -> SafetyVerdict:
        """The verdict, changing nothing (off the loop when a predicate may block)."""
        import asyncio
        if not self._blocking():
            return self._kernel.evaluate(state, action)
        return await asyncio.get_running_loop().run_in_executor(
            self._executor, self._kernel.evaluate, state, action)

    async def execute_atomic(self, state: State, action: ActionSpec,
                             reasoning_summary: str = "") -> Tuple[State, Any]:
        """Decides and commits atomically: (new state, trace entry), or SafetyViolation."""
        import asyncio
        async with self._lock():
            if not self._blocking():
                return self._kernel.evaluate_and_execute_atomic(state, action,
                                                                reasoning_summary)
            gate = threading.Lock()
            phase = {"started": False, "cancelled": False}

            def commit() -> Any:
                with gate:
                    if phase["cancelled"]:
                        return None  # cancelled before it started: nothing happens
                    phase["started"] = True
                return self._kernel.evaluate_and_execute_atomic(state, action,
                                                                reasoning_summary)

            future = asyncio.get_running_loop().run_in_executor(self._executor, commit)
            try:
                return await asyncio.shield(future)
            except asyncio.CancelledError:
                with gate:
                    phase["cancelled"] = True
                    started = phase["started"]
                if started:
                    # The commit has started: let it finish before the lock is released.
                    await asyncio.wait([future])
                # Its outcome (a rejection, say) is the kernel's now, not the caller's.
                future.add_done_callback(lambda f: f.cancelled() or f.exception())
                raise

    async def evaluate_and_execute_atomic(self, state: State, action: ActionSpec,
                                          reasoning_summary: str = "") -> Tuple[State, Any]:
        """The same as `execute_atomic`."""
        return await self.execute_atomic(state, action, reasoning_summary)

    def add_precondition(self, fn: Callable[[State, ActionSpec], Any]) -> None:
        self._kernel.add_precondition(fn)

    def register_emergency_action(self, action_id: str) -> None:
        self._kernel.register_emergency_action(action_id)

    def record_rejection(self, state: State, action: ActionSpec, reasons: Sequence[str],
                         reasoning_summary: str = "") -> Any:
        return self._kernel.record_rejection(state, action, reasons, reasoning_summary)

    def rollback(self, state_before: State, state_after: State, action: ActionSpec) -> State:
        return self._kernel.rollback(state_before, state_after, action)

    def status(self) -> str:
        return self._kernel.status()

    def __repr__(self) -> str:
        return f"<AsyncSafetyKernel {self._kernel.status()}>"


# --- @safe ----------------------------------------------------------------------------------

class _SafeWrapper:
    """What `@safe` returns: the function, called only when the kernel approves the call."""

    def __init__(self, fn: Callable[..., Any], budget: float, cost_per_call: float,
                 invariants: Sequence[Invariant], state_fn: Optional[Callable[[], Dict[str, Any]]],
                 action_name: Optional[str]) -> None:
        self._fn = fn
        self._budget = budget
        self._cost = cost_per_call
        self._invariants = list(invariants)
        self._state_fn = state_fn
        self._name = action_name or getattr(fn, "__name__", "call")
        self._lock = threading.Lock()
        self._reset()
        functools.update_wrapper(self, fn)

    def _reset(self) -> None:
        self._calls = 0
        self._total = decimal.Decimal(0).quantize(_exact(self._cost, "cost_per_call"))
        self._kernel = FormalKernel(self._budget, self._invariants)

    @property
    def kernel(self) -> FormalKernel:
        return self._kernel

    @property
    def audit_log(self) -> List[Dict[str, Any]]:
        return [{"step": e.step, "action": e.action_id, "cost": e.cost,
                 "timestamp": e.timestamp, "approved": e.approved}
                for e in self._kernel.trace.entries]

    def reset(self) -> None:
        """A fresh budget and call count (the same invariants)."""
        with self._lock:
            self._reset()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        with self._lock:
            merged: Dict[str, Any] = {}
            if self._state_fn is not None:
                merged.update(self._state_fn())
            merged["call_count"] = self._calls
            merged["total_cost"] = self._total
            action = ActionSpec(
                id=f"{self._name}_{self._calls + 1}", name=self._name,
                description=f"Call #{self._calls + 1} to {getattr(self._fn, '__qualname__', '')}",
                effects=(Effect("call_count", "increment", 1),
                         Effect("total_cost", "increment", _exact(self._cost, "cost_per_call"))),
                cost=self._cost)
            try:
                self._kernel.execute(State(merged), action)
            except SafetyViolation as err:
                reasons = "; ".join(err.verdict.rejection_reasons) if err.verdict else str(err)
                raise SafetyViolation(f"Call to '{self._name}' blocked by ClampAI: {reasons}",
                                      err.verdict) from None
            self._calls += 1
            self._total += _exact(self._cost, "cost_per_call")
        return self._fn(*args, **kwargs)

    def __repr__(self) -> str:
        return (f"<safe({getattr(self._fn, '__qualname__', self._name)!r}) calls={self._calls} "
                f"remaining={self._kernel.budget.exact()['remaining']}>")


def safe(budget: float, *, cost_per_call: float = 1.0, invariants: Sequence[Invariant] = (),
         state_fn: Optional[Callable[[], Dict[str, Any]]] = None,
         action_name: Optional[str] = None) -> Callable[[Callable[..., Any]], _SafeWrapper]:
    """`@safe(budget=10.0)`: every call of the function is an action costing `cost_per_call`,
    decided by a kernel with `budget` and `invariants` over the state `state_fn()` returns plus
    `call_count` and `total_cost`; a rejected call raises SafetyViolation and the function is
    not called. The wrapper has `.kernel`, `.audit_log` and `.reset()`. Thread-safe."""

    def decorate(fn: Callable[..., Any]) -> _SafeWrapper:
        return _SafeWrapper(fn, budget, cost_per_call, invariants, state_fn, action_name)

    return decorate


clampai_safe = safe


# --- Test utilities -------------------------------------------------------------------------

def make_state(**variables: Any) -> State:
    """`make_state(counter=0, status="new")`: a State of the keyword arguments."""
    return State(dict(variables))


def make_action(name: str, cost: float = 1.0, *, reversible: bool = True,
                tags: Sequence[str] = (), **effects: Any) -> ActionSpec:
    """An action named `name` with a fresh id (`name-1a2b3c4d`) whose effects set each other
    keyword argument: `make_action("send", cost=2.0, sent=1)`."""
    return ActionSpec(id=f"{name}-{uuid.uuid4().hex[:8]}", name=name,
                      description=f"Test action: {name}",
                      effects=tuple(Effect(k, "set", v) for k, v in effects.items()), cost=cost,
                      reversible=reversible, tags=tuple(tags))


class SafetyHarness:
    """A reference-form kernel with assertions for tests:
    `with SafetyHarness(budget=10.0, invariants=[...]) as h: h.assert_allowed(state, action)`."""

    def __init__(self, budget: float, invariants: Sequence[Invariant] = (), *,
                 min_action_cost: float = 0.001,
                 emergency_actions: Optional[Set[str]] = None) -> None:
        self._args = (budget, list(invariants), min_action_cost, set(emergency_actions or ()))
        self._kernel = self._make()

    def _make(self) -> FormalKernel:
        budget, invariants, min_cost, emergency = self._args
        return FormalKernel(budget, invariants, min_action_cost=min_cost,
                            emergency_actions=set(emergency))

    @property
    def kernel(self) -> FormalKernel:
        return self._kernel

    def assert_allowed(self, state: State, action: ActionSpec, msg: Optional[str] = None) -> None:
        verdict = self._kernel.evaluate(state, action)
        if not verdict.approved:
            raise AssertionError(
                f"{msg + ': ' if msg else ''}Expected action '{action.name}' to be ALLOWED but "
                f"it was BLOCKED. Reasons: {'; '.join(verdict.rejection_reasons) or 'none'}")

    def assert_blocked(self, state: State, action: ActionSpec, *,
                       reason_contains: Optional[str] = None, msg: Optional[str] = None) -> None:
        verdict = self._kernel.evaluate(state, action)
        prefix = f"{msg}: " if msg else ""
        if verdict.approved:
            raise AssertionError(
                f"{prefix}Expected action '{action.name}' to be BLOCKED but it was APPROVED.")
        if reason_contains is not None:
            reasons = " ".join(verdict.rejection_reasons)
            if reason_contains.lower() not in reasons.lower():
                raise AssertionError(
                    f"{prefix}Action '{action.name}' was blocked, but its reasons do not "
                    f"contain {reason_contains!r}: {reasons!r}")

    def assert_budget_remaining(self, expected: float, tol: float = 0.01) -> None:
        actual = self._kernel.budget.remaining
        if abs(actual - expected) > tol:
            raise AssertionError(
                f"Expected budget remaining ≈ {expected} (±{tol}), got {actual}")

    def assert_step_count(self, expected: int) -> None:
        if self._kernel.step_count != expected:
            raise AssertionError(
                f"Expected step_count == {expected}, got {self._kernel.step_count}")

    def execute(self, state: State, action: ActionSpec, reasoning: str = "") -> State:
        """Executes `action`; returns the new state. Raises SafetyViolation (a RuntimeError)
        if it is blocked."""
        return self._kernel.evaluate_and_execute_atomic(state, action, reasoning)[0]

    def reset(self) -> None:
        self._kernel = self._make()

    def __enter__(self) -> "SafetyHarness":
        return self

    def __exit__(self, *exc: Any) -> None:
        return None
