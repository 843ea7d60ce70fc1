"""The reference's formal layer in its own documented style (issue 38, phase 1): the examples of
the reference's README and docs/API.md for these names, unchanged but for the import line, then
the behaviour behind them, and where this package deliberately answers differently
(docs/PYTHON.md, "Where the reference form differs")."""

import threading
from decimal import Decimal

import pytest

import clampai
from clampai import (FORMAL_CLAIMS, HARDENING_CLAIMS, REASONING_CLAIMS, ActionSpec,
                     BudgetController, CheckResult, Claim, Effect, ExecutionTrace,
                     GuaranteeLevel, Invariant, SafetyBarrierViolation, SafetyHarness,
                     SafetyKernel, SafetyVerdict, SafetyViolation, State, TaskDefinition,
                     TraceEntry, clampai_safe, make_action, make_state, safe)


# --- The README's examples ------------------------------------------------------------------

def test_readme_quickstart_safe():
    @safe(budget=10.0)
    def call_api(endpoint: str) -> dict:
        return {"endpoint": endpoint}

    for _ in range(10):
        call_api("/search")   # $1.00 charged
    with pytest.raises(SafetyViolation, match="budget"):
        call_api("/search")
    assert call_api.kernel.budget.remaining == 0.0


class FakeDb:
    def __init__(self):
        self.count = 0

    def get_count(self):
        return self.count

    def get_call_count_today(self):
        return self.count

    def get_total_spend(self):
        return 2 * self.count


def test_readme_safe_with_invariants_and_state_fn():
    from clampai.invariants import pii_guard_invariant, rate_limit_invariant

    db = FakeDb()
    sent = []

    @safe(
        budget=50.0,
        cost_per_call=2.0,
        invariants=[
            rate_limit_invariant("emails_sent", max_count=100),
            pii_guard_invariant("output"),
        ],
        state_fn=lambda: {"emails_sent": db.get_count(), "output": ""},
    )
    def send_email(recipient: str, body: str) -> None:
        sent.append(recipient)
        db.count += 1

    send_email("alice@example.com", "Hello")
    db.count = 101  # the state_fn now breaks the rate limit before the call
    with pytest.raises(SafetyViolation, match="rate_limit:emails_sent") as err:
        send_email("bob@example.com", "Hello")
    assert sent == ["alice@example.com"]  # the blocked call never ran
    assert not err.value.verdict.approved
    assert isinstance(err.value, RuntimeError)


def test_readme_safe_section():
    from clampai.invariants import rate_limit_invariant, value_range_invariant

    db = FakeDb()

    @safe(
        budget=50.0,
        cost_per_call=2.0,
        invariants=[
            rate_limit_invariant("calls_today", max_count=20),
            value_range_invariant("cost_usd", 0, 40),
        ],
        state_fn=lambda: {
            "calls_today": db.get_call_count_today(),
            "cost_usd": db.get_total_spend(),
        },
    )
    def send_email(recipient: str, body: str) -> None:
        db.count += 1

    blocked = []
    for _ in range(25):
        try:
            send_email("alice@example.com", "Hello")
        except SafetyViolation as exc:
            blocked.append(f"Blocked: {exc}")
    # 25 calls of 2.0 against 50.0: the budget allows all 25; the invariants read the state
    # before the call (the effects change call_count and total_cost), so the 21st call runs
    # (20 calls so far, 40 spent) and the 22nd is the first blocked.
    assert db.count == 21 and len(blocked) == 4
    assert "rate_limit:calls_today" in blocked[0] and "value_range:cost_usd" in blocked[0]
    log = send_email.audit_log
    assert [e["step"] for e in log] == list(range(1, 22))
    assert {e["cost"] for e in log} == {2.0} and all(e["approved"] for e in log)
    assert send_email.kernel.budget.remaining == 8.0
    send_email.reset()
    assert send_email.kernel.budget.remaining == 50.0 and send_email.audit_log == []


def test_readme_core_concepts():
    s = State({"counter": 0, "errors": 0, "status": "pending"})
    assert s.get("counter") == 0
    assert s.get("missing", 42) == 42
    action = ActionSpec(
        id="process_batch",
        name="Process Batch",
        description="Process 5 records from the queue",
        effects=(
            Effect("processed", "increment", 5),
            Effect("queue_size", "decrement", 5),
        ),
        cost=2.0,
        reversible=True,
    )
    kernel = SafetyKernel(
        budget=50.0,
        invariants=[
            Invariant("no_delete", lambda s: not s.get("deleted", False),
                      "Deletion not allowed", enforcement="blocking"),
        ],
        min_action_cost=0.01,
    )
    assert isinstance(kernel, SafetyKernel) and kernel.max_steps == 5000
    state = State({"processed": 0, "queue_size": 10, "deleted": False})
    verdict = kernel.evaluate(state, action)
    assert verdict.approved and verdict.simulated_next_state == State(
        {"processed": 5, "queue_size": 5, "deleted": False})
    new_state, entry = kernel.evaluate_and_execute_atomic(state, action)
    assert new_state["processed"] == 5 and entry.step == 1 and entry.approved
    # Rollback (README, "Advanced features").
    restored = kernel.rollback(state, new_state, action)
    assert restored == state
    assert kernel.budget.spent_net == 0.0 and kernel.budget.spent_gross == 2.0


