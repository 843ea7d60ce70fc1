"""`clampai.active_hjb_barrier`, as in the Python ClampAI: the lookahead barrier (ActiveHJBBarrier)
and the recovery strategies, for code that imports them from here. The same objects as at the
package's top level."""

from . import (ActiveHJBBarrier, HJBBarrierCheck, RecoveryStrategy, SafetyBarrierViolation,
               choose_recovery_strategy)

__all__ = ["ActiveHJBBarrier", "HJBBarrierCheck", "RecoveryStrategy", "SafetyBarrierViolation",
           "choose_recovery_strategy"]
