"""Anthropic Messages over httpx.

One POST to ``{base_url}/v1/messages`` per request. System messages go into
the top-level ``system`` field; consecutive messages of one role are merged
(the API wants user and assistant turns to alternate). The wire format is a pure
codec, `AnthropicCodec` (see ``_codec``), under the one transport (``_http``). A reply without text is
a failure, not an empty answer: ``truncated`` when it stopped at
``max_tokens`` (extended thinking can spend the whole cap), else ``malformed``;
one that stopped with ``stop_reason: "refusal"`` is ``refused``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import attrs

from ..core import FrozenMap, LLMRequest, LLMResponse, Message
from ._batch import AnthropicBatches
from ._codec import KEY, Codec, jsonable, malformed, refused, truncated, usage_counts
from ._http import HTTPBackend, setting

__all__ = ["AnthropicCodec", "AnthropicMessages", "anthropic"]

DEFAULT_BASE_URL = "https://api.anthropic.com"
API_VERSION = "2023-06-01"
#: Request options passed through as they are; ``stop`` becomes ``stop_sequences``,
#: and options the Messages API does not take (``seed``, ``frequency_penalty``...) are left out.
OPTIONS = ("temperature", "top_p", "top_k", "stop_sequences", "metadata", "thinking", "service_tier")


def merge_turns(messages: tuple[Message, ...]) -> tuple[str, list[dict[str, str]]]:
    """The system text and the alternating turns of `messages`.

    Examples:
        >>> merge_turns((Message("system", "Be brief."), Message("user", "a"), Message("user", "b")))
        ('Be brief.', [{'role': 'user', 'content': 'a\\n\\nb'}])
    """
    system = "\n\n".join(m.content for m in messages if m.role == "system")
    turns: list[dict[str, str]] = []
    for m in messages:
        if m.role == "system":
            continue
        if turns and turns[-1]["role"] == m.role:
            turns[-1]["content"] += "\n\n" + m.content
        else:
            turns.append({"role": m.role, "content": m.content})
    return system, turns


def _usage(data: Mapping[str, Any]) -> dict[str, int]:
    """Input and output tokens; ``input_tokens`` counts every prompt token, those Anthropic read from its
    prompt cache (``cache_read_input_tokens``, as ``cached_input_tokens``) and wrote to it
    (``cache_creation_input_tokens``, as ``cache_write_tokens``) included -- Anthropic's own
    ``input_tokens`` counts neither.

    Examples:
        >>> _usage({"usage": {"input_tokens": 20, "output_tokens": 5, "cache_read_input_tokens": 3000,
        ...                   "cache_creation_input_tokens": 0}})
        {'input_tokens': 3020, 'output_tokens': 5, 'cached_input_tokens': 3000}
    """
    names = {
        "input_tokens": "input_tokens",
        "output_tokens": "output_tokens",
        "cached_input_tokens": "cache_read_input_tokens",
        "cache_write_tokens": "cache_creation_input_tokens",
    }
    found = usage_counts(data.get("usage"), names)
    cached, written = found.pop("cached_input_tokens", 0), found.pop("cache_write_tokens", 0)
    if "input_tokens" in found:
        found["input_tokens"] += cached + written
    elif cached or written:
        found["input_tokens"] = cached + written
    if cached:
        found["cached_input_tokens"] = cached
    if written:
        found["cache_write_tokens"] = written
    return found


def _unchanged(text: str) -> str:
    return text


@attrs.frozen
class AnthropicCodec(Codec):
    """The Messages wire format: a POST to ``/v1/messages``, and its replies. Pure.

    Attributes:
        max_tokens: The reply length cap when a request's options set none (the API requires one).
        prompt_cache: Mark the system text -- the part of a request that its node's other requests share --
            as a prompt-cache breakpoint (``cache_control``), so Anthropic serves it from its cache to the
            requests that follow (at a tenth of the input price; writing it costs 1.25 times). A prefix
            shorter than the model's minimum is not cached and costs nothing extra.
    """

    max_tokens: int = 1024
    prompt_cache: bool = True

    path: ClassVar[str] = "/v1/messages"
    key_env: ClassVar[str] = "ANTHROPIC_API_KEY"

    def settings(self) -> FrozenMap[str, Any]:
        """The default ``max_tokens`` and the API version: they go into every request, so they key caches.

        Examples:
            >>> AnthropicCodec("m", max_tokens=5).settings()
            FrozenMap({'max_tokens': 5, 'api_version': '2023-06-01'})
        """
        return FrozenMap({"max_tokens": self.max_tokens, "api_version": API_VERSION})

    def headers(self) -> dict[str, str]:
        """The API version, and ``x-api-key`` when there is a key (the key left out)."""
        return {"anthropic-version": API_VERSION, **({"x-api-key": KEY} if self.keyed else {})}

    def body(self, request: LLMRequest, model: str) -> dict[str, Any]:
        """The JSON body: model, max_tokens, system, merged turns and the options the API takes.

        Examples:
            >>> codec = AnthropicCodec("m", max_tokens=64, prompt_cache=False)
            >>> messages = (Message("system", "Be brief."), Message("user", "hi"))
            >>> body = codec.body(LLMRequest(messages, options={"stop": "\\n", "seed": 1}), "m")
            >>> body["system"], body["messages"], body["max_tokens"], body["stop_sequences"], "seed" in body
            ('Be brief.', [{'role': 'user', 'content': 'hi'}], 64, ['\\n'], False)
            >>> AnthropicCodec("m").body(LLMRequest(messages), "m")["system"]
            [{'type': 'text', 'text': 'Be brief.', 'cache_control': {'type': 'ephemeral'}}]
        """
        system, turns = merge_turns(request.messages)
        body: dict[str, Any] = {
            "model": model,
            "max_tokens": int(request.options.get("max_tokens", self.max_tokens)),
            "messages": turns,
        }
        if system and self.prompt_cache:
            body["system"] = [{"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}]
        elif system:
            body["system"] = system
        stop = request.options.get("stop")
        if stop is not None:
            body["stop_sequences"] = [stop] if isinstance(stop, str) else jsonable(stop)
        body.update({name: jsonable(request.options[name]) for name in OPTIONS if name in request.options})
        return body

    def parse(self, data: Any, model: str, scrub: Callable[[str], str] = _unchanged) -> LLMResponse:
        """Text (the text blocks, joined), usage and model from a message; a message without text, or one
        that stopped with a refusal, is a failure that says why (see ``_codec``)."""
        blocks = data["content"]
        if not isinstance(blocks, list):
            raise TypeError(f"content is {type(blocks).__name__}, not a list of blocks")
        text = "".join(block["text"] for block in blocks if block.get("type") == "text")
        answered = str(data.get("model") or model)
        stop = data.get("stop_reason")
        if stop == "refusal":  # whatever text came before the refusal is not an answer
            raise refused(answered, "the reply stopped with stop_reason 'refusal'")
        if text and not text.isspace():  # whitespace alone is no text
            return LLMResponse(text, _usage(data), answered, finish_reason=stop if isinstance(stop, str) else "")
        if stop == "max_tokens":
            raise truncated(answered)
        raise malformed(f"{answered} replied with no text (stop_reason {stop!r})")


class AnthropicMessages(AnthropicBatches, HTTPBackend):
    """An async LLM over the Anthropic Messages API; see `anthropic`. It offers Message Batches too
    (`AnthropicBatches`), for `semgrad.effects`' ``batched``."""

    provider = "anthropic"
    factory = "anthropic"
    key_env = "ANTHROPIC_API_KEY"

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str | None,
        timeout: float,
        models: Mapping[str, str] | None,
        max_tokens: int,
        deadline: float | None = None,
        prompt_cache: bool = True,
    ) -> None:
        if max_tokens < 1:
            raise ValueError(f"max_tokens must be at least 1, got {max_tokens}")
        codec = AnthropicCodec(model, models or {}, max_tokens=max_tokens, prompt_cache=prompt_cache)
        super().__init__(base_url=base_url, codec=codec, api_key=api_key, timeout=timeout, deadline=deadline)

    @property
    def max_tokens(self) -> int:
        """The reply length cap when a request's options set none."""
        return self.codec.max_tokens  # type: ignore[attr-defined, no-any-return]

    def __repr__(self) -> str:
        return super().__repr__()[:-1] + f", max_tokens={self.max_tokens})"


