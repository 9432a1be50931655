"""Requests and replies: the values that cross the line between core and effects.

The core never calls an LLM. It emits `LLMRequest` values; the effects layer
answers each with a `Reply`, which is `Success(LLMResponse)` or
`Failure(LLMError)`. One failed call is data for the core to judge, never an
exception that cancels its siblings.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any, Literal, TypeAlias

import attrs
from returns.result import Failure, Result, Success

from ._frozen import FrozenMap, freeze, slot_setters, to_frozen_map

__all__ = [
    "ENGINES",
    "PURPOSES",
    "LLMError",
    "LLMFailure",
    "LLMRequest",
    "LLMResponse",
    "Message",
    "Reply",
    "SampleId",
    "as_reply",
    "request_key",
]

#: Logical roles a request is addressed to; a runner maps each to a backend or model.
ENGINES = ("forward", "backward", "optimizer")
#: What a request is for. The gate's validation scoring uses ordinary "forward" calls.
PURPOSES = ("forward", "evaluate", "backward", "critique", "rewrite", "summarize")

Role = Literal["system", "user", "assistant"]
_ROLES = frozenset(("system", "user", "assistant"))
_PURPOSES = frozenset(PURPOSES)
_NO_OPTIONS: FrozenMap[str, Any] = FrozenMap()


def _check_role(instance: Any, attribute: Any, value: str) -> None:
    if value not in _ROLES:
        raise ValueError(f"message role must be 'system', 'user' or 'assistant', got {value!r}")


def _check_purpose(instance: Any, attribute: Any, value: str) -> None:
    if value not in _PURPOSES:
        raise ValueError(f"purpose must be one of {', '.join(PURPOSES)}; got {value!r}")


SampleId: TypeAlias = int | str | None


@attrs.frozen
class Message:
    """One chat message.

    Examples:
        >>> Message("user", "Hello")
        Message(role='user', content='Hello')
    """

    role: Role = attrs.field(validator=_check_role)
    content: str


def _messages(value: Any) -> tuple[Message, ...]:
    return value if type(value) is tuple else tuple(value)


def _targets(value: Any) -> tuple[str, ...]:
    if type(value) is tuple:
        return value
    if isinstance(value, str):
        raise TypeError("targets must be a sequence of input names, not a single string")
    return tuple(value)


@attrs.frozen
class LLMRequest:
    """A request for one LLM reply, with the metadata fakes and caches key on.

    Attributes:
        messages: The chat messages, system message first if any.
        engine: Logical role: "forward", "backward" or "optimizer".
        purpose: "forward", "evaluate", "backward", "critique", "rewrite" or "summarize".
        node: The graph node (or parameter) the request is about, if any.
        sample: The dataset item the request is about, if any.
        draw: Repeat index: deliberate repeats of one prompt differ here, so a
            cache does not merge them.
        targets: For backward requests, the input node names the reply must answer
            for, in input order.
        options: Sampling options (temperature, max_tokens, ...).

    Examples:
        >>> r = LLMRequest((Message("user", "2+2?"),), purpose="forward", node="answer")
        >>> r.engine, r.draw, r.targets
        ('forward', 0, ())
        >>> r.prompt
        '2+2?'
    """

    messages: tuple[Message, ...] = attrs.field(converter=_messages)
    engine: str = "forward"
    purpose: str = attrs.field(default="forward", validator=_check_purpose)
    node: str | None = None
    sample: SampleId = None
    draw: int = 0
    targets: tuple[str, ...] = attrs.field(default=(), converter=_targets)
    options: FrozenMap[str, Any] = attrs.field(default=_NO_OPTIONS, converter=to_frozen_map)

    @property
    def prompt(self) -> str:
        """The text of the last user message (what a simple fake usually reads)."""
        for message in reversed(self.messages):
            if message.role == "user":
                return message.content
        return ""

    @property
    def system(self) -> str:
        """The system message's text, or "" when there is none."""
        return next((m.content for m in self.messages if m.role == "system"), "")


