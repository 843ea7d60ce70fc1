"""The reference's API beyond the core (docs/PYTHON.md): the kernel's extras
(evaluate_and_execute_atomic, add_precondition, register_emergency_action), the invariant
library's factories (the spec's templates) and the hardening layer (attestors, the reference
monitor)."""

import json
import os
import subprocess
import threading

import pytest
from hypothesis import given, settings, strategies as st

import clampai
from clampai import (ActionSpec, Effect, Expr, Invariant, SafetyKernel, State, TaskDefinition,
                     verify)
from clampai import invariants as inv
from clampai.hardening import (Attestation, MultiDimensionalAttestor, PredicateAttestor,
                               ReferenceMonitor, SubprocessAttestor)

PROPS = settings(max_examples=40, deadline=None, derandomize=True)


def counter_task(invariants=(), **overrides):
    fields = dict(
        goal="count",
        initial_state=State({"calls": 0, "note": "", "ids": [1], "status": "new", "owner": "ops"}),
        available_actions=[
            ActionSpec("inc", effects=(Effect("calls", "increment", 1),), cost=1),
            ActionSpec("dec", effects=(Effect("calls", "decrement", 1),), cost=1),
            ActionSpec("note_pii", effects=(Effect("note", "set", "mail bob@example.com"),),
                       cost=1),
            ActionSpec("note_secret", effects=(Effect("note", "set", "AKIAABCDEFGHIJKLMNOP"),),
                       cost=1),
            ActionSpec("note_ok", effects=(Effect("note", "set", "all clear"),), cost=1),
            ActionSpec("dup", effects=(Effect("ids", "append", 1),), cost=1),
            ActionSpec("push", effects=(Effect("ids", "append", Expr("calls + 2")),), cost=1),
            ActionSpec("lose", effects=(Effect("status", "set", "lost"),), cost=1),
            ActionSpec("drop_owner", effects=(Effect("owner", "delete"),), cost=1),
            ActionSpec("halt", effects=(), cost=0),
        ],
        invariants=list(invariants),
        budget=100,
        variables={"owner": {"optional": True}},
    )
    fields.update(overrides)
    return TaskDefinition(**fields)


def cli(*args):
    return subprocess.run([os.environ["CLAMPAI_CLI"], *args], capture_output=True, text=True)


# --- SafetyKernel extras --------------------------------------------------------------------

def test_evaluate_and_execute_atomic_is_execute():
    k = SafetyKernel(counter_task([inv.rate_limit_invariant("calls", 1)]))
    first = k.evaluate_and_execute_atomic("inc", reasoning="why not")
    assert first.approved and k.state["calls"] == 1
    second = k.evaluate_and_execute_atomic(ActionSpec("inc"))
    assert not second.approved and second.decision.reason_codes == ["invariant_violated"]
    assert k.state["calls"] == 1 and k.step_count == 1


def test_add_precondition_rejects_with_its_message_and_changes_nothing():
    k = SafetyKernel(counter_task(), record_rejections=True)
    seen = []

    def office_hours(state, action):
        seen.append((state["calls"], action.id, type(action).__name__))
        return (action.id != "inc" or state["calls"] < 2, "after hours")

    k.add_precondition(office_hours)
    assert k.execute("inc").approved and k.execute("inc").approved
    before = (k.state, k.step_count, k.budget.spent_net)
    out = k.execute("inc")
    assert not out.approved
    (reason,) = out.decision.reasons
    assert reason.code == "precondition_failed" and reason.subject == "inc"
    assert reason.message == "precondition `office_hours` of `inc` failed: after hours"
    assert (k.state, k.step_count, k.budget.spent_net) == before  # T5
    assert seen[-1] == (2, "inc", "ActionSpec")
    assert k.trace[-1].reasons[0]["code"] == "precondition_failed"
    assert k.verify_trace().ok
    # evaluate consults it too; other actions pass; a bare bool is a verdict.
    assert k.evaluate("inc").reason_codes == ["precondition_failed"]
    assert k.evaluate("dec").approved
    k.add_precondition(lambda s, a: a.id != "dec")
    assert k.evaluate("dec").reasons[0].message == "precondition `precondition_1` of `dec` failed"


def test_a_precondition_that_raises_is_invariant_error_never_a_crash():
    k = SafetyKernel(counter_task())

    def broken(state, action):
        raise ValueError("no clock")

    k.add_precondition(broken)
    out = k.execute("inc")
    assert not out.approved and out.decision.reason_codes == ["invariant_error"]
    assert out.decision.reasons[0].message == "precondition `broken` of `inc` raised ValueError: no clock"
    assert k.state["calls"] == 0


