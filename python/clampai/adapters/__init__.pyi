# The adapters Debian's packages allow (clampai.adapters, imported on first use). The metrics
# backends (clampai.adapters.metrics) have their own stub. COORDINATOR: once metrics.py and
# metrics.pyi are merged, re-export their names here as the lines below do.
from .anthropic_adapter import AnthropicAdapter as AnthropicAdapter
from .anthropic_adapter import AsyncAnthropicAdapter as AsyncAnthropicAdapter
from .fastapi_middleware import ClampAIMiddleware as ClampAIMiddleware
from .mcp_server import SafeMCPServer as SafeMCPServer
from .openai_adapter import AsyncOpenAIAdapter as AsyncOpenAIAdapter
from .openai_adapter import OpenAIAdapter as OpenAIAdapter

__all__: list[str]
