"""Every public function and class of the package, against the C++ library's behaviour."""

import dataclasses
import decimal
import gc
import json
import os
import subprocess
import weakref
from decimal import Decimal

import pytest

import clampai
from clampai import (ActionSpec, Effect, Expr, Invariant, SafetyKernel, SpecError, State,
                     TaskDefinition)
from conftest import EXAMPLES, quickstart_task


# --- State -------------------------------------------------------------------------------------

def test_float_given_variables_read_back_as_floats_after_effects():
    # docs/PYTHON.md, "Values are exact": the kernel decides on exact decimals; a variable
    # given as a float reads back as the nearest float to its exact value.
    task = TaskDefinition(
        goal="", initial_state={"t": 0.0, "e": Decimal("0.0"), "n": 1},
        available_actions=[ActionSpec(id="p", effects=(Effect("t", "increment", 0.1),
                                                       Effect("e", "increment", 0.1),
                                                       Effect("n", "increment", 1)),
                                      cost=1)],
        invariants=[Invariant("t_bound", lambda s: s.get("t", 0.0) * 1.5 < 90)], budget=10)
    kernel = SafetyKernel(task)
    for _ in range(3):
        kernel.execute("p")
    state = kernel.state
    assert type(state["t"]) is float and state["t"] == 0.3      # not 0.30000000000000004
    assert type(state["e"]) is Decimal and state["e"] == Decimal("0.3")
    assert type(state["n"]) is int and state["n"] == 4
    assert state.to_dict() == {"t": 0.3, "e": Decimal("0.3"), "n": 4}
    # Decided exactly: `t <= 0.3` holds after three increments of 0.1.
    exact = TaskDefinition(
        goal="", initial_state={"t": 0.0},
        available_actions=[ActionSpec(id="p", effects=(Effect("t", "increment", 0.1),),
                                      cost=1)],
        invariants=[Invariant("cap", "t <= 0.3")], budget=10)
    k = SafetyKernel(exact)
    assert all(k.execute("p").approved for _ in range(3))
    assert not k.execute("p").approved and k.state["t"] == 0.3


def test_float_marks_are_per_state():
    # The same names given as a Decimal in another state stay Decimal.
    assert type(State({"x": 0.5})["x"]) is float
    assert type(State({"x": Decimal("0.5")})["x"]) is Decimal
    assert type(State({"x": "0.5"})["x"]) is str
    assert type(State({"x": 1})["x"]) is int


def test_state_values_round_trip_exactly():
    s = State({"b": True, "i": -7, "d": 0.1, "e": Decimal("12.50"), "t": "ok", "l": [1, 2]})
    assert s.keys() == ["b", "d", "e", "i", "l", "t"]  # sorted, as the reference does
    assert s["b"] is True and s["i"] == -7 and s["t"] == "ok" and s["l"] == [1, 2]
    # A float reads back as the float given (the kernel holds its repr exactly, 0.1); a
    # Decimal stays a Decimal.
    assert type(s["d"]) is float and s["d"] == 0.1 and s.get("d") == 0.1
    assert type(s.to_dict()["d"]) is float
    assert type(s["e"]) is Decimal and s["e"] == Decimal("12.50")
    assert s.get("missing") is None and s.get("missing", 3) == 3
    assert s.has("i") and "i" in s and "zz" not in s and 5 not in s
    assert len(s) == 6 and list(s) == s.keys()
    with pytest.raises(KeyError):
        s["zz"]
    assert s.to_dict()["l"] == [1, 2]
    s.to_dict()["l"].append(3)  # a copy: the state never changes
    assert s["l"] == [1, 2]


def test_state_equality_hash_updates_and_diff():
    a = State({"x": 1, "y": "a"})
    b = State({"y": "a", "x": 1})
    assert a == b and hash(a) == hash(b) and a.fingerprint == b.fingerprint
    assert len(a.digest) == 64 and a.fingerprint == a.digest[:16]
    c = a.with_updates({"x": 2})
    assert c["x"] == 2 and a["x"] == 1 and a != c
    assert a.diff(c) == {"x": (1, 2)}
    d = a.with_updates({"z": True})
    assert d.keys() == ["x", "y", "z"] and a.diff(d) == {"z": (None, True)}
    assert "State(" in repr(a)
    assert a != {"x": 1, "y": "a"}


@pytest.mark.parametrize("bad, error", [
    ({"x": float("nan")}, ValueError), ({"x": 2 ** 70}, ValueError), ({1: 2}, TypeError)])
