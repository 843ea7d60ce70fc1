"""The Python ClampAI's safety gradients and Jacobians (heuristic, diagnostic only): how close each
numeric state variable is to breaking each invariant, found by perturbing it and asking the
invariant again (`Invariant.check`: the C++ kernel for an expression or a template).

The perturbed values are exact: a variable `v` moves by `epsilon * |v|` (GradientTracker) or by
`k * epsilon` (JacobianFusion) in Decimal arithmetic, as the kernel reads numbers, where the
Python ClampAI adds floats; the scores are floats, as there. A bool is not a number here (the
Python ClampAI perturbs True as 1.0). Decisions are the kernel's: these never decide anything."""

from __future__ import annotations

import decimal
import enum
import math
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ._clampai import State
from ._task import Invariant

__all__ = ["SensitivityLevel", "GradientScore", "GradientReport", "GradientTracker",
           "BoundarySeverity", "JacobianScore", "JacobianReport", "JacobianFusion"]


class SensitivityLevel(enum.Enum):
    """How far a variable is from breaking an invariant (GradientTracker)."""

    CRITICAL = 0    # the invariant is violated now
    SEVERE = 1      # very close
    WARNING = 2     # a change of epsilon * |v| breaks it
    ACCEPTABLE = 3  # a change of 10 * epsilon * |v| breaks it
    FAR = 4         # neither does


@dataclass
class GradientScore:
    """The sensitivity of one invariant to one variable: `numeric_score` in [0, 1], 0 the
    most critical, 1 the safest."""

    variable: str
    invariant_name: str
    numeric_score: float
    level: SensitivityLevel
    diagnostic: str = ""

    @property
    def is_critical(self) -> bool:
        return self.level in (SensitivityLevel.CRITICAL, SensitivityLevel.SEVERE)


@dataclass
class GradientReport:
    """Every (variable, invariant) score of a state, the variables that are critical (CRITICAL
    or SEVERE) and those far from every invariant, and the least score."""

    state_fingerprint: str
    gradients: List[GradientScore] = field(default_factory=list)
    critical_variables: List[str] = field(default_factory=list)
    safe_variables: List[str] = field(default_factory=list)
    overall_safety_margin: float = 1.0

    def rank_by_criticality(self) -> List[GradientScore]:
        """The scores, most critical first (stable)."""
        return sorted(self.gradients, key=lambda g: g.numeric_score)

    def describe(self) -> str:
        lines = [f"Safety Gradient Report (state={self.state_fingerprint[:8]})",
                 f"Overall margin: {self.overall_safety_margin:.1%}"]
        if self.critical_variables:
            lines.append(f"CRITICAL: {', '.join(self.critical_variables)}")
        if self.safe_variables:
            lines.append(f"SAFE: {', '.join(self.safe_variables)}")
        return "\n".join(lines)


def _number(value: Any) -> Optional[decimal.Decimal]:
    """`value` as an exact Decimal if it is a number (not a bool), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, decimal.Decimal)):
        return decimal.Decimal(value)
    if isinstance(value, float) and math.isfinite(value):
        return decimal.Decimal(repr(value))
    return None


def _moved(original: Any, value: decimal.Decimal) -> Any:
    """A perturbed value in the variable's own type where it can stay one (an int stays an
    int when the move is whole), else a Decimal."""
    if isinstance(original, int) and value == value.to_integral_value():
        return int(value)
    return value


def _epsilon(epsilon: Any) -> decimal.Decimal:
    e = _number(epsilon)
    if e is None or not e > 0:
        raise ValueError(f"epsilon must be a positive number, not {epsilon!r}")
    return e


def _unique(names: Sequence[str]) -> List[str]:
    return list(dict.fromkeys(names))


class GradientTracker:
    """For each variable and each invariant: violated now (CRITICAL, 0.0); broken by a change of
    `0.01 * |v|` (or 0.01 for a zero) either way (WARNING, 0.1); by ten times that
    (ACCEPTABLE, 0.3); else FAR (1.0). Non-numeric variables are FAR."""

    EPSILON = decimal.Decimal("0.01")

    def __init__(self, invariants: List[Invariant]):
        self.invariants = invariants

    def compute_gradients(self, state: State) -> GradientReport:
        report = GradientReport(state_fingerprint=state.fingerprint)
        scores: List[GradientScore] = []
        for key in state.keys():
            value = state.get(key)
            number = _number(value)
            for inv in self.invariants:
                ok, message = inv.check(state)
                if not ok:
                    scores.append(GradientScore(key, inv.name, 0.0, SensitivityLevel.CRITICAL,
                                                f"Invariant already violated: {message}"))
                    continue
                score, level, diagnostic = 1.0, SensitivityLevel.FAR, \
                    "Variable not involved in invariant"
                if number is not None:
                    delta = self.EPSILON * (abs(number) if number else 1)
                    for factor, hit in ((1, (0.1, SensitivityLevel.WARNING, "Small")),
                                        (10, (0.3, SensitivityLevel.ACCEPTABLE, "Larger"))):
                        if any(not inv.check(state.with_updates(
                                {key: _moved(value, number + sign * factor * delta)}))[0]
                               for sign in (1, -1)):
                            score, level = hit[0], hit[1]
                            diagnostic = f"{hit[2]} change to {key} breaks invariant"
                            break
                scores.append(GradientScore(key, inv.name, score, level, diagnostic))
        report.gradients = scores
        report.overall_safety_margin = min((s.numeric_score for s in scores), default=1.0)
        report.critical_variables = _unique([s.variable for s in scores if s.is_critical])
        report.safe_variables = _unique([s.variable for s in scores
                                         if s.level == SensitivityLevel.FAR])
        return report

    def should_trigger_safe_hover(self, report: GradientReport) -> Tuple[bool, str]:
        """(True, why) if a variable is critical or the least score is under 10%."""
        if report.critical_variables:
            return True, f"Critical variables: {report.critical_variables}"
        if report.overall_safety_margin < 0.1:
            return True, ("Overall safety margin dangerously low: "
                          f"{report.overall_safety_margin:.1%}")
        return False, "Safety margins acceptable"


class BoundarySeverity(enum.Enum):
    """How close a variable is to an invariant's boundary (JacobianFusion)."""

    SAFE_DISTANT = 0       # score < 0.1
    SAFE_NOMINAL = 1       # score < 0.3
    WARNING_APPROACH = 2   # score < 0.6
    CRITICAL_IMMINENT = 3  # score < 0.9
    DANGER_CLIFF = 4       # score >= 0.9


