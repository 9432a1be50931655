"""Fake LLMs for tests, doctests, demos and benchmarks (public, like httpcore's mocks).

Every fake is an LLM in the sense of `semgrad.effects`: a callable from
`LLMRequest` to a reply. They answer from request metadata (`purpose`, `node`,
`sample`, `targets`), and the ``reply_*`` helpers write replies in the exact
form the core's parsers read.
"""

from __future__ import annotations

import hashlib
import inspect
import math
import random
import re
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any

import anyio

from ..core import FrozenMap, LLMError, LLMFailure, LLMRequest, request_key
from ..core._parse import format_backward, format_result, format_tagged
from ..core.optim._named_blocks import format_named

__all__ = [
    "FunctionLLM",
    "HashLLM",
    "LatencyLLM",
    "RecordingLLM",
    "ScriptedLLM",
    "reply_backward",
    "reply_critique",
    "reply_forward",
    "reply_rewrite",
    "reply_rewrites",
    "reply_summary",
]


def _carried(helper: str, tag: str, text: str, what: str = "the text") -> str:
    """`text`, once checked that a ``<tag>`` block carries it back through the parsers: not empty
    (nor whitespace alone, which they strip) and without the tag itself, which would end the block early."""
    if not text.strip():
        raise ValueError(f"{helper}: {what} is empty (or whitespace alone), which the parser reads as no answer")
    if "<" in text and re.search(rf"<\s*/?\s*{tag}\s*>", text, re.IGNORECASE):
        raise ValueError(
            f"{helper}: {what} contains the tag <{tag}> or </{tag}>, which the parser reads as a tag, not text"
        )
    return text


def reply_forward(request: LLMRequest, value: Any, *, reasoning: str = "") -> str:
    """A forward reply whose parsed value is `value`: `reasoning` (if any), then `value` between
    ``<result>`` tags, as the forward prompt asks.

    The parser reads back ``str(value)`` without its surrounding whitespace.

    Raises:
        ValueError: When ``str(value)`` is empty or whitespace, or holds ``<result>`` or
            ``</result>`` (in any case): the parser would not read it back.

    Examples:
        >>> from semgrad.core import Message
        >>> reply_forward(LLMRequest((Message("user", "2+2?"),)), 4, reasoning="Two and two.")
        'Two and two.\\n<result>\\n4\\n</result>'
    """
    return format_result(_carried("reply_forward", "result", str(value), "the value"), reasoning)


def reply_backward(request: LLMRequest, feedback: Mapping[str, str]) -> str:
    """A backward reply giving `feedback[target]` for each of the request's targets.

    The parser reads back each text without its surrounding whitespace. Keys that
    are not targets of the request are left out, so one mapping can answer every
    node's request.

    Raises:
        ValueError: When `feedback` misses one of ``request.targets``, or a target's text
            is empty or whitespace, or holds ``</feedback>`` (in any case).
    """
    missing = [t for t in request.targets if t not in feedback]
    if missing:
        raise ValueError(f"reply_backward: no feedback for target(s) {', '.join(map(repr, missing))}")
    return format_backward(
        {t: _carried("reply_backward", "feedback", feedback[t], f"the feedback for {t!r}") for t in request.targets}
    )


def reply_rewrite(request: LLMRequest, instruction: str) -> str:
    """A rewrite reply proposing `instruction` as the parameter's new value (an instruction,
    or any trainable text), read back without surrounding whitespace.

    Examples:
        >>> from semgrad.core import Message
        >>> from semgrad.core.prompts import parse_tagged
        >>> request = LLMRequest((Message("user", "x"),), purpose="rewrite", node="answer.instruction")
        >>> parse_tagged(reply_rewrite(request, instruction="Answer with the letter only."), ["improved"]).unwrap()
        'Answer with the letter only.'

    Raises:
        ValueError: When `instruction` is empty or whitespace, or holds ``<improved>`` or ``</improved>``.
    """
    return format_tagged("improved", _carried("reply_rewrite", "improved", instruction, "the new value"))


