"""The seed's Orchestrator over the C++ agent loop (clampai::agent, docs/AGENT.md)."""

from __future__ import annotations

import asyncio
import inspect
import threading
import time
from typing import Any, Dict, List, Optional, Set

from . import _clampai
from ._reasoning import LLMAdapter, MockLLMAdapter, TerminationReason
from ._task import TaskDefinition

__all__ = ["Orchestrator", "AsyncOrchestrator", "ExecutionResult", "LLMAdapter"]


class ExecutionResult:
    """What a run did, with the reference's field names; `summary()` and `to_dict()`."""

    _TERMINATIONS = {"goal_reached": "GOAL_ACHIEVED", "budget_exhausted": "BUDGET_EXHAUSTED",
                     "step_limit": "STEP_LIMIT", "llm_stop": "LLM_STOP", "stuck": "STUCK",
                     "max_failures": "MAX_FAILURES", "error": "ERROR"}

    def __init__(self, raw: Dict[str, Any], final_state: "_clampai.State", seconds: float) -> None:
        self.raw = raw
        self.goal_achieved: bool = raw["goal_reached"]
        self.termination_reason = TerminationReason[self._TERMINATIONS[raw["termination"]]]
        self.final_state = final_state
        self.total_cost = _decimal(raw["spent"])
        self.budget = _decimal(raw["total"])
        self.total_steps: int = raw["executed"]
        self.goal_progress: float = raw["progress"]
        self.execution_time_s = seconds
        self.actions_attempted: int = raw["steps"]
        self.actions_succeeded: int = raw["executed"]
        self.actions_rejected_safety: int = raw["rejected"]
        self.rollbacks = 0  # the loop never rolls back
        self.llm_calls: int = raw["llm_calls"]
        self.errors: List[str] = [f"step {s['index']}: {s['failure']}: {s['failure_message']}"
                                  for s in raw["log"] if s["failure"]]
        self.message: str = raw["message"]
        self.log = raw["log"]

    def summary(self) -> str:
        lines = [
            f"Goal achieved: {'yes' if self.goal_achieved else 'no'} "
            f"({self.termination_reason.name}{': ' + self.message if self.message else ''})",
            f"Steps: {self.actions_succeeded} executed, {self.actions_rejected_safety} rejected "
            f"by the safety kernel, of {self.actions_attempted} attempted",
            f"Cost: {self.total_cost} of {self.budget}",
            f"LLM calls: {self.llm_calls}, progress {self.goal_progress:.2f}, "
            f"{self.execution_time_s:.3f} s",
            f"Final state: {self.final_state.to_dict()}",
        ]
        if self.errors:
            lines.append(f"LLM failures (fallbacks): {len(self.errors)}")
        return "\n".join(lines)

    def to_dict(self) -> Dict[str, Any]:
        return {"goal_achieved": self.goal_achieved,
                "termination_reason": self.termination_reason.name,
                "final_state": {k: _plain(v) for k, v in self.final_state.to_dict().items()},
                "total_cost": str(self.total_cost), "total_steps": self.total_steps,
                "goal_progress": self.goal_progress, "execution_time_s": self.execution_time_s,
                "actions_attempted": self.actions_attempted,
                "actions_succeeded": self.actions_succeeded,
                "actions_rejected_safety": self.actions_rejected_safety,
                "rollbacks": self.rollbacks, "llm_calls": self.llm_calls,
                "errors": list(self.errors)}

    def __repr__(self) -> str:
        return (f"ExecutionResult(goal_achieved={self.goal_achieved}, "
                f"termination_reason={self.termination_reason.name!r}, steps={self.total_steps})")


def _decimal(text: str):
    import decimal
    return decimal.Decimal(text)


def _plain(value: Any) -> Any:
    import decimal
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


class Orchestrator:
    """The agent loop: offers the ready, affordable actions with their values to the LLM, has
    the kernel decide what it chooses, learns from the outcome, and stops for a stated reason.
    `llm` is any object with `complete(prompt, system_prompt="", temperature=0.3,
    max_tokens=2000) -> str`; None uses the deterministic mock (no API key needed)."""

    def __init__(self, task: Any, llm: Optional[Any] = None, *, max_steps: Optional[int] = None,
                 record_rejections: bool = False, trace_file: Optional[str] = None) -> None:
        from . import SafetyKernel

        if llm is not None and not callable(getattr(llm, "complete", None)):
            raise TypeError("llm must have a complete(prompt, ...) method")
        self.task = task
        # The Python ClampAI's mock reads the Python ClampAI's prompt; the loop has its own.
        self.llm = None if type(llm) is MockLLMAdapter else llm
        self.kernel = SafetyKernel(task, record_rejections=record_rejections,
                                   trace_file=trace_file)
        self.options: Dict[str, Any] = {"max_steps": max_steps}
        if isinstance(task, TaskDefinition):
            self.options["stuck_patience"] = task.stuck_patience
            self.options["max_consecutive_failures"] = task.max_consecutive_failures

    def run(self) -> ExecutionResult:
        """Runs until a termination (the GIL is released; the adapter is called with it)."""
        start = time.perf_counter()
        raw = _clampai._run_orchestrator(self.kernel, self.llm, self.options)
        return ExecutionResult(raw, self.kernel.state, time.perf_counter() - start)


