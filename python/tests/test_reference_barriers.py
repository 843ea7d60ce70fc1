"""The Python ClampAI's barriers in its documented style (issue 38, phase 3): capture basins,
the HJB barriers, safe hover, the control barrier function, the projector and per-invariant
margins, as its docs/API.md and docstrings describe them (the import line changed), and where
this package answers differently (docs/PYTHON.md)."""

from dataclasses import dataclass

import pytest

from clampai import (ActionSpec, ActiveHJBBarrier, AuthoritativeHJBBarrier, CaptureBasin,
                     ControlBarrierFunction, Effect, HJBBarrierCheck, HJBEnforcementCheck, Invariant,
                     PerInvariantBudget, QPProjector, RecoveryStrategy, SafeHoverSignal,
                     SafeHoverState, SafetyBarrierViolation, SafetyKernel, SpecError, State,
                     choose_recovery_strategy)


def step(name, amount, cost=1.0):
    return ActionSpec(id=name, name=name.title(), description="",
                      effects=(Effect("risk", "increment", amount),), cost=cost)


SMALL, BIG = step("small", 1), step("big", 5)
OVERHEAT = CaptureBasin("overheat", lambda s: s.get("risk", 0) >= 10, max_steps=3)


# --- CaptureBasin ---------------------------------------------------------------------------

def test_capture_basin_as_documented():
    basin = CaptureBasin(name="overheat", is_bad=lambda s: s.get("risk", 0) >= 10, max_steps=3)
    assert (basin.name, basin.max_steps) == ("overheat", 3)
    assert basin.evaluate_reachability(State({"risk": 0}), [SMALL]) == \
        (True, "CaptureBasin 'overheat': safe from reachability")
    assert basin.evaluate_reachability(State({"risk": 12}), []) == \
        (False, "CaptureBasin 'overheat': already in bad region")
    assert basin.evaluate_reachability(State({"risk": 6}), [SMALL, BIG]) == \
        (False, "CaptureBasin 'overheat': action 'Big' leads directly to bad region")


def test_capture_basin_searches_its_whole_horizon():
    # risk 0 -> 5 -> 10 with two BIG steps: the Python ClampAI looks one step ahead only.
    ok, message = OVERHEAT.evaluate_reachability(State({"risk": 0}), [SMALL, BIG])
    assert not ok
    assert message == "CaptureBasin 'overheat': action 'Big' leads to bad region in 2 steps"
    # Beyond the horizon it is not counted: 3 steps of SMALL reach 3 only.
    assert OVERHEAT.evaluate_reachability(State({"risk": 0}), [SMALL])[0]
    assert CaptureBasin("x", lambda s: s["risk"] >= 10).max_steps == 5


def test_an_action_that_cannot_apply_is_no_way_in():
    # x10 overflows from 10**18: that state has no successor by `grow`, so `set` is needed.
    grow = ActionSpec(id="grow", name="Grow", effects=(Effect("n", "multiply", 10),), cost=1)
    huge = CaptureBasin("huge", lambda s: s["n"] >= 10**18, max_steps=4)
    assert huge.evaluate_reachability(State({"n": 10**16}), [grow])[0] is False
    never = CaptureBasin("never", lambda s: s["n"] == 0, max_steps=4)
    assert never.evaluate_reachability(State({"n": 10**18}), [grow])[0]
    with pytest.raises(SpecError, match="needs a list variable"):
        never.evaluate_reachability(State({"n": 1}), [ActionSpec(
            id="bad", name="Bad", effects=(Effect("n", "append", 1),), cost=1)])


# --- AuthoritativeHJBBarrier, SafeHoverSignal, HJBEnforcementCheck ---------------------------

