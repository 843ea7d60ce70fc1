# The adapters Debian's packages allow (clampai.adapters, imported on first use), and the
# metrics backends (clampai.adapters.metrics).
from .anthropic_adapter import AnthropicAdapter as AnthropicAdapter
from .anthropic_adapter import AsyncAnthropicAdapter as AsyncAnthropicAdapter
from .fastapi_middleware import ClampAIMiddleware as ClampAIMiddleware
from .mcp_server import SafeMCPServer as SafeMCPServer
from .metrics import PrometheusMetrics as PrometheusMetrics
from .openai_adapter import AsyncOpenAIAdapter as AsyncOpenAIAdapter
from .openai_adapter import OpenAIAdapter as OpenAIAdapter

__all__: list[str]
