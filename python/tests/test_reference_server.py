"""`clampai.server.ClampAIServer` (the Python ClampAI's HTTP sidecar) and
`clampai.verification_log`, in the Python ClampAI's documented style (its README's sidecar
example, on port 0 instead of 8765), on 127.0.0.1 only, with adversarial bodies."""

import http.client
import json

import pytest

from clampai.invariants import pii_guard_invariant, rate_limit_invariant
from clampai.server import ClampAIServer
from clampai.verification_log import ProofRecord, ProofStep, write_proof


@pytest.fixture
def server():
    server = ClampAIServer(
        budget=3.0,
        invariants=[rate_limit_invariant("api_calls", 2), pii_guard_invariant("output")],
        port=0)
    server.start_background()   # non-blocking; server.stop() to shut down
    yield server
    server.stop()


def call(server, method, path, body=None, raw=None, headers=None):
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    conn.request(method, path, body=data, headers=headers or {})
    resp = conn.getresponse()
    out = resp.status, json.loads(resp.read() or b"{}")
    conn.close()
    return out


CALL = {"id": "call_api", "name": "Call API", "cost": 1.0,
        "effects": [{"variable": "api_calls", "mode": "increment", "value": 1}]}


def test_the_readme_sidecar_round_trip(server):
    assert server.url == f"http://127.0.0.1:{server.port}" and server.port != 0
    assert call(server, "GET", "/health") == (200, {"status": "ok"})
    status, body = call(server, "POST", "/evaluate", {"state": {"api_calls": 0}, "action": CALL})
    assert status == 200 and body["approved"] and body["budget_remaining"] == 3.0
    status, body = call(server, "POST", "/execute", {"state": {"api_calls": 0}, "action": CALL})
    assert status == 200 and body["new_state"] == {"api_calls": 1} and body["step_count"] == 1
    assert body["budget_remaining"] == 2.0 and body["trace_step"] == 1
    # The invariant refuses a third call: 422, with the kernel's reason codes.
    status, body = call(server, "POST", "/execute", {"state": {"api_calls": 2}, "action": CALL})
    assert status == 422 and body["error"] == "invariant_violated"
    assert body["reason_codes"] == ["invariant_violated"]
    status, body = call(server, "GET", "/status")
    assert status == 200 and body == {"budget_total": 3.0, "budget_remaining": 2.0,
                                      "budget_spent": 1.0, "step_count": 1, "trace_length": 1}


def test_the_budget_is_a_429_and_reset_starts_again(server):
    for n in range(2):
        assert call(server, "POST", "/execute", {"state": {"api_calls": 0},
                                                 "action": dict(CALL, cost=1.5)})[0] == 200
    status, body = call(server, "POST", "/execute", {"state": {"api_calls": 0}, "action": CALL})
    assert status == 429 and body["error"] == "budget_exhausted"
    assert body["reason_codes"] == ["budget_exceeded"]
    assert call(server, "POST", "/reset", {}) == (200, {"status": "ok", "budget_remaining": 3.0})
    assert server.kernel.budget.remaining == 3.0 and server.kernel.step_count == 0


def test_bad_requests_are_named_and_change_nothing(server):
    assert call(server, "POST", "/execute", raw=b"{not json")[0] == 400
    assert call(server, "POST", "/execute", raw=b"[1, 2]")[1]["error"] == "invalid_request"
    for bad in ({"state": [1], "action": CALL}, {"state": {}, "action": "x"},
                {"state": {}, "action": dict(CALL, cost="1")},
                {"state": {}, "action": dict(CALL, effects=[{"variable": "x"}])}):
        status, body = call(server, "POST", "/execute", bad)
        assert status == 422 and body["error"] == "invalid_request" and body["detail"], bad
    status, body = call(server, "POST", "/evaluate", raw=b"{}",
                        headers={"Content-Length": str(2 << 20)})
    assert status == 413 and body["error"] == "too_large"
    assert call(server, "GET", "/nowhere")[0] == 404
    assert call(server, "POST", "/nowhere", {})[0] == 404
    assert server.kernel.step_count == 0 and server.kernel.budget.remaining == 3.0


def test_a_proof_record_is_written_with_its_hash(tmp_path):
    import hashlib

    record = ProofRecord(version="1", created_at=0.0, goal="g", budget=5.0,
                         trace_hash_head="0" * 64,
                         steps=[ProofStep(0, "a", "A", True, "ok", kernel_reasons=[])])
    path = tmp_path / "nested" / "proof.json"
    write_proof(str(path), record)
    data = json.loads(path.read_text())
    claimed = data.pop("record_hash")
    assert claimed == hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()
    assert data["steps"][0]["action_id"] == "a" and path.read_text().endswith("}\n")
