"""`clampai.orchestrator`, as in the Python ClampAI: the agent loop (Orchestrator,
AsyncOrchestrator) and its outcomes, for code that imports them from here. The same objects as
at the package's top level."""

from . import (AsyncOrchestrator, ClampAI_SYSTEM_PROMPT, ExecutionResult, Orchestrator, Outcome,
               OutcomeType, ProgressMonitor, TaskDefinition, TerminationReason)

__all__ = ["AsyncOrchestrator", "ClampAI_SYSTEM_PROMPT", "ExecutionResult", "Orchestrator",
           "Outcome", "OutcomeType", "ProgressMonitor", "TaskDefinition", "TerminationReason"]
