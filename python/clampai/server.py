"""`clampai.server`, as in the Python ClampAI: `ClampAIServer`, an HTTP sidecar around one
reference-form `SafetyKernel` (state and action with every request), on the standard library's
HTTP server, for agents in other processes or languages:

    POST /evaluate  {"state": {...}, "action": {...}}  -> approved, rejection_reasons, ...
    POST /execute   (the same body, optional "reasoning")  -> new_state, step_count, ...
    GET  /status, GET /health, POST /reset

The decisions are the C++ kernel's. This is the Python ClampAI's sidecar, kept for its users;
the service this project runs in production is `clampai serve` (docs/SERVE.md: task-bound
kernels, principals, traces on disk, metrics). Differences from the Python ClampAI: requests
are served concurrently (the kernel decides and commits under its lock); a body is at most
`max_body_bytes` (413 beyond); a rejection's status comes from the kernel's reason codes
(`budget_exceeded` -> 429), not from words in its message; `/reset` replaces the kernel this
object holds too; `port=0` picks a free port (`url` names it)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, Optional, Sequence, Tuple

from . import ActionSpec, Effect, Invariant, SafetyKernel, SafetyViolation, State

__all__ = ["ClampAIServer"]


def _action(data: Any) -> ActionSpec:
    if not isinstance(data, dict):
        raise ValueError("`action` must be an object")
    effects = []
    for i, e in enumerate(data.get("effects", [])):
        if not isinstance(e, dict) or not {"variable", "mode"} <= set(e):
            raise ValueError(f"`action.effects[{i}]` must be an object with `variable` and "
                             "`mode` (and `value`)")
        effects.append(Effect(str(e["variable"]), str(e["mode"]), e.get("value")))
    cost = data.get("cost", 1.0)
    if isinstance(cost, bool) or not isinstance(cost, (int, float)):
        raise ValueError("`action.cost` must be a number")
    return ActionSpec(id=str(data.get("id", "action")),
                      name=str(data.get("name", data.get("id", "action"))),
                      description=str(data.get("description", "")), effects=tuple(effects),
                      cost=cost, reversible=bool(data.get("reversible", False)))


def _state(data: Any) -> State:
    if not isinstance(data, dict):
        raise ValueError("`state` must be an object")
    return State(data)


def _plain(value: Any) -> Any:
    """A state's value as JSON: exact decimals as numbers."""
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if hasattr(value, "as_tuple"):  # a Decimal
        return float(value)
    return value


class _Handler(BaseHTTPRequestHandler):
    server_version = "clampai-sidecar"
    owner: "ClampAIServer"

    def log_message(self, fmt: str, *args: Any) -> None:  # no access log, as the reference
        pass

    def _send(self, status: int, body: Dict[str, Any]) -> None:
        payload = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def _body(self) -> Optional[Dict[str, Any]]:
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            self._send(400, {"error": "invalid_request", "detail": "bad Content-Length"})
            return None
        if length > self.owner.max_body_bytes:
            self.close_connection = True
            self._send(413, {"error": "too_large", "detail": f"a body is at most "
                             f"{self.owner.max_body_bytes} bytes, not {length}"})
            return None
        try:
            data = json.loads(self.rfile.read(length) if length > 0 else b"{}")
        except ValueError as err:
            self._send(400, {"error": "invalid_json", "detail": str(err)})
            return None
        if not isinstance(data, dict):
            self._send(422, {"error": "invalid_request", "detail": "the body must be an object"})
            return None
        return data

    def _proposal(self) -> Optional[Tuple[Dict[str, Any], State, ActionSpec]]:
        data = self._body()
        if data is None:
            return None
        try:
            return data, _state(data.get("state", {})), _action(data.get("action", {}))
        except (ValueError, TypeError) as err:
            self._send(422, {"error": "invalid_request", "detail": str(err)})
            return None

    def do_GET(self) -> None:
        if self.path == "/status":
            k = self.owner.kernel
            self._send(200, {"budget_total": k.budget.budget,
                             "budget_remaining": k.budget.remaining,
                             "budget_spent": k.budget.spent_net, "step_count": k.step_count,
                             "trace_length": k.trace.length})
        elif self.path == "/health":
            self._send(200, {"status": "ok"})
        else:
            self._send(404, {"error": "not_found", "path": self.path})

    def do_POST(self) -> None:
        route = {"/evaluate": self._evaluate, "/execute": self._execute,
                 "/reset": self._reset}.get(self.path)
        if route is None:
            self._send(404, {"error": "not_found", "path": self.path})
        else:
            route()

    def _evaluate(self) -> None:
        proposal = self._proposal()
        if proposal is None:
            return
        _, state, action = proposal
        kernel = self.owner.kernel
        try:
            verdict = kernel.evaluate(state, action)
        except (ValueError, TypeError) as err:  # an effect the state cannot take
            self._send(422, {"error": "invalid_request", "detail": str(err)})
            return
        self._send(200, {"approved": verdict.approved,
                         "rejection_reasons": list(verdict.rejection_reasons),
                         "budget_remaining": kernel.budget.remaining, "cost": action.cost})

    def _execute(self) -> None:
        proposal = self._proposal()
        if proposal is None:
            return
        data, state, action = proposal
        kernel = self.owner.kernel
        try:
            new_state, entry = kernel.execute(state, action, str(data.get("reasoning", "")))
        except SafetyViolation as err:
            codes = list(err.verdict.decision.reason_codes) if (
                err.verdict is not None and err.verdict.decision is not None) else []
            budget = "budget_exceeded" in codes
            self._send(429 if budget else 422,
                       {"error": "budget_exhausted" if budget else "invariant_violated",
                        "detail": str(err), "reason_codes": codes})
            return
        except (ValueError, TypeError) as err:
            self._send(422, {"error": "invalid_request", "detail": str(err)})
            return
        self._send(200, {"approved": True,
                         "new_state": {k: _plain(v) for k, v in new_state.to_dict().items()},
                         "step_count": kernel.step_count,
                         "budget_remaining": kernel.budget.remaining, "trace_step": entry.step})

    def _reset(self) -> None:
        if self._body() is None:
            return
        kernel = self.owner.reset()
        self._send(200, {"status": "ok", "budget_remaining": kernel.budget.remaining})


