"""Tasks built in Python with the seed's vocabulary: Effect, ActionSpec, Invariant,
TaskDefinition. A TaskDefinition becomes a task spec (the JSON of docs/SPEC.md) plus the Python
predicates, which the C++ library checks and builds into an immutable TaskModel."""

from __future__ import annotations

import decimal
import json
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from . import _clampai

__all__ = ["Expr", "Effect", "ActionSpec", "Invariant", "TaskDefinition", "build_model"]

_MODES = ("set", "increment", "decrement", "multiply", "append", "remove", "delete")


@dataclass(frozen=True)
class Expr:
    """An expression of the spec language (docs/SPEC.md), where a literal would be taken as
    data: `Effect("total", "increment", Expr("amount * 2"))`."""

    text: str

    def __str__(self) -> str:
        return self.text


def _number_text(value: Union[float, decimal.Decimal]) -> str:
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise ValueError(f"{value!r} is not a finite number")
        text = repr(value)
    else:
        if not value.is_finite():
            raise ValueError(f"{value!r} is not a finite number")
        text = format(value, "f")
    return text


def _scale_of(value: Any) -> int:
    if isinstance(value, bool) or isinstance(value, int):
        return 0
    if isinstance(value, (float, decimal.Decimal)):
        text = _number_text(value)
        return len(text.split(".", 1)[1]) if "." in text else 0
    return 0


def _literal(value: Any, where: str) -> str:
    """A Python value as an expression of the spec language."""
    if isinstance(value, Expr):
        return value.text
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, (float, decimal.Decimal)):
        return _number_text(value)
    if isinstance(value, str):
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_literal(v, f"{where}[{i}]") for i, v in enumerate(value)) + "]"
    raise TypeError(f"{where}: cannot use a {type(value).__name__} as a value")


def _amount(value: Any, where: str) -> Union[int, str]:
    """A cost or a budget as spec JSON: an exact decimal string, or an expression."""
    if isinstance(value, Expr):
        return value.text
    if isinstance(value, bool):
        raise TypeError(f"{where}: a number is needed, not a bool")
    if isinstance(value, int):
        return value
    if isinstance(value, (float, decimal.Decimal)):
        return _number_text(value)
    if isinstance(value, str):
        return value
    raise TypeError(f"{where}: a number is needed, not {type(value).__name__}")