def anthropic(
    model: str,
    *,
    api_key: str | None = None,
    base_url: str | None = None,
    timeout: float = 60.0,
    deadline: float | None = None,
    max_tokens: int = 1024,
    models: Mapping[str, str] | None = None,
    prompt_cache: bool = True,
) -> AnthropicMessages:
    """An async LLM over the Anthropic Messages API.

    Needs the ``http`` extra (httpx), imported on the first call.

    Args:
        model: The model to ask, e.g. ``"claude-haiku-4-5"``.
        api_key: The key; default ``$ANTHROPIC_API_KEY``.
        base_url: The API root; default ``$ANTHROPIC_BASE_URL``, else
            ``https://api.anthropic.com``.
        timeout: Seconds for connecting, and between bytes of the reply (not for the
            whole call: a server that sends a byte now and then holds it longer).
        deadline: Seconds for the whole call, sending and reading included; past it the
            call fails with a retryable ``timeout`` error. None (the default): 600 s
            (``DEFAULT_DEADLINE``, as the providers' own SDKs), or `timeout` if longer.
            ``Runner(..., timeout=...)`` and ``fit(..., timeout=...)`` bound a call from
            outside too, retries included.
        max_tokens: The reply length cap when a request's options set none
            (the API requires one).
        models: A model per engine ("forward", "backward", "optimizer");
            engines not listed use `model`.
        prompt_cache: Mark each request's system text for Anthropic's prompt
            cache (``cache_control``): a node's requests share it, so the ones
            after the first read it at a tenth of the input price (writing it
            costs 1.25 times, once per five minutes). On by default; it changes
            no reply, so it does not key caches.

    Returns:
        The backend. Its ``identity`` (provider, endpoint, model, models, and
        settings: `max_tokens`, the API version) keys caches; neither it nor
        its repr shows the key.

    Examples:
        >>> llm = anthropic("claude-haiku-4-5", api_key="sk-ant-x", models={"optimizer": "claude-opus-4-1"})
        >>> llm.identity["models"]
        FrozenMap({'optimizer': 'claude-opus-4-1'})
        >>> "sk-ant-x" in repr(llm)
        False
    """
    return AnthropicMessages(
        base_url=setting(base_url, "ANTHROPIC_BASE_URL", DEFAULT_BASE_URL) or DEFAULT_BASE_URL,
        model=model,
        api_key=setting(api_key, "ANTHROPIC_API_KEY"),
        timeout=timeout,
        deadline=deadline,
        models=models,
        max_tokens=max_tokens,
        prompt_cache=prompt_cache,
    )
