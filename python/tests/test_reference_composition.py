"""The Python ClampAI's composition in its documented style (issue 38, phase 3): the README's
contract example and docs/API.md's `InterfaceSignature` and `TaskComposer`, unchanged but for
the import line (and the README's `...` filled in), then the behaviour behind them and where
this package answers differently (docs/PYTHON.md)."""

import pytest

from clampai import (ActionSpec, CompositionType, ContractSpecification, Effect,
                     GuaranteeLevel, InterfaceSignature, Invariant, OperadicComposition, State,
                     SuperTask, TaskComposer, VerificationCertificate)


# --- The README's compositional verification ------------------------------------------------

def test_readme_contract_composition():
    spec_a = ContractSpecification(name="fetch", assume=lambda s: s.get("url") is not None,
                                   guarantee=lambda s: s.get("fetched", False))
    spec_b = ContractSpecification(name="process", assume=lambda s: s.get("fetched", False),
                                   guarantee=lambda s: s.get("processed", 0) > 0)
    composed = OperadicComposition.compose(spec_a, spec_b)
    assert composed.name == "(fetch;process)"
    # composed.assume comes from spec_a, composed.guarantee from spec_b
    start, end = State({"url": "u"}), State({"fetched": True, "processed": 3})
    assert composed.assume(start) and not composed.assume(State({}))
    assert composed.guarantee(end) and not composed.guarantee(State({"processed": 0}))
    assert composed.is_satisfied_by(start, end) == (True, "Contract '(fetch;process)': satisfied")
    assert composed.is_satisfied_by(State({}), end)[0] is False
    assert "Guarantee violated" in composed.is_satisfied_by(start, State({}))[1]


def test_contract_side_effects_are_both_in_order():
    a = ContractSpecification("a", bool, bool, side_effects=("x", "y"))
    b = ContractSpecification("b", bool, bool, side_effects=("y", "z"))
    assert OperadicComposition.compose(a, b, verify_interface=False).side_effects == \
        ("x", "y", "z")
    with pytest.raises(AttributeError):
        a.name = "c"  # frozen


# --- docs/API.md: InterfaceSignature and TaskComposer --------------------------------------

def test_interface_signature_compatible_with():
    fetch = InterfaceSignature(required_inputs=("url",), produced_outputs=("page",))
    parse = InterfaceSignature(required_inputs=("page",), produced_outputs=("rows",),
                               precondition_predicates=(lambda s: len(s["page"]) > 0,),
                               postcondition_predicates=(lambda s: s["rows"] >= 0,))
    assert fetch.compatible_with(parse)
    assert not parse.compatible_with(fetch)          # nothing produces `url`
    assert parse.check_preconditions(State({"page": "<html>"})) == \
        (True, "All preconditions satisfied")
    assert parse.check_preconditions(State({"page": ""})) == \
        (False, "Precondition 0 not satisfied")
    ok, message = parse.check_postconditions(State({}))
    assert not ok and message.startswith("Postcondition 0 raised exception")


def test_an_output_the_next_task_forbids_is_incompatible():
    a = InterfaceSignature(("x",), ("y", "lock"))
    b = InterfaceSignature(("y",), ("z",), forbidden_variables=("lock",))
    assert not a.compatible_with(b)
    # Forbidding the same variable is no conflict: neither produces it.
    c = InterfaceSignature(("x",), ("y",), forbidden_variables=("lock",))
    assert c.compatible_with(b)


def certificate(task_id, level=GuaranteeLevel.PROVEN, **overrides):
    fields = dict(task_id=task_id, proof_level=level, all_invariants_satisfied=True,
                  budget_safe=True, no_deadlock=True, rollback_exact=True,
                  proof_hash=f"{task_id}-hash-0123456789")
    fields.update(overrides)
    return VerificationCertificate(**fields)


def super_task(task_id, inputs, outputs, cost=1.0, **cert):
    action = ActionSpec(id=f"{task_id}_act", name=task_id, description="",
                        effects=tuple(Effect(o, "set", 1) for o in outputs), cost=cost)
    return SuperTask(task_id=task_id, name=task_id.title(), description=f"{task_id} step",
                     goal=f"{task_id} done", available_actions=(action,),
                     invariants=(Invariant("cap", "calls <= 10"),),
                     interface=InterfaceSignature(tuple(inputs), tuple(outputs)),
                     certificate=certificate(task_id, **cert))


def test_certificate_levels():
    assert certificate("t").is_complete()
    assert not certificate("t", rollback_exact=False).is_complete()
    conditional = certificate("t", GuaranteeLevel.CONDITIONAL)
    assert not conditional.is_complete() and conditional.is_conditionally_verified()
    assert not certificate("t", GuaranteeLevel.HEURISTIC).is_conditionally_verified()


