"""`clampai.inverse_algebra`, as in the Python ClampAI: inverse effects and rollback records, for
code that imports them from here. The same objects as at the package's top level."""

from . import InverseAlgebra, InverseEffect, RollbackRecord, action_with_inverse_guarantee

__all__ = ["InverseAlgebra", "InverseEffect", "RollbackRecord", "action_with_inverse_guarantee"]