def test_state_rejects_values_it_cannot_hold_exactly(bad, error):
    with pytest.raises(error):
        State(bad)


def test_a_state_holds_mappings_and_objects_beside_its_kernel_variables():
    # As the Python ClampAI's State: any value; the kernel reads only its own types.
    marker = object()
    s = State({"n": 1, "payload": {"amount": 1.5, "tags": ["a"]}, "obj": marker})
    assert s.keys() == ["n", "payload", "obj"] and len(s) == 3 and list(s) == s.keys()
    assert s["payload"] == {"amount": 1.5, "tags": ["a"]} and s.get("n") == 1
    assert "payload" in s and s.has("obj") and s.get("missing", 7) == 7
    got = s.get("payload")
    got["amount"] = 99  # a copy, as the Python ClampAI's `get` gives: the state is unchanged
    assert s["payload"]["amount"] == 1.5 and s.to_dict()["payload"]["amount"] == 1.5
    t = s.with_updates({"n": 2, "payload": {"amount": 2}})
    assert t["n"] == 2 and t["payload"] == {"amount": 2} and s["payload"]["amount"] == 1.5
    diff = s.diff(t)  # `obj` too: held as a copy, as the Python ClampAI holds every value
    assert diff["n"] == (1, 2) and diff["payload"] == ({"amount": 1.5, "tags": ["a"]},
                                                       {"amount": 2})
    assert s.without_keys(["payload"]).keys() == ["n", "obj"]
    assert s != t
    u = State({"n": 1, "payload": {"amount": 1.5, "tags": ["a"]}})
    assert u == State({"n": 1, "payload": {"amount": 1.5, "tags": ["a"]}})
    assert u.fingerprint == State({"n": 1, "payload": {"amount": 1.5, "tags": ["a"]}}).fingerprint
    assert u.fingerprint != State({"n": 1, "payload": {"amount": 2}}).fingerprint
    assert u != State({"n": 1}) and hash(u) == hash(State(u.to_dict()))
    assert "payload = {'amount': 1.5" in u.describe() and "payload" in repr(u)
    import pickle
    assert pickle.loads(pickle.dumps(u)) == u
    # A task's variables are the spec's, typed: such a value there is refused, named.
    with pytest.raises((TypeError, clampai.SpecError), match="payload"):
        TaskDefinition(goal="g", initial_state=u, available_actions=[ActionSpec("a", cost=1)],
                       budget=1, min_action_cost=1).build()


# --- TaskDefinition, Effect, ActionSpec, Invariant -------------------------------------------

def test_task_definition_becomes_a_spec_with_inferred_types(quickstart):
    spec = quickstart.to_spec()
    assert spec["variables"] == {"errors": {"type": "int", "initial": 0},
                                 "processed": {"type": "int", "initial": 0}}
    assert spec["actions"][0]["cost"] == "2.0"
    assert spec["actions"][0]["effects"] == [
        {"variable": "processed", "mode": "increment", "value": "5"}]
    assert spec["budget"] == {"total": "20.0", "min_action_cost": "0.001"}
    model = quickstart.build()
    assert model is quickstart.build()  # built once
    assert model.variables == ["errors", "processed"] and model.actions == ["process_batch", "fail"]
    assert model.opaque_invariants == ["max_errors"] and model.step_limit == 20000
    assert model.budget == Decimal("20.000") and model.min_action_cost == Decimal("0.001")
    assert model.has_goal  # a callable: the kernel's native goal
    assert len(model.digest) == 64 and "TaskModel(" in repr(model)
    assert model.initial_state == State({"processed": 0, "errors": 0})
    assert model.invariants == ["max_errors"] and not quickstart.invariants[0].is_expression
    assert Invariant("i", "x > 0").is_expression
    assert Effect("x", "delete").to_spec() == {"variable": "x", "mode": "delete"}
    assert ActionSpec(id="a", cost=Expr("n"), requires="x > 0").to_spec(0) == {
        "id": "a", "cost": "n", "reversible": True, "effects": [], "requires": "x > 0"}


