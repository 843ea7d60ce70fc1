"""`clampai gateway` in front of an action whose spec asks for an approval (issue 40): the
ticket is asked for in the gateway's one ticket book by `gateway-client`, and answered as
--approvals says: the human at the client through MCP elicitation (`elicitation/create`, when
the client declared the capability), denied, or left pending (the call's answer is the ticket).
A raw JSON-RPC client on the gateway's pipes, in front of tests/cli/fake_upstream.py. Checked:
accepted, the step is committed and forwarded, and the trace has approval_requested,
approval_granted by `client-user` and executed; declined (or accepted with approve false, or a
malformed answer), nothing is forwarded and the result says approval_denied; an error answer
leaves the ticket pending; a client without elicitation gets the
pending ticket; --approvals deny and skip; with --max-in-flight 2, a call in flight while
another waits for its approval; a client that does not answer before the ticket's
ttl_s: the elicitation is cancelled and the call answered approval_expired; on a shared ledger
(file:) the same, the ticket in the shared trace. `trace verify --spec` passes on every trace. No duration is asserted. Run by ctest
with CLAMPAI in the environment."""

import json
import os
import subprocess
import tempfile

from gateway_passthrough_test import CLAMPAI, UPSTREAM, pins
from gateway_passthrough_test import Client as StdioClient


class Client(StdioClient):
    """The stdio gateway, initialised; the client declares elicitation unless told not to."""

    def __init__(self, spec, env, trace, extra=(), elicitation=True):
        super().__init__(spec, env, trace, extra)
        caps = {"elicitation": {}} if elicitation else {}
        self.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "clientInfo": {"name": "t", "version": "1"},
            "capabilities": caps}})
        assert "result" in self.read()
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def read_request(self):
        """The next message that is not a notification."""
        while True:
            m = self.read()
            if "id" in m:
                return m

    def call(self, i, name, args):
        self.send({"jsonrpc": "2.0", "id": i, "method": "tools/call",
                   "params": {"name": name, "arguments": args}})


def entries(trace):
    with open(trace) as f:
        return [json.loads(line) for line in f if line.strip()]


def kinds(trace):
    return [e["kind"] for e in entries(trace) if e["kind"] not in ("genesis", "sealed")]


def verify(trace, spec):
    v = subprocess.run([CLAMPAI, "trace", "verify", trace, "--spec", spec],
                       capture_output=True, text=True, timeout=60)
    assert v.returncode == 0, (v.stdout, v.stderr)


def reasons(result):
    return [r["code"] for r in result["_meta"]["clampai/decision"]["reasons"]]


def upstream_calls(log):
    with open(log) as f:
        return [line for line in f.read().splitlines() if not line.startswith("init")]