class ClampAIServer:
    """An HTTP sidecar around one shared reference-form SafetyKernel: `budget`, `invariants`
    and `min_action_cost` as for SafetyKernel; `host` and `port` (0: a free port) where it
    listens. `run()` blocks; `start_background()` serves from a daemon thread until `stop()`."""

    def __init__(self, budget: float, *, invariants: Sequence[Invariant] = (),
                 host: str = "127.0.0.1", port: int = 8765, min_action_cost: float = 0.001,
                 max_body_bytes: int = 1 << 20) -> None:
        self.host = host
        self.port = port
        self.max_body_bytes = int(max_body_bytes)
        self._budget, self._invariants = budget, list(invariants)
        self._min_cost = min_action_cost
        self.kernel = SafetyKernel(budget, self._invariants, min_action_cost=min_action_cost)
        self._httpd: Optional[ThreadingHTTPServer] = None
        self._thread: Optional[threading.Thread] = None
        self._lock = threading.Lock()

    def reset(self) -> SafetyKernel:
        """A fresh kernel (the same budget and invariants), which later requests use."""
        with self._lock:
            self.kernel = SafetyKernel(self._budget, self._invariants,
                                       min_action_cost=self._min_cost,
                                       emergency_actions=set(self.kernel.emergency_actions))
            return self.kernel

    def _bind(self) -> ThreadingHTTPServer:
        handler = type("Handler", (_Handler,), {"owner": self})
        httpd = ThreadingHTTPServer((self.host, self.port), handler)
        httpd.daemon_threads = True
        self.port = httpd.server_address[1]
        self._httpd = httpd
        return httpd

    def run(self) -> None:
        """Serves until interrupted (Ctrl-C)."""
        httpd = self._bind()
        try:
            httpd.serve_forever()
        except KeyboardInterrupt:
            pass
        finally:
            httpd.server_close()

    def start_background(self) -> None:
        """Serves from a daemon thread; `stop()` ends it."""
        httpd = self._bind()
        self._thread = threading.Thread(target=httpd.serve_forever, name="clampai-sidecar",
                                        daemon=True)
        self._thread.start()

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def __repr__(self) -> str:
        return (f"ClampAIServer(host={self.host!r}, port={self.port}, "
                f"budget={self.kernel.budget.budget})")


def _main() -> None:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m clampai.server",
                                     description="The Python ClampAI's HTTP sidecar")
    parser.add_argument("--budget", type=float, default=1000.0)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--min-action-cost", type=float, default=0.001)
    args = parser.parse_args()
    server = ClampAIServer(args.budget, host=args.host, port=args.port,
                           min_action_cost=args.min_action_cost)
    print(f"clampai sidecar on {server.url}", flush=True)
    server.run()


if __name__ == "__main__":
    _main()