def test_literals_and_expressions_in_effects():
    task = TaskDefinition(
        goal="", initial_state={"d": 1.5, "s": "a", "l": [], "b": False},
        available_actions=[ActionSpec(id="a", cost=1, effects=(
            Effect("d", "increment", Decimal("0.25")), Effect("s", "set", "it's"),
            Effect("l", "append", "x"), Effect("b", "set", Expr("!b"))))],
        budget=10, min_action_cost=1)
    spec = task.to_spec()
    assert spec["variables"]["d"] == {"type": "decimal", "scale": 2, "initial": "1.5"}
    assert spec["variables"]["l"]["element"] == {"type": "string"}
    k = SafetyKernel(task)
    out = k.execute("a")
    assert out.approved
    assert k.state.to_dict() == {"b": True, "d": Decimal("1.75"), "l": ["x"], "s": "it's"}


def test_effect_and_invariant_validation():
    with pytest.raises(ValueError, match="effect mode"):
        Effect("x", "explode", 1)
    assert Effect("x", "increment", 2).inverse() == Effect("x", "decrement", 2)
    with pytest.raises(ValueError):
        Effect("x", "set", 2).inverse()
    with pytest.raises(ValueError, match="enforcement"):
        Invariant("i", "x > 0", enforcement="sometimes")
    with pytest.raises(TypeError):
        Invariant("i", 42)
    inv = Invariant("pos", lambda s: s["x"] > 0)
    assert inv.check(State({"x": 1})) == (True, "")
    assert inv.check(State({"x": 0}))[0] is False
    assert "KeyError" in inv.check(State({}))[1]
    a = ActionSpec(id="a", effects=(Effect("x", "set", 1), Effect("y", "set", 2)), cost=1)
    assert a.affected_variables() == {"x", "y"} and "[a]" in a.to_compact_text()


def test_spec_errors_name_the_json_path():
    task = TaskDefinition(goal="", initial_state={"x": 0},
                          available_actions=[ActionSpec(id="a", cost=1, requires="y > 1")],
                          budget=5, min_action_cost=1)
    with pytest.raises(SpecError) as err:
        task.build()
    assert str(err.value) == "actions[0].requires:1:1: unknown variable `y` (a string literal " \
                             "is written 'y')"
    assert err.value.path == "actions[0].requires:1:1" and err.value.file is None
    assert isinstance(err.value, ValueError) and isinstance(err.value, clampai.ClampAIError)


def test_build_model_accepts_dicts_models_and_refuses_the_rest(quickstart):
    spec = json.loads((EXAMPLES / "quickstart.json").read_text())
    model = clampai.build_model(spec)
    assert model.actions == ["process_batch"] and model.has_goal
    assert clampai.build_model(model) is model
    with pytest.raises(TypeError):
        clampai.build_model(42)


# --- load_spec: the CLI's messages and locations ------------------------------------------------

def cli(*args):
    return subprocess.run([os.environ["CLAMPAI_CLI"], *args], capture_output=True, text=True)


@pytest.mark.parametrize("content", [
    '{"variables": {"x": {"type": "int", "initial": 0}}, "actions": [{"id": "a", "cost": 1, '
    '"requires": "y > 1"}], "budget": {"total": 1, "min_action_cost": 1}}',
    '{"variables": {"x": {"type": "int", "initial": 0}},\n "actions": [{"id": "a", "cost": -1}],'
    '\n "budget": {"total": 1, "min_action_cost": 0}}',
    '{"variables": ',
])
def test_load_spec_errors_read_as_the_cli_prints_them(tmp_path, content):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(SpecError) as err:
        clampai.load_spec(str(path))
    if "CLAMPAI_CLI" in os.environ:
        result = cli("check", str(path))
        assert result.returncode == 2
        expected = "\n".join(line.removeprefix("clampai: error: ")
                             for line in result.stderr.strip().splitlines())
        assert str(err.value) == expected
    assert err.value.file == str(path) and err.value.line >= 1 and err.value.problems


def test_load_spec_missing_file_is_a_file_error(tmp_path):
    with pytest.raises(clampai.FileError, match="cannot read"):
        clampai.load_spec(str(tmp_path / "nope.json"))


def test_load_spec_accepts_paths(examples):
    assert clampai.load_spec(examples / "autoscale.json").name == "autoscale"


# --- SafetyKernel ------------------------------------------------------------------------------

