"""The Python ClampAI's form of the kernel against the Python ClampAI itself (issue 38): random
budgets, actions, invariants and sequences of `evaluate` and `execute` (seeded), run on both in
one process; every verdict, every next state, the budget and the step count must agree.

The amounts are multiples of 1/4 and the values integers, where the Python ClampAI's float
arithmetic is exact: where it is not, this package answers differently on purpose (docs/PYTHON.md,
"Where the Python ClampAI form differs"). Skipped, with the reason, when the Python ClampAI's
sources are not beside the checkout (../shared/reference/clampai-1.0.1, or CLAMPAI_REFERENCE)."""

import importlib.util
import os
import random
import sys
from pathlib import Path

import pytest

import clampai
from clampai import ActionSpec, Effect, Invariant, SafetyKernel, SafetyViolation, State


def find_reference():
    named = os.environ.get("CLAMPAI_REFERENCE")
    candidates = [Path(named)] if named else [
        parent / "shared" / "reference" / "clampai-1.0.1"
        for parent in Path(__file__).resolve().parents]
    for candidate in candidates:
        if (candidate / "clampai" / "formal.py").is_file():
            return candidate
    return None


@pytest.fixture(scope="module")
def ref():
    root = find_reference()
    if root is None:
        pytest.skip("the Python ClampAI's sources are not beside the checkout "
                    "(set CLAMPAI_REFERENCE)")
    # The Python ClampAI's package under another name, beside this one.
    spec = importlib.util.spec_from_file_location(
        "clampai_reference", root / "clampai" / "__init__.py",
        submodule_search_locations=[str(root / "clampai")])
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


VARIABLES = ("a", "b", "c")


def scenario(rng):
    """A budget, a minimum cost, invariants and actions, as plain data for both packages."""
    min_cost = rng.choice([0.25, 0.5, 1.0])
    budget = rng.randrange(1, 41) / 4
    invariants = []
    for i in range(rng.randrange(0, 4)):
        var, op, bound = rng.choice(VARIABLES), rng.choice(["<=", ">="]), rng.randrange(-6, 10)
        invariants.append((f"inv{i}", var, op, bound,
                           rng.choice(["blocking", "blocking", "monitoring"])))
    actions = []
    for i in range(rng.randrange(1, 5)):
        effects = [(rng.choice(VARIABLES), rng.choice(["increment", "decrement", "set"]),
                    rng.randrange(-3, 6)) for _ in range(rng.randrange(0, 3))]
        # Distinct variables per action: the two packages order repeated writes alike, but
        # the point here is the decision, not effect composition.
        seen, unique = set(), []
        for e in effects:
            if e[0] not in seen:
                seen.add(e[0])
                unique.append(e)
        actions.append((f"act{i}", unique, rng.choice([0.25, 0.5, 1.0, 1.5, 2.0, 3.0, 0.0])))
    initial = {v: rng.randrange(-2, 5) for v in VARIABLES}
    return min_cost, budget, invariants, actions, initial


def predicate(var, op, bound):
    if op == "<=":
        return lambda s: s.get(var, 0) <= bound
    return lambda s: s.get(var, 0) >= bound


def build(module, data):
    min_cost, budget, invariants, actions, _ = data
    invs = [module.Invariant(name, predicate(var, op, bound), enforcement=enforcement)
            for name, var, op, bound, enforcement in invariants]
    specs = {aid: module.ActionSpec(id=aid, name=aid, description="",
                                    effects=tuple(module.Effect(*e) for e in effects),
                                    cost=cost)
             for aid, effects, cost in actions}
    return module.SafetyKernel(budget, invs, min_action_cost=min_cost), specs


def plain(state):
    return {k: int(v) for k, v in state.to_dict().items()}


