"""The Python ClampAI's inverse effects in its documented style (issue 38, phase 3):
`InverseAlgebra`, `InverseEffect`, `RollbackRecord`, `action_with_inverse_guarantee`, as its
docstrings describe them, unchanged but for the import line; the transitions are the kernel's."""

import time

import pytest

from clampai import (ActionSpec, Effect, InverseAlgebra, InverseEffect, RollbackRecord,
                     SpecError, State, action_with_inverse_guarantee)


def spend():
    return ActionSpec(
        id="spend", name="Spend", description="Pay and log",
        effects=(Effect("balance", "decrement", 30), Effect("log", "append", "paid"),
                 Effect("receipt", "set", "r-1"), Effect("draft", "delete")),
        cost=1.0)


BEFORE = State({"balance": 100, "log": ["opened"], "draft": "x", "rate": 1.5})


def test_compute_inverse_from_states_restores_every_changed_variable():
    after = spend().simulate(BEFORE)
    assert after == State({"balance": 70, "log": ["opened", "paid"], "receipt": "r-1",
                           "rate": 1.5})
    inverse = InverseAlgebra.compute_inverse_from_states(BEFORE, after, spend())
    assert isinstance(inverse, tuple)
    # One per changed variable, in key order: set the old value, delete what was added.
    assert inverse == (Effect("balance", "set", 100), Effect("draft", "set", "x"),
                       Effect("log", "set", ["opened"]), Effect("receipt", "delete"))
    ok, message = InverseAlgebra.verify_inverse_correctness(BEFORE, spend(), inverse)
    assert ok and "T7 holds" in message


def test_verify_inverse_correctness_reports_what_still_differs():
    ok, message = InverseAlgebra.verify_inverse_correctness(
        BEFORE, spend(), (Effect("balance", "set", 100),))
    assert not ok
    assert message.startswith("Inverse failed: 3 variables still differ")
    assert "receipt" in message and "log" in message


def test_rollback_record_applies_and_checks_the_state_after():
    after = spend().simulate(BEFORE)
    record = InverseAlgebra.make_rollback_record(spend(), BEFORE, after, time.time())
    assert isinstance(record, RollbackRecord)
    assert record.action_id == "spend" and record.action_name == "Spend"
    assert record.state_before_fingerprint == BEFORE.fingerprint
    assert record.state_after_fingerprint == after.fingerprint
    assert record.state_before_snapshot is BEFORE
    assert len(record.inverse_effects) == 4
    assert record.apply_rollback(after) == BEFORE
    with pytest.raises(ValueError, match="Cannot rollback"):
        record.apply_rollback(BEFORE)


def test_a_tampered_record_fails_its_exactness_check():
    after = spend().simulate(BEFORE)
    record = InverseAlgebra.make_rollback_record(spend(), BEFORE, after, 0.0)
    record.inverse_effects = (Effect("balance", "set", 100),)
    with pytest.raises(AssertionError, match="T7"):
        record.apply_rollback(after)


def test_inverse_effect_to_effect():
    assert InverseEffect("x", "set", 5).to_effect() == Effect("x", "set", 5)
    e = InverseEffect("x", "set", 5)
    with pytest.raises(AttributeError):
        e.prior_value = 6  # frozen
    from clampai._inverse import DELETED
    assert InverseEffect("x", "delete", DELETED).to_effect() == Effect("x", "delete")


def test_action_with_inverse_guarantee():
    spec, inverse = action_with_inverse_guarantee(spend(), BEFORE)
    assert spec is not None and spec.id == "spend"
    restored = ActionSpec(id="undo", name="Undo", description="", effects=inverse,
                          cost=0.0).simulate(spend().simulate(BEFORE))
    assert restored == BEFORE


def test_action_with_inverse_guarantee_rejects_an_action_that_cannot_apply():
    # An append to an int is not a transition of the kernel's: its SpecError (a ValueError).
    bad = ActionSpec(id="bad", name="Bad", description="",
                     effects=(Effect("missing", "append", 1),), cost=1.0)
    with pytest.raises(SpecError, match="needs a list variable"):
        action_with_inverse_guarantee(bad, State({"missing": 3}))