def test_evaluate_execute_rollback_and_the_trace(quickstart):
    k = SafetyKernel(quickstart)
    d = k.evaluate("process_batch")
    assert d.approved and bool(d) and d.action == "process_batch" and d.cost == Decimal("2.000")
    assert d.changes == {"processed": 5} and d.reasons == [] and d.reason_codes == []
    assert d.to_dict()["changes"] == {"processed": 5} and "approved" in repr(d)
    with pytest.raises(TypeError):
        clampai.Decision()  # made by the kernel only
    assert k.step_count == 0  # evaluate commits nothing
    spec_action = quickstart.available_actions[0]
    out = k.execute(spec_action)  # an ActionSpec is accepted for its id
    assert out.approved and out.receipt.action == "process_batch" and out.receipt.sequence == 1
    assert out.receipt.cost == Decimal("2.000") and out.receipt.to_dict()["sequence"] == 1
    assert out.state == k.state and k.state["processed"] == 5
    assert out.to_dict()["state"] == {"errors": 0, "processed": 5}
    assert k.budget.spent_net == Decimal("2.000") and k.budget.remaining == Decimal("18.000")
    assert k.completions("process_batch") == 1 and k.step_count == 1
    assert not k.goal_reached()
    back = k.rollback(out.receipt)
    assert back.approved and k.state["processed"] == 0 and k.budget.spent_net == 0
    assert k.budget.spent_gross == Decimal("2.000")  # T4
    with pytest.raises(clampai.InvalidArgument):
        k.rollback(out.receipt)  # once only
    trace = k.trace
    assert [e.kind for e in trace] == ["genesis", "executed", "rolled_back"]
    assert trace[1].action == "process_batch" and trace[2].prev == trace[1].hash
    assert k.trace_length == 3 and k.verify_trace().ok and bool(k.verify_trace())
    assert "steps 1/20000" in k.status()
    sealed = json.loads(k.seal())
    assert sealed["kind"] == "sealed" and k.is_sealed
    with pytest.raises(clampai.InvalidArgument):
        k.seal()


def test_evaluate_and_execute_take_keywords_and_refuse_misuse(quickstart):
    # evaluate and execute are CPython methods of their own (not pybind11's dispatcher): the
    # same arguments, by position or keyword, and TypeError for anything else.
    k = SafetyKernel(quickstart)
    assert k.evaluate(action="process_batch", params=None).approved
    assert k.evaluate(params={}, action="process_batch").approved
    out = k.execute("process_batch", params=None)
    assert out and bool(out) and out.decision.approved and out.decision.action == "process_batch"
    assert repr(out) == "Outcome(approved, state=State({'errors': 0, 'processed': 5}))"
    assert out.to_dict() == {"approved": True, "decision": out.decision.to_dict(),
                             "receipt": out.receipt.to_dict(),
                             "state": {"errors": 0, "processed": 5}}
    for call in (lambda: k.execute(), lambda: k.evaluate("process_batch", None, 1),
                 lambda: k.execute("process_batch", action="fail"),
                 lambda: k.evaluate("process_batch", parameters={}),
                 lambda: k.execute(1), lambda: k.evaluate("process_batch", [1]),
                 lambda: clampai.SafetyKernel.execute(object(), "process_batch")):
        with pytest.raises(TypeError):
            call()
    assert k.step_count == 1  # nothing refused ran
    with pytest.raises(TypeError):
        clampai.Outcome()  # made by the kernel only
    ref = weakref.ref(out)  # as pybind11 instances could be
    assert ref() is out
    del out
    assert ref() is None
    last = k.execute("process_batch")
    del k  # an outcome (its decision, receipt and state) outlives its kernel
    gc.collect()
    assert last.decision.changes == {"processed": 10} and last.receipt.sequence == 2
    assert last.state["processed"] == 10


def test_a_rejection_is_a_value_with_every_reason(quickstart):
    k = SafetyKernel(quickstart)
    k.execute("fail")
    d = k.evaluate("fail")
    assert not d.approved and not bool(d)
    assert d.reason_codes == ["invariant_violated"] and d.reasons[0].subject == "max_errors"
    assert "Abort if error rate is too high" in d.reasons[0].message
    assert d.reasons[0].to_dict()["code"] == "invariant_violated"
    out = k.execute("fail")
    assert not out.approved and out.receipt is None and k.state["errors"] == 2
    assert k.evaluate("nope").reason_codes == ["unknown_action"]
    assert k.evaluate("process_batch", {"n": 1}).reason_codes == ["invalid_parameter"]


def test_evaluate_in_takes_another_state(quickstart):
    k = SafetyKernel(quickstart)
    assert k.evaluate_in(State({"processed": 0, "errors": 3}), "fail").reason_codes == [
        "invariant_violated"]
    assert k.evaluate_in(State({"processed": 0, "errors": 0}), "fail").approved
    with pytest.raises(ValueError, match="no variable"):
        k.evaluate_in(State({"processed": 0}), "fail")
    assert k.evaluate_in(k.state, "nope").reason_codes == ["unknown_action"]