def test_the_reference_form_gives_the_python_clampais_answers(ref):
    rng = random.Random(3801)
    compared = rejections = 0
    for _ in range(300):
        data = scenario(rng)
        ours, our_actions = build(clampai, data)
        theirs, their_actions = build(ref, data)
        our_state, their_state = State(dict(data[4])), ref.State(dict(data[4]))
        for _step in range(rng.randrange(1, 25)):
            aid = rng.choice(list(our_actions))
            where = f"scenario {data}, action {aid}, state {plain(our_state)}"
            if rng.random() < 0.3:
                mine = ours.evaluate(our_state, our_actions[aid])
                other = theirs.evaluate(their_state, their_actions[aid])
                assert mine.approved == other.approved, where
                if mine.approved:
                    assert plain(mine.simulated_next_state) == plain(
                        other.simulated_next_state), where
            else:
                try:
                    our_next, _ = ours.execute(our_state, our_actions[aid])
                except SafetyViolation:
                    our_next = None
                try:
                    their_next, _ = theirs.execute(their_state, their_actions[aid])
                except RuntimeError:
                    their_next = None
                assert (our_next is None) == (their_next is None), where
                if our_next is not None:
                    assert plain(our_next) == plain(their_next), where
                    our_state, their_state = our_next, their_next
                else:
                    rejections += 1
            assert ours.budget.remaining == theirs.budget.remaining, where
            assert ours.step_count == theirs.step_count, where
            compared += 1
    assert compared > 2000 and rejections > 100  # both sides of the decision were exercised


# The invariant library on well-typed states (the value of each invariant's key of the type it
# reads, or absent): every factory gives the Python ClampAI's answer.
FACTORIES = {
    "rate_limit": (lambda m: m.rate_limit_invariant("k", 3), "number"),
    "resource_ceiling": (lambda m: m.resource_ceiling_invariant("k", 3), "number"),
    "value_range": (lambda m: m.value_range_invariant("k", 0, 5), "number"),
    "max_retries": (lambda m: m.max_retries_invariant("k", 2), "number"),
    "api_call_limit": (lambda m: m.api_call_limit_invariant("k", 3), "number"),
    "file_operation_limit": (lambda m: m.file_operation_limit_invariant("k", 3), "number"),
    "required_fields": (lambda m: m.required_fields_invariant(["k", "j"]), "any"),
    "no_sensitive_substring": (
        lambda m: m.no_sensitive_substring_invariant("k", ["sk-", "password"]), "string"),
    "no_regex_match": (lambda m: m.no_regex_match_invariant("k", r"\d{3}"), "string"),
    "human_approval_gate": (lambda m: m.human_approval_gate_invariant("k"), "bool"),
    "no_action_after_flag": (lambda m: m.no_action_after_flag_invariant("k"), "bool"),
    "allowed_values": (lambda m: m.allowed_values_invariant("k", {"ok", 7}), "string_or_int"),
    "non_empty": (lambda m: m.non_empty_invariant("k"), "any"),
    "list_length": (lambda m: m.list_length_invariant("k", 1), "list"),
    "no_duplicate_ids": (lambda m: m.no_duplicate_ids_invariant("k"), "list"),
    "string_length": (lambda m: m.string_length_invariant("k", 3), "string"),
    "json_schema": (lambda m: m.json_schema_invariant("k", {"amount": float}), "any"),
    "custom": (lambda m: m.custom_invariant("c", lambda v: v != 3, "k"), "number"),
}
VALUES = {"number": [0, 1, 2, 3, 4, 5, 6, -1, 2.5, 7.25], "string": ["", "ok", "sk-1",
          "PASSWORD", "a123", "abcd", "x"], "bool": [True, False],
          "list": [[], [1], [1, 1], ["a", "b"], ["a", "a", "b"]],
          "string_or_int": ["ok", "no", 7, 8, 0]}


def test_every_invariant_factory_gives_the_python_clampais_answer(ref):
    rng = random.Random(3802)
    for name, (make, kind) in FACTORIES.items():
        ours, theirs = make(clampai.invariants), make(ref.invariants)
        pool = sum(VALUES.values(), []) if kind == "any" else VALUES[kind]
        for _ in range(60):
            values = {}
            if rng.random() < 0.85:
                values["k"] = rng.choice(pool)
            if rng.random() < 0.5:
                values["j"] = rng.choice(VALUES["number"])
            mine = ours.check(State(dict(values)))[0]
            other = theirs.check(ref.State(dict(values)))[0]
            assert mine == other, (name, values, mine, other)


