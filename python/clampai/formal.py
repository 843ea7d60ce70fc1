"""`clampai.formal`, as in the reference: the formal layer's names (the kernel, its state and
actions, the budget, the trace, the verdicts and the claims), for code that imports them from
here. The same objects as at the package's top level."""

from . import (FORMAL_CLAIMS, ActionSpec, AsyncSafetyKernel, BudgetController, CheckResult,
               Claim, Effect, ExecutionTrace, GuaranteeLevel, Invariant, MetricsBackend,
               NoOpMetrics, ProcessSharedBudgetController, RejectionFormatter, SafetyKernel,
               SafetyVerdict, State, TraceEntry)

__all__ = ["FORMAL_CLAIMS", "ActionSpec", "AsyncSafetyKernel", "BudgetController",
           "CheckResult", "Claim", "Effect", "ExecutionTrace", "GuaranteeLevel", "Invariant",
           "MetricsBackend", "NoOpMetrics", "ProcessSharedBudgetController",
           "RejectionFormatter", "SafetyKernel",
           "SafetyVerdict", "State", "TraceEntry"]
