"""The in-run memo: an identical request within a run is answered once.

The paper's code memoises its ``chat`` for the length of a run: a request it has
already sent at temperature 0 is answered from memory, and no call is made. The
official protocol does the same with `memoized`, which keeps each reply in memory
(never on disk) for as long as the wrapper lives -- one run -- and counts its
answers as ``hits``, apart from calls. Only deterministic requests (temperature 0)
are memoised unless told otherwise: at any other temperature an identical request
is a deliberate new draw.
"""

from __future__ import annotations

from typing import Any

from ..core import LLMRequest, LLMResponse
from ._cache import cached
from ._routing import call, identity_of

__all__ = ["memoized"]


def _deterministic(request: LLMRequest) -> bool:
    temperature = dict(request.options).get("temperature")
    return isinstance(temperature, (int, float)) and not isinstance(temperature, bool) and temperature == 0


class _Memoized:
    """An async LLM answering an identical deterministic request once (see the module doc)."""

    is_async = True

    def __init__(self, inner: Any, every_temperature: bool) -> None:
        self.inner = inner
        self.every_temperature = every_temperature
        self._memo = cached(inner)
        self._passed = 0

    @property
    def identity(self) -> Any:
        """The wrapped LLM's identity."""
        return identity_of(self.inner)

    @property
    def hits(self) -> int:
        """Requests answered from the memo (or from an identical call in flight): no call each."""
        return int(self._memo.hits)

    @property
    def calls(self) -> int:
        """Requests passed on to the wrapped LLM."""
        return int(self._memo.misses) + self._passed

    async def __call__(self, request: LLMRequest) -> LLMResponse:
        if self.every_temperature or _deterministic(request):
            return await self._memo(request)  # type: ignore[no-any-return]
        self._passed += 1
        return await call(self.inner, request)

    def __repr__(self) -> str:
        return f"memoized({self.inner!r})"


def memoized(llm: Any, *, every_temperature: bool = False) -> Any:
    """Wrap `llm` so an identical request is answered once for as long as the wrapper lives (one run).

    A failed call is not remembered (it is asked again). ``.hits`` counts the answers
    from memory, ``.calls`` the requests passed on; put it *outside* any counting
    middleware so a memo hit is never counted as a call.

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
        >>> [anyio.run(llm, r).text for _ in range(3)], llm.hits, llm.calls
        (['4', '4', '4'], 2, 1)
        >>> hot = LLMRequest((Message("user", "2+2?"),), options={"temperature": 0.7})
        >>> _ = anyio.run(llm, hot); _ = anyio.run(llm, hot); llm.hits, llm.calls
        (2, 3)
    """
    if not callable(llm):
        raise TypeError(f"memoized needs an LLM (a callable), got {type(llm).__name__}")
    return _Memoized(llm, every_temperature)
