"""`clampai.adapters.fastapi_middleware`, as in the Python ClampAI: Starlette / FastAPI
middleware that puts every HTTP request through a safety kernel before its endpoint runs.

    from fastapi import FastAPI
    from clampai.adapters import ClampAIMiddleware

    app = FastAPI()
    app.add_middleware(ClampAIMiddleware, budget=1000.0, cost_per_request=1.0,
                       invariants=[...], state_fn=lambda req: {"user": req.headers.get("x-user")})

Each request is an action of cost `cost_per_request` in the state {"method", "path",
"client_ip"} (and what `state_fn` adds). Approved: charged and traced atomically, then passed
on. Rejected: the endpoint is not called; the answer is JSON {"error", "detail"}, with 429
(`budget_exhausted`: the budget or the step limit) or 422 (`invariant_violated`, or
`state_error` when `state_fn` raises or returns something that is not a dict).

Needs Starlette: Debian's python3-fastapi (apt-get install python3-fastapi). This module imports
without it; constructing the middleware then raises ImportError naming the package.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Callable, Dict, List, Optional, Sequence

from .. import ActionSpec, Invariant, SafetyKernel, SafetyViolation, State
from .._reference_api import CheckResult

try:
    from starlette.middleware.base import BaseHTTPMiddleware
    from starlette.responses import Response
    _MISSING: Optional[ImportError] = None
except ImportError as err:  # the module stays importable without Starlette
    _MISSING = err

    class BaseHTTPMiddleware:  # type: ignore[no-redef]
        """Stands in for Starlette's base class when Starlette is not installed."""

        def __init__(self, app: Any, **kwargs: Any) -> None:
            pass

    Response = None  # type: ignore[assignment,misc]

__all__ = ["ClampAIMiddleware"]

_BUDGET_CHECKS = (CheckResult.FAIL_BUDGET, CheckResult.FAIL_TERMINATION)


def _require_starlette() -> None:
    if _MISSING is not None:
        raise ImportError(
            "ClampAIMiddleware needs Starlette: install Debian's python3-fastapi "
            f"(apt-get install python3-fastapi) ({_MISSING})") from _MISSING


class ClampAIMiddleware(BaseHTTPMiddleware):  # type: ignore[misc]
    """Per-request budget and invariant enforcement (the Python ClampAI's constructor):
    `budget` for all requests, `cost_per_request` each, `invariants` checked on each request's
    state, `state_fn(request) -> dict` for more state, and the two rejection statuses."""

    def __init__(self, app: Any, *, budget: float, cost_per_request: float = 1.0,
                 invariants: Sequence[Invariant] = (),
                 state_fn: Optional[Callable[[Any], Dict[str, Any]]] = None,
                 budget_status_code: int = 429, invariant_status_code: int = 422) -> None:
        _require_starlette()
        super().__init__(app)
        self._budget = budget
        self._cost = cost_per_request
        self._invariants: List[Invariant] = list(invariants)
        self._state_fn = state_fn
        self._budget_status_code = budget_status_code
        self._invariant_status_code = invariant_status_code
        self._kernel = SafetyKernel(budget, self._invariants)
        self._action = ActionSpec(
            id="http_request", name="HTTP Request",
            description="Incoming HTTP request handled by ClampAIMiddleware", effects=(),
            cost=cost_per_request, reversible=False)

    async def dispatch(self, request: Any, call_next: Callable) -> Any:
        """Decides the request (charging it when approved), then calls the endpoint, or
        answers the rejection without calling it."""
        client = getattr(request, "client", None)
        data: Dict[str, Any] = {"method": request.method, "path": str(request.url.path),
                                "client_ip": client.host if client else None}
        if self._state_fn is not None:
            try:
                extra = self._state_fn(request)
            except Exception as err:  # noqa: BLE001 - fail closed: the endpoint is not called
                return self._response(self._invariant_status_code, "state_error",
                                      f"state_fn raised {type(err).__name__}: {err}")
            if extra is not None and not isinstance(extra, Mapping):
                return self._response(self._invariant_status_code, "state_error",
                                      f"state_fn returned {type(extra).__name__}, not a dict")
            data.update(extra or {})
        try:
            self._kernel.evaluate_and_execute_atomic(State(data), self._action)
        except SafetyViolation as exc:
            return self._rejection_response(exc)
        return await call_next(request)

    def _rejection_response(self, exc: Exception) -> Any:
        """429 `budget_exhausted` when the budget or the step limit refused the request, else
        422 `invariant_violated`; the detail is the kernel's message."""
        verdict = getattr(exc, "verdict", None)
        budget = verdict is not None and any(
            result in _BUDGET_CHECKS for _, result, _ in verdict.checks)
        if budget:
            return self._response(self._budget_status_code, "budget_exhausted", str(exc))
        return self._response(self._invariant_status_code, "invariant_violated", str(exc))

    @staticmethod
    def _response(status: int, error: str, detail: str) -> Any:
        body = json.dumps({"error": error, "detail": detail}).encode()
        return Response(content=body, status_code=status, media_type="application/json")

    @property
    def budget_remaining(self) -> float:
        """The budget left for the requests to come."""
        return self._kernel.budget.remaining

    @property
    def requests_processed(self) -> int:
        """How many requests were approved (and passed on)."""
        return self._kernel.step_count

    def reset(self) -> None:
        """A fresh kernel: the whole budget again, no steps, an empty trace."""
        self._kernel = SafetyKernel(self._budget, self._invariants)

    def __repr__(self) -> str:
        return (f"ClampAIMiddleware(budget={self._budget}, cost_per_request={self._cost}, "
                f"invariants={len(self._invariants)})")
