"""`clampai.testing`, as in the reference: `make_state`, `make_action` and `SafetyHarness`
(the same objects as at the package's top level)."""

from . import SafetyHarness, make_action, make_state

__all__ = ["SafetyHarness", "make_action", "make_state"]
