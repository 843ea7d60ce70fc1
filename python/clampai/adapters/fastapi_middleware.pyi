from typing import Any, Callable, Dict, Optional, Sequence

from .. import Invariant

__all__ = ["ClampAIMiddleware"]

class ClampAIMiddleware:
    def __init__(self, app: Any, *, budget: float, cost_per_request: float = ...,
                 invariants: Sequence[Invariant] = ...,
                 state_fn: Optional[Callable[[Any], Dict[str, Any]]] = ...,
                 budget_status_code: int = ..., invariant_status_code: int = ...) -> None: ...
    async def dispatch(self, request: Any, call_next: Callable[..., Any]) -> Any: ...
    @property
    def budget_remaining(self) -> float: ...
    @property
    def requests_processed(self) -> int: ...
    def reset(self) -> None: ...