def main():
    with tempfile.TemporaryDirectory() as tmp:
        log = os.path.join(tmp, "upstream.log")
        env = dict(os.environ, FAKE_LOG=log)
        env.pop("FAKE_DESC", None)
        pin = pins(env)
        spec = os.path.join(tmp, "spec.json")
        with open(spec, "w") as f:
            json.dump({
                "name": "paying",
                "variables": {"paid": {"type": "int", "initial": 0, "min": 0}},
                "actions": [
                    {"id": "pay", "description": "pay", "cost": 1, "reversible": True,
                     "parameters": {"amount": {"type": "int", "min": 1, "max": 50}},
                     "effects": [{"variable": "paid", "mode": "increment",
                                  "value": "amount"}],
                     "approval": {"ttl_s": 3600}},
                    {"id": "tip", "description": "tip", "cost": 1, "reversible": True,
                     "approval": {"ttl_s": 1}},
                    {"id": "hold", "description": "hold", "cost": 1, "reversible": True}],
                "budget": {"total": 10, "min_action_cost": 1},
                "bindings": {"tools": {
                    "transfer": {"action": "pay", "pin": pin["transfer"],
                                 "params": {"amount": "amount"}},
                    "tip": {"action": "tip", "pin": pin["tip"], "params": {}},
                    "hold": {"action": "hold", "pin": pin["hold"], "params": {}}}},
            }, f)

        # (1) Accepted at the client: committed, then forwarded.
        open(log, "w").close()
        c = Client(spec, env, os.path.join(tmp, "accept.jsonl"))
        c.call(2, "transfer", {"amount": 5})
        asked = c.read()
        assert asked.get("method") == "elicitation/create", asked
        message = asked["params"]["message"]
        assert "`pay`" in message and "amount=5" in message and "ticket " in message, message
        schema = asked["params"]["requestedSchema"]
        assert schema["properties"]["approve"]["type"] == "boolean", schema
        assert schema["required"] == ["approve"], schema
        assert upstream_calls(log) == [], "forwarded before the approval"
        c.send({"jsonrpc": "2.0", "id": 3, "method": "ping"})  # meanwhile: answered after
        c.send({"jsonrpc": "2.0", "id": asked["id"],
                "result": {"action": "accept", "content": {"approve": True}}})
        r = c.read()
        assert r["id"] == 2 and not r["result"].get("isError"), r
        assert r["result"]["content"][0]["text"] == "done", r
        assert c.read() == {"jsonrpc": "2.0", "id": 3, "result": {}}
        code, out, err = c.close()
        assert code == 0 and out == "", (code, out, err)
        assert upstream_calls(log) == ["transfer 5"], upstream_calls(log)
        es = entries(c.trace)
        assert kinds(c.trace)[:3] == ["approval_requested", "approval_granted", "executed"], \
            kinds(c.trace)
        requested = next(e for e in es if e["kind"] == "approval_requested")
        granted = next(e for e in es if e["kind"] == "approval_granted")
        assert requested["principal"] == "gateway-client", requested
        assert granted["principal"] == "client-user", granted
        assert granted["ticket"] == requested["ticket"], (requested, granted)
        assert requested["ticket"] in message, (requested, message)
        verify(c.trace, spec)

        # (2) Declined, accepted without approving, or answered amiss: denied, nothing forwarded.
        open(log, "w").close()
        c = Client(spec, env, os.path.join(tmp, "decline.jsonl"))
        for i, answer in [(2, {"action": "decline"}),
                          (3, {"action": "accept", "content": {"approve": False}}),
                          (4, {"action": "cancel"}),
                          # Malformed answers deny too.
                          (5, {"action": "accept", "content": {"approve": "true"}}),
                          (6, {"action": "accept"}),
                          (7, [True])]:
            c.call(i, "transfer", {"amount": 7})
            asked = c.read()
            assert asked.get("method") == "elicitation/create", asked
            c.send({"jsonrpc": "2.0", "id": asked["id"], "result": answer})
            r = c.read()
            assert r["id"] == i and r["result"].get("isError") is True, r
            assert reasons(r["result"]) == ["approval_denied"], r
        # A client that answers the elicitation with an error: nobody answered, the ticket
        # stays pending and is the call's answer.
        c.call(8, "transfer", {"amount": 7})
        asked = c.read()
        c.send({"jsonrpc": "2.0", "id": asked["id"],
                "error": {"code": -32601, "message": "no elicitation here"}})
        r = c.read()
        assert r["id"] == 8 and r["result"]["structuredContent"]["pending"] is True, r
        code, out, err = c.close()
        assert code == 0 and out == "", (code, out, err)
        assert "refused the elicitation" in err, err
        assert upstream_calls(log) == [], upstream_calls(log)
        assert kinds(c.trace) == ["approval_requested", "approval_denied"] * 6 + [
            "approval_requested"], kinds(c.trace)
        assert all(e["principal"] == "client-user" for e in entries(c.trace)
                   if e["kind"] == "approval_denied")
        verify(c.trace, spec)

        # (3) A client without elicitation: the pending ticket, nothing forwarded.
        open(log, "w").close()
        c = Client(spec, env, os.path.join(tmp, "pending.jsonl"), elicitation=False)
        c.call(2, "transfer", {"amount": 5})
        r = c.read()
        assert r["id"] == 2 and not r["result"].get("isError"), r
        s = r["result"]["structuredContent"]
        assert s["pending"] is True and s["approved"] is False and s["action"] == "pay", s
        assert s["params"] == {"amount": 5}, s
        code, out, err = c.close()
        assert code == 0 and out == "", (code, out, err)
        assert upstream_calls(log) == [], upstream_calls(log)
        assert kinds(c.trace) == ["approval_requested"], kinds(c.trace)
        assert entries(c.trace)[1]["ticket"] == s["ticket"], entries(c.trace)
        verify(c.trace, spec)

        # (4) --approvals deny: the client is not asked; (5) skip: the ticket stays pending.
        for mode, pending in [("deny", False), ("skip", True)]:
            open(log, "w").close()
            c = Client(spec, env, os.path.join(tmp, mode + ".jsonl"), ["--approvals", mode])
            c.call(2, "transfer", {"amount": 5})
            r = c.read()
            assert r["id"] == 2, r  # not an elicitation request
            if pending:
                assert r["result"]["structuredContent"]["pending"] is True, r
            else:
                assert r["result"]["isError"] is True, r
                assert reasons(r["result"]) == ["approval_denied"], r
            code, out, err = c.close()
            assert code == 0 and out == "", (code, out, err)
            assert upstream_calls(log) == [], upstream_calls(log)
            want = ["approval_requested"] + ([] if pending else ["approval_denied"])
            assert kinds(c.trace) == want, (mode, kinds(c.trace))
            verify(c.trace, spec)

        # --max-in-flight 2: a call in flight while another waits for its approval; both are
        # answered, each to its own id.
        open(log, "w").close()
        c = Client(spec, env, os.path.join(tmp, "inflight.jsonl"), ["--max-in-flight", "2"])
        c.call(2, "hold", {"tag": "a"})
        c.call(3, "transfer", {"amount": 5})
        asked = c.read_request()
        assert asked.get("method") == "elicitation/create", asked
        c.send({"jsonrpc": "2.0", "id": asked["id"],
                "result": {"action": "accept", "content": {"approve": True}}})
        r = c.read_request()
        assert r["id"] == 3 and r["result"]["content"][0]["text"] == "done", r
        c.call(4, "hold", {"tag": "b", "release": True})
        got = [c.read_request(), c.read_request()]
        assert sorted(g["id"] for g in got) == [2, 4], got
        assert all(not g["result"].get("isError") for g in got), got
        code, out, err = c.close()
        assert code == 0, (code, out, err)
        assert upstream_calls(log) == ["hold a", "transfer 5", "hold b", "answer b", "answer a"], \
            upstream_calls(log)
        assert kinds(c.trace).count("executed") == 3, kinds(c.trace)
        verify(c.trace, spec)

        # A client that does not answer in time (`tip`: ttl_s 1): the gateway stops waiting
        # when the ticket expires, cancels its request, and the call is answered expired; a
        # late answer changes nothing.
        open(log, "w").close()
        c = Client(spec, env, os.path.join(tmp, "expired.jsonl"))
        c.call(2, "tip", {})
        asked = c.read()
        assert asked.get("method") == "elicitation/create", asked
        cancelled = c.read()
        assert cancelled.get("method") == "notifications/cancelled", cancelled
        assert cancelled["params"]["requestId"] == asked["id"], cancelled
        r = c.read()
        assert r["id"] == 2 and r["result"]["isError"] is True, r
        assert reasons(r["result"]) == ["approval_expired"], r
        c.send({"jsonrpc": "2.0", "id": asked["id"],
                "result": {"action": "accept", "content": {"approve": True}}})
        c.send({"jsonrpc": "2.0", "id": 3, "method": "ping"})
        assert c.read() == {"jsonrpc": "2.0", "id": 3, "result": {}}
        code, out, err = c.close()
        assert code == 0 and out == "", (code, out, err)
        assert upstream_calls(log) == [], upstream_calls(log)
        assert kinds(c.trace) == ["approval_requested", "approval_expired"], kinds(c.trace)
        verify(c.trace, spec)

        # On a shared ledger the ticket lives in the shared trace: asked of the client all the
        # same, granted, then committed and forwarded; the ledger's trace verifies.
        open(log, "w").close()
        shared = os.path.join(tmp, "shared.jsonl")
        c = Client(spec, env, None, ["--ledger", "file:" + shared])
        c.call(2, "transfer", {"amount": 5})
        asked = c.read()
        assert asked.get("method") == "elicitation/create", asked
        c.send({"jsonrpc": "2.0", "id": asked["id"],
                "result": {"action": "accept", "content": {"approve": True}}})
        r = c.read()
        assert r["id"] == 2 and not r["result"].get("isError"), r
        code, out, err = c.close()
        assert code == 0 and out == "", (code, out, err)
        assert upstream_calls(log) == ["transfer 5"], upstream_calls(log)
        assert kinds(shared)[:3] == ["approval_requested", "approval_granted", "executed"], \
            kinds(shared)
        verify("file:" + shared, spec)  # a ledger: never sealed

        # Not a mode: refused by the command line.
        p = subprocess.run([CLAMPAI, "gateway", spec, "--approvals", "prompt", "--", *UPSTREAM],
                           input="", capture_output=True, text=True, env=env, timeout=60)
        assert p.returncode != 0 and "--approvals" in p.stderr, (p.returncode, p.stderr)
    print("gateway approvals: ok")


if __name__ == "__main__":
    main()