def test_authoritative_barrier():
    barrier = AuthoritativeHJBBarrier(capture_basins=[OVERHEAT])
    check = barrier.check_state_safety(State({"risk": 10}))
    assert isinstance(check, HJBEnforcementCheck)
    assert check.signal is SafeHoverSignal.TERMINATE_AND_ROLLBACK
    assert check.violated_basin is OVERHEAT and check.requires_immediate_rollback
    assert check.reason == "State violates capture basin 'overheat'"
    assert barrier.enforce_safe_hover(State({"risk": 1})) is SafeHoverSignal.PROCEED
    danger = barrier.check_action_leads_to_danger(State({"risk": 6}), BIG, [SMALL, BIG])
    assert danger.signal is SafeHoverSignal.TERMINATE_AND_ROLLBACK
    assert not danger.requires_immediate_rollback      # the action is never taken
    assert "would enter capture basin 'overheat'" in danger.reason
    fine = barrier.check_action_leads_to_danger(State({"risk": 0}), SMALL, [SMALL])
    assert fine.signal is SafeHoverSignal.PROCEED and fine.violated_basin is None
    assert AuthoritativeHJBBarrier().basins == []
    assert SafeHoverSignal.SAFE_HOVER.value == "safe_hover"


# --- ActiveHJBBarrier, HJBBarrierCheck, recovery ---------------------------------------------

def test_active_barrier():
    barrier = ActiveHJBBarrier(basins=[OVERHEAT], max_lookahead=2)
    ok, check = barrier.check_and_enforce(State({"risk": 10}), SMALL, [SMALL], 0, 10)
    assert not ok and check.violation_type is SafetyBarrierViolation.ALREADY_IN_BASIN
    assert check.distance_to_basin == 0 and check.basin_name == "overheat"
    ok, check = barrier.check_and_enforce(State({"risk": 6}), BIG, [SMALL], 0, 10)
    assert not ok and check.violation_type is SafetyBarrierViolation.ACTION_DIRECTLY_ENTERS
    assert check.distance_to_basin == 1
    # Reachable after the proposal (0 -> 1 -> 6 -> 11) with 2 steps of the run left.
    ok, check = barrier.check_and_enforce(State({"risk": 0}), SMALL, [BIG], 8, 10)
    assert not ok and check.violation_type is SafetyBarrierViolation.REACHABLE_IN_STEPS
    assert check.distance_to_basin == 3       # the steps from the state, not the steps left
    assert "reachable within 2 remaining step(s)" in check.recommendation
    # With many steps left the Python ClampAI's barrier lets it through (heuristic).
    ok, check = barrier.check_and_enforce(State({"risk": 0}), SMALL, [BIG], 0, 10)
    assert ok and check == HJBBarrierCheck(SafetyBarrierViolation.NO_VIOLATION, True, None,
                                           None, "HJB barrier clear")


def test_a_deep_lookahead_warns():
    with pytest.warns(RuntimeWarning, match="exponentially slow"):
        ActiveHJBBarrier([OVERHEAT], max_lookahead=6)


def test_choose_recovery_strategy():
    _, check = ActiveHJBBarrier([OVERHEAT]).check_and_enforce(State({"risk": 10}), SMALL, [],
                                                              3, 10)
    assert choose_recovery_strategy(check, 3, 10, True) is RecoveryStrategy.ROLLBACK_ONE
    assert choose_recovery_strategy(check, 0, 10, True) is RecoveryStrategy.SAFE_HOVER
    assert choose_recovery_strategy(check, 9, 10, False) is RecoveryStrategy.SAFE_HOVER
    assert RecoveryStrategy.HUMAN_INTERVENTION.value == "human_ask"


# --- SafeHoverState ---------------------------------------------------------------------------

def test_safe_hover_is_an_emergency_action_of_the_kernel():
    hover = SafeHoverState().to_action()
    assert hover.id == "SAFE_HOVER" and hover.effects == () and hover.cost == 0.0
    assert "emergency" in hover.tags and SafeHoverState().description == "Safe hover (no-op)"
    kernel = SafetyKernel(budget=1.0, invariants=[], emergency_actions={"SAFE_HOVER"})
    state = State({"risk": 3})
    kernel.execute(state, step("spend", 0, cost=1.0))      # the budget is spent
    new_state, _entry = kernel.execute(state, hover)        # T8: still executable
    assert new_state == state


# --- ControlBarrierFunction ---------------------------------------------------------------

def test_control_barrier_function_as_documented():
    # The README's form: a float-given variable reads back as a float.
    cbf = ControlBarrierFunction(h=lambda s: 1.0 - s.get("risk", 0.0), alpha=0.1)
    ok, message = cbf.check(State({"risk": 0.0}), State({"risk": 0.05}))
    assert ok and message.startswith("CBF: h=1.000")
    ok, message = cbf.evaluate(State({"risk": 0.0}), State({"risk": 0.5}))
    assert not ok and message == "CBF VIOLATION: h=1.000, Δh=-0.5000 < -0.1000"
    with pytest.raises(ValueError, match=r"alpha must be in \(0,1\)"):
        ControlBarrierFunction(h=lambda s: 1.0, alpha=1.0)