def reply_rewrites(request: LLMRequest, values: Mapping[str, str]) -> str:
    """A rewrite reply with one value per target of the request (OptoPrime's variables,
    COPRO's candidates); targets missing from `values` are left out of the reply.

    Raises:
        ValueError: When a value is empty or whitespace, or holds ``<improved>`` or ``</improved>``.
    """
    return format_named(
        "improved",
        {
            t: _carried("reply_rewrites", "improved", values[t], f"the value for {t!r}")
            for t in request.targets
            if t in values
        },
    )


def reply_critique(request: LLMRequest, text: str) -> str:
    """A critique reply whose parsed critique is `text` (without its surrounding whitespace).

    Raises:
        ValueError: When `text` is empty or whitespace, or holds ``<critique>`` or ``</critique>``.
    """
    return format_tagged("critique", _carried("reply_critique", "critique", text))


def reply_summary(request: LLMRequest, text: str) -> str:
    """A summarize reply whose parsed summary is `text` (without its surrounding whitespace).

    Raises:
        ValueError: When `text` is empty or whitespace, or holds ``<summary>`` or ``</summary>``.
    """
    return format_tagged("summary", _carried("reply_summary", "summary", text))


class _WrappedIdentity:
    """The ``identity`` of a fake that wraps an LLM or a function (the attribute named here): the one set on
    the fake by hand, else the wrapped one's, as caches key replies by it (see the cache's docs)."""

    def __init__(self, attribute: str) -> None:
        self.attribute = attribute

    def __get__(self, fake: Any, owner: Any = None) -> Any:
        if fake is None:
            return self
        own = fake.__dict__.get("_identity")
        if own is not None:
            return own
        from ..effects._routing import identity_of

        return identity_of(getattr(fake, self.attribute))

    def __set__(self, fake: Any, value: Any) -> None:
        fake.__dict__["_identity"] = value


class FunctionLLM:
    """An LLM from a function of the request: ``fn(request) -> str | LLMResponse``.

    `fn` may be sync or async; the runner treats this LLM the same way. A text
    answer to a forward request that has no ``<result>`` tag is the result itself:
    it is sent as `reply_forward` writes it (to test unreadable forward replies,
    return an `LLMResponse`, or use a plain function as the LLM).

    Examples:
        >>> from semgrad.core import Message
        >>> llm = FunctionLLM(lambda request: request.prompt.upper())
        >>> llm(LLMRequest((Message("user", "hi"),), purpose="backward"))
        'HI'
        >>> llm(LLMRequest((Message("user", "hi"),)))
        '<result>\\nHI\\n</result>'
    """

    def __init__(self, fn: Callable[[LLMRequest], Any]) -> None:
        if not callable(fn):
            raise TypeError(f"FunctionLLM needs a callable, got {type(fn).__name__}")
        self.fn = fn
        self.is_async = inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(getattr(fn, "__call__", None))  # noqa: B004

    #: The function's identity (its module and name) unless one is set: two functions' replies never
    #: share a cache entry, as the class's name alone made them.
    identity = _WrappedIdentity("fn")

    def __call__(self, request: LLMRequest) -> Any:
        if self.is_async:
            return self._async_call(request)
        return _as_forward(request, self.fn(request))

    async def _async_call(self, request: LLMRequest) -> Any:
        return _as_forward(request, await self.fn(request))

    def __repr__(self) -> str:
        return f"FunctionLLM({getattr(self.fn, '__name__', self.fn)!r})"


def _as_forward(request: LLMRequest, value: Any) -> Any:
    """A text answer to a forward request with no ``<result>`` tag, sent as `reply_forward` writes it."""
    if type(value) is str and request.purpose == "forward" and ("<" not in value or "<result" not in value.casefold()):
        return format_result(value)  # unchecked: an empty answer stays a reply with an empty <result> block
    return value


def _digest(request: LLMRequest, salt: str) -> str:
    return hashlib.sha256((salt + request_key(request)).encode()).hexdigest()


