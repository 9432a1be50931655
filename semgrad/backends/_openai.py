"""OpenAI-compatible chat completions over httpx (OpenAI, vLLM, Ollama, llama.cpp, LM Studio...).

One POST to ``{base_url}/chat/completions`` per request; the request's options
(temperature, max_tokens, top_p, stop, seed, ...) go into the body as they are,
so server-specific options (vLLM's ``top_k``, say) pass through too. One
exception: on OpenAI's own API (``https://api.openai.com``) and Azure OpenAI's
(``https://RESOURCE.openai.azure.com/openai/v1``) ``max_tokens`` is sent as
``max_completion_tokens``, which they take for every chat model and their
reasoning models (o-series, GPT-5) require: they refuse ``max_tokens`` with an
HTTP 400. Other servers get ``max_tokens``, which they all know.

The wire format is a pure codec, `OpenAICodec` (see ``_codec``), under the one
transport (``_http``). A reply without text is a failure, not an empty answer: cut at
that cap before any text (a reasoning model may spend all of it on reasoning),
``truncated``; a refusal or a content filter's stop, ``refused``; otherwise
``malformed``. An error inside a choice (OpenRouter's, when the provider fails
part-way) is a retryable ``server`` failure.
Reasoning models also refuse any ``temperature`` but 1; that 400 is shown as
OpenAI words it (leave temperature out of the options: ``semgrad run
--temperature none``).
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import attrs

from ..core import LLMError, LLMFailure, LLMRequest, LLMResponse
from ._batch import OpenAIBatches
from ._codec import KEY, Codec, jsonable, malformed, refused, truncated, usage_counts
from ._http import HTTPBackend, setting

__all__ = ["OpenAICodec", "OpenAICompatible", "openai_compatible"]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
_RESERVED = ("model", "messages", "stream")
#: Hosts that take ``max_completion_tokens`` for a request's ``max_tokens``: OpenAI's own API, and
#: Azure OpenAI's (``https://RESOURCE.openai.azure.com/openai/v1``); a leading dot matches any subdomain.
COMPLETION_TOKENS_HOSTS = ("api.openai.com", ".openai.azure.com")


def _usage(data: Mapping[str, Any]) -> dict[str, int]:
    """Input and output tokens, and the prompt tokens OpenAI served from its prompt cache
    (``usage.prompt_tokens_details.cached_tokens``, part of ``prompt_tokens``).

    Examples:
        >>> _usage({"usage": {"prompt_tokens": 2000, "completion_tokens": 5,
        ...                   "prompt_tokens_details": {"cached_tokens": 1024}}})
        {'input_tokens': 2000, 'output_tokens': 5, 'cached_input_tokens': 1024}
    """
    usage = data.get("usage")
    found = usage_counts(usage, {"input_tokens": "prompt_tokens", "output_tokens": "completion_tokens"})
    details = usage.get("prompt_tokens_details") if isinstance(usage, Mapping) else None
    cached = usage_counts(details, {"cached_input_tokens": "cached_tokens"})
    if cached.get("cached_input_tokens"):
        found["cached_input_tokens"] = min(cached["cached_input_tokens"], found.get("input_tokens", 0))
    return found


def _unchanged(text: str) -> str:
    return text


@attrs.frozen
class OpenAICodec(Codec):
    """The chat completions wire format: a POST to ``/chat/completions``, and its replies. Pure.

    Attributes:
        max_tokens_field: What a request's ``max_tokens`` is sent as (``max_completion_tokens`` on
            OpenAI's and Azure OpenAI's API).
    """

    max_tokens_field: str = "max_tokens"

    path: ClassVar[str] = "/chat/completions"
    key_env: ClassVar[str] = "OPENAI_API_KEY"

    def headers(self) -> dict[str, str]:
        """An ``Authorization: Bearer`` header when there is a key (local servers need none), the key left out."""
        return {"Authorization": f"Bearer {KEY}"} if self.keyed else {}

    def body(self, request: LLMRequest, model: str) -> dict[str, Any]:
        """The JSON body: model, messages, and the request's options (``max_tokens`` as `max_tokens_field`).

        Examples:
            >>> from semgrad.core import Message
            >>> codec = OpenAICodec("m")
            >>> codec.body(LLMRequest((Message("user", "hi"),), options={"temperature": 0, "stop": ("\\n",)}), "m")
            {'model': 'm', 'messages': [{'role': 'user', 'content': 'hi'}], 'temperature': 0, 'stop': ['\\n']}
            >>> official = OpenAICodec("gpt-5-mini", max_tokens_field="max_completion_tokens")
            >>> official.body(LLMRequest((Message("user", "hi"),), options={"max_tokens": 9}), "gpt-5-mini")
            {'model': 'gpt-5-mini', 'messages': [{'role': 'user', 'content': 'hi'}], 'max_completion_tokens': 9}
        """
        options = request.options
        clash = [name for name in _RESERVED if name in options]
        if clash:
            raise LLMFailure(
                LLMError("bad_request", f"options {clash} are set by the backend; remove them from the request")
            )
        body = jsonable(options)
        field = self.max_tokens_field
        if field != "max_tokens" and "max_tokens" in body:
            if field in body:
                raise LLMFailure(
                    LLMError("bad_request", f"options max_tokens and {field} are the same cap here; set one of them")
                )
            body = {(field if name == "max_tokens" else name): value for name, value in body.items()}
        messages = [{"role": m.role, "content": m.content} for m in request.messages]
        return {"model": model, "messages": messages, **body}

    def parse(self, data: Any, model: str, scrub: Callable[[str], str] = _unchanged) -> LLMResponse:
        """Text, usage and model from a chat completion; a reply without text is a failure that says why.

        ``content`` may be a string or a list of parts (Mistral's): its text parts are joined.
        """
        choice = data["choices"][0]
        answered = str(data.get("model") or model)
        failed = choice.get("error")
        if failed:  # OpenRouter: the provider failed after the reply had begun
            said = failed.get("message") if isinstance(failed, Mapping) else failed
            said = scrub(str(said)[:12_000])[:300]  # scrubbed before it is cut short, which could cut the key
            raise LLMFailure(LLMError("server", f"the reply failed part-way ({said})", retryable=True))
        message = choice["message"]
        content = _text(message["content"])
        finish = choice.get("finish_reason")
        if finish == "content_filter":  # whatever text came before the filter stopped it is not an answer
            raise refused(answered, "a content filter stopped the reply")
        if content and not content.isspace():  # whitespace alone is no text
            return LLMResponse(content, _usage(data), answered, finish_reason=finish if isinstance(finish, str) else "")
        if finish == "length":
            details = (data.get("usage") or {}).get("completion_tokens_details") or {}
            raise truncated(answered, details.get("reasoning_tokens") if isinstance(details, Mapping) else None)
        if message.get("refusal"):
            raise refused(answered, str(message["refusal"]), scrub)
        if message.get("reasoning_content") or message.get("reasoning"):
            raise malformed(
                f"{answered} replied with reasoning but no text (finish_reason {finish!r}): "
                "a server's reasoning parser may have kept the whole reply as reasoning"
            )
        raise malformed(f"{answered} replied with no text (finish_reason {finish!r})")


class OpenAICompatible(OpenAIBatches, HTTPBackend):
    """An async LLM over an OpenAI-compatible ``/chat/completions`` endpoint; see `openai_compatible`.

    It offers OpenAI's Batch API too (`OpenAIBatches`: ``/files`` and ``/batches``), for `semgrad.effects`'
    ``batched``; a server without one (vLLM, Ollama) answers its first request with a 404.
    """

    provider = "openai_compatible"
    factory = "openai_compatible"
    key_env = "OPENAI_API_KEY"

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str | None,
        timeout: float,
        models: Mapping[str, str] | None,
        deadline: float | None = None,
    ) -> None:
        try:
            host = urllib.parse.urlsplit(base_url).hostname
        except ValueError:  # a base_url that does not parse: its first call fails and says so
            host = None
        field = "max_completion_tokens" if _takes_completion_tokens(host) else "max_tokens"
        codec = OpenAICodec(model, models or {}, max_tokens_field=field)
        super().__init__(base_url=base_url, codec=codec, api_key=api_key, timeout=timeout, deadline=deadline)

    @property
    def max_tokens_field(self) -> str:
        """What a request's ``max_tokens`` is sent as: ``max_completion_tokens`` on OpenAI's and Azure OpenAI's API."""
        return self.codec.max_tokens_field  # type: ignore[attr-defined, no-any-return]


def _takes_completion_tokens(host: str | None) -> bool:
    """Whether `host` is one of `COMPLETION_TOKENS_HOSTS` (or a subdomain of one that starts with a dot)."""
    if not host:
        return False
    host = host.lower()
    return any(host == name or (name.startswith(".") and host.endswith(name)) for name in COMPLETION_TOKENS_HOSTS)


def _text(content: Any) -> str | None:
    """A message's content as text: a string as it is, a list of parts as its text parts joined."""
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part["text"] for part in content if isinstance(part, Mapping) and part.get("type") == "text")
    raise TypeError(f"message content is {type(content).__name__}, not text")


def openai_compatible(
    base_url: str | None = None,
    *,
    model: str,
    api_key: str | None = None,
    timeout: float = 60.0,
    deadline: float | None = None,
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
        timeout: Seconds for connecting, and between bytes of the reply (not for the
            whole call: a server that sends a byte now and then holds it longer).
        deadline: Seconds for the whole call, sending and reading included; past it the
            call fails with a retryable ``timeout`` error. None (the default): 600 s
            (``DEFAULT_DEADLINE``, as the providers' own SDKs), or `timeout` if longer.
            ``Runner(..., timeout=...)`` and ``fit(..., timeout=...)`` bound a call from
            outside too, retries included.
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
        deadline=deadline,
        models=models,
    )
