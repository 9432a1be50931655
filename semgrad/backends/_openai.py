"""OpenAI-compatible chat completions over httpx (OpenAI, vLLM, Ollama, llama.cpp, LM Studio...).

One POST to ``{base_url}/chat/completions`` per request; the request's options
(temperature, max_tokens, top_p, stop, seed, ...) go into the body as they are,
so server-specific options (vLLM's ``top_k``, say) pass through too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..core import LLMError, LLMFailure, LLMRequest, LLMResponse
from ._http import HTTPBackend, jsonable, setting

__all__ = ["OpenAICompatible", "openai_compatible"]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
_RESERVED = ("model", "messages", "stream")


def _usage(data: Mapping[str, Any]) -> dict[str, int]:
    usage = data.get("usage") or {}
    pairs = (("input_tokens", "prompt_tokens"), ("output_tokens", "completion_tokens"))
    return {ours: int(usage[theirs]) for ours, theirs in pairs if usage.get(theirs) is not None}


class OpenAICompatible(HTTPBackend):
    """An async LLM over an OpenAI-compatible ``/chat/completions`` endpoint; see `openai_compatible`."""

    provider = "openai_compatible"
    factory = "openai_compatible"
    key_env = "OPENAI_API_KEY"

    def url(self) -> str:
        """The chat completions endpoint."""
        return f"{self.base_url}/chat/completions"

    def headers(self) -> dict[str, str]:
        """An ``Authorization: Bearer`` header when there is a key (local servers need none)."""
        key = self._key.reveal()
        return {"Authorization": f"Bearer {key}"} if key else {}

    def body(self, request: LLMRequest, model: str) -> dict[str, Any]:
        """The JSON body: model, messages, and the request's options.

        Examples:
            >>> from semgrad.core import Message
            >>> llm = openai_compatible("http://127.0.0.1:8000/v1", model="m")
            >>> llm.body(LLMRequest((Message("user", "hi"),), options={"temperature": 0, "stop": ("\\n",)}), "m")
            {'model': 'm', 'messages': [{'role': 'user', 'content': 'hi'}], 'temperature': 0, 'stop': ['\\n']}
        """
        clash = [name for name in _RESERVED if name in request.options]
        if clash:
            raise LLMFailure(
                LLMError("bad_request", f"options {clash} are set by the backend; remove them from the request")
            )
        messages = [{"role": m.role, "content": m.content} for m in request.messages]
        return {"model": model, "messages": messages, **jsonable(request.options)}

    def parse(self, data: Any, model: str) -> LLMResponse:
        """Text, usage and model from a chat completion."""
        content = data["choices"][0]["message"]["content"]
        if content is not None and not isinstance(content, str):
            raise TypeError(f"message content is {type(content).__name__}, not text")
        return LLMResponse(content or "", _usage(data), str(data.get("model") or model))


def openai_compatible(
    base_url: str | None = None,
    *,
    model: str,
    api_key: str | None = None,
    timeout: float = 60.0,
    models: Mapping[str, str] | None = None,
) -> OpenAICompatible:
    """An async LLM over any OpenAI-compatible chat completions server.

    Needs the ``http`` extra (httpx), imported on the first call.

    Args:
        base_url: The API root, e.g. ``http://localhost:11434/v1`` (Ollama) or
            ``http://localhost:8000/v1`` (vLLM); default ``$OPENAI_BASE_URL``,
            else ``https://api.openai.com/v1``.
        model: The model to ask.
        api_key: The key; default ``$OPENAI_API_KEY``. Without one, no
            ``Authorization`` header is sent (fine for local servers).
        timeout: Seconds for connecting, and between bytes of the reply.
        models: A model per engine, e.g. ``{"forward": "gpt-4o-mini",
            "backward": "gpt-4-turbo", "optimizer": "gpt-4-turbo"}`` (the
            paper's small forward model and strong optimizer); engines not
            listed use `model`.

    Returns:
        The backend. Its ``identity`` (provider, endpoint, model, models) keys
        caches; neither it nor its repr shows the key. ``async with backend:``
        shares one connection pool over many calls.

    Raises:
        ValueError: When `model` is empty or `timeout` not positive.

    Examples:
        >>> llm = openai_compatible("http://127.0.0.1:11434/v1", model="llama3.2", api_key="sk-x")
        >>> llm
        openai_compatible(base_url='http://127.0.0.1:11434/v1', model='llama3.2', api_key=Secret('***'))
        >>> llm.identity["endpoint"]
        'http://127.0.0.1:11434/v1/chat/completions'
    """
    return OpenAICompatible(
        base_url=setting(base_url, "OPENAI_BASE_URL", DEFAULT_BASE_URL) or DEFAULT_BASE_URL,
        model=model,
        api_key=setting(api_key, "OPENAI_API_KEY"),
        timeout=timeout,
        models=models,
    )
