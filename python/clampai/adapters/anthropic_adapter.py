"""`clampai.adapters.anthropic_adapter`, as in the Python ClampAI: Claude through the Anthropic
Messages API, on this project's C++ HTTP adapter (agent/, libcurl; docs/LLM.md).

    from clampai.adapters import AnthropicAdapter
    adapter = AnthropicAdapter()                 # the key from ANTHROPIC_API_KEY
    adapter = AnthropicAdapter("sk-ant-...")     # or given
    adapter = AnthropicAdapter(anthropic.Anthropic())  # or the SDK's client's key and base URL
    engine = Orchestrator(task, llm=adapter)

An object with the SDK's `messages.create` that is not the SDK's own client (a wrapper, a test
double) is called as the Python ClampAI calls it. No SDK is needed otherwise.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from ._llm import DEFAULT_MAX_RETRIES, DEFAULT_SYSTEM_PROMPT, DEFAULT_TIMEOUT
from ._llm import AsyncHttpLlmAdapter, HttpLlmAdapter

__all__ = ["AnthropicAdapter", "AsyncAnthropicAdapter"]


def _text(message: Any) -> str:
    """The answer's text: its text blocks joined (a thinking block has none)."""
    blocks = message.content
    if not isinstance(blocks, (list, tuple)):
        return blocks[0].text
    return "".join(b.text for b in blocks if isinstance(getattr(b, "text", None), str))


class AnthropicAdapter(HttpLlmAdapter):
    """The Python ClampAI's synchronous Anthropic adapter: `complete()` and `acomplete()`
    (in a worker thread). `base_url` (else ANTHROPIC_BASE_URL, else the public API), `timeout`
    (seconds per attempt) and `max_retries` (on 408, 429, 5xx) are this project's additions."""

    _VENDOR = "anthropic"
    _KEY_ENV = "ANTHROPIC_API_KEY"
    _URL_ENV = "ANTHROPIC_BASE_URL"
    _SDK_CALL = ("messages", "create")
    DEFAULT_MODEL = "claude-haiku-4-5-20251001"

    def __init__(self, client: Any = None, model: str = DEFAULT_MODEL,
                 default_system_prompt: str = DEFAULT_SYSTEM_PROMPT, *,
                 base_url: Optional[str] = None, timeout: float = DEFAULT_TIMEOUT,
                 max_retries: int = DEFAULT_MAX_RETRIES) -> None:
        super().__init__(client, model, default_system_prompt, base_url=base_url,
                         timeout=timeout, max_retries=max_retries)

    def _sdk_complete(self, prompt: str, system: str, temperature: float, max_tokens: int,
                      stream_tokens: Optional[Callable[[str], None]]) -> str:
        request = dict(model=self._model, max_tokens=max_tokens, temperature=temperature,
                       system=system, messages=[{"role": "user", "content": prompt}])
        if stream_tokens is None:
            return _text(self._client.messages.create(**request))
        text = ""
        with self._client.messages.stream(**request) as stream:
            for chunk in stream.text_stream:
                stream_tokens(chunk)
                text += chunk
        return text


class AsyncAnthropicAdapter(AsyncHttpLlmAdapter):
    """The Python ClampAI's async-only Anthropic adapter: `acomplete()` runs the C++ call off
    the event loop (or awaits an SDK-compatible async client's `messages.create`); `complete()`
    raises NotImplementedError."""

    _VENDOR = "anthropic"
    _KEY_ENV = "ANTHROPIC_API_KEY"
    _URL_ENV = "ANTHROPIC_BASE_URL"
    _SDK_CALL = ("messages", "create")
    DEFAULT_MODEL = "claude-haiku-4-5-20251001"

    def __init__(self, client: Any = None, model: str = DEFAULT_MODEL,
                 default_system_prompt: str = DEFAULT_SYSTEM_PROMPT, *,
                 base_url: Optional[str] = None, timeout: float = DEFAULT_TIMEOUT,
                 max_retries: int = DEFAULT_MAX_RETRIES) -> None:
        super().__init__(client, model, default_system_prompt, base_url=base_url,
                         timeout=timeout, max_retries=max_retries)

    async def _sdk_acomplete(self, prompt: str, system: str, temperature: float,
                             max_tokens: int,
                             stream_tokens: Optional[Callable[[str], None]]) -> str:
        request = dict(model=self._model, max_tokens=max_tokens, temperature=temperature,
                       system=system, messages=[{"role": "user", "content": prompt}])
        if stream_tokens is None:
            return _text(await self._client.messages.create(**request))
        text = ""
        async with self._client.messages.stream(**request) as stream:
            async for chunk in stream.text_stream:
                stream_tokens(chunk)
                text += chunk
        return text