def test_readme_debug_a_rejected_action():
    kernel = SafetyKernel(budget=2.0, invariants=[
        Invariant("rate_limit", lambda s: s.get("calls", 0) <= 1, "at most one call")])
    state = State({"calls": 1})
    action = ActionSpec(id="call", name="Call", description="",
                        effects=(Effect("calls", "increment", 1),), cost=3.0)
    verdict = kernel.evaluate(state, action)
    assert verdict.approved is False
    reasons = verdict.rejection_reasons
    assert len(reasons) == 2
    assert "budget" in reasons[0] and "rate_limit" in reasons[1]
    assert [r for _, r, _ in verdict.checks if r != CheckResult.PASS] == [
        CheckResult.FAIL_BUDGET, CheckResult.FAIL_INVARIANT]
    assert verdict.decision.reason_codes == ["budget_exceeded", "invariant_violated"]
    assert "REJECTED" in verdict.summary()


def test_readme_make_state_and_make_action():
    state = make_state(counter=0, status="pending")
    action = make_action("increment", cost=1.0, counter=5)  # sets counter=5 in state
    assert state.to_dict() == {"counter": 0, "status": "pending"}
    assert action.name == "increment" and action.id.startswith("increment-")
    assert action.effects == (Effect("counter", "set", 5),) and action.cost == 1.0
    assert make_action("increment").id != make_action("increment").id


def test_readme_safety_harness():
    from clampai.invariants import value_range_invariant

    def test_spend_ceiling():
        inv = value_range_invariant("spend_usd", 0, 100)
        with SafetyHarness(budget=50.0, invariants=[inv]) as h:
            # Should be allowed:
            h.assert_allowed(make_state(spend_usd=10), make_action("buy", cost=5.0))

            # Should be blocked (invariant violation):
            h.assert_blocked(
                make_state(spend_usd=99),
                make_action("buy_big", cost=5.0, spend_usd=200),
                reason_contains="spend_usd",
            )

    def test_budget_exhaustion():
        with SafetyHarness(budget=10.0) as h:
            h.execute(make_state(), make_action("step1", cost=6.0))
            h.assert_budget_remaining(4.0)
            h.assert_blocked(make_state(), make_action("step2", cost=6.0))

    test_spend_ceiling()
    test_budget_exhaustion()


def test_testing_module_docstring_examples():
    from clampai import rate_limit_invariant

    with SafetyHarness(budget=5.0) as h:
        h.assert_allowed(make_state(), make_action("cheap", cost=3.0))
        h.assert_blocked(make_state(), make_action("expensive", cost=10.0))
        h.assert_budget_remaining(5.0)  # nothing was executed, just evaluated

    inv = rate_limit_invariant("calls", 2)
    with SafetyHarness(budget=100.0, invariants=[inv]) as h:
        s = make_state(calls=0)
        s = h.execute(s, make_action("a", cost=1.0, calls=1))
        s = h.execute(s, make_action("b", cost=1.0, calls=2))
        h.assert_blocked(s, make_action("c", cost=1.0, calls=3), reason_contains="calls")
        h.assert_step_count(2)


def test_harness_assertions_fail_when_they_should():
    with SafetyHarness(budget=10.0) as h:
        with pytest.raises(AssertionError, match="ALLOWED"):
            h.assert_allowed(make_state(), make_action("big", cost=20.0))
        with pytest.raises(AssertionError, match="BLOCKED"):
            h.assert_blocked(make_state(), make_action("small", cost=1.0))
        with pytest.raises(AssertionError, match="do not contain 'invariant'"):
            h.assert_blocked(make_state(), make_action("big", cost=20.0),
                             reason_contains="invariant")
        with pytest.raises(RuntimeError):
            h.execute(make_state(), make_action("big", cost=20.0))
        h.execute(make_state(), make_action("one", cost=1.0))
        with pytest.raises(AssertionError):
            h.assert_budget_remaining(5.0)
        with pytest.raises(AssertionError):
            h.assert_step_count(2)
        h.reset()
        h.assert_step_count(0)
        h.assert_budget_remaining(10.0)


# --- docs/API.md ----------------------------------------------------------------------------

def test_api_guarantee_levels_and_claims():
    assert [GuaranteeLevel.PROVEN, GuaranteeLevel.CONDITIONAL, GuaranteeLevel.EMPIRICAL,
            GuaranteeLevel.HEURISTIC] == list(GuaranteeLevel)
    assert [c.name for c in FORMAL_CLAIMS] == [f"T{i}" for i in range(1, 9)]
    for claims in (FORMAL_CLAIMS, HARDENING_CLAIMS, REASONING_CLAIMS):
        assert claims and all(isinstance(c, Claim) for c in claims)
        assert all(isinstance(c.level, GuaranteeLevel) and c.statement for c in claims)
    assert repr(FORMAL_CLAIMS[0]).startswith("[PROVEN] T1: ")
    assert SafetyBarrierViolation("safe") is SafetyBarrierViolation.NO_VIOLATION


def test_api_budget_controller():
    b = BudgetController(10.0)
    assert (b.budget, b.spent_gross, b.spent_net, b.remaining) == (10.0, 0.0, 0.0, 10.0)
    assert b.can_afford(10.0) == (True, "")
    ok, why = b.can_afford(10.5)
    assert not ok and "10.5" in why
    b.charge("a", 4.0)
    b.refund("a", 1.5)
    assert (b.spent_gross, b.spent_refunded, b.spent_net, b.remaining) == (4.0, 1.5, 2.5, 7.5)
    assert b.utilization() == 0.25
    assert [(i, a) for i, a, _ in b.ledger] == [("a", 4.0), ("REFUND:a", -1.5)]
    with pytest.raises(RuntimeError):
        b.charge("b", 8.0)  # T1: more than remains; nothing changes
    assert b.spent_gross == 4.0
    with pytest.raises(ValueError):
        BudgetController(-1.0)
    with pytest.raises(ValueError):
        b.can_afford(-1)
    assert "Remaining: 7.5" in b.summary()


