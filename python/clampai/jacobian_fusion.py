"""`clampai.jacobian_fusion`, as in the Python ClampAI: the Jacobian reports of the invariants'
boundaries, for code that imports them from here. The same objects as at the package's top
level."""

from . import BoundarySeverity, JacobianFusion, JacobianReport, JacobianScore

__all__ = ["BoundarySeverity", "JacobianFusion", "JacobianReport", "JacobianScore"]
