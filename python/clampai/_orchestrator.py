"""The seed's Orchestrator over the C++ agent loop (clampai::agent, docs/AGENT.md)."""

from __future__ import annotations

import time
from typing import Any, Dict, List, Optional

from . import _clampai
from ._reasoning import LLMAdapter, MockLLMAdapter, TerminationReason
from ._task import TaskDefinition

__all__ = ["Orchestrator", "ExecutionResult", "LLMAdapter"]


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