def test_api_execution_trace():
    trace = ExecutionTrace()
    first = TraceEntry(step=1, action_id="a", action_name="A", state_before_fp="x",
                       state_after_fp="y", cost=1.0, timestamp=0.0, approved=True)
    h1 = trace.append(first)
    h2 = trace.append(TraceEntry(2, "b", "B", "y", "z", 2.0, 0.0, True))
    assert trace.length == 2 and len(trace.entries) == 2
    assert trace.entries[0].prev_hash == "0" * 64 and trace.entries[1].prev_hash == h1
    assert trace.entries[1].compute_hash() == h2
    assert trace.verify_integrity()[0]
    assert [e.action_id for e in trace.last_n(1)] == ["b"] and trace.last_n(0) == []
    assert "2 entries" in trace.summary()
    with pytest.raises(TypeError, match="missing fields"):
        TraceEntry(step=1)


def test_api_kernel_methods_and_properties():
    inv = Invariant("cap", lambda s: s.get("n", 0) <= 2)
    kernel = SafetyKernel(5.0, [inv], min_action_cost=0.5, emergency_actions={"halt"})
    assert kernel.invariants == [inv] and kernel.max_steps == 10
    inc = ActionSpec(id="inc", name="Inc", description="", effects=(Effect("n", "increment", 1),),
                     cost=1.0)
    state = State({"n": 0})
    state, _ = kernel.execute(state, inc, "first")
    assert kernel.step_count == 1 and kernel.trace.entries[0].reasoning_summary == "first"
    entry = kernel.record_rejection(state, inc, ("not now",))
    assert not entry.approved and entry.rejection_reasons == ("not now",)
    assert kernel.trace.length == 2 and kernel.trace.verify_integrity()[0]
    kernel.add_precondition(lambda s, a: (a.id != "inc", "inc is paused"))
    verdict = kernel.evaluate(state, inc)
    assert not verdict.approved and verdict.checks[-1] == (
        "Precondition", CheckResult.FAIL_PRECONDITION, "inc is paused")
    kernel.register_emergency_action("stop")
    stop = ActionSpec(id="stop", name="Stop", description="", effects=(), cost=0.0)
    assert kernel.evaluate(state, stop).approved  # T8: exempt from the minimum cost
    assert kernel.status().startswith("SafetyKernel: step=1/10")


# --- Behaviour ------------------------------------------------------------------------------

def test_execute_of_a_rejected_action_raises_and_changes_nothing():
    kernel = SafetyKernel(budget=3.0, invariants=[])
    action = ActionSpec(id="big", name="Big", description="", effects=(), cost=5.0)
    with pytest.raises(SafetyViolation) as err:
        kernel.execute(State({}), action)
    assert isinstance(err.value, RuntimeError) and isinstance(err.value.verdict, SafetyVerdict)
    assert kernel.budget.spent_gross == 0.0 and kernel.step_count == 0  # T5
    assert kernel.trace.length == 0


def test_monitoring_invariants_warn_and_never_block():
    kernel = SafetyKernel(10.0, [Invariant("soft", lambda s: s.get("n") < 1,
                                           enforcement="monitoring")])
    verdict = kernel.evaluate(State({"n": 0}),
                              ActionSpec(id="up", effects=(Effect("n", "set", 5),), cost=1))
    assert verdict.approved
    assert ("Invariant:soft", CheckResult.FAIL_INVARIANT,
            "[monitoring] invariant `soft` would be violated") in verdict.checks


def test_a_raising_predicate_blocks():
    kernel = SafetyKernel(10.0, [Invariant("boom", lambda s: 1 / s.get("n"))])
    verdict = kernel.evaluate(State({"n": 1}),
                              ActionSpec(id="zero", effects=(Effect("n", "set", 0),), cost=1))
    assert not verdict.approved and "ZeroDivisionError" in verdict.rejection_reasons[0]


def test_states_keep_their_shape_through_effects():
    kernel = SafetyKernel(10, [])
    s, _ = kernel.execute(State({"gone": None}), ActionSpec(
        id="new", effects=(Effect("y", "set", "hi"), Effect("z", "append", 3),
                           Effect("c", "increment", 2)), cost=1))
    assert s.to_dict() == {"c": 2, "gone": None, "y": "hi", "z": [3]}
    s, _ = kernel.execute(s, ActionSpec(id="drop", effects=(Effect("y", "delete"),), cost=1))
    assert s.to_dict() == {"c": 2, "gone": None, "z": [3]}


def test_an_absent_key_is_read_as_the_reference_reads_it():
    from clampai.invariants import rate_limit_invariant, required_fields_invariant

    noop = ActionSpec(id="noop", effects=(), cost=1.0)
    assert SafetyKernel(5.0, [rate_limit_invariant("calls", 2)]).evaluate(State({}), noop).approved
    verdict = SafetyKernel(5.0, [required_fields_invariant(["uid"])]).evaluate(State({}), noop)
    assert not verdict.approved and "`uid` is not in the state" in verdict.rejection_reasons[0]


def test_execute_from_threads_never_overspends():
    kernel = SafetyKernel(budget=50.0, invariants=[])
    action = ActionSpec(id="step", effects=(Effect("n", "increment", 1),), cost=1.0)
    approved = []

    def worker():
        for _ in range(20):
            try:
                kernel.execute(State({"n": 0}), action)
                approved.append(1)
            except SafetyViolation:
                pass

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads)
    assert len(approved) == 50 and kernel.step_count == 50  # T1 across threads
    assert kernel.budget.remaining == 0.0 and kernel.trace.verify_integrity()[0]