def test_a_raising_predicate_is_invariant_error_never_a_crash():
    def boom(state):
        if state["x"] >= 2:
            raise ValueError("bad x")
        return True

    task = TaskDefinition(goal="", initial_state={"x": 0},
                          available_actions=[ActionSpec(id="inc", cost=1,
                                                        effects=(Effect("x", "increment", 1),))],
                          invariants=[Invariant("boom", boom),
                                      Invariant("warn", lambda s: 1 / 0, enforcement="monitoring")],
                          budget=10, min_action_cost=1)
    with pytest.raises(clampai.InvalidArgument, match="boom"):
        SafetyKernel(dataclasses.replace(task, initial_state={"x": 5}))  # T3's base case: the initial state fails the check
    k = SafetyKernel(task)
    first = k.execute("inc")
    assert first.approved and [w.code for w in first.decision.warnings] == ["invariant_error"]
    assert "ZeroDivisionError" in first.decision.warnings[0].message
    d = k.evaluate("inc")
    assert d.reason_codes == ["invariant_error"] and d.reasons[0].subject == "boom"
    assert "ValueError: bad x" in d.reasons[0].message
    assert k.state["x"] == 1


def test_dependencies_emergency_actions_and_parameters():
    task = TaskDefinition(
        goal="deployed", initial_state={"built": False, "deployed": False, "n": 0},
        available_actions=[
            ActionSpec(id="build", cost=1, effects=(Effect("built", "set", True),)),
            ActionSpec(id="deploy", cost=1, effects=(Effect("deployed", "set", True),)),
            ActionSpec(id="add", cost=Expr("k * 1"), parameters={"k": {"type": "int", "min": 1,
                                                                       "max": 5}},
                       effects=(Effect("n", "increment", Expr("k")),)),
            ActionSpec(id="stop", cost=0, effects=(Effect("n", "set", 0),)),
        ],
        budget=4, min_action_cost=1, goal_predicate="deployed",
        dependencies={"deploy": [("build", "needs an artefact")]}, emergency_actions=["stop"])
    k = SafetyKernel(task)
    assert k.evaluate("deploy").reason_codes == ["dependency_unmet"]
    assert k.execute("add", {"k": 2}).decision.cost == Decimal("2.000")
    assert k.evaluate("add", {"k": 9}).reason_codes == ["invalid_parameter"]
    assert k.execute("build").approved and k.execute("deploy").approved
    assert k.goal_reached()
    assert k.evaluate("add", {"k": 1}).reason_codes == ["budget_exceeded"]
    stop = k.execute("stop")
    assert stop.approved and stop.decision.emergency and k.emergency_steps == 1


def test_record_rejections_and_trace_files(quickstart, tmp_path):
    path = tmp_path / "trace.jsonl"
    k = SafetyKernel(quickstart, record_rejections=True, trace_file=str(path))
    k.execute("fail")
    k.execute("fail")  # rejected: recorded
    assert [e.kind for e in k.trace] == ["genesis", "executed", "rejected"]
    k.seal()
    del k
    check = clampai.verify_trace_file(str(path))
    assert check.ok and check.entries == 4 and check.sealed
    lines = path.read_text().splitlines()
    lines[1] = lines[1].replace('"errors":2', '"errors":3')
    path.write_text("\n".join(lines) + "\n")
    assert not clampai.verify_trace_file(str(path)).ok
    with pytest.raises(clampai.TraceError):
        clampai.verify_trace_file(str(tmp_path / "missing.jsonl"))
    with pytest.raises(clampai.TraceError):
        SafetyKernel(quickstart, trace_file=str(path))  # never overwritten


def test_goal_expression_and_callable(quickstart, examples):
    k = SafetyKernel(clampai.load_spec(examples / "quickstart.json"))
    assert k.model.goal_holds(State({"processed": 10, "errors": 0}))
    assert not k.goal_reached()
    k2 = SafetyKernel(quickstart)
    k2.execute("process_batch")
    assert not k2.goal_reached()
    k2.execute("process_batch")
    assert k2.goal_reached() and quickstart.goal_achieved(k2.state)
    raising = quickstart_task(goal_predicate=lambda s: 1 / 0)
    assert not SafetyKernel(raising).goal_reached()  # fails closed
    # The explicit lookahead checks a native goal too.
    assert clampai.lookahead(quickstart, "process_batch", depth=1).goal_reachable
    spec = json.dumps(json.loads((EXAMPLES / "quickstart.json").read_text()))
    with pytest.raises(ValueError, match="one goal"):
        clampai._clampai._build_model(spec, [], lambda s: True)