@dataclass(frozen=True)
class JacobianScore:
    """One (variable, invariant) score in [0, 1]: 1 - (the least breaking move) / (100 epsilon)."""

    variable: str
    invariant_name: str
    score: float
    severity: BoundarySeverity
    steps_to_violation: Optional[float]
    critical: bool


@dataclass(frozen=True)
class JacobianReport:
    """Every score of a state, the critical variables (CRITICAL_IMMINENT or DANGER_CLIFF),
    whether any score reaches 0.9, and a recommendation."""

    state_id: str
    timestamp: float
    scores: Tuple[JacobianScore, ...]
    critical_variables: Tuple[str, ...]
    safety_barrier_violated: bool
    recommendation: str

    def describe(self) -> str:
        lines = [f"Jacobian Report (state={self.state_id[:8]})",
                 f"Critical Variables: {', '.join(self.critical_variables) or 'None'}",
                 f"Safety Barrier Violated: {self.safety_barrier_violated}", ""]
        for severity in BoundarySeverity:
            relevant = [s for s in self.scores if s.severity == severity]
            if not relevant:
                continue
            lines.append(f"{severity.name}:")
            for s in relevant:
                steps = (f" (~{s.steps_to_violation:.1f} steps)" if s.steps_to_violation
                         else "")
                lines.append(f"  {s.variable} × {s.invariant_name}: {s.score:.3f}{steps}")
        lines += ["", f"Recommendation: {self.recommendation}"]
        return "\n".join(lines)


class JacobianFusion:
    """Moves each numeric variable (not those named `_...`) by epsilon, 5, 10, 50 and 100
    epsilon, up then down, until the invariant breaks: the score is `1 - move / (100 epsilon)`
    (0 when nothing breaks it, or it is violated already), the severity its band,
    `steps_to_violation` `lookahead_steps * (1 - score)`."""

    _MOVES = (1, 5, 10, 50, 100)

    def __init__(self, invariants: List[Invariant], epsilon: float = 0.01,
                 lookahead_steps: int = 5):
        self.invariants = invariants
        self._epsilon = _epsilon(epsilon)
        self.epsilon = float(epsilon)
        self.lookahead_steps = int(lookahead_steps)

    def compute_jacobian(self, state: State) -> JacobianReport:
        variables: Dict[str, Any] = state.to_dict()
        scores: List[JacobianScore] = []
        critical: set = set()
        top = 0.0
        for inv in self.invariants:
            holds = inv.check(state)[0]
            for key, value in variables.items():
                number = _number(value)
                if key.startswith("_") or number is None:
                    continue
                score, steps = 0.0, None
                if holds:
                    for k in self._MOVES:
                        move = k * self._epsilon
                        if any(not inv.check(state.with_updates(
                                {key: _moved(value, number + sign * move)}))[0]
                               for sign in (1, -1)):
                            score = float(max(decimal.Decimal(0),
                                              1 - decimal.Decimal(k) / 100))
                            steps = self.lookahead_steps * (1.0 - score)
                            break
                severity = _severity(score)
                is_critical = severity in (BoundarySeverity.CRITICAL_IMMINENT,
                                           BoundarySeverity.DANGER_CLIFF)
                if is_critical:
                    critical.add(key)
                top = max(top, score)
                scores.append(JacobianScore(key, inv.name, score, severity, steps, is_critical))
        violated = top >= 0.9
        if violated:
            recommendation = (f"CRITICAL: TRIGGER SAFE HOVER IMMEDIATELY: {len(critical)} "
                              "variable(s) in danger zone")
        elif critical:
            recommendation = f"WARNING: FORCE VARIABLES INTO PROMPT: {', '.join(sorted(critical))}"
        elif top > 0.5:
            recommendation = ("WARNING: Monitor clampaint boundaries closely; critical variables "
                              "approaching")
        elif top > 0.3:
            recommendation = "INFO: All clampaints nominal; continue normal operation"
        else:
            recommendation = "OK: Safe state; all clampaints well within margins"
        return JacobianReport(state_id=state.fingerprint[:8], timestamp=0.0,
                              scores=tuple(scores), critical_variables=tuple(sorted(critical)),
                              safety_barrier_violated=violated, recommendation=recommendation)


def _severity(score: float) -> BoundarySeverity:
    if score < 0.1:
        return BoundarySeverity.SAFE_DISTANT
    if score < 0.3:
        return BoundarySeverity.SAFE_NOMINAL
    if score < 0.6:
        return BoundarySeverity.WARNING_APPROACH
    if score < 0.9:
        return BoundarySeverity.CRITICAL_IMMINENT
    return BoundarySeverity.DANGER_CLIFF