def test_task_composer_compose_chain():
    composer = TaskComposer()
    # .register_task(super_task)
    assert composer.register_task(super_task("fetch", ["url"], ["page"]))
    assert composer.register_task(super_task("parse", ["page"], ["rows"], cost=2.5))
    assert composer.register_task(super_task("store", ["rows"], ["saved"]))
    # .is_verified(task_id) -> bool
    assert composer.is_verified("fetch") and not composer.is_verified("missing")
    # .compose_chain(task_ids, composition_type) -> SuperTask
    two = composer.compose_chain(["fetch", "parse"], CompositionType.SEQUENTIAL)
    assert isinstance(two, SuperTask)
    assert two.task_id == "fetch_parse" and two.name == "Fetch ∘ Parse"
    assert two.goal == "parse done"
    assert two.composition_history == ("fetch", "parse")
    assert two.composition_type is CompositionType.SEQUENTIAL
    assert two.certificate.proof_level is GuaranteeLevel.CONDITIONAL
    assert not two.is_verified()
    assert two.certificate.proof_hash == "composed_fetch-ha_parse-ha"
    assert two.interface.required_inputs == ("url",)
    assert two.interface.produced_outputs == ("page", "rows")
    assert [a.id for a in two.available_actions] == ["fetch_act", "parse_act"]
    assert len(two.invariants) == 1                  # the same invariant once
    assert two.certificate.assumptions == (
        "Shared invariants: {'cap'}",
        "Total estimated cost: 3.50 (must fit in kernel budget)")


def test_a_chain_of_three_composes():
    composer = TaskComposer()
    for t in (super_task("fetch", ["url"], ["page"]), super_task("parse", ["page"], ["rows"]),
              super_task("store", ["rows"], ["saved"])):
        composer.register_task(t)
    chain = composer.compose_chain(["fetch", "parse", "store"])
    assert chain is not None and chain.task_id == "fetch_parse_store"
    assert chain.interface.produced_outputs == ("page", "rows", "saved")
    assert chain.certificate.proof_level is GuaranteeLevel.CONDITIONAL


def test_what_does_not_compose_is_none_with_a_warning():
    composer = TaskComposer()
    composer.register_task(super_task("fetch", ["url"], ["page"]))
    composer.register_task(super_task("store", ["rows"], ["saved"]))
    with pytest.warns(RuntimeWarning, match="Interface mismatch: fetch → store"):
        assert composer.compose_chain(["fetch", "store"]) is None
    with pytest.warns(RuntimeWarning, match="not found"):
        assert composer.compose_chain(["fetch", "nope"]) is None
    assert composer.compose_chain([]) is None
    with pytest.warns(RuntimeWarning, match="already registered"):
        assert not composer.register_task(super_task("fetch", ["url"], ["page"]))
    with pytest.warns(RuntimeWarning, match="unverified"):
        assert not composer.register_task(
            super_task("draft", [], ["x"], level=GuaranteeLevel.HEURISTIC))
    assert set(composer.tasks) == {"fetch", "store"}


def test_parallel_composition():
    a, b = super_task("a", ["x"], ["y"]), super_task("b", ["w"], ["z"])
    assert a.can_compose_with(b, CompositionType.PARALLEL) == (True, "Composition allowed")
    both = a.compose(b, CompositionType.PARALLEL)
    assert both.interface.required_inputs == ("x", "w")
    assert both.interface.produced_outputs == ("y", "z")
    c = super_task("c", [], ["y"])
    ok, reason = a.can_compose_with(c, CompositionType.PARALLEL)
    assert not ok and reason == "Variable conflict in parallel composition: {'y'}"
    heuristic = super_task("h", [], [], level=GuaranteeLevel.HEURISTIC)
    assert heuristic.can_compose_with(a, CompositionType.SEQUENTIAL) == \
        (False, "Source task 'h' is not fully verified")
    assert a.can_compose_with(heuristic, CompositionType.CONDITIONAL) == \
        (False, "Target task 'h' is not fully verified")


def test_get_composed_tasks():
    composer = TaskComposer()
    composer.register_task(super_task("fetch", ["url"], ["page"]))
    composer.register_task(super_task("parse", ["page"], ["rows"]))
    assert len(composer.get_composed_tasks(depth=1)) == 2
    composed = composer.get_composed_tasks()
    assert [t.task_id for t in composed] == ["fetch_parse"]   # parse∘fetch does not compose
