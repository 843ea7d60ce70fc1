"""`clampai.saliency`, as in the Python ClampAI: the saliency engine, for code that imports them
from here. The same objects as at the package's top level."""

from . import SaliencyEngine, SaliencyResult

__all__ = ["SaliencyEngine", "SaliencyResult"]