@dataclass(frozen=True)
class Effect:
    """One declarative state change: `variable` changed by `mode` with `value` (a Python value,
    or an `Expr` over the state and the action's parameters). Effects read the pre-action
    state."""

    variable: str
    mode: str
    value: Any = None

    def __post_init__(self) -> None:
        if self.mode not in _MODES:
            raise ValueError(f"effect mode must be one of {', '.join(_MODES)}, not {self.mode!r}")

    def to_spec(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {"variable": self.variable, "mode": self.mode}
        if self.mode != "delete":
            out["value"] = _literal(self.value, f"effect on {self.variable}")
        return out

    def apply(self, current: Any) -> Any:
        """The value this effect gives a variable whose value is `current` (None: absent), as
        the kernel applies it (`delete` gives None)."""
        from ._reference_api import simulate  # imports this module
        probe = ActionSpec("apply", effects=(self,), cost=0)
        state = _clampai.State({} if current is None else {self.variable: current})
        return simulate(probe, state).get(self.variable)

    def inverse(self) -> "Effect":
        """The algebraic inverse (increment <-> decrement, append <-> remove)."""
        inverses = {"increment": "decrement", "decrement": "increment", "append": "remove",
                    "remove": "append"}
        if self.mode not in inverses:
            raise ValueError(f"`{self.mode}` has no inverse without the prior value")
        return Effect(self.variable, inverses[self.mode], self.value)


@dataclass(frozen=True)
class ActionSpec:
    """An action as data. Beyond the reference's fields: `parameters` (name -> spec parameter,
    docs/SPEC.md section 4) and `requires` (a guard expression). `cost` may be an `Expr` over
    the parameters."""

    id: str
    name: str = ""
    description: str = ""
    effects: Tuple[Effect, ...] = ()
    cost: Any = 0
    category: str = "general"
    risk_level: str = "low"
    reversible: bool = True
    preconditions_text: str = ""
    postconditions_text: str = ""
    estimated_duration_s: float = 0.0
    tags: Tuple[str, ...] = ()
    parameters: Optional[Mapping[str, Mapping[str, Any]]] = None
    requires: str = ""
    attestations: Tuple[str, ...] = ()
    emits: Tuple[Mapping[str, str], ...] = ()

    def affected_variables(self) -> set:
        return {e.variable for e in self.effects}

    def simulate(self, state: Any) -> Any:
        """The state this action leads to from `state`, as the kernel computes it (no budget or
        invariant is checked). ValueError if the kernel cannot apply it (an overflow, a read of
        an absent variable)."""
        from ._reference_api import simulate  # imports this module
        return simulate(self, state)

    def compute_inverse_effects(self, state_before: Any) -> Tuple[Effect, ...]:
        """Effects that restore, from the state this action leads to, the variables it writes
        as they were in `state_before` (set to the old value; delete what was absent)."""
        inverse = []
        for e in self.effects:
            old = state_before.get(e.variable)
            if old is None:
                if e.mode != "delete":
                    inverse.append(Effect(e.variable, "delete"))
            else:
                inverse.append(Effect(e.variable, "set", old))
        return tuple(inverse)

    def to_llm_text(self) -> str:
        """The action described for an LLM prompt."""
        parts = [f"[{self.id}] {self.name or self.id}"]
        if self.description:
            parts.append(f"  {self.description}")
        parts.append(f"  cost={self.cost}  risk={self.risk_level}  reversible={self.reversible}")
        if self.preconditions_text:
            parts.append(f"  requires: {self.preconditions_text}")
        if self.postconditions_text:
            parts.append(f"  ensures:  {self.postconditions_text}")
        effects = ", ".join(f"{e.variable}<-{e.mode}({e.value})" for e in self.effects)
        parts.append(f"  effects:  [{effects}]")
        return "\n".join(parts)

    def to_compact_text(self) -> str:
        return f"[{self.id}] {self.name or self.id} (cost {self.cost}, {self.risk_level})"

    def to_spec(self, index: int) -> Dict[str, Any]:
        out: Dict[str, Any] = {"id": self.id, "cost": _amount(self.cost, f"actions[{index}].cost"),
                               "reversible": self.reversible,
                               "effects": [e.to_spec() for e in self.effects]}
        if self.name:
            out["name"] = self.name
        if self.description:
            out["description"] = self.description
        if self.parameters:
            out["parameters"] = {k: dict(v) for k, v in self.parameters.items()}
        if self.requires:
            out["requires"] = self.requires
        if self.attestations:
            out["attestations"] = list(self.attestations)
        if self.emits:
            out["emits"] = [dict(e) for e in self.emits]
        return out


@dataclass(frozen=True)
class Invariant:
    """A safety predicate: an expression string (which the verifier reasons about), a Python
    callable `f(state) -> bool` (which the kernel enforces as a native predicate; the verifier
    reports it as `unknown: opaque predicate`), or a template of the invariant library, the
    spec's `{"template": T, ...parameters}` (docs/SPEC.md section 15; `clampai.invariants`
    builds them). A callable that raises is a failed check with reason `invariant_error`."""

    name: str
    predicate: Union[str, Callable[[Any], Any], Mapping[str, Any]]
    description: str = ""
    enforcement: str = "blocking"
    suggestion: str = ""
    # The reference's time limit on a predicate: accepted, never enforced (a decision here never
    # depends on timing; docs/PYTHON.md).
    max_eval_ms: Optional[float] = None

    def __post_init__(self) -> None:
        if self.max_eval_ms is not None and (
                isinstance(self.max_eval_ms, bool)
                or not isinstance(self.max_eval_ms, (int, float, decimal.Decimal))
                or not self.max_eval_ms > 0):
            raise ValueError(f"invariant `{self.name}`: max_eval_ms must be a positive number "
                             f"or None, not {self.max_eval_ms!r}")
        if self.enforcement not in ("blocking", "monitoring"):
            raise ValueError(
                f"invariant `{self.name}`: enforcement must be `blocking` or `monitoring`, "
                f"not {self.enforcement!r}")
        if isinstance(self.predicate, Mapping):
            if "template" not in self.predicate:
                raise TypeError(f"invariant `{self.name}`: a template needs its `template` key")
        elif not isinstance(self.predicate, str) and not callable(self.predicate):
            raise TypeError(f"invariant `{self.name}`: the predicate must be an expression "
                            "string, a callable or a template")

    @property
    def violation_count(self) -> int:
        """How many violations this invariant has met: in the verdicts of reference-form
        kernels (`SafetyKernel(budget, invariants)`) and in `check()` (a task-bound kernel's
        rejections are in its trace instead)."""
        from ._reference_api import violation_count  # imports this module
        return violation_count(self)

    @property
    def is_expression(self) -> bool:
        return isinstance(self.predicate, str)

    @property
    def is_template(self) -> bool:
        return isinstance(self.predicate, Mapping)

    def to_spec(self) -> Dict[str, Any]:
        """The invariant as spec JSON (an expression or a template; not a callable)."""
        out: Dict[str, Any] = {"name": self.name, "enforcement": self.enforcement,
                               "description": self.description, "suggestion": self.suggestion}
        if isinstance(self.predicate, str):
            out["check"] = self.predicate
        elif isinstance(self.predicate, Mapping):
            out.update({k: _template_value(v) for k, v in self.predicate.items()})
        else:
            raise TypeError(f"invariant `{self.name}`: a callable has no spec form")
        return out

    def check(self, state: Any) -> Tuple[bool, str]:
        """(holds, message) in `state`; an exception is a violation. An expression or a template
        is evaluated by the C++ kernel, on the state as the reference's form reads it."""
        if not callable(self.predicate):
            from ._reference_api import check_invariant  # imports this module
            return check_invariant(self, state)
        try:
            ok = bool(self.predicate(state))
        except Exception as err:  # noqa: BLE001 - fail closed, as the kernel does
            ok, message = False, f"invariant `{self.name}` raised {type(err).__name__}: {err}"
        else:
            message = "" if ok else f"invariant `{self.name}` violated"
        if not ok:
            from ._reference_api import _count_violation  # imports this module
            _count_violation(self)
        return ok, message


def _type_of(value: Any, scale: int, where: str) -> Dict[str, Any]:
    if isinstance(value, bool):
        return {"type": "bool"}
    if isinstance(value, int):
        return {"type": "int"}
    if isinstance(value, (float, decimal.Decimal)):
        return {"type": "decimal", "scale": scale}
    if isinstance(value, str):
        return {"type": "string"}
    raise TypeError(f"variables.{where}: cannot infer a type from {type(value).__name__}")


def _template_value(value: Any) -> Any:
    """A template parameter as JSON: numbers stay numbers (floats by their shortest repr)."""
    if isinstance(value, decimal.Decimal):
        return int(value) if value == value.to_integral_value() else float(_number_text(value))
    if isinstance(value, float):
        _number_text(value)  # refuses NaN and infinities
        return value
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_template_value(v) for v in value]
    return value


