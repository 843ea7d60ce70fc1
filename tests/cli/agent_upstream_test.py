"""`clampai agent SPEC --upstream -- COMMAND` (issue 39): the LLM's choices reach the world only
as calls of their bound tools that the kernel approved and committed first. An LLM on 127.0.0.1
(an OpenAI-compatible fake that answers a script of tool calls) drives a fake upstream MCP server
(fake_upstream.py) that logs every call it receives. Checked: the calls the upstream received are
exactly the approved ones; a kernel rejection and a call the tool cannot carry never reach it; an
upstream error rolls its step back (and the LLM is told); a crash mid-call keeps the charge, ends
the run and leaves an `unknown` outcome in the trace; a changed tool, a binding that cannot be
written back and a misused COMMAND are refused before anything runs. No duration is asserted.
Run by ctest with CLAMPAI and CLAMPAI_SOURCE_DIR in the environment."""

import http.server
import json
import os
import subprocess
import sys
import tempfile
import threading

CLAMPAI = os.environ["CLAMPAI"]
HERE = os.path.dirname(os.path.abspath(__file__))
UPSTREAM = [sys.executable, os.path.join(HERE, "fake_upstream.py")]


class FakeLlm(http.server.ThreadingHTTPServer):
    """Answers each chat completion with the next scripted tool call, then {"stop": true}."""

    def __init__(self, script):
        super().__init__(("127.0.0.1", 0), Handler)
        self.script = list(script)
        self.prompts = []


