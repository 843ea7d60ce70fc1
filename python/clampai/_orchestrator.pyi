# Stubs of python/clampai/_orchestrator.py (the agent loop, synchronous and for asyncio).
# test_stubs.py checks them against the module.
import decimal
from typing import Any, Dict, List, Optional

from ._clampai import State
from ._reasoning import TerminationReason
from ._reasoning import LLMAdapter

LLMAdapter = LLMAdapter

class ExecutionResult:
    raw: Dict[str, Any]
    goal_achieved: bool
    termination_reason: TerminationReason
    final_state: State
    total_cost: decimal.Decimal
    budget: decimal.Decimal
    total_steps: int
    goal_progress: float
    execution_time_s: float
    actions_attempted: int
    actions_succeeded: int
    actions_rejected_safety: int
    rollbacks: int
    llm_calls: int
    errors: List[str]
    message: str
    log: List[Dict[str, Any]]
    def __init__(self, raw: Dict[str, Any], final_state: State, seconds: float) -> None: ...
    def summary(self) -> str: ...
    def to_dict(self) -> Dict[str, Any]: ...

class Orchestrator:
    task: Any
    llm: Any
    kernel: Any
    options: Dict[str, Any]
    def __init__(self, task: Any, llm: Optional[Any] = None, *, max_steps: Optional[int] = None, record_rejections: bool = False, trace_file: Optional[str] = None) -> None: ...
    def run(self) -> ExecutionResult: ...

class AsyncOrchestrator:
    task: Any
    llm: Any
    kernel: Any
    task_kernel: Any
    def __init__(self, task: Any, llm: Optional[Any] = None, *, kernel: Optional[Any] = None, max_steps: Optional[int] = None, executor: Any = None) -> None: ...
    async def run(self) -> ExecutionResult: ...
