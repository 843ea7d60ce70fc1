"""`clampai.api`, as in the reference: the `@safe` decorator (also `clampai_safe`) and
`SafetyViolation` (the same objects as at the package's top level)."""

from . import SafetyViolation, clampai_safe, safe

__all__ = ["SafetyViolation", "clampai_safe", "safe"]