def test_float_lambdas_of_the_documented_style_run_in_a_kernel():
    # The Python ClampAI's README/API.md style: float arithmetic on a state's values inside
    # invariants and barriers, on states the kernel derived (a TypeError before: Decimal).
    kernel = SafetyKernel(budget=10.0, invariants=[
        Invariant("cpu", lambda s: s.get("cpu", 0.0) * 1.5 < 90)])
    state = State({"cpu": 10.0, "risk": 0.0})
    up = ActionSpec(id="up", name="up", effects=(Effect("cpu", "increment", 0.1),
                                                 Effect("risk", "increment", 0.05)), cost=1.0)
    new_state, _entry = kernel.execute(state, up)
    assert type(new_state.get("cpu")) is float and new_state.get("cpu") == 10.1
    assert new_state.to_dict() == {"cpu": 10.1, "risk": 0.05}
    cbf = ControlBarrierFunction(h=lambda s: 1.0 - s.get("risk", 0.0), alpha=0.1)
    assert cbf.evaluate(state, new_state)[0]
    verdict = kernel.evaluate(new_state, up)
    assert verdict.approved and verdict.simulated_next_state["risk"] == 0.1


def test_control_barrier_function_is_exact_at_its_boundary():
    # h falls from 1.0 to 0.7 with alpha 0.3: exactly the allowed decrease. In binary floats
    # 0.7 - 1.0 < -0.3 * 1.0, so the Python ClampAI calls it a violation.
    cbf = ControlBarrierFunction(h=lambda s: s["h"], alpha=0.3)
    assert cbf.evaluate(State({"h": 1.0}), State({"h": 0.7}))[0]
    assert not cbf.evaluate(State({"h": 1.0}), State({"h": 0.69}))[0]


# --- QPProjector ----------------------------------------------------------------------------

def test_qp_projector():
    qp = QPProjector()
    assert (qp.max_iterations, qp.tol) == (100, 1e-6)
    assert qp.project_cost(5.0, budget_remaining=3.0) == (3.0, True)
    assert qp.project_cost(0.0, budget_remaining=3.0) == (0.001, True)
    assert qp.project_cost(2.0, budget_remaining=3.0) == (2.0, False)
    effects = (Effect("risk", "increment", 5), Effect("log", "append", "x"))
    assert qp.project_effect_parameters(effects, State({}), None) == (effects, False)
    fixed, changed = qp.project_effect_parameters(effects, State({}), {"risk": 2, "log": 1})
    assert changed and fixed == (Effect("risk", "increment", 2), Effect("log", "append", "x"))
    action = ActionSpec(id="big", name="Big", effects=effects, cost=5.0, reversible=False,
                        tags=("t",))
    repaired, changed = qp.project_action(action, State({}), [], {"risk": 2},
                                          budget_remaining=4.0)
    assert changed and repaired.name == "Big [repaired]" and repaired.cost == 4.0
    assert repaired.effects[0] == Effect("risk", "increment", 2)
    assert repaired.reversible is False and repaired.tags == ("t",)   # kept
    same, changed = qp.project_action(SMALL, State({}), [])
    assert same is SMALL and not changed


# --- PerInvariantBudget ---------------------------------------------------------------------

@dataclass
class Score:
    numeric_score: float


def test_per_invariant_budget():
    budget = PerInvariantBudget("cap")
    assert (budget.margin_percent, budget.margin_threshold) == (0.2, 0.1)
    assert budget.compute_buffer(Score(0.9)) == 0.7
    assert budget.compute_buffer(Score(0.1)) == 0.0
    assert budget.is_safe(Score(0.9)) == (True, "Safe for cap: 70.0% margin")
    assert budget.is_safe(Score(0.25)) == (False, "Margin for cap exhausted: 5.0% < 10.0%")
    # 0.3 - 0.2 is exactly the threshold: the Python ClampAI's 0.09999999999999998 fails it.
    assert budget.is_safe(Score(0.3))[0]
