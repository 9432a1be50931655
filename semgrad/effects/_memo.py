"""The in-run memo: an identical request within a run is answered once.

The paper's code memoises its ``chat`` for the length of a run: a request it has
already sent at temperature 0 is answered from memory, and no call is made. The
official protocol does the same with `memoized`, which keeps each reply in memory
(never on disk) for as long as the wrapper lives -- one run -- and counts its
answers as ``hits``, apart from calls. A reply from memory is marked
(``LLMResponse.memo_hit``): a `Runner` counts it in ``RunStatistics.memo_hits`` and
`fit`'s budget lets it through uncounted, so a memo hit is never a call. Only deterministic requests (temperature 0)
are memoised unless told otherwise: at any other temperature an identical request
is a deliberate new draw.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import anyio

from ..core import LLMRequest, LLMResponse
from ._accounting import mark_answered
from ._routing import Middleware, call

__all__ = ["memo_key", "memoized"]


def _deterministic(request: LLMRequest) -> bool:
    temperature = dict(request.options).get("temperature")
    return isinstance(temperature, (int, float)) and not isinstance(temperature, bool) and temperature == 0


def memo_key(request: LLMRequest) -> str:
    """What a provider is sent: the messages, sampling options, engine and draw (not the node, sample or
    purpose, which never reach it) -- so two nodes asking the very same question are answered once, as
    the paper's chat (keyed by its messages and model) answers them."""
    blob = json.dumps(
        [
            [[m.role, m.content] for m in request.messages],
            sorted((k, repr(v)) for k, v in dict(request.options).items()),
            request.engine,
            request.draw,
        ],
        ensure_ascii=False,
    )
    return hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()


class _Memoized(Middleware):
    """An async LLM answering an identical deterministic request once (see the module doc)."""

    def __init__(self, inner: Any, every_temperature: bool) -> None:
        self.inner = inner
        self.every_temperature = every_temperature
        self.hits = 0
        self.calls = 0
        self._known: dict[str, LLMResponse] = {}
        self._pending: dict[str, anyio.Event] = {}

    def answers_from_memory(self, request: LLMRequest) -> bool:
        """Whether `request` would be answered from memory now (no call): `fit`'s budget lets it through."""
        return (self.every_temperature or _deterministic(request)) and memo_key(request) in self._known

    async def __call__(self, request: LLMRequest) -> LLMResponse:
        if not (self.every_temperature or _deterministic(request)):
            self.calls += 1
            return await call(self.inner, request)
        key = memo_key(request)
        while key in self._pending:  # an identical call in flight: wait for it
            await self._pending[key].wait()
        if key in self._known:
            self.hits += 1
            return mark_answered(self._known[key], "memo")  # a copy with memo_hit set
        event = self._pending[key] = anyio.Event()
        try:
            self.calls += 1
            response = await call(self.inner, request)
            self._known[key] = response
            return response
        finally:
            del self._pending[key]
            event.set()

    def __repr__(self) -> str:
        return f"memoized({self.inner!r})"


def memoized(llm: Any, *, every_temperature: bool = False) -> Any:
    """Wrap `llm` so an identical request is answered once for as long as the wrapper lives (one run).

    Identical means what the provider is sent (see `memo_key`). A failed call is not
    remembered (it is asked again). ``.hits`` counts the answers from memory, ``.calls``
    the requests passed on. An answer from memory has ``memo_hit`` set: a `Runner` counts
    it as a memo hit (``RunStatistics.memo_hits``), never as a call, and `fit`'s budget
    neither counts nor refuses it. Put it *outside* any counting middleware (a tally, a
    ``budgeted`` layer), which would otherwise see it.

    Args:
        llm: A sync or async LLM.
        every_temperature: Memoise every request; by default only those sent at
            temperature 0 (the official protocol's), since at any other temperature
            asking again is a new draw.

    Examples:
        >>> import anyio
        >>> from semgrad.core import LLMRequest, Message
        >>> llm = memoized(lambda request: "4")
        >>> r = LLMRequest((Message("user", "2+2?"),), options={"temperature": 0})
        >>> [anyio.run(llm, r).memo_hit for _ in range(3)], llm.hits, llm.calls
        ([False, True, True], 2, 1)
        >>> hot = LLMRequest((Message("user", "2+2?"),), options={"temperature": 0.7})
        >>> _ = anyio.run(llm, hot); _ = anyio.run(llm, hot); llm.hits, llm.calls
        (2, 3)
    """
    if not callable(llm):
        raise TypeError(f"memoized needs an LLM (a callable), got {type(llm).__name__}")
    return _Memoized(llm, every_temperature)
