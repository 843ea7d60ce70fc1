"""`clampai.adapters.openai_adapter`, as in the Python ClampAI: the OpenAI Chat Completions API
(and any server that speaks it: vLLM, llama.cpp, Ollama), on this project's C++ HTTP adapter
(agent/, libcurl; docs/LLM.md).

    from clampai.adapters import OpenAIAdapter
    adapter = OpenAIAdapter()                    # the key from OPENAI_API_KEY
    adapter = OpenAIAdapter("sk-...", base_url="http://127.0.0.1:8000/v1")
    adapter = OpenAIAdapter(openai.OpenAI())     # the SDK's client's key and base URL
    engine = Orchestrator(task, llm=adapter)

An object with the SDK's `chat.completions.create` that is not the SDK's own client (Azure's,
a wrapper, a test double) is called as the Python ClampAI calls it.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional

from ._llm import DEFAULT_MAX_RETRIES, DEFAULT_SYSTEM_PROMPT, DEFAULT_TIMEOUT
from ._llm import AsyncHttpLlmAdapter, HttpLlmAdapter

__all__ = ["AsyncOpenAIAdapter", "OpenAIAdapter"]


def _messages(prompt: str, system: str) -> List[Dict[str, str]]:
    return [{"role": "system", "content": system}, {"role": "user", "content": prompt}]


def _delta(chunk: Any) -> str:
    return (chunk.choices[0].delta.content or "") if chunk.choices else ""


class OpenAIAdapter(HttpLlmAdapter):
    """The Python ClampAI's synchronous OpenAI adapter: `complete()` and `acomplete()` (in a
    worker thread). `base_url` (else OPENAI_BASE_URL, else https://api.openai.com/v1),
    `timeout` (seconds per attempt) and `max_retries` are this project's additions."""

    _VENDOR = "openai"
    _KEY_ENV = "OPENAI_API_KEY"
    _URL_ENV = "OPENAI_BASE_URL"
    _SDK_CALL = ("chat", "completions", "create")
    DEFAULT_MODEL = "gpt-4o-mini"

    def __init__(self, client: Any = None, model: str = DEFAULT_MODEL,
                 default_system_prompt: str = DEFAULT_SYSTEM_PROMPT, *,
                 base_url: Optional[str] = None, timeout: float = DEFAULT_TIMEOUT,
                 max_retries: int = DEFAULT_MAX_RETRIES) -> None:
        super().__init__(client, model, default_system_prompt, base_url=base_url,
                         timeout=timeout, max_retries=max_retries)

    def _sdk_complete(self, prompt: str, system: str, temperature: float, max_tokens: int,
                      stream_tokens: Optional[Callable[[str], None]]) -> str:
        create = self._client.chat.completions.create
        request = dict(model=self._model, messages=_messages(prompt, system),
                       temperature=temperature, max_tokens=max_tokens)
        if stream_tokens is None:
            return create(**request).choices[0].message.content or ""
        text = ""
        for chunk in create(**request, stream=True):
            delta = _delta(chunk)
            if delta:
                stream_tokens(delta)
                text += delta
        return text


class AsyncOpenAIAdapter(AsyncHttpLlmAdapter):
    """The Python ClampAI's async-only OpenAI adapter: `acomplete()` runs the C++ call off the
    event loop (or awaits an SDK-compatible async client's `chat.completions.create`);
    `complete()` raises NotImplementedError."""

    _VENDOR = "openai"
    _KEY_ENV = "OPENAI_API_KEY"
    _URL_ENV = "OPENAI_BASE_URL"
    _SDK_CALL = ("chat", "completions", "create")
    DEFAULT_MODEL = "gpt-4o-mini"

    def __init__(self, client: Any = None, model: str = DEFAULT_MODEL,
                 default_system_prompt: str = DEFAULT_SYSTEM_PROMPT, *,
                 base_url: Optional[str] = None, timeout: float = DEFAULT_TIMEOUT,
                 max_retries: int = DEFAULT_MAX_RETRIES) -> None:
        super().__init__(client, model, default_system_prompt, base_url=base_url,
                         timeout=timeout, max_retries=max_retries)

    async def _sdk_acomplete(self, prompt: str, system: str, temperature: float,
                             max_tokens: int,
                             stream_tokens: Optional[Callable[[str], None]]) -> str:
        create = self._client.chat.completions.create
        request = dict(model=self._model, messages=_messages(prompt, system),
                       temperature=temperature, max_tokens=max_tokens)
        if stream_tokens is None:
            return (await create(**request)).choices[0].message.content or ""
        text = ""
        async for chunk in await create(**request, stream=True):
            delta = _delta(chunk)
            if delta:
                stream_tokens(delta)
                text += delta
        return text