def test_metrics_and_reconcile_hooks():
    seen = []

    class Recorder:
        def increment(self, name, labels=None):
            seen.append(("increment", name, labels))

        def observe(self, name, value, labels=None):
            seen.append(("observe", name, labels))

        def gauge(self, name, value, labels=None):
            seen.append(("gauge", name, None))

    kernel = SafetyKernel(5.0, [], metrics=Recorder(),
                          reconcile_fn=lambda s, a, e: s.with_updates({"seen": True}))
    new_state, _ = kernel.execute(State({"seen": False}), ActionSpec(id="a", cost=1))
    assert new_state["seen"] is True
    names = {n for _, n, _ in seen}
    assert {"clampai_actions_total", "clampai_kernel_latency_seconds",
            "clampai_budget_remaining", "clampai_step_count"} <= names
    assert ("increment", "clampai_actions_total", {"status": "approved"}) in seen


def test_both_forms_one_name():
    task = TaskDefinition(goal="g", initial_state=State({"n": 0}),
                          available_actions=[ActionSpec("inc", effects=(Effect("n", "increment",
                                                                              1),), cost=1)],
                          budget=5)
    ours = SafetyKernel(task)
    assert ours.execute("inc").approved and ours.state["n"] == 1  # a rejection is a value
    reference = SafetyKernel(budget=5, invariants=[])
    assert isinstance(reference, SafetyKernel) and isinstance(ours, SafetyKernel)
    assert type(reference).__module__ == "clampai._reference_api"
    assert clampai_safe is safe


def test_an_undefined_optional_variable_is_a_state_of_the_task():
    # Regression: evaluate_in on a state holding a deleted (undefined) optional variable, made
    # outside the kernel, raised SpecError ("expected a string, found undefined").
    task = TaskDefinition(goal="g", initial_state=State({"owner": "ops", "n": 0}),
                          variables={"owner": {"optional": True}},
                          available_actions=[
                              ActionSpec("drop", effects=(Effect("owner", "delete"),), cost=1),
                              ActionSpec("inc", effects=(Effect("n", "increment", 1),), cost=1)],
                          budget=5)
    k = SafetyKernel(task)
    assert k.execute("drop").approved
    elsewhere = State(k.state.to_dict())
    assert elsewhere.to_dict() == {"n": 0, "owner": None}
    assert k.evaluate_in(elsewhere, "inc").approved


# --- Where this package answers differently (docs/PYTHON.md) --------------------------------

def test_difference_costs_finer_than_a_hundred_thousandth_are_charged():
    # The reference charges round(cost * 100000) units: 0.000004 is charged as 0.
    kernel = SafetyKernel(budget=1.0, invariants=[], min_action_cost=0.000001)
    s = State({"n": 0})
    tiny = ActionSpec(id="tiny", effects=(Effect("n", "increment", 1),), cost=0.000004)
    for _ in range(3):
        s, _ = kernel.execute(s, tiny)
    assert kernel.budget.exact()["spent_net"] == Decimal("0.000012")
    assert kernel.budget.spent_net == 1.2e-05


def test_difference_values_are_exact():
    kernel = SafetyKernel(budget=0.3, invariants=[])
    s = State({"t": 0.0})
    add = ActionSpec(id="p", effects=(Effect("t", "increment", 0.1),), cost=0.1)
    for _ in range(3):
        s, _ = kernel.execute(s, add)
    # The reference: 0.30000000000000004; here the exact 0.3, read back as the float given.
    assert type(s["t"]) is float and s["t"] == 0.3 and s["t"] <= 0.3
    assert kernel.budget.remaining == 0.0


def test_difference_rollback_keeps_the_step_count_and_refunds_once():
    kernel = SafetyKernel(budget=10.0, invariants=[])
    s0 = State({"n": 0})
    inc = ActionSpec(id="inc", effects=(Effect("n", "increment", 1),), cost=1.0)
    s1, _ = kernel.execute(s0, inc)
    assert kernel.rollback(s0, s1, inc) == s0
    assert kernel.step_count == 1 and kernel.budget.spent_net == 0.0  # the reference: 0 steps
    with pytest.raises(clampai.InvalidArgument, match="nothing to roll back"):
        kernel.rollback(s0, s1, inc)  # the reference returns s0 and refunds nothing, silently
    with pytest.raises(clampai.InvalidArgument, match="not reversible"):
        kernel.rollback(s0, s1, ActionSpec(id="inc", reversible=False))


def test_difference_emergency_actions_cost_nothing():
    kernel = SafetyKernel(budget=1.0, invariants=[], emergency_actions={"halt"})
    with pytest.raises(clampai.InvalidArgument, match="must cost 0"):
        kernel.evaluate(State({}), ActionSpec(id="halt", cost=0.5))  # the reference approves
    assert kernel.evaluate(State({}), ActionSpec(id="halt", cost=0)).approved


def test_difference_the_trace_hash_covers_every_field_and_the_head():
    kernel = SafetyKernel(budget=5.0, invariants=[])
    kernel.execute(State({}), ActionSpec(id="x", cost=1.0), "because")
    forged = TraceEntry(**dict(kernel.trace.entries[0].to_dict(), reasoning_summary="forged"))
    kernel.trace._entries[0] = forged  # the reference does not detect this
    ok, message = kernel.trace.verify_integrity()
    assert not ok and "entry 0" in message


