# Stubs of python/clampai/_barriers.py (the Python ClampAI's capture basins, HJB barriers,
# control barrier function, projector and per-invariant margins). test_stubs.py checks them.
import enum
from typing import Any, Callable, Dict, List, Optional, Tuple

from ._clampai import State
from ._reference_api import SafetyBarrierViolation
from ._task import ActionSpec, Effect

class CaptureBasin:
    name: str
    is_bad: Callable[[State], bool]
    max_steps: int
    def __init__(self, name: str, is_bad: Callable[[State], bool], max_steps: int = ...) -> None: ...
    def evaluate_reachability(self, state: State, candidate_actions: List[ActionSpec]) -> Tuple[bool, str]: ...

class SafeHoverState:
    description: str
    def __init__(self, description: str = ...) -> None: ...
    def to_action(self) -> ActionSpec: ...

class SafeHoverSignal(enum.Enum):
    PROCEED: str
    SAFE_HOVER: str
    TERMINATE_AND_ROLLBACK: str

class HJBEnforcementCheck:
    signal: SafeHoverSignal
    violated_basin: Optional[CaptureBasin]
    reason: str
    requires_immediate_rollback: bool
    def __init__(self, signal: SafeHoverSignal, violated_basin: Optional[CaptureBasin], reason: str, requires_immediate_rollback: bool) -> None: ...

class AuthoritativeHJBBarrier:
    basins: List[CaptureBasin]
    def __init__(self, capture_basins: Optional[List[CaptureBasin]] = ...) -> None: ...
    def check_state_safety(self, state: State) -> HJBEnforcementCheck: ...
    def check_action_leads_to_danger(self, state: State, action: ActionSpec, available_actions: List[ActionSpec]) -> HJBEnforcementCheck: ...
    def enforce_safe_hover(self, state: State) -> SafeHoverSignal: ...

class HJBBarrierCheck:
    violation_type: SafetyBarrierViolation
    is_safe: bool
    basin_name: Optional[str]
    distance_to_basin: Optional[int]
    recommendation: str
    def __init__(self, violation_type: SafetyBarrierViolation, is_safe: bool, basin_name: Optional[str], distance_to_basin: Optional[int], recommendation: str) -> None: ...

class ActiveHJBBarrier:
    basins: List[CaptureBasin]
    max_lookahead: int
    def __init__(self, basins: List[CaptureBasin], max_lookahead: int = ...) -> None: ...
    def check_and_enforce(self, state: State, proposed_action: ActionSpec, available_actions: List[ActionSpec], current_step: int, max_steps: int) -> Tuple[bool, HJBBarrierCheck]: ...

class RecoveryStrategy(enum.Enum):
    SAFE_HOVER: str
    ROLLBACK_ONE: str
    ROLLBACK_TO_SAFE: str
    HUMAN_INTERVENTION: str
    GRACEFUL_HALT: str

def choose_recovery_strategy(barrier_check: HJBBarrierCheck, current_step: int, max_steps: int, is_reversible_available: bool) -> RecoveryStrategy: ...

class ControlBarrierFunction:
    h: Callable[[State], float]
    alpha: float
    def __init__(self, h: Callable[[State], float], alpha: float = ...) -> None: ...
    def evaluate(self, state: State, next_state: State) -> Tuple[bool, str]: ...
    def check(self, state: State, next_state: State) -> Tuple[bool, str]: ...

class QPProjector:
    max_iterations: int
    tol: float
    def __init__(self, max_iterations: int = ..., tol: float = ...) -> None: ...
    def project_cost(self, requested_cost: float, budget_remaining: float) -> Tuple[float, bool]: ...
    def project_effect_parameters(self, effects: Tuple[Effect, ...], state: State, safe_values: Optional[Dict[str, Any]] = ...) -> Tuple[Tuple[Effect, ...], bool]: ...
    def project_action(self, action: ActionSpec, state: State, clampaints: List[Callable[[float], bool]], safe_effect_values: Optional[Dict[str, Any]] = ..., budget_remaining: float = ...) -> Tuple[ActionSpec, bool]: ...

class PerInvariantBudget:
    invariant_name: str
    margin_percent: float
    margin_threshold: float
    def __init__(self, invariant_name: str, margin_percent: float = ..., margin_threshold: float = ...) -> None: ...
    def compute_buffer(self, gradient: Any) -> float: ...
    def is_safe(self, gradient: Any) -> Tuple[bool, str]: ...
