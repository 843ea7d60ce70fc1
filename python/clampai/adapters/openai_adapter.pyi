from typing import Any, Callable, Optional

__all__ = ["AsyncOpenAIAdapter", "OpenAIAdapter"]

class OpenAIAdapter:
    DEFAULT_MODEL: str
    def __init__(self, client: Any = ..., model: str = ..., default_system_prompt: str = ..., *,
                 base_url: Optional[str] = ..., timeout: float = ...,
                 max_retries: int = ...) -> None: ...
    def complete(self, prompt: str, system_prompt: str = ..., *, temperature: float = ...,
                 max_tokens: int = ...,
                 stream_tokens: Optional[Callable[[str], None]] = ...) -> str: ...
    async def acomplete(self, prompt: str, system_prompt: str = ..., *,
                        temperature: float = ..., max_tokens: int = ...,
                        stream_tokens: Optional[Callable[[str], None]] = ...) -> str: ...

class AsyncOpenAIAdapter:
    DEFAULT_MODEL: str
    def __init__(self, client: Any = ..., model: str = ..., default_system_prompt: str = ..., *,
                 base_url: Optional[str] = ..., timeout: float = ...,
                 max_retries: int = ...) -> None: ...
    def complete(self, prompt: str, system_prompt: str = ..., *, temperature: float = ...,
                 max_tokens: int = ...,
                 stream_tokens: Optional[Callable[[str], None]] = ...) -> str: ...
    async def acomplete(self, prompt: str, system_prompt: str = ..., *,
                        temperature: float = ..., max_tokens: int = ...,
                        stream_tokens: Optional[Callable[[str], None]] = ...) -> str: ...