def test_preconditions_never_veto_emergency_actions():
    task = counter_task(emergency_actions=["halt"])
    k = SafetyKernel(task)
    k.add_precondition(lambda s, a: (False, "closed"))
    assert not k.evaluate("inc").approved
    assert k.execute("halt").approved


def test_preconditions_from_threads_neither_deadlock_nor_break_the_gate():
    k = SafetyKernel(counter_task([inv.rate_limit_invariant("calls", 150)]))
    k.add_precondition(lambda s, a: s["calls"] < 100)
    threads = [threading.Thread(target=lambda: [k.execute("inc") for _ in range(60)])
               for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads)
    assert k.state["calls"] == 100 and k.step_count == 100


def test_register_emergency_action_before_the_first_step():
    task = counter_task(max_steps=1)
    k = SafetyKernel(task)
    k.register_emergency_action("halt")
    k.register_emergency_action("halt")  # once is enough; again is harmless
    assert k.model.emergency_actions == ["halt"]
    assert k.execute("inc").approved and not k.evaluate("inc").approved  # the step limit
    assert k.execute("halt").approved and k.emergency_steps == 1  # T8
    assert k.trace[0].spec == k.model.digest


def test_register_emergency_action_refusals():
    k = SafetyKernel(counter_task())
    with pytest.raises(clampai.SpecError, match=r"emergency action `inc` must cost 0"):
        k.register_emergency_action("inc")
    with pytest.raises(clampai.SpecError, match=r"unknown action `hlat`.*did you mean `halt`"):
        k.register_emergency_action("hlat")
    k.execute("inc")
    with pytest.raises(clampai.InvalidArgument, match="before the first action"):
        k.register_emergency_action("halt")
    with pytest.raises(clampai.InvalidArgument, match="not a TaskModel"):
        SafetyKernel(counter_task().build()).register_emergency_action("halt")


def test_register_emergency_action_from_a_spec_dict_and_a_file(tmp_path):
    spec = counter_task().to_spec()
    k = SafetyKernel(spec)
    k.register_emergency_action("halt")
    assert k.model.emergency_actions == ["halt"]
    path = tmp_path / "t.json"
    path.write_text(json.dumps(spec))
    k = SafetyKernel(str(path))
    k.register_emergency_action("halt")
    assert k.model.emergency_actions == ["halt"]
    with pytest.raises(clampai.InvalidArgument, match="trace file"):
        SafetyKernel(spec, trace_file=tmp_path / "t.jsonl").register_emergency_action("halt")


# --- The invariant library ------------------------------------------------------------------

def test_every_reference_factory_name_is_exported_at_the_top():
    for name in inv.__all__:
        assert getattr(clampai, name) is getattr(inv, name)


@PROPS
@given(limit=st.integers(0, 6), tries=st.integers(0, 10))
def test_rate_limit_allows_exactly_its_maximum(limit, tries):
    k = SafetyKernel(counter_task([inv.rate_limit_invariant("calls", limit)]))
    approved = sum(k.execute("inc").approved for _ in range(tries))
    assert approved == min(limit, tries) and k.state["calls"] == approved


@PROPS
@given(lo=st.integers(-3, 0), hi=st.integers(0, 3), moves=st.lists(st.booleans(), max_size=12))
def test_value_range_keeps_the_variable_in_range(lo, hi, moves):
    k = SafetyKernel(counter_task([inv.value_range_invariant("calls", lo, hi)]))
    for up in moves:
        before = k.state["calls"]
        out = k.execute("inc" if up else "dec")
        assert out.approved == (lo <= before + (1 if up else -1) <= hi)
        assert lo <= k.state["calls"] <= hi


@PROPS
@given(moves=st.lists(st.booleans(), max_size=10))
def test_monotone_invariants_reject_every_move_the_other_way(moves):
    up = SafetyKernel(counter_task([inv.monotone_increasing_invariant("calls")]))
    down = SafetyKernel(counter_task([inv.monotone_decreasing_invariant("calls")]))
    for m in moves:
        assert up.execute("inc" if m else "dec").approved == m
        assert down.execute("inc" if m else "dec").approved == (not m)