def _canonical(request: LLMRequest) -> dict[str, Any]:
    return {
        "messages": [[m.role, m.content] for m in request.messages],
        "engine": request.engine,
        "purpose": request.purpose,
        "node": request.node,
        "sample": request.sample,
        "draw": request.draw,
        "targets": list(request.targets),
        "options": {k: _plain(v) for k, v in sorted(request.options.items())},
    }


def _plain(value: Any) -> Any:
    """An option's value as JSON holds it: a mapping (``response_format``'s) as a dict, a tuple as a list."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    return value


def request_key(request: LLMRequest) -> str:
    """A stable hex digest of the canonical request (every field, options sorted).

    Equal requests give equal keys in every process and on every machine.

    Examples:
        >>> a = LLMRequest((Message("user", "hi"),), options={"temperature": 0})
        >>> b = LLMRequest((Message("user", "hi"),), options={"temperature": 0})
        >>> request_key(a) == request_key(b), len(request_key(a))
        (True, 64)
        >>> request_key(a) == request_key(attrs.evolve(a, draw=1))
        False
    """
    blob = json.dumps(_canonical(request), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


_NO_USAGE: FrozenMap[str, int] = FrozenMap()

# Trusted constructors for the hot path. Each builds exactly the value the public
# constructor would build from arguments that are already in canonical form
# (messages and targets as tuples, options a FrozenMap, a valid role and purpose),
# skipping the converters and validators that attrs runs per field; a test checks
# that they agree with the public constructors.
# (Each field is set through its slot's own setter: cheaper than `object.__setattr__`.)
_M_ROLE, _M_CONTENT = slot_setters(Message, "role", "content")
_R_MESSAGES, _R_ENGINE, _R_PURPOSE, _R_NODE, _R_SAMPLE, _R_DRAW, _R_TARGETS, _R_OPTIONS = slot_setters(
    LLMRequest, "messages", "engine", "purpose", "node", "sample", "draw", "targets", "options"
)


def _message(role: str, content: str) -> Message:
    message = object.__new__(Message)
    _M_ROLE(message, role)
    _M_CONTENT(message, content)
    return message


def _request(
    messages: tuple[Message, ...],
    engine: str,
    purpose: str,
    node: str | None,
    sample: SampleId,
    targets: tuple[str, ...],
    options: FrozenMap[str, Any],
) -> LLMRequest:
    request = object.__new__(LLMRequest)
    _R_MESSAGES(request, messages)
    _R_ENGINE(request, engine)
    _R_PURPOSE(request, purpose)
    _R_NODE(request, node)
    _R_SAMPLE(request, sample)
    _R_DRAW(request, 0)
    _R_TARGETS(request, targets)
    _R_OPTIONS(request, options)
    return request


def _usage(value: Any) -> FrozenMap[str, int]:
    return value if isinstance(value, FrozenMap) else freeze(value or {})


@attrs.frozen
class LLMResponse:
    """One LLM reply: its text, token usage (e.g. ``input_tokens``, ``output_tokens``) and model.

    ``memo_hit`` is True when an in-run memo (``effects.memoized``) answered the request
    from memory: no call was made, and the runner and `fit`'s budget count it as a memo
    hit, never as a call (its usage is the original call's, already counted). ``cache_hit``
    is True when a cache (``effects.cached``, a run's journal) answered it from storage, in
    the same sense. Both are provenance, not content: two replies that differ only in them
    are equal (``cache_hit`` is left out of the repr too).

    ``finish_reason`` is why the provider says the reply ended, as it says it (OpenAI's
    ``finish_reason``: ``"stop"``, ``"length"``...; Anthropic's ``stop_reason``:
    ``"end_turn"``, ``"max_tokens"``...), or "" when it said nothing. Provenance too: not
    compared, not in the repr.

    Usage keys: ``input_tokens`` (every prompt token), ``output_tokens``, and of the input
    tokens ``cached_input_tokens`` (read from the provider's prompt cache) and
    ``cache_write_tokens`` (written to it), when the provider reports them.

    Examples:
        >>> stopped = LLMResponse("4", {"input_tokens": 3}, "m", finish_reason="stop")
        >>> stopped == LLMResponse("4", {"input_tokens": 3}, "m"), stopped.finish_reason
        (True, 'stop')
    """

    text: str = attrs.field(validator=attrs.validators.instance_of(str))
    usage: FrozenMap[str, int] = attrs.field(default=FrozenMap(), converter=_usage)
    model: str = ""
    memo_hit: bool = attrs.field(default=False, eq=False)
    cache_hit: bool = attrs.field(default=False, eq=False, repr=False)
    finish_reason: str = attrs.field(default="", eq=False, repr=False)


_P_TEXT, _P_USAGE, _P_MODEL, _P_MEMO, _P_CACHE, _P_FINISH = slot_setters(
    LLMResponse, "text", "usage", "model", "memo_hit", "cache_hit", "finish_reason"
)


def _response(text: str) -> LLMResponse:
    response = object.__new__(LLMResponse)
    _P_TEXT(response, text)
    _P_USAGE(response, _NO_USAGE)
    _P_MODEL(response, "")
    _P_MEMO(response, False)
    _P_CACHE(response, False)
    _P_FINISH(response, "")
    return response


def _trusted_success() -> Any:
    """A ``value -> Success(value)`` that skips returns' two ``__init__`` calls, when it can.

    It sets the container's one slot directly; if a returns release ever stores the
    value differently, it falls back to `Success` itself (a test checks they agree).
    """
    from returns.primitives.container import BaseContainer

    slot = BaseContainer.__dict__.get("_inner_value")
    if slot is None:
        return Success
    set_value = slot.__set__
    new = object.__new__

    def success(value: Any) -> Success[Any]:
        reply = new(Success)
        set_value(reply, value)
        return reply

    probe = success("probe")
    return success if probe == Success("probe") and probe.unwrap() == "probe" else Success


_success = _trusted_success()


@attrs.frozen
class LLMError:
    """A failed call, as data.

    Attributes:
        kind: A short machine-readable category: "timeout", "rate_limit", "server",
            "auth", "bad_request", "connection", "malformed", "budget",
            "exception", ...
        message: A human-readable explanation (never contains an API key).
        retryable: Whether trying the same request again may succeed.
        retry_after: Seconds the provider asked us to wait, when it said so.
    """

    kind: str
    message: str
    retryable: bool = False
    retry_after: float | None = None


class LLMFailure(Exception):
    """Raised by an LLM callable to report a typed `LLMError`.

    The runner turns it (and any other exception) into a `Failure` reply.
    """

    def __init__(self, error: LLMError) -> None:
        super().__init__(f"{error.kind}: {error.message}")
        self.error = error


Reply: TypeAlias = Result[LLMResponse, LLMError]


def as_reply(value: object) -> Reply:
    """Normalise what an LLM callable returned into a `Reply`.

    Accepts an `LLMResponse`, a plain `str`, an `LLMError`, or a `Result` of those.

    Examples:
        >>> as_reply("4")
        <Success: LLMResponse(text='4', usage=FrozenMap({}), model='', memo_hit=False)>
    """
    if type(value) is str:
        return _success(_response(value))
    if isinstance(value, str):
        return Success(LLMResponse(value, _NO_USAGE))
    if isinstance(value, LLMResponse):
        return Success(value)
    if isinstance(value, LLMError):
        return Failure(value)
    if isinstance(value, Success):
        return as_reply(value.unwrap())
    if isinstance(value, Result):
        failure = value.failure()
        return Failure(failure if isinstance(failure, LLMError) else LLMError("exception", str(failure)))
    return Failure(LLMError("bad_reply", f"an LLM returned {type(value).__name__}; expected str or LLMResponse"))
