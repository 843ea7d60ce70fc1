"""`clampai gateway --max-in-flight 3` (issue 39): several calls forwarded at once, each decided
and committed before it is forwarded. A raw JSON-RPC client on the gateway's pipes, in front of
tests/cli/fake_upstream.py, whose `hold` tool answers only when a call with `release` comes (then
every call held, newest first). Checked: three calls are forwarded before any is answered, and
their answers, out of order, reach the right ids; a fourth waits until a slot frees (the
cancellation of one of the three, which alone ends `unknown`); the budget is charged at the
decision, so calls in flight never overspend it (the call past it is rejected, never forwarded);
a request id already in flight is refused; an error for a step no longer the latest reaches its
own id; a gateway killed with three calls in flight leaves exactly three steps without an
outcome, which `trace verify` names. No duration is asserted: each step waits for what the
upstream said. Run by ctest with CLAMPAI in the environment."""

import json
import os
import subprocess
import sys
import tempfile

from gateway_passthrough_test import CLAMPAI, Client, pins


def call(i, tag, release=False):
    args = {"tag": tag}
    if release:
        args["release"] = True
    return {"jsonrpc": "2.0", "id": i, "method": "tools/call",
            "params": {"name": "hold", "arguments": args}}


def held(message):
    """The tag of an upstream's `held TAG` notification, passed on by the gateway."""
    assert message.get("method") == "notifications/message", message
    return message["params"]["data"].removeprefix("held ")


def answer(message):
    assert "result" in message and not message["result"].get("isError"), message
    return message["id"], message["result"]["content"][0]["text"]