def test_time_window_rate_in_the_reference_form_reads_wall_clock_stamps():
    import time

    from clampai.invariants import time_window_rate_invariant

    # The README's call, unchanged: a list of time.time() stamps against the wall clock.
    rule = time_window_rate_invariant("request_timestamps", max_count=2, window_seconds=60.0)
    assert callable(rule.predicate) and rule.name == "time_window_rate:request_timestamps"
    now = time.time()
    kernel = SafetyKernel(budget=10.0, invariants=[rule])
    stamp = ActionSpec(id="call", effects=(Effect("request_timestamps", "append", now),),
                       cost=1.0)
    state = State({"request_timestamps": [now - 3600.0, now - 1.0]})  # one stamp in the window
    state, _ = kernel.execute(state, stamp)  # two in the window: allowed (at most max_count)
    assert len(state["request_timestamps"]) == 3
    verdict = kernel.evaluate(state, stamp)  # a third: refused
    assert not verdict.approved and any("time_window_rate" in r
                                        for r in verdict.rejection_reasons)
    assert rule.check(State({}))[0]  # absent: holds, as in the Python ClampAI
    with pytest.raises(TypeError, match="window_start"):
        time_window_rate_invariant("sent", 2, 10, window_start="start")


def test_readme_writing_your_own_invariant():
    my_rule = Invariant(
        name="no_large_transfers",
        predicate=lambda s: s.get("transferred_usd", 0) <= 1000,
        description="No single transfer may exceed $1,000",
        enforcement="blocking",
        suggestion="Split into smaller transfers or request approval first.",
        max_eval_ms=5.0,
    )
    kernel = SafetyKernel(budget=10.0, invariants=[my_rule])
    big = ActionSpec(id="wire", effects=(Effect("transferred_usd", "set", 5000),), cost=1.0)
    assert not kernel.evaluate(State({"transferred_usd": 0}), big).approved
    with pytest.raises(ValueError, match="max_eval_ms"):
        Invariant("x", lambda s: True, max_eval_ms=0)


def test_api_state_helpers():
    s = State({"a": 1, "b": "x" * 100, "c": [1, 2]})
    assert s.without_keys({"a", "absent"}) == State({"b": "x" * 100, "c": [1, 2]})
    assert s == State({"a": 1, "b": "x" * 100, "c": [1, 2]})  # unchanged
    text = s.describe()
    assert text.splitlines()[0] == "State:" and "  a = 1" in text
    assert len(text.splitlines()[2]) == len("  b = ") + 80 and text.splitlines()[2].endswith("...")
    assert s.describe(max_keys=1).splitlines()[-1] == "  ... and 2 more"


def test_api_invariant_check_of_templates_and_expressions():
    from clampai.invariants import pii_guard_invariant, rate_limit_invariant

    assert rate_limit_invariant("x", 5).check(State({"x": 5})) == (True, "")
    holds, message = rate_limit_invariant("x", 5).check(State({"x": 6}))
    assert not holds and "rate_limit:x" in message
    assert rate_limit_invariant("x", 5).check(State({})) == (True, "")  # as get("x", 0) reads
    assert not pii_guard_invariant("msg").check(State({"msg": "call 555-123-4567"}))[0]
    assert Invariant("e", "x > 1", enforcement="monitoring").check(State({"x": 0}))[0] is False
    assert Invariant("lam", lambda s: s.get("x") > 1).check(State({"x": 2})) == (True, "")


def test_api_effect_apply_and_action_simulate():
    assert Effect("n", "increment", 2).apply(3) == 5
    assert Effect("n", "increment", 2).apply(None) == 2  # absent: from 0, as the reference
    assert Effect("items", "append", "x").apply(["a"]) == ["a", "x"]
    assert Effect("items", "remove", "z").apply(["a"]) == ["a"]  # absent element: no change
    assert Effect("flag", "delete").apply(5) is None
    assert Effect("t", "increment", 0.5).apply(1) == Decimal("1.5")
    action = ActionSpec(id="process_batch", name="Process Batch", description="Process 5",
                        effects=(Effect("processed", "increment", 5),
                                 Effect("queue", "decrement", 5)), cost=2.0)
    before = State({"processed": 0, "queue": 10})
    after = action.simulate(before)
    assert after == State({"processed": 5, "queue": 5})
    assert before == State({"processed": 0, "queue": 10})  # unchanged
    undo = ActionSpec(id="undo", effects=action.compute_inverse_effects(before), cost=0)
    assert undo.simulate(after) == before  # T7, as docs/API.md states it
    text = action.to_llm_text()
    assert text.startswith("[process_batch] Process Batch") and "processed<-increment(5)" in text
    assert action.to_compact_text() == "[process_batch] Process Batch (cost 2.0, low)"
    with pytest.raises(ValueError, match="cannot be applied"):
        ActionSpec(id="big", effects=(Effect("n", "increment", 2 ** 62),), cost=1).simulate(
            State({"n": 2 ** 62}))


def test_api_invariant_violation_count():
    from clampai.invariants import rate_limit_invariant

    cap = Invariant("cap", lambda s: s.get("n", 0) <= 1, enforcement="monitoring")
    template = rate_limit_invariant("n", 1)
    kernel = SafetyKernel(10.0, [cap, template])
    up = ActionSpec(id="up", effects=(Effect("n", "set", 5),), cost=1.0)
    assert cap.violation_count == 0 and template.violation_count == 0
    kernel.evaluate(State({"n": 0}), up)
    kernel.evaluate(State({"n": 0}), up)
    assert cap.violation_count == 2 and template.violation_count == 2
    assert not cap.check(State({"n": 3}))[0] and cap.violation_count == 3
    assert cap.check(State({"n": 0}))[0] and cap.violation_count == 3
    assert rate_limit_invariant("n", 1).violation_count == 0  # per object


