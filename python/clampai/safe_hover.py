"""`clampai.safe_hover`, as in the Python ClampAI: the authoritative barrier and the safe-hover
signal, for code that imports them from here. The same objects as at the package's top level."""

from . import AuthoritativeHJBBarrier, HJBEnforcementCheck, SafeHoverSignal

__all__ = ["AuthoritativeHJBBarrier", "HJBEnforcementCheck", "SafeHoverSignal"]
