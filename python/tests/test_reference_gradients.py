"""The Python ClampAI's gradients and Jacobians (issue 38): GradientTracker's levels and scores,
JacobianFusion's bands, and the exact perturbations (where the Python ClampAI adds floats)."""

from decimal import Decimal

import pytest

from clampai import (BoundarySeverity, GradientReport, GradientScore, GradientTracker, Invariant,
                     JacobianFusion, JacobianReport, JacobianScore, PerInvariantBudget,
                     SensitivityLevel, State)


def test_gradient_levels_by_how_far_the_boundary_is():
    inv = Invariant("cap", "spent <= 100")
    tracker = GradientTracker([inv])
    # 99.5 + 1% of it breaks the cap: WARNING; 95 + 10% does: ACCEPTABLE; 50 + 10%: FAR.
    report = tracker.compute_gradients(State({"spent": Decimal("99.5"), "label": "x"}))
    assert isinstance(report, GradientReport)
    by_var = {g.variable: g for g in report.gradients}
    assert by_var["spent"].level is SensitivityLevel.WARNING
    assert by_var["spent"].numeric_score == 0.1 and not by_var["spent"].is_critical
    assert by_var["label"].level is SensitivityLevel.FAR and by_var["label"].numeric_score == 1.0
    assert report.overall_safety_margin == 0.1 and report.safe_variables == ["label"]
    assert tracker.should_trigger_safe_hover(report)[0] is False
    assert report.rank_by_criticality()[0].variable == "spent"

    assert tracker.compute_gradients(State({"spent": 95})).gradients[0].level \
        is SensitivityLevel.ACCEPTABLE
    assert tracker.compute_gradients(State({"spent": 50})).gradients[0].level \
        is SensitivityLevel.FAR


def test_a_violated_invariant_is_critical_for_every_variable():
    inv = Invariant("cap", lambda s: s.get("spent", 0) <= 10)
    report = GradientTracker([inv]).compute_gradients(State({"spent": 11, "n": 1}))
    assert [g.level for g in report.gradients] == [SensitivityLevel.CRITICAL] * 2
    assert all(isinstance(g, GradientScore) and g.is_critical for g in report.gradients)
    assert sorted(report.critical_variables) == ["n", "spent"]
    assert report.overall_safety_margin == 0.0
    hover, why = GradientTracker([inv]).should_trigger_safe_hover(report)
    assert hover and "Critical variables" in why
    assert "CRITICAL: " in report.describe() and report.describe().startswith(
        "Safety Gradient Report (state=")


def test_per_invariant_budget_reads_a_gradient_score():
    score = GradientScore("spent", "cap", 0.3, SensitivityLevel.ACCEPTABLE)
    assert PerInvariantBudget("cap").is_safe(score)[0] is True  # 0.3 - 0.2 = 0.1, not < 0.1
    assert PerInvariantBudget("cap", margin_threshold=0.15).is_safe(score)[0] is False


def test_jacobian_bands():
    inv = Invariant("cap", "x <= 10")
    fusion = JacobianFusion([inv])  # epsilon 0.01: moves of 0.01, 0.05, 0.1, 0.5, 1
    # (score, severity, steps): a break at the largest move scores 0 but still has its steps.
    cases = {Decimal("9.995"): (0.99, BoundarySeverity.DANGER_CLIFF, 0.05),
             Decimal("9.96"): (0.95, BoundarySeverity.DANGER_CLIFF, 0.25),
             Decimal("9.7"): (0.5, BoundarySeverity.WARNING_APPROACH, 2.5),
             Decimal("9.5"): (0.0, BoundarySeverity.SAFE_DISTANT, 5.0),  # 9.5 + 0.5 holds
             5: (0.0, BoundarySeverity.SAFE_DISTANT, None)}
    for x, (score, severity, steps) in cases.items():
        report = fusion.compute_jacobian(State({"x": x}))
        assert isinstance(report, JacobianReport)
        (s,) = report.scores
        assert isinstance(s, JacobianScore)
        assert (s.score, s.severity) == (score, severity), x
        assert s.critical == (severity is BoundarySeverity.DANGER_CLIFF)
        assert report.safety_barrier_violated == (score >= 0.9)
        assert s.steps_to_violation == (steps if steps is None else pytest.approx(steps))
    report = fusion.compute_jacobian(State({"x": Decimal("9.995")}))
    assert report.critical_variables == ("x",)
    assert report.recommendation.startswith("CRITICAL: TRIGGER SAFE HOVER")
    assert "DANGER_CLIFF:" in report.describe() and len(report.state_id) == 8


def test_jacobian_skips_private_and_non_numeric_variables():
    inv = Invariant("cap", "x <= 10")
    report = JacobianFusion([inv]).compute_jacobian(
        State({"x": 1, "_progress": Decimal("0.5"), "name": "n", "ok": True}))
    assert [s.variable for s in report.scores] == ["x"]
    assert report.recommendation.startswith("OK: ")


def test_the_perturbations_are_exact():
    """0.7 + 0.1 is 0.7999999999999999 in floats, so the Python ClampAI's JacobianFusion finds
    `x < 0.8` unbroken at a move of 0.1; the move is exact here: broken, score 0.9."""
    fusion = JacobianFusion([Invariant("below", "x < 0.8")])
    (s,) = fusion.compute_jacobian(State({"x": Decimal("0.7")})).scores
    assert s.score == 0.9 and s.severity is BoundarySeverity.DANGER_CLIFF


def test_a_bad_epsilon_is_refused():
    with pytest.raises(ValueError, match="epsilon"):
        JacobianFusion([], epsilon=0)
    with pytest.raises(ValueError, match="epsilon"):
        JacobianFusion([], epsilon=float("nan"))
