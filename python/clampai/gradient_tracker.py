"""`clampai.gradient_tracker`, as in the Python ClampAI: the per-invariant gradient reports and
budgets, for code that imports them from here. The same objects as at the package's top level."""

from . import (GradientReport, GradientScore, GradientTracker, PerInvariantBudget,
               SensitivityLevel)

__all__ = ["GradientReport", "GradientScore", "GradientTracker", "PerInvariantBudget",
           "SensitivityLevel"]
