# Stubs of python/clampai/_gradients.py (the Python ClampAI's gradients and Jacobians).
# test_stubs.py checks them against the module.
import decimal
import enum
from typing import List, Optional, Tuple

from ._clampai import State
from ._task import Invariant

class SensitivityLevel(enum.Enum):
    CRITICAL: int
    SEVERE: int
    WARNING: int
    ACCEPTABLE: int
    FAR: int

class GradientScore:
    variable: str
    invariant_name: str
    numeric_score: float
    level: SensitivityLevel
    diagnostic: str
    def __init__(self, variable: str, invariant_name: str, numeric_score: float, level: SensitivityLevel, diagnostic: str = ...) -> None: ...
    @property
    def is_critical(self) -> bool: ...

class GradientReport:
    state_fingerprint: str
    gradients: List[GradientScore]
    critical_variables: List[str]
    safe_variables: List[str]
    overall_safety_margin: float
    def __init__(self, state_fingerprint: str, gradients: List[GradientScore] = ..., critical_variables: List[str] = ..., safe_variables: List[str] = ..., overall_safety_margin: float = ...) -> None: ...
    def rank_by_criticality(self) -> List[GradientScore]: ...
    def describe(self) -> str: ...

class GradientTracker:
    EPSILON: decimal.Decimal
    invariants: List[Invariant]
    def __init__(self, invariants: List[Invariant]) -> None: ...
    def compute_gradients(self, state: State) -> GradientReport: ...
    def should_trigger_safe_hover(self, report: GradientReport) -> Tuple[bool, str]: ...

class BoundarySeverity(enum.Enum):
    SAFE_DISTANT: int
    SAFE_NOMINAL: int
    WARNING_APPROACH: int
    CRITICAL_IMMINENT: int
    DANGER_CLIFF: int

class JacobianScore:
    variable: str
    invariant_name: str
    score: float
    severity: BoundarySeverity
    steps_to_violation: Optional[float]
    critical: bool
    def __init__(self, variable: str, invariant_name: str, score: float, severity: BoundarySeverity, steps_to_violation: Optional[float], critical: bool) -> None: ...

class JacobianReport:
    state_id: str
    timestamp: float
    scores: Tuple[JacobianScore, ...]
    critical_variables: Tuple[str, ...]
    safety_barrier_violated: bool
    recommendation: str
    def __init__(self, state_id: str, timestamp: float, scores: Tuple[JacobianScore, ...], critical_variables: Tuple[str, ...], safety_barrier_violated: bool, recommendation: str) -> None: ...
    def describe(self) -> str: ...

class JacobianFusion:
    invariants: List[Invariant]
    epsilon: float
    lookahead_steps: int
    def __init__(self, invariants: List[Invariant], epsilon: float = ..., lookahead_steps: int = ...) -> None: ...
    def compute_jacobian(self, state: State) -> JacobianReport: ...
