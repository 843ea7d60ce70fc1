"""`clampai.adapters`, as in the Python ClampAI: the integrations that Debian ships.

    from clampai.adapters import AnthropicAdapter, OpenAIAdapter   # the C++ HTTP adapters
    from clampai.adapters import ClampAIMiddleware                 # FastAPI / Starlette
    from clampai.adapters import SafeMCPServer                     # an MCP tool server

Each name is imported when first used, so this package imports without FastAPI; a name whose
framework is missing raises ImportError naming the Debian package. The Python ClampAI's
adapters for frameworks Debian does not ship (LangChain, LangGraph, CrewAI, AutoGen, OpenClaw)
are not part of this project: importing one raises ImportError saying so (docs/PYTHON.md).
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import Any, Dict, List, Tuple

# Each public name and the submodule that defines it (the Python ClampAI's module names).
_NAMES: Dict[str, str] = {
    "AnthropicAdapter": "anthropic_adapter",
    "AsyncAnthropicAdapter": "anthropic_adapter",
    "OpenAIAdapter": "openai_adapter",
    "AsyncOpenAIAdapter": "openai_adapter",
    "ClampAIMiddleware": "fastapi_middleware",
    "SafeMCPServer": "mcp_server",
}

# The metrics backends live in `clampai.adapters.metrics` (its `__all__`), when it is there.
# COORDINATOR: the metrics module is another branch's; this block finds it whichever branch is
# merged first, and needs no edit when both are.
_METRICS = "metrics"


def _metrics_names() -> Tuple[str, ...]:
    if importlib.util.find_spec(f"{__name__}.{_METRICS}") is None:
        return ()
    try:
        module = importlib.import_module(f"{__name__}.{_METRICS}")
    except ImportError:  # pragma: no cover - its optional dependency is its own to report
        return ()
    return tuple(getattr(module, "__all__", ()))


for _name in _metrics_names():
    _NAMES.setdefault(_name, _METRICS)

# The Python ClampAI's metrics names, for a clear error when one is not offered.
_REFERENCE_METRICS = ("OTelMetrics", "OTelTraceExporter", "PrometheusMetrics")

# The Python ClampAI's adapters for frameworks Debian does not ship.
_OUT_OF_SCOPE: Dict[str, str] = dict(
    {n: "LangChain" for n in ("ClampAISafeTool", "ClampAICallbackHandler",
                              "ClampAICallbackError")},
    **{n: "LangGraph" for n in ("SafetyNode", "clampai_node", "budget_guard", "invariant_guard",
                                "ClampAIBudgetError", "ClampAIInvariantError",
                                "ClampAISafetyError")},
    **{n: "CrewAI" for n in ("ClampAISafeCrewTool", "ClampAICrewCallback", "safe_crew_tool",
                             "ClampAICrewError", "ClampAICrewBudgetError",
                             "ClampAICrewInvariantError")},
    **{n: "AutoGen" for n in ("ClampAISafeAutoGenAgent", "autogen_reply_fn",
                              "ClampAIAutoGenError", "ClampAIAutoGenBudgetError",
                              "ClampAIAutoGenInvariantError")},
    **{n: "OpenClaw" for n in ("OpenClawAdapter", "AsyncOpenClawAdapter", "OpenClawGateway",
                               "OpenClawResponse", "GatewayHealth", "openclaw_session",
                               "async_openclaw_session")})

__all__: List[str] = sorted(_NAMES)


def __getattr__(name: str) -> Any:
    module = _NAMES.get(name)
    if module is not None:
        value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
        globals()[name] = value
        return value
    if name in _REFERENCE_METRICS:
        raise ImportError(
            f"clampai.adapters.{name} is the Python ClampAI's metrics backend, which "
            f"clampai.adapters.{_METRICS} does not offer (docs/PYTHON.md, \"Adapters\")")
    if name in _OUT_OF_SCOPE:
        raise ImportError(
            f"clampai.adapters.{name} is the Python ClampAI's {_OUT_OF_SCOPE[name]} adapter, "
            f"which ClampAI for C++ does not offer: Debian does not ship "
            f"{_OUT_OF_SCOPE[name]} (docs/PYTHON.md, \"Adapters\")")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> List[str]:
    return sorted(set(globals()) | set(_NAMES))