def test_a_value_of_another_type_is_a_violation_named_not_an_exception():
    # The Python ClampAI's arithmetic on such values (`False <= 3`, `'' or 0`) is not this
    # package's: a template fed a value it cannot read is violated, with the type error.
    kernel = SafetyKernel(10.0, [clampai.invariants.rate_limit_invariant("calls", 3)],
                          min_action_cost=1)
    verdict = kernel.evaluate(State({"calls": "many"}), ActionSpec(id="a", cost=1))
    assert not verdict.approved
    assert any("cannot be evaluated on this state" in r and "number" in r
               for r in verdict.rejection_reasons), verdict.rejection_reasons
    holds, why = clampai.invariants.rate_limit_invariant("calls", 3).check(State({"calls": "x"}))
    assert not holds and "cannot be evaluated" in why


def test_the_budget_controller_gives_the_python_clampais_figures(ref):
    # charge / refund / can_afford sequences: the same answers, exceptions and figures, but a
    # refund of more than the net spend, which the Python ClampAI ignores and this package
    # refuses (docs/PYTHON.md), changing nothing on either side.
    rng = random.Random(3803)
    refused = 0
    for _ in range(300):
        total = rng.randrange(0, 40) / 4
        ours, theirs = clampai.BudgetController(total), ref.BudgetController(total)
        for _ in range(20):
            op = rng.choice(["charge", "refund", "can_afford"])
            cost = rng.choice([0, 0.25, 0.5, 1, 2, 3.75, -1])

            def run(bc):
                try:
                    result = getattr(bc, op)(cost) if op == "can_afford" else getattr(bc, op)(
                        "x", cost)
                    return "ok", result[0] if op == "can_afford" else None
                except Exception as err:  # noqa: BLE001 - the type is compared
                    return "raise", type(err).__name__

            mine, other = run(ours), run(theirs)
            figures = [(bc.remaining, bc.spent_gross, bc.spent_refunded, bc.spent_net,
                        bc.utilization()) for bc in (ours, theirs)]
            assert figures[0] == figures[1], (op, cost, mine, other)
            if op == "refund" and mine == ("raise", "InvalidArgument") and other[0] == "ok":
                refused += 1
                continue
            assert mine == other, (op, cost, mine, other)
    assert refused > 0


def test_the_safe_decorator_gives_the_python_clampais_answers(ref):
    # @safe with a budget, a cost per call and an invariant over the state the function's
    # state_fn reads: which calls run, which raise, and the figures after each.
    rng = random.Random(3804)
    raised = 0
    for _ in range(150):
        budget, per_call = rng.randrange(1, 20) / 2, rng.choice([0.5, 1.0, 2.0])
        limit = rng.randrange(0, 6)

        def make(module):
            calls = {"n": 0}

            @module.safe(budget=budget, cost_per_call=per_call,
                         invariants=[module.invariants.rate_limit_invariant("n", limit)],
                         state_fn=lambda: {"n": calls["n"]})
            def double(x):
                calls["n"] += 1
                return x * 2
            return double, calls

        (mine, my_calls), (other, other_calls) = make(clampai), make(ref)
        for i in range(12):
            outcomes = []
            for fn in (mine, other):
                try:
                    outcomes.append(("ok", fn(i)))
                except Exception as err:  # noqa: BLE001 - the type is compared
                    outcomes.append(("raise", type(err).__name__))
            assert outcomes[0] == outcomes[1], (budget, per_call, limit, i, outcomes)
            raised += outcomes[0][0] == "raise"
            assert (mine.kernel.budget.remaining, mine.kernel.step_count, len(mine.audit_log),
                    my_calls["n"]) == (other.kernel.budget.remaining, other.kernel.step_count,
                                       len(other.audit_log), other_calls["n"])
    assert raised > 100