def test_invariant_violation_metrics_name_the_enforcement():
    seen = []

    class Recorder:
        def increment(self, name, labels=None):
            seen.append((name, labels))

        def observe(self, name, value, labels=None):
            pass

        def gauge(self, name, value, labels=None):
            pass

    soft = Invariant("soft", lambda s: s.get("n", 0) <= 1, enforcement="monitoring")
    hard = Invariant("hard", lambda s: s.get("n", 0) <= 3)
    kernel = SafetyKernel(10.0, [soft, hard], metrics=Recorder())
    kernel.evaluate(State({"n": 0}), ActionSpec(id="two", effects=(Effect("n", "set", 2),), cost=1))
    kernel.evaluate(State({"n": 0}), ActionSpec(id="six", effects=(Effect("n", "set", 6),), cost=1))
    violations = [labels for name, labels in seen if name == "clampai_invariant_violations_total"]
    assert violations == [{"invariant": "soft", "enforcement": "monitoring"},
                          {"invariant": "hard", "enforcement": "blocking"},
                          {"invariant": "soft", "enforcement": "monitoring"}]


def test_threads_with_a_predicate_that_releases_the_gil():
    import time as _time

    def slow(s):
        _time.sleep(0)  # lets another thread run inside the decision
        return s.get("n", 0) <= 1000

    kernel = SafetyKernel(budget=30.0, invariants=[Invariant("slow", slow)])
    action = ActionSpec(id="step", effects=(Effect("n", "increment", 1),), cost=1.0)
    done = []

    def worker():
        for _ in range(10):
            try:
                kernel.execute(State({"n": 0}), action)
                done.append(1)
            except SafetyViolation:
                pass

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads)
    assert len(done) == 30 and kernel.step_count == 30 and kernel.budget.remaining == 0.0


def test_api_rejection_formatter_and_no_op_metrics():
    from clampai import NoOpMetrics, RejectionFormatter

    kernel = SafetyKernel(1.0, [], metrics=NoOpMetrics())
    action = ActionSpec(id="big", name="Big", cost=5.0)
    verdict = kernel.evaluate(State({}), action)
    llm = RejectionFormatter.llm_message(verdict, action)
    assert llm.splitlines()[0] == "ACTION REJECTED: Big (id='big')" and "budget" in llm
    assert RejectionFormatter.user_message(verdict, action).startswith(
        "The action 'Big' was blocked by the safety kernel.")
    record = RejectionFormatter.audit_record(verdict, action)
    assert record["approved"] is False and record["reason_codes"] == ["budget_exceeded"]
    assert {"name": "Budget", "result": "FAIL_BUDGET", "detail": verdict.rejection_reasons[0]} \
        in record["checks"]
    assert repr(NoOpMetrics()) == "NoOpMetrics()"


@pytest.mark.parametrize("state, action, error, match", [
    (State({}), ActionSpec(id="a", cost=-1), clampai.SpecError, "must not be negative"),
    (State({}), ActionSpec(id="a", cost=float("nan")), ValueError, "not a finite number"),
    (State({}), ActionSpec(id="a", cost="1"), TypeError, "must be a number, not str"),
    (State({}), ActionSpec(id="a", cost=Decimal("1e-20")), ValueError, "20 digits"),
    (State({}), ActionSpec(id="a", effects=(Effect("my-var", "set", 1),), cost=1),
     clampai.SpecError, "`my-var` is not an identifier"),
    (State({"x": "a"}), ActionSpec(id="a", effects=(Effect("x", "increment", 1),), cost=1),
     clampai.SpecError, "needs a numeric variable; `x` is string"),
    (State({"x": 0}), ActionSpec(id="a", effects=(Effect("x", "set", 10 ** 30),), cost=1),
     clampai.SpecError, "does not fit"),
    ({"x": 1}, ActionSpec(id="a", cost=1), TypeError, "a state is a State, not dict"),
    (State({}), "a", TypeError, "an action is an ActionSpec, not str"),
])
def test_bad_input_to_the_reference_form_is_a_clear_error(state, action, error, match):
    kernel = SafetyKernel(10, [])
    with pytest.raises(error, match=match):
        kernel.evaluate(state, action)
    assert kernel.budget.spent_gross == 0.0 and kernel.step_count == 0


@pytest.mark.parametrize("args, error, match", [
    (("x", []), TypeError, "the budget must be a number, not str"),
    ((True, []), TypeError, "not bool"),
    ((-1, []), ValueError, "Budget must be >= 0"),
    ((float("inf"), []), ValueError, "not a finite number"),
    ((10 ** 30, []), ValueError, "does not fit a 64-bit fixed-point amount"),
    ((10, ["x"]), TypeError, "an invariant is an Invariant, not str"),
])
def test_bad_reference_form_constructors(args, error, match):
    with pytest.raises(error, match=match):
        SafetyKernel(*args)
    with pytest.raises(ValueError, match="min_action_cost must be > 0"):
        SafetyKernel(10, [], min_action_cost=0)