class AsyncOrchestrator:
    """The agent loop for asyncio: `await AsyncOrchestrator(task, llm).run()` -> ExecutionResult.

    The C++ loop runs off the event loop (in `executor`, the loop's default when None) while
    the loop stays free. An `llm` whose `acomplete` is a coroutine function is awaited on the
    event loop (the native async clients); any other `llm` has its `complete` called in the
    loop's thread; None or a MockLLMAdapter is the C++ mock.

    `kernel`: None (a SafetyKernel for the task), a SafetyKernel built for this task (shared by
    several orchestrators of the task: one budget, one trace), or an AsyncSafetyKernel (the
    Python ClampAI's form: its budget is shared by orchestrators of any tasks; each action is
    charged to it before it is handed to the task's kernel, and refunded if that rejects it; a
    choice it cannot afford ends the run with BUDGET_EXHAUSTED). `kernel` is what was given
    (else the task's kernel); `task_kernel` is the SafetyKernel that commits the task's actions.

    Cancelling `run()` stops the loop at its next step boundary: an action not yet handed to
    the kernel is never committed (a pending `acomplete` is cancelled too); one already handed
    over commits fully before CancelledError reaches the caller."""

    def __init__(self, task: Any, llm: Optional[Any] = None, *, kernel: Optional[Any] = None,
                 max_steps: Optional[int] = None, executor: Any = None) -> None:
        from ._reference_api import AsyncSafetyKernel

        shared = kernel if isinstance(kernel, AsyncSafetyKernel) else None
        if kernel is not None and shared is None and not isinstance(kernel,
                                                                   _clampai.SafetyKernel):
            raise TypeError(f"kernel must be a SafetyKernel built for this task or an "
                            f"AsyncSafetyKernel, not {type(kernel).__name__}")
        native = _is_async_llm(llm)
        self._sync = Orchestrator(task, None if native else llm, max_steps=max_steps)
        if kernel is not None and shared is None:
            if kernel.model.digest != self._sync.kernel.model.digest:
                raise ValueError(f"kernel is for the task `{kernel.model.name}`, not this one "
                                 f"(`{self._sync.kernel.model.name}`): its model differs")
            self._sync.kernel = kernel
        self.task = task
        self.llm = llm if native else self._sync.llm
        self.task_kernel: Any = self._sync.kernel
        self.kernel: Any = shared if shared is not None else self.task_kernel
        self._shared = shared
        self._executor = executor

    def _budget_hooks(self) -> Dict[str, Any]:
        if self._shared is None:
            return {}
        budget = self._shared.budget

        def reserve(action_id: str, cost: Any) -> Optional[str]:
            try:
                budget.charge(action_id, cost)
            except RuntimeError as err:
                return f"the shared budget cannot afford `{action_id}` ({cost}): {err}"
            return None

        def settle(action_id: str, cost: Any, approved: bool) -> None:
            if not approved:
                budget.refund(action_id, cost)

        return {"reserve": reserve, "settle": settle}

    async def run(self) -> ExecutionResult:
        """Runs until a termination (see the class for cancellation)."""
        loop = asyncio.get_running_loop()
        flag = _clampai._CancelFlag()
        bridge = _AsyncLlm(self.llm, loop) if _is_async_llm(self.llm) else None
        options = dict(self._sync.options, cancel=flag, **self._budget_hooks())
        start = time.perf_counter()
        future = loop.run_in_executor(self._executor, _clampai._run_orchestrator,
                                      self.task_kernel,
                                      bridge if bridge is not None else self.llm, options)
        try:
            raw = await asyncio.shield(future)
        except asyncio.CancelledError:
            flag.set()
            if bridge is not None:
                bridge.cancel()
            # The loop stops at its next step boundary; a commit under way finishes first.
            while not future.done():
                try:
                    await asyncio.shield(future)
                except asyncio.CancelledError:
                    continue
                except Exception:  # noqa: BLE001 - the caller asked to cancel: that is raised
                    break
            raise
        return ExecutionResult(raw, self.task_kernel.state, time.perf_counter() - start)


def _is_async_llm(llm: Any) -> bool:
    """An adapter with a native `acomplete` coroutine (not the mock: the C++ loop has its own)."""
    return (llm is not None and type(llm) is not MockLLMAdapter
            and inspect.iscoroutinefunction(getattr(llm, "acomplete", None)))


class _AsyncLlm:
    """`complete` for the C++ loop's thread: awaits the adapter's `acomplete` on the event
    loop and waits for its answer."""

    def __init__(self, llm: Any, loop: asyncio.AbstractEventLoop) -> None:
        self._llm = llm
        self._loop = loop
        self._lock = threading.Lock()
        self._pending: Set[Any] = set()
        self._cancelled = False

    def complete(self, prompt: str, system_prompt: str = "", temperature: float = 0.3,
                 max_tokens: int = 2000) -> str:
        coro = self._llm.acomplete(prompt, system_prompt=system_prompt,
                                   temperature=temperature, max_tokens=max_tokens)
        with self._lock:
            if self._cancelled:
                coro.close()
                raise RuntimeError("cancelled")
            future = asyncio.run_coroutine_threadsafe(coro, self._loop)
            self._pending.add(future)
        try:
            return future.result()
        except BaseException as err:  # a cancelled call is an LLM failure to the loop
            if isinstance(err, Exception):
                raise
            raise RuntimeError(f"acomplete was cancelled ({type(err).__name__})") from None
        finally:
            with self._lock:
                self._pending.discard(future)

    def cancel(self) -> None:
        with self._lock:
            self._cancelled = True
            pending = list(self._pending)
        for future in pending:
            future.cancel()