def main():
    with tempfile.TemporaryDirectory() as tmp:
        log = os.path.join(tmp, "upstream.log")
        env = dict(os.environ, FAKE_LOG=log)
        env.pop("FAKE_DESC", None)
        pin = pins(env)
        open(log, "w").close()
        spec = os.path.join(tmp, "spec.json")
        with open(spec, "w") as f:
            json.dump({
                "name": "holding",
                "variables": {"held": {"type": "int", "initial": 0, "min": 0}},
                "actions": [{"id": "hold", "description": "hold", "cost": 1, "reversible": True,
                             "effects": [{"variable": "held", "mode": "increment",
                                          "value": 1}]}],
                "budget": {"total": 9, "min_action_cost": 1},
                "bindings": {"tools": {"hold": {"action": "hold", "pin": pin["hold"],
                                                "params": {}}}},
            }, f)
        trace = os.path.join(tmp, "t.jsonl")
        c = Client(spec, env, trace, ["--max-in-flight", "3"])
        c.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "clientInfo": {"name": "t", "version": "1"},
            "capabilities": {}}})
        assert "result" in c.read()
        c.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

        # Three calls in flight at once: the upstream answers none before the third, and then
        # newest first; each answer reaches its own id. Before the fix: --max-in-flight 3 was
        # refused (exit 2).
        c.send(call(10, "a"))
        c.send(call(11, "b"))
        c.send(call(12, "c", release=True))
        assert [held(c.read()) for _ in range(3)] == ["a", "b", "c"]
        assert [answer(c.read()) for _ in range(3)] == [(12, "held c"), (11, "held b"),
                                                       (10, "held a")]

        # A fourth call waits while three are in flight; the client's cancellation of one of
        # them frees its slot (and is passed to the upstream), and only then is the fourth
        # forwarded. The cancelled call is not answered.
        for i, tag in ((20, "d"), (21, "e"), (22, "f")):
            c.send(call(i, tag))
        c.send(call(23, "g", release=True))
        assert [held(c.read()) for _ in range(3)] == ["d", "e", "f"]
        c.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
                "params": {"requestId": 21}})
        assert held(c.read()) == "g"
        assert [answer(c.read()) for _ in range(3)] == [(23, "held g"), (22, "held f"),
                                                       (20, "held d")]
        with open(log) as f:
            lines = f.read().splitlines()[1:]
        assert lines[:6] == ["hold a", "hold b", "hold c", "answer c", "answer b", "answer a"]
        assert lines[6:11] == ["hold d", "hold e", "hold f", lines[9], "hold g"], lines
        assert lines[9].startswith("cancelled "), lines

        # 7 of 9 spent: two more calls in flight spend the rest, and the third is rejected at
        # its decision, never forwarded, while they are still unanswered. An id in flight is
        # refused before anything is decided.
        c.send(call(40, "h"))
        c.send(call(41, "i"))
        c.send(call(40, "x"))
        c.send(call(42, "j", release=True))
        got = [c.read() for _ in range(4)]
        notes = [held(m) for m in got if "method" in m]
        replies = {m["id"]: m for m in got if "id" in m}
        assert notes == ["h", "i"], got
        assert replies[40]["error"]["code"] == -32600, replies
        assert "already in flight" in replies[40]["error"]["message"], replies
        rejected = replies[42]["result"]
        assert rejected.get("isError") and "clampai/decision" in rejected["_meta"], rejected
        c.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
                "params": {"requestId": 40}})
        c.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
                "params": {"requestId": 41}})
        c.send({"jsonrpc": "2.0", "id": 50, "method": "ping"})
        assert c.read() == {"jsonrpc": "2.0", "id": 50, "result": {}}
        code, out, err = c.close()
        assert code == 0 and out == "", (code, out, err)
        with open(log) as f:
            lines = f.read().splitlines()[1:]
        assert not any(line in ("hold x", "hold j") for line in lines), lines
        assert sum(line.startswith("cancelled ") for line in lines) == 3, lines

        # The trace: nine steps (the budget, not more), each with its outcome; only the three
        # cancelled ones (e, h, i: the 5th, 8th and 9th) `unknown`.
        entries = [json.loads(line) for line in open(trace)]
        steps = [e["seq"] for e in entries if e["kind"] == "executed"]
        assert len(steps) == 9, entries
        outcomes = {}
        for e in entries:
            if e["kind"] == "attested" and e["params"].get("attestor") == "gateway":
                step, outcome = e["params"]["detail"].split(":")[:2]
                outcomes[int(step.removeprefix("step "))] = outcome.strip()
        unknown = sorted(s for s, o in outcomes.items() if o == "unknown")
        assert unknown == [steps[4], steps[7], steps[8]], outcomes
        assert sorted(outcomes) == steps and list(outcomes.values()).count("ok") == 6, outcomes
        v = subprocess.run([CLAMPAI, "trace", "verify", trace, "--spec", spec, "--format",
                            "json"], capture_output=True, text=True, timeout=60)
        assert v.returncode == 0, (v.stdout, v.stderr)
        assert json.loads(v.stdout).get("steps_without_outcome", []) == [], v.stdout

        # An error answered for a step that is no longer the latest (another call committed
        # after it): passed to its own id; the step is compensated (its exact inverse, its cost
        # refunded once) and the trace says so.
        trace = os.path.join(tmp, "u.jsonl")
        c = Client(spec, env, trace, ["--max-in-flight", "2"])
        c.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "clientInfo": {"name": "t", "version": "1"},
            "capabilities": {}}})
        assert "result" in c.read()
        c.send(call(60, "fail-k"))
        c.send(call(61, "l", release=True))
        assert [held(c.read()) for _ in range(2)] == ["fail-k", "l"]
        assert answer(c.read()) == (61, "held l")
        r = c.read()
        assert r["id"] == 60 and r["error"]["message"] == "failed fail-k", r
        code, out, err = c.close()
        assert code == 0 and out == "", (code, out, err)
        assert "step 1 (`hold`): error: compensated (failed fail-k)" in err, err
        v = subprocess.run([CLAMPAI, "trace", "verify", trace, "--spec", spec],
                           capture_output=True, text=True, timeout=60)
        assert v.returncode == 0, (v.stdout, v.stderr)
        with open(trace, encoding="utf-8") as f:
            kinds = [json.loads(line)["kind"] for line in f]
        assert kinds.count("compensated") == 1, kinds

        # A gateway killed with three calls in flight leaves three committed steps without an
        # outcome, and no more: `trace verify --spec` names them.
        trace = os.path.join(tmp, "k.jsonl")
        c = Client(spec, env, trace, ["--max-in-flight", "3"])
        c.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "clientInfo": {"name": "t", "version": "1"},
            "capabilities": {}}})
        assert "result" in c.read()
        for i, tag in ((70, "m"), (71, "n"), (72, "o"), (73, "p")):
            c.send(call(i, tag))
        assert [held(c.read()) for _ in range(3)] == ["m", "n", "o"]
        c.p.kill()
        c.p.wait(timeout=60)
        v = subprocess.run([CLAMPAI, "trace", "verify", trace, "--allow-unsealed", "--spec", spec,
                            "--format", "json"], capture_output=True, text=True, timeout=60)
        steps = [json.loads(line)["seq"] for line in open(trace)
                 if json.loads(line)["kind"] == "executed"]
        assert len(steps) == 3, steps
        assert json.loads(v.stdout).get("steps_without_outcome") == steps, (v.stdout, v.stderr)
    print("1 passed, 0 failed")


if __name__ == "__main__":
    sys.exit(main())
