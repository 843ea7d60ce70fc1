"""`clampai.api`, as in the reference: the `@safe` decorator (also `clampai_safe`) and
`SafetyViolation` (the same objects as at the package's top level)."""

from typing import Any, Callable, TypeVar

from . import SafetyViolation, clampai_safe, safe

F = TypeVar("F", bound=Callable[..., Any])  # the decorated function's type, as there

__all__ = ["SafetyViolation", "clampai_safe", "safe"]