class HashLLM:
    """A deterministic LLM whose replies derive from `request_key` (and a salt).

    Replies always parse: backward requests get one feedback per target,
    rewrite/critique/summarize requests get their tagged block, an LLM judge's
    (``evaluate``) a score of 0 and a critique, anything else a short text. Equal
    requests give equal replies in every process.

    Examples:
        >>> from semgrad.core import Message
        >>> r = LLMRequest((Message("user", "hi"),), node="a")
        >>> HashLLM()(r) == HashLLM()(r), HashLLM()(r)[:11]
        (True, '<result>\\na#')
    """

    is_async = False

    def __init__(self, salt: str = "") -> None:
        self.salt = salt

    @property
    def identity(self) -> FrozenMap[str, str]:
        """What its replies depend on besides the request, the salt included, so a cache never serves
        one salt's replies for another's.

        Examples:
            >>> HashLLM("a").identity == HashLLM("a").identity != HashLLM("b").identity
            True
        """
        return FrozenMap({"provider": "hash", "salt": self.salt})

    def __call__(self, request: LLMRequest) -> str:
        # The formatters, not the checking reply_* helpers: the texts are never blank, and a node
        # name the builder accepts holds no tag (a hand-made request's may; its reply is written as is).
        text = f"{request.node or request.purpose}#{_digest(request, self.salt)[:10]}"
        if request.purpose == "backward":
            return format_backward({t: f"{text} says improve {t}" for t in request.targets})
        if request.purpose == "rewrite" and request.targets:
            return format_named("improved", {t: f"Improved instruction {text} ({t})." for t in request.targets})
        if request.purpose == "rewrite":
            return format_tagged("improved", f"Improved instruction {text}.")
        if request.purpose == "critique":
            return format_tagged("critique", f"Critique {text}.")
        if request.purpose == "summarize":
            return format_tagged("summary", f"Summary {text}.")
        if request.purpose == "evaluate":  # `llm_judge`'s form: a hash never meets the criteria
            return format_tagged("score", "0") + "\n" + format_tagged("critique", f"Critique {text}.")
        if request.purpose == "forward":
            return format_result(text)
        return text


class ScriptedLLM:
    """Answers by matching request metadata, whatever order requests come in.

    Each entry is ``(match, answer)``: `match` maps request fields (``purpose``,
    ``node``, ``sample``, ``draw``, ``engine``, ``targets``) to the value they must
    equal, plus the special key ``"prompt_contains"``; `answer` is text, an
    `LLMResponse`, an `LLMError` (the call fails with it), or a function of the
    request returning one of those. The first matching entry answers; with no
    match, `default` answers, and without a default the call fails with an
    ``LLMError(kind="unscripted")``. A text answer to a forward request that has
    no ``<result>`` tag is the result itself: it is sent as `reply_forward` writes it.

    Examples:
        >>> from semgrad.core import Message
        >>> llm = ScriptedLLM([({"node": "answer"}, "42")], default="?")
        >>> llm(LLMRequest((Message("user", "x"),), node="answer", purpose="backward"))
        '42'
        >>> llm(LLMRequest((Message("user", "x"),)))
        '<result>\\n?\\n</result>'
    """

    is_async = False
    _FIELDS = ("purpose", "node", "sample", "draw", "engine", "targets")

    def __init__(self, entries: Iterable[tuple[Mapping[str, Any], Any]] = (), *, default: Any = None) -> None:
        self.entries = tuple((FrozenMap(match), answer) for match, answer in entries)
        for match, _ in self.entries:
            if isinstance(match.get("targets"), str):  # tuple("hint_1") would be its characters: never a match
                raise TypeError(
                    f"ScriptedLLM's targets match a sequence of names, such as ({match['targets']!r},), "
                    f"not the string {match['targets']!r}"
                )
            unknown = [k for k in match if k not in self._FIELDS and k != "prompt_contains"]
            if unknown:
                raise ValueError(f"ScriptedLLM cannot match on {unknown}; use {self._FIELDS} or 'prompt_contains'")
        self.default = default

    def _matches(self, match: Mapping[str, Any], request: LLMRequest) -> bool:
        for key, expected in match.items():
            if key == "prompt_contains":
                if expected not in "\n".join(m.content for m in request.messages):
                    return False
            elif getattr(request, key) != (tuple(expected) if key == "targets" else expected):
                return False
        return True

    def __call__(self, request: LLMRequest) -> Any:
        for match, answer in self.entries:
            if self._matches(match, request):
                return _resolve(answer, request)
        if self.default is not None:
            return _resolve(self.default, request)
        raise LLMFailure(
            LLMError(
                "unscripted",
                f"no script entry for purpose={request.purpose!r} node={request.node!r} sample={request.sample!r}",
            )
        )