def test_the_other_expression_templates():
    k = SafetyKernel(counter_task([
        inv.resource_ceiling_invariant("calls", 1.5),
        inv.allowed_values_invariant("status", ["new", "done"]),
        inv.no_delete_invariant("owner"),
        inv.list_length_invariant("ids", 2),
    ]))
    assert k.execute("inc").approved and k.execute("inc").decision.reasons[0].subject == \
        "resource_ceiling:calls"
    assert k.evaluate("lose").reasons[0].subject == "allowed_values:status"
    assert k.evaluate("drop_owner").reasons[0].subject == "no_delete:owner"
    assert k.execute("push").approved
    assert k.evaluate("push").reasons[0].subject == "list_length:ids"
    ro = SafetyKernel(counter_task([inv.read_only_keys_invariant(["status", "owner"],
                                                                  State({"status": "new"}))]))
    assert ro.evaluate("inc").approved and not ro.evaluate("lose").approved
    req = SafetyKernel(counter_task([inv.required_fields_invariant(["owner"])]))
    assert req.evaluate("drop_owner").reasons[0].subject == "required_fields:owner"


def test_time_window_rate_counts_within_the_window():
    task = TaskDefinition(
        goal="", initial_state=State({"sent": 0, "start": 0, "now": 0}),
        available_actions=[
            ActionSpec("send", effects=(Effect("sent", "increment", 1),), cost=1),
            ActionSpec("tick", effects=(Effect("now", "increment", 10),), cost=1),
        ],
        invariants=[inv.time_window_rate_invariant("sent", 2, 10, window_start="start",
                                                   clock="now")],
        budget=100)
    k = SafetyKernel(task)
    assert [k.execute("send").approved for _ in range(3)] == [True, True, False]
    assert k.execute("tick").approved and k.execute("send").approved  # the window has passed


def test_native_templates_are_enforced_and_opaque_to_the_verifier():
    task = counter_task([inv.no_duplicate_ids_invariant("ids"), inv.pii_guard_invariant("note"),
                         inv.secret_guard_invariant("note"), inv.rate_limit_invariant("calls", 5)])
    k = SafetyKernel(task)
    assert k.evaluate("dup").reason_codes == ["invariant_violated"]
    assert k.evaluate("push").approved
    assert k.evaluate("note_pii").reasons[0].subject == "pii_pattern:note"
    assert k.evaluate("note_secret").reasons[0].subject == "secret_pattern:note"
    assert k.evaluate("note_ok").approved
    report = verify(task)
    verdicts, reasons = {}, {}
    for ob in report.obligations:
        if "invariant" in ob and ob.kind == "preservation":
            verdicts.setdefault(ob.invariant, set()).add(ob.verdict)
            reasons.setdefault(ob.invariant, set()).add(ob.reason)
    assert "proved" in verdicts["rate_limit:calls"]  # an expression: the verifier reads it
    assert verdicts["no_duplicate_ids:ids"] == {"unknown"}
    assert verdicts["pii_pattern:note"] == {"unknown"}
    assert any("RE2" in r for r in reasons["pii_pattern:note"])


def test_a_bad_template_reads_as_the_cli_prints_it(tmp_path):
    task = counter_task([inv.rate_limit_invariant("calsl", 3)])
    with pytest.raises(clampai.SpecError) as err:
        task.build()
    assert "unknown variable `calsl`" in str(err.value)
    if "CLAMPAI_CLI" in os.environ:
        path = tmp_path / "t.json"
        path.write_text(json.dumps(task.to_spec()))
        result = cli("check", str(path))
        assert result.returncode == 2
        # The CLI adds the file's line and column; the path and the message are the same.
        assert result.stderr.strip().endswith(str(err.value))
    with pytest.raises(clampai.SpecError, match=r"invariants\[0\]\.patterns\[0\]"):
        counter_task([inv.pii_guard_invariant("note", patterns=["regex:("])]).build()
    with pytest.raises(TypeError):
        inv.required_fields_invariant("owner")


# --- Hardening ------------------------------------------------------------------------------

def test_predicate_attestor_passes_fails_and_fails_closed():
    s = State({"ready": True})
    ok = PredicateAttestor("ready", lambda state: (state["ready"], "saw ready"))
    a = ok.attest(s)
    assert isinstance(a, Attestation) and a and a.evidence == "saw ready" and a.error == ""
    assert not PredicateAttestor("no", lambda state, action: action == "x").attest(s, "y")

    def broken(state):
        raise KeyError("gone")

    bad = PredicateAttestor("broken", broken).attest(s)
    assert not bad.passed and bad.error == "threw: KeyError: 'gone'"


