"""Approvals from Python (issue 40): the kernel's ticket book (the one `clampai serve` and
`clampai run` use): ask, list the pending tickets, approve (decided again on the state of then)
or deny; every step a trace entry; refusals raise naming the ticket."""

import json

import pytest

import clampai

SPEC = {
    "name": "deploy",
    "variables": {"built": {"type": "bool", "initial": False},
                  "deployed": {"type": "bool", "initial": False},
                  "frozen": {"type": "bool", "initial": False}},
    "actions": [
        {"id": "build", "cost": 1, "requires": "!built",
         "effects": [{"variable": "built", "mode": "set", "value": True}]},
        {"id": "deploy", "cost": 2, "requires": "built && !frozen", "approval": {"ttl_s": 60},
         "parameters": {"n": {"type": "int", "min": 1, "max": 5}},
         "effects": [{"variable": "deployed", "mode": "set", "value": True}]},
        {"id": "freeze", "cost": 1,
         "effects": [{"variable": "frozen", "mode": "set", "value": True}]}],
    "goal": "deployed",
    "budget": {"total": 10, "min_action_cost": 1},
}


def kernel():
    k = clampai.SafetyKernel(clampai.build_model(SPEC))
    assert k.execute("build").approved
    return k


def kinds(k):
    return [json.loads(line)["kind"] for line in k._trace_lines()]


def test_ask_list_and_approve():
    k = kernel()
    decision, ticket = k.ask_approval("deploy", {"n": 2}, principal="alice")
    assert decision.approved and ticket is not None
    assert ticket["action"] == "deploy" and ticket["params"] == {"n": 2}
    assert ticket["principal"] == "alice" and len(ticket["ticket"]) == 32
    assert ticket["expires_at_us"] - ticket["requested_at_us"] == 60_000_000
    assert k.pending_approvals() == [ticket]
    assert k.state["deployed"] is False  # nothing committed yet
    granted, outcome = k.answer_approval(ticket["ticket"], True, "bob")
    assert granted and outcome.approved
    assert k.state["deployed"] is True
    assert k.pending_approvals() == []
    assert kinds(k) == ["genesis", "executed", "approval_requested", "approval_granted",
                        "executed"]
    with pytest.raises(ValueError, match="approved by `bob`"):
        k.answer_approval(ticket["ticket"], True, "carol")


def test_deny_commits_nothing():
    k = kernel()
    _, ticket = k.ask_approval("deploy", {"n": 1}, principal="alice")
    granted, outcome = k.answer_approval(ticket["ticket"], False, "bob")
    assert not granted and not outcome.approved
    assert outcome.decision.reasons[0].code == "approval_denied"
    assert k.state["deployed"] is False
    assert kinds(k)[-1] == "approval_denied"


def test_decided_again_when_granted():
    k = kernel()
    _, ticket = k.ask_approval("deploy", {"n": 1}, principal="alice")
    assert k.execute("freeze").approved  # the world moves before the grant
    granted, outcome = k.answer_approval(ticket["ticket"], True, "bob")
    assert granted and not outcome.approved
    assert outcome.decision.reasons[0].code == "requires_failed"
    assert k.state["deployed"] is False


def test_refusals():
    k = kernel()
    with pytest.raises(ValueError, match="`freeze` of task `deploy` asks for no approval"):
        k.ask_approval("freeze")
    _, ticket = k.ask_approval("deploy", {"n": 1}, principal="alice")
    k2 = clampai.SafetyKernel(clampai.build_model(SPEC))
    decision, ticket2 = k2.ask_approval("deploy", {"n": 1})  # not built: nothing to approve
    assert not decision.approved and ticket2 is None
    assert kinds(k2) == ["genesis"]
    decision, ticket3 = k2.ask_approval("nope")
    assert ticket3 is None and decision.reasons[0].code == "unknown_action"
    with pytest.raises(ValueError, match="another principal must approve it"):
        k.answer_approval(ticket["ticket"], True, "alice")
    with pytest.raises(ValueError, match="no pending ticket `0123`"):
        k.answer_approval("0123", True, "bob")
