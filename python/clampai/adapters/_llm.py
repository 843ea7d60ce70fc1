"""What AnthropicAdapter and OpenAIAdapter share: the Python ClampAI's `complete()` /
`acomplete()` over the C++ HTTP adapters (agent/, libcurl), or over an SDK-compatible client
object handed in (a wrapper, a proxy, a test double), called as the vendor's SDK is called."""

from __future__ import annotations

import asyncio
import os
from typing import Any, Callable, Optional

from .._clampai import _HttpLlm

DEFAULT_SYSTEM_PROMPT = "You are a helpful AI assistant."
DEFAULT_TIMEOUT = 120.0
DEFAULT_MAX_RETRIES = 3


def _sdk_client(client: Any, vendor: str) -> bool:
    """True for the vendor SDK's own client classes (anthropic.Anthropic, openai.OpenAI and
    their async forms): their key and base URL are read, and the C++ adapter makes the call."""
    cls = type(client)
    return (cls.__module__.split(".")[0] == vendor
            and cls.__name__ in ("Anthropic", "AsyncAnthropic", "OpenAI", "AsyncOpenAI")
            and isinstance(getattr(client, "api_key", None), str))


class HttpLlmAdapter:
    """The common part of the synchronous adapters. `client` is None (the key from the
    vendor's environment variable), an API key (str), the vendor SDK's client (its key and
    base URL are used), or any object with the SDK's call (`messages.create` /
    `chat.completions.create`), which is then called instead of the C++ adapter."""

    _VENDOR = ""
    _KEY_ENV = ""
    _URL_ENV = ""
    _SDK_CALL = ("",)
    DEFAULT_MODEL = ""

    def __init__(self, client: Any = None, model: str = "",
                 default_system_prompt: str = DEFAULT_SYSTEM_PROMPT, *,
                 base_url: Optional[str] = None, timeout: float = DEFAULT_TIMEOUT,
                 max_retries: int = DEFAULT_MAX_RETRIES) -> None:
        self._client = client
        self._model = model or self.DEFAULT_MODEL
        self._default_system_prompt = default_system_prompt
        self._http: Optional[_HttpLlm] = None
        if client is None or isinstance(client, str) or _sdk_client(client, self._VENDOR):
            if client is None:
                key = os.environ.get(self._KEY_ENV, "")
                if not key:
                    raise ValueError(
                        f"{type(self).__name__}: no API key: pass one (or the SDK's client) as "
                        f"`client`, or set {self._KEY_ENV}")
            else:
                key = client if isinstance(client, str) else client.api_key
            url = base_url
            if url is None and client is not None and not isinstance(client, str):
                url = str(getattr(client, "base_url", "") or "")
            if url is None:
                url = os.environ.get(self._URL_ENV, "")
            if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) \
                    or not timeout > 0:
                raise ValueError(f"timeout must be a positive number of seconds, not {timeout!r}")
            self._http = _HttpLlm(self._VENDOR, key, self._model, url.rstrip("/"),
                                  max(1, int(timeout * 1000)), max_retries)
        elif not self._has_sdk_call(client):
            raise TypeError(
                f"{type(self).__name__}: `client` must be None, an API key, or a client with "
                f"`{'.'.join(self._SDK_CALL)}`, not {type(client).__name__}")

    def _has_sdk_call(self, client: Any) -> bool:
        target = client
        for part in self._SDK_CALL:
            target = getattr(target, part, None)
        return callable(target)

    def complete(self, prompt: str, system_prompt: str = "", *, temperature: float = 0.3,
                 max_tokens: int = 2000,
                 stream_tokens: Optional[Callable[[str], None]] = None) -> str:
        """The model's answer to `prompt` (the user turn) under `system_prompt` (or the
        default), as one string. With `stream_tokens`, it is called with the text as it
        arrives (through the C++ adapter: once, with the whole answer); the whole text is
        returned either way. Raises TimeoutError, PermissionError (a refused key),
        ConnectionError (HTTP failures after the retries) or ValueError (an answer that is not
        the API's JSON)."""
        system = system_prompt or self._default_system_prompt
        if self._http is None:
            return self._sdk_complete(prompt, system, temperature, max_tokens, stream_tokens)
        text = self._http.complete(prompt, system, int(max_tokens), float(temperature))
        if stream_tokens is not None and text:
            stream_tokens(text)
        return text

    async def acomplete(self, prompt: str, system_prompt: str = "", *,
                        temperature: float = 0.3, max_tokens: int = 2000,
                        stream_tokens: Optional[Callable[[str], None]] = None) -> str:
        """`complete` in a worker thread (the C++ call releases the GIL)."""
        return await asyncio.to_thread(self.complete, prompt, system_prompt,
                                       temperature=temperature, max_tokens=max_tokens,
                                       stream_tokens=stream_tokens)

    def _sdk_complete(self, prompt: str, system: str, temperature: float, max_tokens: int,
                      stream_tokens: Optional[Callable[[str], None]]) -> str:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self._model!r})"


class AsyncHttpLlmAdapter(HttpLlmAdapter):
    """The common part of the async-only adapters: `acomplete` as above, `complete` refused."""

    def complete(self, prompt: str, system_prompt: str = "", *, temperature: float = 0.3,
                 max_tokens: int = 2000,
                 stream_tokens: Optional[Callable[[str], None]] = None) -> str:
        """Not available: this adapter is async-only (use `acomplete`, or the synchronous
        adapter)."""
        raise NotImplementedError(
            f"{type(self).__name__} is async-only: use acomplete() from an async context, or "
            f"{type(self).__name__[len('Async'):]} for synchronous use")

    async def acomplete(self, prompt: str, system_prompt: str = "", *,
                        temperature: float = 0.3, max_tokens: int = 2000,
                        stream_tokens: Optional[Callable[[str], None]] = None) -> str:
        """The model's answer, off the event loop (the C++ call runs in a worker thread with
        the GIL released); an SDK-compatible async client handed in is awaited instead."""
        system = system_prompt or self._default_system_prompt
        if self._http is None:
            return await self._sdk_acomplete(prompt, system, temperature, max_tokens,
                                             stream_tokens)
        text = await asyncio.to_thread(self._http.complete, prompt, system, int(max_tokens),
                                       float(temperature))
        if stream_tokens is not None and text:
            stream_tokens(text)
        return text

    async def _sdk_acomplete(self, prompt: str, system: str, temperature: float,
                             max_tokens: int,
                             stream_tokens: Optional[Callable[[str], None]]) -> str:
        raise NotImplementedError