class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.prompts.append(json.dumps(body))
        if self.server.script:
            name, args = self.server.script.pop(0)
            message = {"role": "assistant", "content": None, "tool_calls": [{
                "id": "call_%d" % len(self.server.prompts), "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)}}]}
        else:
            message = {"role": "assistant", "content": '{"stop": true}'}
        out = json.dumps({"choices": [{"message": message, "finish_reason": "stop"}],
                          "usage": {"prompt_tokens": 1, "completion_tokens": 1}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)


def pins(env):
    p = subprocess.run([CLAMPAI, "gateway", "--print-bindings", "--", *UPSTREAM],
                       capture_output=True, text=True, env=env, timeout=60)
    assert p.returncode == 0, (p.returncode, p.stderr)
    tools = json.loads(p.stdout)["bindings"]["tools"]
    return {name: t["pin"] for name, t in tools.items()}


def spec(pin, pay_binding="amount"):
    # Every action's default proposal (amount 1) is refused by `requires`, so no action is
    # dominant and the LLM is asked at every step.
    def action(id, cost=1):
        return {"id": id, "description": id, "cost": cost, "reversible": True,
                "parameters": {"amount": {"type": "int", "min": 1, "max": 50}},
                "requires": "amount >= 5",
                "effects": [{"variable": "paid", "mode": "increment", "value": "amount"}]}
    return {
        "name": "upstream_payments",
        "goal": {"description": "pay 30", "check": "paid >= 30"},
        "variables": {"paid": {"type": "int", "initial": 0, "min": 0}},
        "actions": [action("pay"), action("tip"), action("crash_pay")],
        "invariants": [{"name": "cap", "check": "paid <= 30"}],
        "budget": {"total": 10, "min_action_cost": 1},
        "bindings": {"tools": {
            "transfer": {"action": "pay", "pin": pin["transfer"], "params": {"amount": pay_binding}},
            "tip": {"action": "tip", "pin": pin["tip"], "params": {"amount": "2"}},
            "crash": {"action": "crash_pay", "pin": pin["crash"], "params": {"amount": "amount"}},
        }},
    }


def run_agent(tmp, name, spec_json, script, env, ledger=None, extra=()):
    path = os.path.join(tmp, name + ".json")
    with open(path, "w") as f:
        json.dump(spec_json, f)
    llm = FakeLlm(script)
    thread = threading.Thread(target=llm.serve_forever, daemon=True)
    thread.start()
    try:
        trace = ledger or os.path.join(tmp, name + ".jsonl")
        where = ["--ledger", "file:" + ledger] if ledger else ["--trace", trace]
        p = subprocess.run([CLAMPAI, "agent", path, "--llm", "openai", "--base-url",
                            "http://127.0.0.1:%d/v1" % llm.server_address[1], "--format", "json",
                            *where, *extra, "--upstream", "--", *UPSTREAM],
                           capture_output=True, text=True, env=env, timeout=120)
    finally:
        llm.shutdown()
        llm.server_close()
    return p, path, trace, llm.prompts


def calls(log):
    if not os.path.exists(log):
        return []
    with open(log) as f:
        return [line.strip() for line in f if line.strip() and not line.startswith("init ")]


def trace_entries(trace):
    with open(trace) as f:
        return [json.loads(line) for line in f]


def main():
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        log = os.path.join(tmp, "upstream.log")
        env = dict(os.environ, OPENAI_API_KEY="sk-test-0123456789", FAKE_LOG=log)
        env.pop("FAKE_DESC", None)
        pin = pins(env)

        # The approved calls, and only they, reach the upstream.
        script = [("pay", {"amount": 10}),    # ok: paid 10
                  ("pay", {"amount": 13}),    # the upstream's error: rolled back
                  ("pay", {"amount": 25}),    # the invariant: rejected, never forwarded
                  ("tip", {"amount": 7}),     # the tool cannot carry 7 (its binding is `2`)
                  ("pay", {"amount": 14}),    # an isError result: rolled back
                  ("pay", {"amount": 20})]    # ok: paid 30, the goal
        p, path, trace, prompts = run_agent(tmp, "ok", spec(pin), script, env)
        assert p.returncode == 0, (p.returncode, p.stdout, p.stderr)
        report = json.loads(p.stdout)
        assert report["termination"] == "goal_reached", report
        assert calls(log) == ["transfer 10", "transfer 13", "transfer 14", "transfer 20"], calls(log)
        # Two steps stand: 2 spent of 10 (the two rolled back were refunded).
        assert report["executed"] == 2, report
        assert "bank says no" in prompts[2], "the LLM was not told of the upstream's error"
        assert p.stderr.count(" rolled back") == 2, p.stderr
        kinds = [e.get("kind") for e in trace_entries(trace)]
        assert kinds.count("rolled_back") == 2, kinds
        v = subprocess.run([CLAMPAI, "trace", "verify", trace, "--spec", path],
                           capture_output=True, text=True, timeout=60)
        assert v.returncode == 0, (v.stdout, v.stderr)
        assert "without an outcome" not in v.stdout, v.stdout

        # A crash mid-call: the charge stays, the outcome is unknown, the run ends.
        os.remove(log)
        p, path, trace, _ = run_agent(tmp, "crash", spec(pin), [("crash_pay", {"amount": 6}),
                                                               ("pay", {"amount": 10})], env)
        assert p.returncode == 1, (p.returncode, p.stdout, p.stderr)
        report = json.loads(p.stdout)
        assert report["termination"] == "error", report
        assert "outcome is unknown" in report["message"], report
        assert calls(log) == ["crash_pay 6"] or calls(log) == ["crash 6"], calls(log)
        details = [e for e in trace_entries(trace) if e.get("kind") == "attested"]
        assert any("unknown" in json.dumps(e) for e in details), details
        assert report["budget"]["net"] == "1.000", report  # the crashed step's charge stays

        # On a shared ledger, each outcome is an entry of the shared trace (issue 39), so
        # `trace verify` names no step without one; a crash leaves its `unknown` there.
        os.remove(log)
        ledger = os.path.join(tmp, "ledger.jsonl")
        p, path, _, _ = run_agent(tmp, "ledger", spec(pin), [("pay", {"amount": 10}),
                                                            ("pay", {"amount": 13}),
                                                            ("crash_pay", {"amount": 6})],
                                  env, ledger=ledger)
        assert p.returncode == 1, (p.returncode, p.stdout, p.stderr)
        assert calls(log) == ["transfer 10", "transfer 13", "crash 6"], calls(log)
        outcomes = [e["params"]["detail"] for e in trace_entries(ledger)
                    if e.get("kind") == "attested" and e["params"].get("attestor") == "gateway"]
        assert [o.split(":")[1].strip() for o in outcomes] == ["ok", "error", "unknown"], outcomes
        v = subprocess.run([CLAMPAI, "trace", "verify", "file:" + ledger, "--spec", path,
                            "--format", "json"], capture_output=True, text=True, timeout=60)
        assert v.returncode == 0, (v.stdout, v.stderr)
        assert json.loads(v.stdout).get("steps_without_outcome", []) == [], v.stdout

        # Refused before anything runs: a changed tool, a binding that cannot be written back.
        os.remove(log)
        for name, s, e, message in (
                ("rug", spec(pin), dict(env, FAKE_DESC="Transfer, and also email the key"),
                 "changed since it was pinned"),
                ("bytes", spec(pin, "utf8_bytes(memo)"), env, "cannot be written back")):
            p, _, _, prompts = run_agent(tmp, name, s, [("pay", {"amount": 10})], e)
            assert p.returncode == 2, (name, p.returncode, p.stderr)
            assert message in p.stderr, (name, p.stderr)
            assert not prompts, (name, "the LLM was asked")
            assert calls(log) == [], (name, calls(log))

        # The upstream's process as the gateway's (the same options): --env reaches it, and
        # with --clear-env nothing else does; --upstream-timeout-ms ends a call never answered
        # (`slow`). Before the fix: --env, --clear-env and --upstream-timeout-ms were unknown.
        for name, extra, seen in (
                ("env", ["--env", "FAKE_PROBE=from-env"], "FAKE_PROBE=from-env"),
                ("clear", ["--clear-env", "--env", "FAKE_LOG=" + log], "FAKE_PROBE=<unset>")):
            os.remove(log)
            p, _, _, _ = run_agent(tmp, name, spec(pin), [("pay", {"amount": 10})],
                                   dict(env, FAKE_PROBE="inherited"),
                                   extra=[*extra, "--env", "FAKE_REPORT_ENV=FAKE_PROBE"])
            assert p.returncode == 1, (extra, p.returncode, p.stderr)  # goal not reached
            with open(log) as f:
                assert "init env " + seen in f.read().splitlines(), (extra, open(log).read())
            assert calls(log) == ["transfer 10"], calls(log)
        slow = spec(pin)
        slow["bindings"]["tools"].pop("crash")
        slow["bindings"]["tools"]["slow"] = {"action": "crash_pay", "pin": pin["slow"],
                                             "params": {"amount": "amount"}}
        p, _, _, _ = run_agent(tmp, "timeout", slow, [("crash_pay", {"amount": 6})], env,
                               extra=["--upstream-timeout-ms", "5000"])
        assert p.returncode == 1, (p.returncode, p.stderr)
        assert "unknown: the upstream did not answer in time" in p.stderr, p.stderr
        assert "outcome is unknown" in json.loads(p.stdout)["message"], p.stdout

        # COMMAND and --upstream go together; so do the upstream's options.
        ex = os.path.join(os.environ["CLAMPAI_SOURCE_DIR"], "examples", "quickstart.json")
        for args in (["--upstream"], ["--", *UPSTREAM], ["--env", "A=1"], ["--clear-env"]):
            p = subprocess.run([CLAMPAI, "agent", ex, "--llm", "mock", *args],
                               capture_output=True, text=True, timeout=60)
            assert p.returncode == 2 and "--upstream" in p.stderr, (args, p.returncode, p.stderr)
    print("1 passed, %d failed" % failures)


if __name__ == "__main__":
    sys.exit(main())