# --- verify, lookahead, repair, compose -------------------------------------------------------

def test_verify_proves_expressions_and_never_callables(quickstart, examples):
    r = clampai.verify(examples / "quickstart.json")
    assert isinstance(r, clampai.VerifyReport) and r.all_proved
    assert r.summary.refuted == 0 and r.to_dict()["spec"].endswith("quickstart.json")
    opaque = clampai.verify(quickstart)
    verdicts = {o.id: o.verdict for o in opaque.obligations}
    assert verdicts["preservation:process_batch:max_errors"] == "unknown"
    # Only the base case (a concrete evaluation in the initial state) may be proved.
    assert all(v != "proved" for k, v in verdicts.items() if k.endswith(":max_errors")
               and not k.startswith("base:"))
    assert "opaque" in next(o.reason for o in opaque.obligations
                            if o.id == "preservation:process_batch:max_errors")
    assert not opaque.all_proved


def test_verify_refutes_with_a_counterexample():
    task = TaskDefinition(goal="", initial_state={"x": 0}, budget=10, min_action_cost=1,
                          available_actions=[ActionSpec(id="inc", cost=1,
                                                        effects=(Effect("x", "increment", 3),))],
                          invariants=[Invariant("small", "x <= 5")])
    r = clampai.verify(task, depth=2)
    ob = next(o for o in r.obligations if o.id == "preservation:inc:small")
    assert ob.verdict == "refuted" and "counterexample" in ob


def test_lookahead_and_repair(examples):
    spec = examples / "autoscale.json"
    la = clampai.lookahead(spec, "scale_up", {"n": 2}, depth=2)
    assert isinstance(la, clampai.LookaheadReport) and la.approved and la.depth == 2
    k = SafetyKernel(clampai.load_spec(spec))
    assert clampai.lookahead(k, "scale_up", {"n": 50}).approved is False
    sym = clampai.lookahead(spec, "scale_up", {"n": 2}, depth=1, engine="symbolic")
    assert sym.engine == "symbolic"
    with pytest.raises(ValueError):
        clampai.lookahead(spec, "scale_up", {"n": 2}, engine="magic")
    with pytest.raises(clampai.InvalidArgument, match="unknown action"):
        clampai.lookahead(spec, "scale_upp", {"n": 2})
    rep = clampai.repair(k, "scale_up", {"n": 50})
    assert rep.status == "repaired" and rep.repaired.n == "14" and rep.certificate.optimal
    assert clampai.repair(spec, "scale_up", {"n": 1}).status == "approved"
    with pytest.raises(ValueError, match="weight"):
        clampai.repair(spec, "scale_up", {"n": 50}, weights={"n": 0})


def test_compose(examples, tmp_path):
    r = clampai.compose(examples / "compose" / "pipeline.json", cache=str(tmp_path))
    assert isinstance(r, clampai.ComposeReport) and r.summary.refuted == 0
    again = clampai.compose(examples / "compose" / "pipeline.json", cache=str(tmp_path))
    assert again.summary.reused >= 1
    assert clampai.compose(examples / "compose" / "broken.json").summary.refuted >= 1
    with pytest.raises((SpecError, clampai.FileError)):
        clampai.compose(tmp_path / "missing.json")
    bad = tmp_path / "manifest.json"
    bad.write_text('{"tasks": {"a": "nope.json"}, "compose": 3}')
    with pytest.raises(SpecError) as err:
        clampai.compose(bad)
    if "CLAMPAI_CLI" in os.environ:
        result = cli("compose", str(bad))
        assert result.returncode == 2
        assert f"clampai: error: {err.value}" == result.stderr.strip()


def test_result_objects_are_dataclass_like():
    r = clampai.Result({"a": 1, "b": {"c": [1, {"d": 2}]}})
    assert r.a == 1 and r.b.c[1].d == 2 and r["a"] == 1 and "a" in r
    assert r.to_dict() == {"a": 1, "b": {"c": [1, {"d": 2}]}} and r.keys() == ["a", "b"]
    assert json.loads(r.to_json()) == r.to_dict()
    assert r == clampai.Result(r.to_dict()) and hash(r) == hash(clampai.Result(r.to_dict()))
    with pytest.raises(AttributeError):
        r.zzz
    with pytest.raises(AttributeError):
        r.a = 2