def _json_value(value: Any) -> Any:
    if isinstance(value, (float, decimal.Decimal)):
        return _number_text(value)
    if isinstance(value, (list, tuple)):
        return [_json_value(v) for v in value]
    return value


@dataclass
class TaskDefinition:
    """A task, as in the reference: goal text, initial state, actions, invariants, budget and
    goal predicate. Differences (docs/PYTHON.md): variables' types are inferred from the initial
    values (override with `variables`); `goal_predicate` is an expression string (which the
    verifier and the lookahead can use) or a callable (the kernel's native goal, opaque to the
    verifier); `dependencies` maps
    an action to the actions (ids, or (id, reason) pairs) that must have completed first."""

    goal: str
    initial_state: Any
    available_actions: Sequence[ActionSpec]
    invariants: Sequence[Invariant] = ()
    budget: Any = 0
    goal_predicate: Union[str, Callable[[Any], Any], None] = None
    goal_progress_fn: Optional[Callable[[Any], float]] = None
    min_action_cost: Any = "0.001"
    dependencies: Optional[Mapping[str, Sequence[Any]]] = None
    priors: Optional[Mapping[str, Tuple[float, float]]] = None
    max_retries_per_action: int = 3
    max_consecutive_failures: int = 5
    stuck_patience: int = 5
    system_prompt: str = ""
    risk_aversion: float = 1.0
    sensitivity_threshold: float = 0.05
    max_prompt_state_keys: int = 20
    proof_path: str = ""
    capture_basins: Optional[Sequence[Mapping[str, str]]] = None
    # This project's additions.
    name: str = ""
    variables: Optional[Mapping[str, Mapping[str, Any]]] = None
    emergency_actions: Sequence[str] = ()
    max_steps: Optional[int] = None
    budget_scale: Optional[int] = None
    # The budget pool the budget sits in (docs/POOLS.md); SafetyKernel(task, pool=...) sets it.
    budget_pool: Optional[str] = None
    # The reference monitor's declarations (docs/SPEC.md section 15): attestors by name (a
    # spec attestor, or an attestor object of clampai.hardening, declared `external`), sinks.
    attestors: Optional[Mapping[str, Any]] = None
    sinks: Optional[Mapping[str, Mapping[str, Any]]] = None
    goal_attestations: Sequence[str] = ()
    _model: Any = field(default=None, init=False, repr=False, compare=False)

    def _initial_dict(self) -> Dict[str, Any]:
        state = self.initial_state
        if isinstance(state, _clampai.State):
            return state.to_dict()
        return dict(state)

    def to_spec(self) -> Dict[str, Any]:
        """The task as a spec (docs/SPEC.md), without its Python callables."""
        initial = self._initial_dict()
        # A decimal variable's scale: the finest of its initial value and its effects' literals.
        scales: Dict[str, int] = {k: _scale_of(v) for k, v in initial.items()}
        elements: Dict[str, Any] = {}
        for action in self.available_actions:
            for e in action.effects:
                if e.variable in scales and not isinstance(e.value, Expr):
                    scales[e.variable] = max(scales[e.variable], _scale_of(e.value))
                if e.mode in ("append", "remove") and not isinstance(e.value, Expr):
                    elements.setdefault(e.variable, e.value)
        variables: Dict[str, Any] = {}
        overrides = dict(self.variables or {})
        for name, value in initial.items():
            if isinstance(value, (list, tuple)):
                sample = value[0] if value else elements.get(name, "")
                decl: Dict[str, Any] = {"type": "list",
                                        "element": _type_of(sample, _scale_of(sample), name)}
            elif value is None:
                decl = {"optional": True}
            else:
                decl = _type_of(value, max(scales[name], 1) if isinstance(
                    value, (float, decimal.Decimal)) else scales[name], name)
            if value is not None:
                decl["initial"] = _json_value(value)
            decl.update(overrides.pop(name, {}))
            variables[name] = decl
        for name, decl in overrides.items():
            variables[name] = dict(decl)
        spec: Dict[str, Any] = {
            "name": self.name,
            "variables": variables,
            "actions": [a.to_spec(i) for i, a in enumerate(self.available_actions)],
            "invariants": [inv.to_spec() for inv in self.invariants
                           if not callable(inv.predicate)],
            "budget": {"total": _amount(self.budget, "budget"),
                       "min_action_cost": _amount(self.min_action_cost, "min_action_cost")},
        }
        if self.budget_scale is not None:
            spec["budget"]["scale"] = self.budget_scale
        if self.max_steps is not None:
            spec["budget"]["max_steps"] = self.max_steps
        if self.budget_pool is not None:
            spec["budget"]["pool"] = self.budget_pool
        if isinstance(self.goal_predicate, str):
            spec["goal"] = {"description": self.goal, "check": self.goal_predicate}
            if self.goal_attestations:
                spec["goal"]["attestations"] = list(self.goal_attestations)
        if self.attestors:
            spec["attestors"] = {
                name: dict(a) if isinstance(a, Mapping) else {"external": True}
                for name, a in self.attestors.items()}
        if self.sinks:
            spec["sinks"] = {name: dict(v) for name, v in self.sinks.items()}
        if self.emergency_actions:
            spec["emergency_actions"] = list(self.emergency_actions)
        if self.dependencies:
            spec["dependencies"] = {
                k: [d[0] if isinstance(d, (tuple, list)) else d for d in v]
                for k, v in self.dependencies.items()}
        if self.capture_basins:
            spec["capture_basins"] = [dict(b) for b in self.capture_basins]
        return spec

    def build(self) -> "_clampai.TaskModel":
        """The checked, immutable model (built once, then cached).
        Raises SpecError naming the JSON path of the first problem."""
        if self._model is None:
            natives = [(i, inv.name, inv.predicate, inv.enforcement, inv.description,
                        inv.suggestion)
                       for i, inv in enumerate(self.invariants)
                       if callable(inv.predicate)]
            goal = self.goal_predicate if callable(self.goal_predicate) else None
            # A variable whose initial value is a Python float reads back as a float (the
            # kernel decides on its exact decimal): docs/PYTHON.md, "Values are exact".
            floats = [k for k, v in self._initial_dict().items() if isinstance(v, float)]
            self._model = _clampai._build_model(json.dumps(self.to_spec()), natives, goal,
                                                floats)
        return self._model

    def goal_achieved(self, state: Any) -> bool:
        """Whether `state` satisfies the goal predicate (expression or callable)."""
        return self.build().goal_holds(state)


def build_model(task: Union[TaskDefinition, "_clampai.TaskModel", Mapping[str, Any]]
                ) -> "_clampai.TaskModel":
    """A TaskModel from a TaskDefinition, a spec dict (as in a JSON file) or a model."""
    if isinstance(task, _clampai.TaskModel):
        return task
    if isinstance(task, TaskDefinition):
        return task.build()
    if isinstance(task, Mapping):
        return _clampai._build_model(json.dumps(task), [])
    raise TypeError("a task is a TaskDefinition, a spec dict or a TaskModel, not "
                    f"{type(task).__name__}")
