"""`clampai gateway`: what the upstream asks of the client (roots, sampling, elicitation) is
passed to the client when the spec's `bindings.allow` names it, and refused otherwise (issue
39). A raw JSON-RPC client on the gateway's pipes, in front of tests/cli/fake_upstream.py, whose
`ask` tool asks the client something before it answers. Checked: the upstream is offered only
the allowed capabilities the client has; an allowed request reaches the client under an id of
the gateway's and the client's answer goes back to the upstream; a client message sent while it
is being asked is answered afterwards, in order; a request not allowed never reaches the client;
a client that closes its input instead of answering gets the upstream an error, and the step is
rolled back. No duration is asserted. Run by ctest with CLAMPAI in the environment."""

import json
import os
import subprocess
import sys
import tempfile

CLAMPAI = os.environ["CLAMPAI"]
UPSTREAM = [sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli",
                                         "fake_upstream.py")]


def pins(env):
    p = subprocess.run([CLAMPAI, "gateway", "--print-bindings", "--", *UPSTREAM],
                       capture_output=True, text=True, env=env, timeout=60)
    assert p.returncode == 0, (p.returncode, p.stderr)
    return {n: t["pin"] for n, t in json.loads(p.stdout)["bindings"]["tools"].items()}


class Client:
    """The gateway over stdio in front of the fake upstream (`trace` None: no --trace)."""

    def __init__(self, spec, env, trace, extra=()):
        self.trace = trace
        traced = ["--trace", trace] if trace is not None else []
        self.p = subprocess.Popen([CLAMPAI, "gateway", spec, *traced, *extra, "--", *UPSTREAM],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, env=env)

    def send(self, message):
        self.p.stdin.write(json.dumps(message) + "\n")
        self.p.stdin.flush()

    def read(self):
        line = self.p.stdout.readline()
        assert line, "the gateway closed its output"
        return json.loads(line)

    def close(self):
        self.p.stdin.close()
        out = self.p.stdout.read()
        err = self.p.stderr.read()
        return self.p.wait(timeout=60), out, err


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
                "name": "asking",
                "variables": {"asked": {"type": "int", "initial": 0, "min": 0}},
                "actions": [{"id": "ask", "description": "ask", "cost": 1, "reversible": True,
                             "effects": [{"variable": "asked", "mode": "increment",
                                          "value": 1}]}],
                "budget": {"total": 10, "min_action_cost": 1},
                "bindings": {"tools": {"ask": {"action": "ask", "pin": pin["ask"],
                                               "params": {}}},
                             "allow": ["sampling/createMessage"]},
            }, f)

        c = Client(spec, env, os.path.join(tmp, "a.jsonl"))
        c.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "clientInfo": {"name": "t", "version": "1"},
            "capabilities": {"sampling": {}, "roots": {"listChanged": True},
                             "elicitation": {}}}})
        assert "result" in c.read()
        c.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        # Allowed: the upstream's sampling request reaches the client.
        c.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                "params": {"name": "ask", "arguments": {"method": "sampling/createMessage"}}})
        asked = c.read()
        assert asked.get("method") == "sampling/createMessage", asked
        assert asked["params"]["maxTokens"] == 5, asked
        assert asked["id"] != "up-1", asked  # the gateway's id, not the upstream's
        c.send({"jsonrpc": "2.0", "id": 3, "method": "ping"})  # meanwhile: answered after
        c.send({"jsonrpc": "2.0", "id": asked["id"], "result": {
            "role": "assistant", "content": {"type": "text", "text": "hello"}, "model": "m"}})
        r = c.read()
        assert r["id"] == 2 and "hello" in r["result"]["content"][0]["text"], r
        assert not r["result"].get("isError"), r
        r = c.read()
        assert r == {"jsonrpc": "2.0", "id": 3, "result": {}}, r
        # Not allowed: refused to the upstream, never seen by the client.
        c.send({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
                "params": {"name": "ask", "arguments": {"method": "roots/list"}}})
        r = c.read()
        assert r["id"] == 4 and r["result"].get("isError"), r
        assert "refused by the gateway" in r["result"]["content"][0]["text"], r
        code, out, err = c.close()
        assert code == 0 and out == "", (code, out, err)
        assert "refused the upstream's request `roots/list`" in err, err
        with open(log) as f:
            lines = f.read().splitlines()
        # Offered sampling only: roots and elicitation are the client's, but not allowed.
        assert lines[0] == 'init {"sampling": {}}', lines
        assert lines[1] == "ask" and '"hello"' in lines[2], lines
        assert lines[3] == "ask" and "refused by the gateway" in lines[4], lines

        # A client that closes its input instead of answering: the upstream gets an error.
        open(log, "w").close()
        c = Client(spec, env, os.path.join(tmp, "b.jsonl"))
        c.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "clientInfo": {"name": "t", "version": "1"},
            "capabilities": {"sampling": {}}}})
        assert "result" in c.read()
        c.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                "params": {"name": "ask", "arguments": {"method": "sampling/createMessage"}}})
        assert c.read().get("method") == "sampling/createMessage"
        c.p.stdin.close()
        r = c.read()
        assert r["id"] == 2 and r["result"].get("isError"), r
        code = c.p.wait(timeout=60)
        err = c.p.stderr.read()
        assert code == 0, (code, err)
        assert "closed its input before it answered" in err and "rolled back" in err, err
        v = subprocess.run([CLAMPAI, "trace", "verify", os.path.join(tmp, "b.jsonl"), "--spec",
                            spec], capture_output=True, text=True, timeout=60)
        assert v.returncode == 0, (v.stdout, v.stderr)

        # Cancellation (the client reads the gateway while the upstream holds `slow`): a call
        # cancelled before the gateway handles it never reaches the kernel; the call in flight,
        # cancelled after its commit, keeps its charge with the outcome `unknown`, and the
        # upstream is told. Neither is answered. Before the fix: `slow` timed out (-32603).
        open(log, "w").close()
        with open(spec) as f:
            s = json.load(f)
        s["actions"].append({"id": "pay", "description": "pay", "cost": 1,
                             "parameters": {"amount": {"type": "int", "min": 1, "max": 9}},
                             "effects": []})
        s["bindings"]["tools"]["slow"] = {"action": "ask", "pin": pin["slow"], "params": {}}
        s["bindings"]["tools"]["transfer"] = {"action": "pay", "pin": pin["transfer"],
                                              "params": {"amount": "amount"}}
        with open(spec, "w") as f:
            json.dump(s, f)
        trace = os.path.join(tmp, "c.jsonl")
        c = Client(spec, env, trace, ["--upstream-timeout-ms", "30000"])
        c.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "clientInfo": {"name": "t", "version": "1"},
            "capabilities": {}}})
        assert "result" in c.read()
        c.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                "params": {"name": "slow", "arguments": {}}})
        started = c.read()  # the upstream's log notification: the call is in flight
        assert started.get("method") == "notifications/message", started
        c.send({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                "params": {"name": "transfer", "arguments": {"amount": 5}}})
        c.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
                "params": {"requestId": 3}})
        c.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
                "params": {"requestId": 2, "reason": "user stopped it"}})
        c.send({"jsonrpc": "2.0", "id": 4, "method": "ping"})
        r = c.read()
        assert r == {"jsonrpc": "2.0", "id": 4, "result": {}}, r  # 2 and 3 unanswered
        code, out, err = c.close()
        assert code == 0 and out == "", (code, out, err)
        with open(log) as f:
            lines = f.read().splitlines()
        assert lines[1] == "slow" and lines[2].startswith("cancelled "), lines
        assert not any(line.startswith("transfer") for line in lines), lines
        entries = [json.loads(line) for line in open(trace)]
        assert [e["kind"] for e in entries].count("executed") == 1, entries
        outcome = [e for e in entries if e["kind"] == "attested"][-1]
        assert "unknown: the client cancelled" in outcome["params"]["detail"], outcome
        v = subprocess.run([CLAMPAI, "trace", "verify", trace, "--spec", spec, "--format",
                            "json"], capture_output=True, text=True, timeout=60)
        assert v.returncode == 0, (v.stdout, v.stderr)
        assert json.loads(v.stdout).get("steps_without_outcome", []) == [], v.stdout
    print("1 passed, 0 failed")


if __name__ == "__main__":
    sys.exit(main())
