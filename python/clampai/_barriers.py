"""The Python ClampAI's barriers: capture basins (`CaptureBasin`), the HJB barriers that keep a
run out of them (`ActiveHJBBarrier`, `AuthoritativeHJBBarrier`, their checks, `SafeHoverSignal`,
`SafeHoverState`, `RecoveryStrategy`, `choose_recovery_strategy`), the discrete control barrier
function and the cost/effect projector. The basins are Python predicates, so the search is
here: breadth first over the kernel's transitions (`ActionSpec.simulate`), each state once. The
task-level lookahead over a spec's expressions is `clampai.lookahead` (the C++ one)."""

from __future__ import annotations

import dataclasses
import math
import warnings
from dataclasses import dataclass
from decimal import Decimal
from enum import Enum
from typing import Any, Callable, Dict, List, Optional, Tuple

from ._clampai import State
from ._errors import SpecError
from ._reference_api import SafetyBarrierViolation
from ._task import ActionSpec, Effect


def _search(state: State, actions, is_bad, horizon: int) -> Optional[Tuple[int, ActionSpec]]:
    """`(d, first action)` of a shortest sequence of at most `horizon` of `actions` from
    `state` into `is_bad`, or None. An action the kernel cannot apply in a state (an
    overflow) leads nowhere from it; an ill-typed one raises its `SpecError`."""
    seen = {state}
    frontier: List[Tuple[State, Optional[ActionSpec]]] = [(state, None)]
    for depth in range(1, horizon + 1):
        following = []
        for current, first in frontier:
            for action in actions:
                try:
                    nxt = action.simulate(current)
                except SpecError:
                    raise  # an ill-typed action is an error wherever it is tried
                except ValueError:
                    continue
                if is_bad(nxt):
                    return depth, first or action
                if nxt not in seen:
                    seen.add(nxt)
                    following.append((nxt, first or action))
        if not following:
            break
        frontier = following
    return None


class CaptureBasin:
    """A bad region (`is_bad(state)`) and the horizon (`max_steps`) within which reaching it
    counts."""

    def __init__(self, name: str, is_bad: Callable[[State], bool], max_steps: int = 5):
        self.name = name
        self.is_bad = is_bad
        self.max_steps = max_steps

    def evaluate_reachability(self, state: State,
                              candidate_actions: List[ActionSpec]) -> Tuple[bool, str]:
        """`(False, why)` if `state` is bad or some sequence of at most `max_steps` of
        `candidate_actions` leads into the bad region; `(True, ...)` otherwise."""
        if self.is_bad(state):
            return False, f"CaptureBasin '{self.name}': already in bad region"
        found = _search(state, list(candidate_actions), self.is_bad, self.max_steps)
        if found is None:
            return True, f"CaptureBasin '{self.name}': safe from reachability"
        depth, first = found
        if depth == 1:
            return False, (f"CaptureBasin '{self.name}': action '{first.name}' leads directly "
                           f"to bad region")
        return False, (f"CaptureBasin '{self.name}': action '{first.name}' leads to bad region "
                       f"in {depth} steps")


class SafeHoverState:
    """The emergency no-op (T8): no effects, no cost."""

    def __init__(self, description: str = "Safe hover (no-op)"):
        self.description = description

    def to_action(self) -> ActionSpec:
        """`SAFE_HOVER`: no effects, cost 0, tagged `emergency` (register its id as an
        emergency action of the kernel)."""
        return ActionSpec(id="SAFE_HOVER", name="Safe Hover (Emergency)",
                          description=self.description, effects=(), cost=0.0,
                          risk_level="low", tags=("emergency", "system_safe_hold"))


class SafeHoverSignal(Enum):
    """What the authoritative barrier tells the loop."""

    PROCEED = "proceed"
    SAFE_HOVER = "safe_hover"
    TERMINATE_AND_ROLLBACK = "terminate_and_rollback"


@dataclass(frozen=True)
class HJBEnforcementCheck:
    """`AuthoritativeHJBBarrier`'s answer."""

    signal: SafeHoverSignal
    violated_basin: Optional[CaptureBasin]
    reason: str
    requires_immediate_rollback: bool