def test_subprocess_attestor_runs_only_allowlisted_programs(tmp_path):
    assert SubprocessAttestor(["/usr/bin/true"], {"/usr/bin/true"}).attest().passed
    fails = SubprocessAttestor(["/usr/bin/false"], {"/usr/bin/false"}).attest()
    assert not fails.passed and fails.attestor == "false"
    refused = SubprocessAttestor(["/usr/bin/false"], {"/usr/bin/true"}, name="r").attest()
    assert not refused.passed and "/usr/bin/false" in refused.error
    slow = SubprocessAttestor(["/usr/bin/sleep", "5"], {"/usr/bin/sleep"}, timeout_s=0.2).attest()
    assert not slow.passed and slow.error
    test = SubprocessAttestor(["/usr/bin/test", "{n}", "=", "3"], {"/usr/bin/test"})
    assert test.attest(State({"n": 3})) and not test.attest(State({"n": 4}))
    with pytest.raises(clampai.InvalidArgument, match="true"):
        SubprocessAttestor(["true"], {"true"})


def test_multi_dimensional_attestor_quorum_and_reference_scores():
    s = State({"x": 1})
    scores = MultiDimensionalAttestor([lambda st: 0.9, lambda st: 0.1], min_dimension_score=0.3)
    a = scores.attest(s)
    assert not a and [d.passed for d in a.dimensions] == [True, False]
    assert a.evidence.startswith("1 of 2 dimensions passed (2 required)")
    yes = PredicateAttestor("yes", lambda st: True)
    no = PredicateAttestor("no", lambda st: False)
    assert MultiDimensionalAttestor([yes, no], name="q", quorum=1).attest(s)
    with pytest.raises(clampai.InvalidArgument, match="quorum"):
        MultiDimensionalAttestor([yes, no], quorum=3)
    with pytest.raises(clampai.InvalidArgument):
        MultiDimensionalAttestor([yes, yes])


def labelled_task(**overrides):
    fields = dict(
        goal="ship", initial_state=State({"api_key": 5, "flag": 0, "shipped": False}),
        variables={"api_key": {"label": "SECRET"}},
        available_actions=[
            ActionSpec("leak", effects=(Effect("flag", "set", Expr("api_key")),), cost=1),
            ActionSpec("ship", effects=(Effect("shipped", "set", True),), cost=1,
                       attestations=("checked",)),
        ],
        budget=10, goal_predicate="shipped")
    fields.update(overrides)
    return TaskDefinition(**fields)


def test_reference_monitor_information_flow_and_attestations():
    calls = []
    checked = PredicateAttestor("checked", lambda s: calls.append(s["shipped"]) or len(calls) > 1)
    mon = ReferenceMonitor(labelled_task(attestors={"checked": checked}), record_rejections=True)
    (flow,) = mon.downward_flows
    assert (flow.action, flow.source, flow.source_label, flow.target, flow.target_label) == \
        ("leak", "api_key", "SECRET", "flag", "PUBLIC")
    assert mon.evaluate("leak").reason_codes == ["information_flow"]
    assert mon.evaluate("ship").approved and calls == []  # evaluate runs no attestation
    first = mon.execute("ship")
    assert not first and first.decision.reason_codes == ["attestation_failed"]
    assert mon.state["shipped"] is False and mon.trace[-1].kind == "rejected"
    second = mon.execute("ship")
    assert second.approved and [a.attestor for a in second.attestations] == ["checked"]
    assert mon.check_goal().success and mon.step_count == 1
    off = ReferenceMonitor(labelled_task(attestors={"checked": checked}),
                           enforce_information_flow=False)
    assert off.evaluate("leak").approved


def test_reference_monitor_command_attestors_and_refusals():
    task = labelled_task(attestors={"checked": {"command": ["/usr/bin/test", "{api_key}", "=",
                                                            "5"]}})
    mon = ReferenceMonitor(task, allowed_programs=["/usr/bin/test"])
    assert mon.execute("ship").approved
    with pytest.raises(clampai.InvalidArgument, match="/usr/bin/test"):
        ReferenceMonitor(task)  # the program is not allowed
    with pytest.raises(clampai.InvalidArgument, match="nope"):
        ReferenceMonitor(labelled_task(attestors={"checked": {"external": True}}),
                         attestors={"nope": PredicateAttestor("n", lambda s: True)})
