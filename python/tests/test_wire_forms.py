"""One decision, one wire form: the same proposals decided through the CLI (`clampai evaluate`),
HTTP (`clampai serve`), MCP (`clampai mcp`) and Python (`Decision.to_json()`) give the same
decision object (action, approved, cost, emergency, reasons, warnings, changes) after RFC 8785
canonicalisation; each front end may add keys of its own around it."""

import json
from decimal import Decimal
import os
import subprocess
import sys

import pytest

import clampai

SOURCE = os.environ["CLAMPAI_SOURCE_DIR"]
CLI = os.environ["CLAMPAI_CLI"]
SPEC = os.path.join(SOURCE, "examples", "autoscale.json")
sys.path.insert(0, os.path.join(SOURCE, "clients", "python"))

from clampai_client import Client  # noqa: E402

KEYS = ("action", "approved", "cost", "emergency", "reasons", "warnings", "changes")
# Approved; rejected with several reasons (budget, two invariants) where a repair exists;
# rejected with one reason and a repair suggestion on a decimal parameter.
CASES = [("scale_up", {"n": 1}), ("scale_up", {"n": 50}), ("set_throttle", {"fraction": 0.9})]


def canonical(obj):
    """RFC 8785 for these documents: sorted keys, no white space, UTF-8, no floats."""
    decision = {k: obj[k] for k in KEYS}
    return json.dumps(decision, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def through_cli(action, params):
    out = subprocess.run([CLI, "evaluate", SPEC, "--action", action, "--params",
                          json.dumps(params), "--format", "json"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode in (0, 1), out.stderr
    return json.loads(out.stdout)


def through_http(cases):
    proc = subprocess.Popen([CLI, "serve", "--port", "0", "--insecure-no-auth"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert line.startswith("listening on "), (line, proc.stderr.read())
        client = Client(line.split()[-1])
        with open(SPEC) as f:
            task = client.create_task(f.read())["task"]
        return [client.evaluate(task, action, params) for action, params in cases]
    finally:
        proc.kill()
        proc.wait(timeout=60)
        proc.stdout.close()
        proc.stderr.close()


def through_mcp(cases):
    # MCP's tools execute: rejected proposals change nothing, so the approved one goes last.
    messages = [{"jsonrpc": "2.0", "id": 0, "method": "initialize",
                 "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                            "clientInfo": {"name": "test", "version": "0"}}},
                {"jsonrpc": "2.0", "method": "notifications/initialized"}]
    order = sorted(range(len(cases)), key=lambda i: cases[i] == CASES[0])
    for n, i in enumerate(order, start=1):
        action, params = cases[i]
        messages.append({"jsonrpc": "2.0", "id": n, "method": "tools/call",
                         "params": {"name": action, "arguments": params}})
    text = "".join(json.dumps(m) + "\n" for m in messages)
    out = subprocess.run([CLI, "mcp", SPEC], input=text, capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    replies = {r["id"]: r for r in map(json.loads, out.stdout.splitlines()) if "id" in r}
    results = [None] * len(cases)
    for n, i in enumerate(order, start=1):
        results[i] = replies[n]["result"]["structuredContent"]
    return results


def through_python(action, params):
    kernel = clampai.SafetyKernel(SPEC)
    return json.loads(kernel.evaluate(action, params).to_json())


def test_every_front_end_writes_the_same_decision():
    cli = [through_cli(a, p) for a, p in CASES]
    http = through_http(CASES)
    mcp = through_mcp(CASES)
    python = [through_python(a, p) for a, p in CASES]
    # The cases are what they claim to be, so the comparison covers each form.
    assert [d["approved"] for d in cli] == [True, False, False]
    assert len(cli[1]["reasons"]) >= 3
    assert "closest_approved_params" in mcp[2]
    for i in range(len(CASES)):
        forms = {"cli": canonical(cli[i]), "http": canonical(http[i]),
                 "mcp": canonical(mcp[i]), "python": canonical(python[i])}
        assert len(set(forms.values())) == 1, (CASES[i], forms)


def test_python_to_json_is_the_wire_form():
    d = clampai.SafetyKernel(SPEC).evaluate("scale_up", {"n": 2})
    wire = json.loads(d.to_json())
    assert list(wire) == list(KEYS)  # the one encoder's order
    assert wire["approved"] and wire["cost"] == "1.000"
    assert set(wire["changes"]) == {"instances", "hourly_spend"}


def test_decimal_strings_are_parameters_as_through_the_cli():
    # The CLI and HTTP read "0.50" as the number 0.50; Python read it as a string and refused it.
    kernel = clampai.SafetyKernel(SPEC)
    as_text = kernel.evaluate("set_throttle", {"fraction": "0.50"})
    as_decimal = kernel.evaluate("set_throttle", {"fraction": Decimal("0.50")})
    assert "invalid_parameter" not in as_text.reason_codes
    assert as_text.to_json() == as_decimal.to_json()
    cli = through_cli("set_throttle", {"fraction": "0.50"})
    assert json.loads(as_text.to_json()) == {k: cli[k] for k in KEYS}
    assert "invalid_parameter" in kernel.evaluate("set_throttle", {"fraction": "half"}).reason_codes


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
