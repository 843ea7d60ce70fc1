"""`clampai.operadic_composition`, as in the Python ClampAI: task composition and its certificates,
for code that imports them from here. The same objects as at the package's top level."""

from . import (CompositionType, InterfaceSignature, SuperTask, TaskComposer,
               VerificationCertificate)

__all__ = ["CompositionType", "InterfaceSignature", "SuperTask", "TaskComposer",
           "VerificationCertificate"]