class AuthoritativeHJBBarrier:
    """A gate over capture basins: a state inside one stops the run."""

    def __init__(self, capture_basins: Optional[List[CaptureBasin]] = None):
        self.basins = capture_basins or []

    def check_state_safety(self, state: State) -> HJBEnforcementCheck:
        """TERMINATE_AND_ROLLBACK (rollback required) if `state` is in a basin, else PROCEED."""
        for basin in self.basins:
            if basin.is_bad(state):
                return HJBEnforcementCheck(SafeHoverSignal.TERMINATE_AND_ROLLBACK, basin,
                                           f"State violates capture basin '{basin.name}'", True)
        return HJBEnforcementCheck(SafeHoverSignal.PROCEED, None,
                                   "State is safe; no capture basin violations", False)

    def check_action_leads_to_danger(self, state: State, action: ActionSpec,
                                     available_actions: List[ActionSpec]
                                     ) -> HJBEnforcementCheck:
        """TERMINATE_AND_ROLLBACK (nothing to roll back: the action is not taken) if `action`
        leads from `state` into a basin, else PROCEED."""
        after = action.simulate(state)
        for basin in self.basins:
            if basin.is_bad(after):
                return HJBEnforcementCheck(
                    SafeHoverSignal.TERMINATE_AND_ROLLBACK, basin,
                    f"Action '{action.name}' would enter capture basin '{basin.name}'. Rejected.",
                    False)
        return HJBEnforcementCheck(SafeHoverSignal.PROCEED, None,
                                   f"Action '{action.name}' is safe; no basin entry", False)

    def enforce_safe_hover(self, state: State) -> SafeHoverSignal:
        """`check_state_safety(state).signal`."""
        return self.check_state_safety(state).signal


@dataclass
class HJBBarrierCheck:
    """`ActiveHJBBarrier`'s answer: how the proposal meets a basin, and how far it is."""

    violation_type: SafetyBarrierViolation
    is_safe: bool
    basin_name: Optional[str]
    distance_to_basin: Optional[int]
    recommendation: str


class ActiveHJBBarrier:
    """Capture basins checked `max_lookahead` steps ahead of a proposal (over the actions
    given, so heuristic: the agent may have others)."""

    def __init__(self, basins: List[CaptureBasin], max_lookahead: int = 3):
        if max_lookahead > 5:
            warnings.warn(f"HJB lookahead depth {max_lookahead} may be exponentially slow. "
                          f"Consider k <= 3.", RuntimeWarning, stacklevel=2)
        self.basins = basins
        self.max_lookahead = max_lookahead

    def check_and_enforce(self, state: State, proposed_action: ActionSpec,
                          available_actions: List[ActionSpec], current_step: int,
                          max_steps: int) -> Tuple[bool, HJBBarrierCheck]:
        """`(is_safe, check)`: unsafe if `state` is in a basin, if the proposal enters one, or
        if one is reachable within `max_lookahead` steps after it while no more than
        `max_lookahead` steps of the run remain (`distance_to_basin`: the steps from `state`)."""
        after = None
        for basin in self.basins:
            if basin.is_bad(state):
                return False, HJBBarrierCheck(
                    SafetyBarrierViolation.ALREADY_IN_BASIN, False, basin.name, 0,
                    f"CRITICAL: Current state is already inside capture basin '{basin.name}'. "
                    f"Must enter Safe Hover and attempt rollback.")
            if after is None:
                after = proposed_action.simulate(state)
            if basin.is_bad(after):
                return False, HJBBarrierCheck(
                    SafetyBarrierViolation.ACTION_DIRECTLY_ENTERS, False, basin.name, 1,
                    f"BARRIER: Action '{proposed_action.name}' would immediately enter capture "
                    f"basin '{basin.name}'. Action rejected.")
            found = _search(after, list(available_actions), basin.is_bad, self.max_lookahead)
            steps_left = max_steps - current_step
            if found is not None and steps_left <= self.max_lookahead:
                return False, HJBBarrierCheck(
                    SafetyBarrierViolation.REACHABLE_IN_STEPS, False, basin.name, 1 + found[0],
                    f"WARNING: Capture basin '{basin.name}' reachable within {steps_left} "
                    f"remaining step(s). Entering Safe Hover.")
        return True, HJBBarrierCheck(SafetyBarrierViolation.NO_VIOLATION, True, None, None,
                                     "HJB barrier clear")


class RecoveryStrategy(Enum):
    """What to do when the barrier fires."""

    SAFE_HOVER = "safe_hover"
    ROLLBACK_ONE = "rollback_one"
    ROLLBACK_TO_SAFE = "rollback_to_safe"
    HUMAN_INTERVENTION = "human_ask"
    GRACEFUL_HALT = "halt"


def choose_recovery_strategy(barrier_check: HJBBarrierCheck, current_step: int,
                             max_steps: int, is_reversible_available: bool
                             ) -> RecoveryStrategy:
    """ROLLBACK_ONE when a step can be undone, SAFE_HOVER otherwise."""
    if is_reversible_available and current_step > 0:
        return RecoveryStrategy.ROLLBACK_ONE
    return RecoveryStrategy.SAFE_HOVER


def _exact(x: Any, what: str) -> Decimal:
    if isinstance(x, bool) or not isinstance(x, (int, float, Decimal)):
        raise TypeError(f"{what} must be a number, not {type(x).__name__}")
    if isinstance(x, float):
        if not math.isfinite(x):
            raise ValueError(f"{what} must be finite, not {x!r}")
        return Decimal(repr(x))
    return Decimal(x)