def _resolve(answer: Any, request: LLMRequest) -> Any:
    value = answer(request) if callable(answer) else answer
    if isinstance(value, LLMError):
        raise LLMFailure(value)
    return _as_forward(request, value)


class RecordingLLM:
    """Wraps any LLM and keeps every request it sees, in call order.

    Examples:
        >>> from semgrad.core import Message
        >>> rec = RecordingLLM(lambda request: "ok")
        >>> rec(LLMRequest((Message("user", "x"),), purpose="forward"))
        'ok'
        >>> rec.counts()
        FrozenMap({'forward': 1})
    """

    def __init__(self, inner: Any) -> None:
        from ..effects._protocol import is_async_llm

        self.inner = inner
        self.is_async = is_async_llm(inner)
        self._requests: list[LLMRequest] = []

    #: The wrapped LLM's identity unless one is set: recording changes no reply.
    identity = _WrappedIdentity("inner")

    @property
    def requests(self) -> tuple[LLMRequest, ...]:
        """The requests seen so far."""
        return tuple(self._requests)

    def counts(self) -> FrozenMap[str, int]:
        """Calls per purpose, in first-seen order."""
        return FrozenMap(Counter(r.purpose for r in self._requests))

    def clear(self) -> None:
        """Forget the requests seen so far."""
        self._requests.clear()

    def __call__(self, request: LLMRequest) -> Any:
        self._requests.append(request)
        return self.inner(request)


class LatencyLLM:
    """Wraps any LLM with a delay per call: fixed, or seeded random per request.

    With ``jitter=sigma`` the delay is log-normal around `latency` and derives
    from the request's key and `seed`, so each request always gets the same
    delay whatever order calls happen in; `latency_for` tells it in advance,
    which lets benchmarks compute the critical-path limit.

    The delay is waited out with ``anyio.sleep`` unless `sleep` gives another
    awaitable function of seconds (the benchmarks pass one woken by a Linux
    timerfd, as precise as a socket's reply; the event loop's timers round up
    to the millisecond).

    Examples:
        >>> from semgrad.core import Message
        >>> slow = LatencyLLM(lambda request: "ok", latency=0.01, jitter=0.5, seed=1)
        >>> r = LLMRequest((Message("user", "x"),))
        >>> slow.latency_for(r) == slow.latency_for(r) > 0
        True
    """

    is_async = True

    def __init__(
        self,
        inner: Any,
        latency: float | Callable[[LLMRequest], float] = 0.0,
        *,
        jitter: float = 0.0,
        seed: int = 0,
        sleep: Callable[[float], Awaitable[Any]] | None = None,
    ) -> None:
        if not callable(latency) and latency < 0:
            raise ValueError(f"latency must be >= 0, got {latency}")
        if sleep is not None and not callable(sleep):
            raise TypeError(f"sleep must be an async function of seconds, got {sleep!r}")
        self.inner = inner
        self.latency = latency
        self.jitter = jitter
        self.seed = seed
        self.sleep = anyio.sleep if sleep is None else sleep

    #: The wrapped LLM's identity unless one is set: a delay changes no reply.
    identity = _WrappedIdentity("inner")

    def latency_for(self, request: LLMRequest) -> float:
        """The delay this request gets."""
        base = self.latency(request) if callable(self.latency) else self.latency
        if not self.jitter:
            return float(base)
        rng = random.Random(f"{self.seed}:{request_key(request)}")
        return float(base * math.exp(rng.gauss(-(self.jitter**2) / 2, self.jitter)))

    async def __call__(self, request: LLMRequest) -> Any:
        await self.sleep(self.latency_for(request))
        result = self.inner(request)
        if type(result) is not str and isinstance(result, Awaitable):  # text: skip the ABC check
            result = await result
        return result
