"""T1-T8 as properties of random tasks driven through the bindings (hypothesis, derandomized:
the same examples on every run). Invariants are given both as expressions and as Python
callables, and every reached state is checked against Python mirrors of them."""

from decimal import Decimal

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from clampai import ActionSpec, Effect, Invariant, SafetyKernel, TaskDefinition

SETTINGS = settings(max_examples=60, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])
COSTS = ["0.5", "1", "1.5", "2", "3"]


@st.composite
def tasks(draw):
    n = draw(st.integers(1, 3))
    names = [f"x{i}" for i in range(n)]
    initial = {v: draw(st.integers(0, 4)) for v in names}
    actions = []
    for a in range(draw(st.integers(1, 4))):
        effects = []
        for v in draw(st.lists(st.sampled_from(names), min_size=1, max_size=2, unique=True)):
            effects.append(Effect(v, draw(st.sampled_from(["increment", "decrement", "set"])),
                                  draw(st.integers(0, 4))))
        actions.append(ActionSpec(id=f"a{a}", cost=Decimal(draw(st.sampled_from(COSTS))),
                                  effects=tuple(effects), reversible=draw(st.booleans())))
    actions.append(ActionSpec(id="halt", cost=0, effects=(Effect(names[0], "set", 0),)))
    # Invariants that hold initially: sums below a cap (expressions) and a Python mirror.
    checks, invariants = [], []
    for i in range(draw(st.integers(1, 2))):
        vs = draw(st.lists(st.sampled_from(names), min_size=1, max_size=2, unique=True))
        cap = sum(initial[v] for v in vs) + draw(st.integers(0, 6))
        invariants.append(Invariant(f"cap{i}", " + ".join(vs) + f" <= {cap}"))
        checks.append(lambda s, vs=vs, cap=cap: sum(s[v] for v in vs) <= cap)
    floor = min(initial[names[-1]], draw(st.integers(0, 2)))
    invariants.append(Invariant("floor", lambda s, v=names[-1], f=floor: s[v] >= f))
    checks.append(lambda s, v=names[-1], f=floor: s[v] >= f)
    task = TaskDefinition(goal="", initial_state=initial, available_actions=actions,
                          invariants=invariants,
                          budget=Decimal(draw(st.sampled_from(["3", "5.5", "10"]))),
                          min_action_cost="0.5", emergency_actions=["halt"],
                          max_steps=draw(st.one_of(st.none(), st.integers(1, 6))))
    ops = draw(st.lists(st.one_of(
        st.tuples(st.just("exec"), st.integers(0, len(actions) - 2)),
        st.tuples(st.just("rollback"), st.just(0)),
        st.tuples(st.just("halt"), st.just(0))), min_size=1, max_size=25))
    return task, checks, ops


def snapshot(k):
    b = k.budget
    return k.state, b.spent_gross, b.spent_net, k.step_count, k.trace_length


@SETTINGS
@given(tasks())
def test_t1_to_t8_hold_on_random_runs(case):
    task, checks, ops = case
    k = SafetyKernel(task)
    receipts = []  # (receipt, state before, reversible)
    reversible = {a.id: a.reversible for a in task.available_actions}
    gross_before = Decimal(0)
    for op, arg in ops:
        before = snapshot(k)
        if op == "rollback":
            if not receipts:
                continue
            receipt, pre, rev = receipts[-1]
            if not rev:
                continue
            net = k.budget.spent_net
            out = k.rollback(receipt)
            receipts.pop()
            event("rolled back")
            assert out.approved and k.state == pre  # T7: the exact pre-action state
            assert k.budget.spent_net == net - receipt.cost  # refunded once
            assert k.step_count == before[3]  # T2 is not loosened
        else:
            action = "halt" if op == "halt" else f"a{arg}"
            decision = k.evaluate(action)
            out = k.execute(action)
            assert out.approved == decision.approved  # execute is evaluate plus commit
            if out.approved:
                receipts.append((out.receipt, before[0], reversible[action]))
                event("executed")
                if op == "halt":  # T8: never stopped by the step limit or the minimum cost
                    assert k.emergency_steps >= 1
            else:
                event("rejected")
                assert snapshot(k) == before  # T5: a rejection changes nothing
                if op == "halt":
                    assert not {"step_limit", "below_min_cost"} & set(decision.reason_codes)
        b = k.budget
        assert Decimal(0) <= b.spent_net <= b.budget  # T1
        assert k.step_count <= k.max_steps  # T2
        assert all(check(k.state) for check in checks)  # T3
        assert b.spent_gross >= gross_before  # T4
        gross_before = b.spent_gross
    trace = k.trace
    assert k.verify_trace().ok  # T6
    assert all(trace[i].prev == trace[i - 1].hash for i in range(1, len(trace)))
    assert [e.seq for e in trace] == list(range(len(trace)))


@SETTINGS
@given(tasks())
def test_t8_an_emergency_action_passes_the_step_limit(case):
    task, _, _ = case
    k = SafetyKernel(task)
    for _ in range(k.max_steps + 2):
        if not any(k.execute(a.id).approved for a in task.available_actions[:-1]):
            break
    d = k.evaluate("halt")
    assert "step_limit" not in d.reason_codes and "below_min_cost" not in d.reason_codes