class ControlBarrierFunction:
    """The discrete control barrier `h(s') - h(s) >= -alpha * h(s)`, `alpha` in (0, 1),
    decided exactly (on the decimal values of `h`)."""

    def __init__(self, h: Callable[[State], float], alpha: float = 0.1):
        if not (0 < alpha < 1):
            raise ValueError(f"CBF alpha must be in (0,1), got {alpha}")
        self.h = h
        self.alpha = alpha

    def evaluate(self, state: State, next_state: State) -> Tuple[bool, str]:
        """`(passes, message)` for the transition `state` -> `next_state`."""
        h_now = _exact(self.h(state), "h(state)")
        delta = _exact(self.h(next_state), "h(next_state)") - h_now
        threshold = -_exact(self.alpha, "alpha") * h_now
        if delta >= threshold:
            return True, f"CBF: h={h_now:.3f}, Δh={delta:.4f} ≥ {threshold:.4f}"
        return False, f"CBF VIOLATION: h={h_now:.3f}, Δh={delta:.4f} < {threshold:.4f}"

    def check(self, state: State, next_state: State) -> Tuple[bool, str]:
        """`evaluate` (the Python ClampAI's docs/API.md name)."""
        return self.evaluate(state, next_state)


class QPProjector:
    """Minimum-intervention repair of an action's cost and numeric effect values (the
    parameters' repair with a certificate is `clampai.repair`)."""

    def __init__(self, max_iterations: int = 100, tol: float = 1e-6):
        self.max_iterations = max_iterations
        self.tol = tol

    def project_cost(self, requested_cost: float, budget_remaining: float
                     ) -> Tuple[float, bool]:
        """`(cost, repaired)`: the cost clamped to [0.001, budget_remaining]."""
        if requested_cost < 0.001:
            return 0.001, True
        if requested_cost <= budget_remaining:
            return requested_cost, False
        return budget_remaining, True

    def project_effect_parameters(self, effects: Tuple[Effect, ...], state: State,
                                  safe_values: Optional[Dict[str, Any]] = None
                                  ) -> Tuple[Tuple[Effect, ...], bool]:
        """`(effects, repaired)`: each numeric `set`/`increment`/`decrement`/`multiply` value
        of a variable in `safe_values` replaced by its safe value."""
        if not safe_values:
            return tuple(effects), False
        out, repaired = [], False
        for effect in effects:
            safe = safe_values.get(effect.variable)
            numeric = (int, float, Decimal)
            if (effect.variable in safe_values
                    and effect.mode in ("set", "increment", "decrement", "multiply")
                    and isinstance(effect.value, numeric) and isinstance(safe, numeric)
                    and effect.value != safe):
                out.append(Effect(effect.variable, effect.mode, safe))
                repaired = True
            else:
                out.append(effect)
        return tuple(out), repaired

    def project_action(self, action: ActionSpec, state: State,
                       clampaints: List[Callable[[float], bool]],
                       safe_effect_values: Optional[Dict[str, Any]] = None,
                       budget_remaining: float = float("inf")) -> Tuple[ActionSpec, bool]:
        """`(action, repaired)`: the action with its cost and effects projected, named
        `... [repaired]` when anything changed (every other field kept)."""
        cost, cost_changed = self.project_cost(action.cost, budget_remaining=budget_remaining)
        effects, effects_changed = self.project_effect_parameters(action.effects, state,
                                                                  safe_effect_values)
        if cost_changed or effects_changed:
            return dataclasses.replace(action, name=action.name + " [repaired]",
                                       effects=effects, cost=cost), True
        return action, False


@dataclass
class PerInvariantBudget:
    """A safety margin per invariant over a gradient score (`numeric_score` in [0, 1], 1 the
    safest): the margin left is the score less `margin_percent`."""

    invariant_name: str
    margin_percent: float = 0.2
    margin_threshold: float = 0.1

    def _buffer(self, gradient: Any) -> Decimal:
        score = _exact(gradient.numeric_score, "numeric_score")
        return max(Decimal(0), score - _exact(self.margin_percent, "margin_percent"))

    def compute_buffer(self, gradient: Any) -> float:
        """`max(0, gradient.numeric_score - margin_percent)`, computed exactly."""
        return float(self._buffer(gradient))

    def is_safe(self, gradient: Any) -> Tuple[bool, str]:
        """`(False, ...)` when the margin left is under `margin_threshold` (exactly)."""
        buffered = self._buffer(gradient)
        if buffered < _exact(self.margin_threshold, "margin_threshold"):
            return False, (f"Margin for {self.invariant_name} exhausted: {float(buffered):.1%} "
                           f"< {self.margin_threshold:.1%}")
        return True, f"Safe for {self.invariant_name}: {float(buffered):.1%} margin"
