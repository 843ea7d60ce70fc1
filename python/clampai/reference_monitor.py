"""The Python ClampAI's `clampai.reference_monitor`: its names, from where this package keeps
them (the monitor and its labels in `clampai.hardening`, the barriers and the composition in
their own modules)."""

from ._barriers import CaptureBasin, ControlBarrierFunction, QPProjector, SafeHoverState
from ._composition import ContractSpecification, OperadicComposition
from .hardening import DataLabel, LabelledData, ReferenceMonitor, SecurityLevel

__all__ = ["CaptureBasin", "ContractSpecification", "ControlBarrierFunction", "DataLabel",
           "LabelledData", "OperadicComposition", "QPProjector", "ReferenceMonitor",
           "SafeHoverState", "SecurityLevel"]