def test_a_direct_charge_never_interleaves_with_a_decision():
    # Regression: a predicate that released the GIL let another thread charge the budget in the
    # middle of a decision, and the commit then wrote back the budget it had read before: the
    # charge was lost (T1 could be broken). The kernel now decides under the budget's lock.
    inside, release = threading.Event(), threading.Event()

    def hold(s):
        inside.set()
        release.wait(timeout=30)
        return True

    kernel = SafetyKernel(10.0, [Invariant("hold", hold)])
    decider = threading.Thread(target=lambda: kernel.execute(
        State({"n": 0}), ActionSpec(id="a", effects=(Effect("n", "set", 1),), cost=1.0)))
    decider.start()
    assert inside.wait(timeout=30)
    charger = threading.Thread(target=lambda: kernel.budget.charge("direct", 2.0))
    charger.start()
    charger.join(timeout=1)  # blocked on the kernel's lock (it cannot finish before `release`)
    release.set()
    decider.join(timeout=30)
    charger.join(timeout=30)
    assert not decider.is_alive() and not charger.is_alive()
    assert kernel.budget.spent_gross == 3.0 and kernel.step_count == 1


def test_the_ledger_refuses_a_commit_after_a_change_mid_decision():
    # The C++ ledger's own guard, for a caller that does not hold one lock around both.
    box = []

    def meddle(s):
        if box:
            box[0].budget._ledger.charge(1000)  # 1.000 at the ledger's scale
        return True

    kernel = SafetyKernel(10.0, [Invariant("meddle", meddle)])
    box.append(kernel)
    with pytest.raises(RuntimeError, match="changed during a decision"):
        kernel.execute(State({"n": 0}), ActionSpec(id="a", effects=(Effect("n", "set", 1),),
                                                   cost=1.0))
    assert kernel.budget.spent_gross == 1.0 and kernel.step_count == 0  # the meddling charge


def test_an_actions_guard_is_kept_in_the_reference_form():
    kernel = SafetyKernel(10, [])
    guarded = ActionSpec(id="w", effects=(Effect("n", "increment", 1),), cost=1,
                         requires="n < 2")
    s = State({"n": 0})
    for _ in range(2):
        s, _ = kernel.execute(s, guarded)
    verdict = kernel.evaluate(s, guarded)
    assert not verdict.approved and verdict.decision.reason_codes == ["requires_failed"]
    assert "`requires` of `w` is false" in verdict.rejection_reasons[0]
    with pytest.raises(clampai.InvalidArgument, match="reference monitor"):
        kernel.evaluate(s, ActionSpec(id="ship", cost=1, attestations=("checked",)))


def test_changing_the_invariants_list_takes_effect():
    kernel = SafetyKernel(10.0, [Invariant("low", lambda s: s.get("n", 0) <= 5)])
    up = ActionSpec(id="up", effects=(Effect("n", "set", 3),), cost=1.0)
    assert kernel.evaluate(State({"n": 0}), up).approved
    kernel.invariants.append(Invariant("lower", lambda s: s.get("n", 0) <= 2))
    assert not kernel.evaluate(State({"n": 0}), up).approved
    kernel.invariants[:] = [Invariant("any", lambda s: True)]
    assert kernel.evaluate(State({"n": 0}), up).approved


def test_difference_a_failing_state_fn_fails_the_call():
    from clampai.invariants import rate_limit_invariant

    ran = []

    def broken_state():
        raise ConnectionError("db down")

    @safe(budget=10.0, invariants=[rate_limit_invariant("calls_today", 1)],
          state_fn=broken_state)
    def call():
        ran.append(1)

    with pytest.raises(ConnectionError):
        call()  # the reference swallows the error and runs the call
    assert ran == [] and call.kernel.step_count == 0


# --- The reference form's caches (a verdict's checks written out when read, models and
# actions remembered by identity): the same answers as computed afresh -----------------------

def test_a_passed_verdict_reads_as_written_at_its_decision():
    import copy
    import dataclasses

    inv = Invariant("cap", lambda s: s.get("n", 0) <= 100)
    kernel = SafetyKernel(10.0, [inv], min_action_cost=0.5)
    action = ActionSpec(id="inc", name="Inc", effects=(Effect("n", "increment", 1),), cost=2.5)
    state = State({"n": 0})
    verdict = kernel.evaluate(state, action)
    state, _ = kernel.execute(state, action)   # the kernel moves on before the checks are read
    expected = [("Budget", CheckResult.PASS, "2.5 <= 10.000 remaining"),
                ("Termination", CheckResult.PASS, "Step 1/20"),
                ("Invariant:cap", CheckResult.PASS, "holds")]
    assert verdict.approved and verdict.checks == expected
    assert verdict.rejection_reasons == () and "[ok] Invariant:cap: holds" in verdict.summary()
    again = kernel.evaluate(state, action)
    assert type(again) is SafetyVerdict
    assert again.checks[:2] == [("Budget", CheckResult.PASS, "2.5 <= 7.500 remaining"),
                                ("Termination", CheckResult.PASS, "Step 2/20")]
    fresh = kernel.evaluate(state, action)
    assert dataclasses.replace(fresh).checks == again.checks
    assert dataclasses.asdict(kernel.evaluate(state, action))["checks"] == again.checks
    assert copy.copy(kernel.evaluate(state, action)).checks == again.checks
    assert copy.deepcopy(kernel.evaluate(state, action)).checks == again.checks
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        fresh.nothing


def test_a_new_action_of_the_same_id_is_decided_by_its_own_cost():
    # The action cache is by object: equal ids with other costs or effects are other models.
    kernel = SafetyKernel(10.0, [Invariant("cap", "n <= 3")], min_action_cost=1)
    state = State({"n": 0})
    cheap = ActionSpec(id="a", effects=(Effect("n", "increment", 1),), cost=1)
    assert kernel.evaluate(state, cheap).approved
    dear = ActionSpec(id="a", effects=(Effect("n", "increment", 1),), cost=11)
    assert not kernel.evaluate(state, dear).approved
    jump = ActionSpec(id="a", effects=(Effect("n", "increment", 4),), cost=1)
    assert not kernel.evaluate(state, jump).approved
    assert kernel.evaluate(state, cheap).approved
    for _ in range(300):  # more objects than the caches hold: cleared, never wrong
        assert kernel.evaluate(State({"n": 0}), ActionSpec(
            id="a", effects=(Effect("n", "increment", 1),), cost=1)).approved
    assert not kernel.evaluate(State({"n": 3}), cheap).approved


def test_a_state_copies_and_pickles_as_its_variables():
    import copy
    import pickle

    state = State({"n": 3, "price": Decimal("1.25"), "tags": ["a", "b"], "ok": True})
    assert copy.copy(state) is state and copy.deepcopy(state) is state
    back = pickle.loads(pickle.dumps(state))
    assert back == state and back.fingerprint == state.fingerprint
    assert back.to_dict() == {"n": 3, "price": Decimal("1.25"), "tags": ["a", "b"], "ok": True}


def test_the_trace_hash_is_pythons_canonical_json_on_random_values():
    # TraceEntry.compute_hash writes the canonical JSON in C++; on every value it takes, the
    # bytes (so the hash) are those of Python's json.dumps(sort_keys=True, separators=(",",
    # ":"), default=str): a property test over random nested values (seeded).
    import hashlib
    import json
    import math
    import random

    from clampai import _clampai

    rng = random.Random(38)
    alphabet = ["a", "Z", " ", "\"", "\\", "\n", "\r", "\t", "\b", "\f", "\x00", "\x1f", "\x7f",
                "~", "é", "\u2028", "中", "\U0001f600", "\U00010000", "\uffff"]

    def text():
        return "".join(rng.choice(alphabet) for _ in range(rng.randrange(6)))

    def value(depth=0):
        kind = rng.randrange(11 if depth < 3 else 7)
        if kind == 0:
            return None
        if kind == 1:
            return rng.choice([True, False])
        if kind == 2:
            return rng.choice([0, -1, 7, 2 ** 63, -(2 ** 70), rng.randrange(-10 ** 6, 10 ** 6)])
        if kind == 3:
            return rng.choice([0.0, -0.0, 1.5, 1e-05, 1e16, 123456789.125, math.inf, -math.inf,
                               math.nan, rng.uniform(-1e9, 1e9), 5e-324])
        if kind in (4, 5, 6):
            return text()
        if kind in (7, 8):
            items = [value(depth + 1) for _ in range(rng.randrange(4))]
            return items if kind == 7 else tuple(items)
        return {text(): value(depth + 1) for _ in range(rng.randrange(4))}

    encoder = json.JSONEncoder(sort_keys=True, separators=(",", ":"), default=str)
    for _ in range(3000):
        v = {text(): value() for _ in range(rng.randrange(1, 6))}
        assert _clampai._canonical_sha256(v) == hashlib.sha256(
            encoder.encode(v).encode()).hexdigest(), v
    # Values only Python's encoder writes are left to it.
    for other in ({"cost": Decimal("1.5")}, {1: "int key"}, {"s": "\ud800"}, {"t": True.__class__},
                  {"e": CheckResult.PASS}):
        assert _clampai._canonical_sha256(other) is None
    entry = TraceEntry(step=1, action_id="a", action_name="A", state_before_fp="x",
                       state_after_fp="y", cost=Decimal("1.5"), timestamp=0.5, approved=True)
    assert entry.compute_hash() == hashlib.sha256(
        encoder.encode(entry.to_dict() | {"cost": "1.5"}).encode()).hexdigest()


def test_the_readme_json_schema_invariant_on_a_mapping_in_the_state():
    # The README's "Type checking on a dict field", on a state that holds the dict.
    from clampai.invariants import json_schema_invariant, rate_limit_invariant

    rule = json_schema_invariant("payload", {"amount": float, "currency": str})
    kernel = SafetyKernel(budget=10.0, invariants=[rule], min_action_cost=1)
    pay = ActionSpec(id="pay", effects=(Effect("paid", "increment", 1),), cost=1.0)
    state = State({"payload": {"amount": 12.5, "currency": "EUR"}, "paid": 0})
    assert kernel.evaluate(state, pay).approved
    state, entry = kernel.execute(state, pay)
    assert state["paid"] == 1 and state["payload"] == {"amount": 12.5, "currency": "EUR"}
    assert entry.state_after_fp == state.fingerprint
    bad = State({"payload": {"amount": "12.5"}, "paid": 0})
    verdict = kernel.evaluate(bad, pay)
    assert not verdict.approved and "json_schema:payload" in verdict.rejection_reasons[0]
    assert not rule.check(bad)[0] and rule.check(state)[0]
    # The kernel's own templates and expressions do not read such a value: violated, named.
    counter = SafetyKernel(budget=10.0, invariants=[rate_limit_invariant("payload", 3),
                                                   Invariant("e", "paid <= 5")],
                           min_action_cost=1)
    verdict = counter.evaluate(state, pay)
    assert not verdict.approved and verdict.rejection_reasons == (
        "[blocking] invariant `rate_limit:payload` would be violated: `payload` holds a value "
        "the kernel's types do not include (a mapping, an object)",)
    # An action cannot write one.
    with pytest.raises(clampai.InvalidArgument, match="writes `payload`"):
        kernel.evaluate(state, ActionSpec(id="w", effects=(Effect("payload", "set", 1),),
                                          cost=1.0))
