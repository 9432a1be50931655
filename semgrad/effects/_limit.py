"""Limiting: at most C calls at once, and requests or tokens per minute.

Rates are kept by `Bucket`, a token bucket that lends: a caller takes what it
needs at once and waits until the bucket has refilled the debt. Reservations
are made without awaiting, so concurrent callers queue up fairly with no lock,
and a bucket of capacity 1 spaces requests evenly. Tokens are estimated from
the message length (about 4 characters a token, plus ``max_tokens`` if set)
and corrected from the usage each reply reports.
"""

from __future__ import annotations

import math
import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from ..core import LLMRequest, LLMResponse
from ._routing import Middleware, call

__all__ = ["Bucket", "estimate_tokens", "limited"]

Sleep = Callable[[float], Awaitable[Any]]
Clock = Callable[[], float]


def estimate_tokens(request: LLMRequest) -> int:
    """A rough token count for `request`: its characters / 4, plus the output cap if one is set
    (``max_tokens``, or ``max_completion_tokens`` as OpenAI's API names it; the larger of the two).

    Examples:
        >>> from semgrad.core import Message
        >>> estimate_tokens(LLMRequest((Message("user", "x" * 40),), options={"max_tokens": 10}))
        20
        >>> estimate_tokens(LLMRequest((Message("user", "x" * 40),), options={"max_completion_tokens": 4096}))
        4106
    """
    chars = sum(len(m.content) for m in request.messages)
    options = request.options
    caps = [options.get(name) for name in ("max_tokens", "max_completion_tokens")]
    reserved = max((cap for cap in caps if type(cap) is int and cap > 0), default=0)
    return math.ceil(chars / 4) + reserved


class Bucket:
    """A token bucket that refills at `rate` per second up to `capacity`, and lends.

    `reserve(n)` takes `n` tokens now (the level may go negative) and returns
    the seconds the caller must wait until its share exists. Requests larger
    than the capacity are charged the capacity, so they cannot wait forever.

    Examples:
        >>> now = [0.0]
        >>> rpm = Bucket(rate=2.0, capacity=1, clock=lambda: now[0])
        >>> [rpm.reserve(1) for _ in range(3)]
        [0.0, 0.5, 1.0]
        >>> now[0] = 10.0; rpm.reserve(1)
        0.0
    """

    def __init__(self, rate: float, capacity: float, *, clock: Clock = time.monotonic) -> None:
        if rate <= 0 or capacity <= 0:
            raise ValueError(f"a bucket needs a positive rate and capacity, got rate={rate}, capacity={capacity}")
        self.rate = rate
        self.capacity = capacity
        self._clock = clock
        self._level = float(capacity)
        self._updated = clock()
        #: Reservations made so far; `release` refunds only the latest one.
        self.reservations = 0

    def _refill(self) -> None:
        now = self._clock()
        self._level = min(self.capacity, self._level + (now - self._updated) * self.rate)
        self._updated = now

    def reserve(self, n: float) -> float:
        """Take `n` tokens; return the seconds to wait before using them."""
        self._refill()
        self._level -= min(n, self.capacity)
        self.reservations += 1
        return max(0.0, -self._level / self.rate)

    def release(self, n: float, reservation: int) -> bool:
        """Give back the `n` tokens of a reservation never used (its caller was cancelled while waiting).

        `reservation` is `reservations` just after it was made. Only the latest
        reservation is refunded: the callers that reserved after it were told
        their waits counting its tokens, so refunding them would let a new caller
        take the same turn as one of those, and go over the rate. Returns whether
        the tokens were given back.

        Examples:
            >>> rpm = Bucket(rate=1.0, capacity=1, clock=lambda: 0.0)
            >>> rpm.reserve(1), rpm.reserve(1)
            (0.0, 1.0)
            >>> mine = rpm.reservations; rpm.reserve(1)
            2.0
            >>> rpm.release(1, mine)  # a later caller waits 2 s counting it: not refunded
            False
            >>> rpm.release(1, rpm.reservations), rpm.reserve(1)
            (True, 2.0)
        """
        if reservation != self.reservations:
            return False
        self.adjust(min(n, self.capacity))
        return True

    def adjust(self, n: float) -> None:
        """Give back `n` tokens (or take more, when negative), e.g. after real usage is known."""
        self._refill()
        self._level = min(self.capacity, self._level + n)


class _Limited(Middleware):
    """An async LLM that runs its inner LLM under concurrency and rate limits."""

    def __init__(
        self,
        inner: Any,
        max_concurrency: int | None,
        requests: Bucket | None,
        tokens: Bucket | None,
        sleep: Sleep,
    ) -> None:
        self.inner = inner
        self.max_concurrency = max_concurrency
        self._requests = requests
        self._tokens = tokens
        self._sleep = sleep
        self._limiter: anyio.CapacityLimiter | None = None

    async def __call__(self, request: LLMRequest) -> LLMResponse:
        if self.max_concurrency is None:
            return await self._paced(request)
        if self._limiter is None:
            self._limiter = anyio.CapacityLimiter(self.max_concurrency)
        async with self._limiter:
            return await self._paced(request)

    async def _paced(self, request: LLMRequest) -> LLMResponse:
        estimate = min(estimate_tokens(request), int(self._tokens.capacity)) if self._tokens is not None else 0
        waits = []
        if self._requests is not None:
            waits.append(self._requests.reserve(1))
        if self._tokens is not None:
            waits.append(self._tokens.reserve(estimate))
        tickets = (
            self._requests.reservations if self._requests is not None else 0,
            self._tokens.reservations if self._tokens is not None else 0,
        )
        try:
            if max(waits, default=0.0) > 0:
                await self._sleep(max(waits))
        except BaseException:
            self._give_back(estimate, tickets)
            raise
        response = await call(self.inner, request)
        if self._tokens is not None and "input_tokens" in response.usage:
            used = int(response.usage.get("input_tokens", 0)) + int(response.usage.get("output_tokens", 0))
            self._tokens.adjust(estimate - used)
        return response

    def _give_back(self, estimate: int, tickets: tuple[int, int]) -> None:
        if self._requests is not None:
            self._requests.release(1, tickets[0])
        if self._tokens is not None:
            self._tokens.release(estimate, tickets[1])

    def __repr__(self) -> str:
        return f"limited({self.inner!r}, max_concurrency={self.max_concurrency!r})"


def limited(
    llm: Any,
    max_concurrency: int | None = None,
    requests_per_minute: float | None = None,
    tokens_per_minute: float | None = None,
    *,
    clock: Clock = time.monotonic,
    sleep: Sleep = anyio.sleep,
) -> Any:
    """Wrap `llm` so at most `max_concurrency` calls run at once, at a bounded rate.

    Requests are spaced evenly at ``60 / requests_per_minute`` seconds. Tokens
    may burst up to a minute's worth, then flow at ``tokens_per_minute``.

    Args:
        llm: A sync or async LLM.
        max_concurrency: Calls in flight at once (None: no limit).
        requests_per_minute: Requests started per minute (None: no limit).
        tokens_per_minute: Estimated tokens per minute (None: no limit).
        clock: Monotonic seconds (tests inject a fake).
        sleep: Awaitable sleep (tests inject a fake).

    Returns:
        An async LLM with the same ``identity`` as `llm`.

    Raises:
        ValueError: When a limit is not positive.

    Examples:
        >>> from semgrad.core import LLMRequest, Message
        >>> llm = limited(lambda request: "ok", max_concurrency=2, requests_per_minute=6000)
        >>> anyio.run(llm, LLMRequest((Message("user", "hi"),))).text
        'ok'
    """
    if not callable(llm):
        raise TypeError(f"limited needs an LLM (a callable), got {type(llm).__name__}")
    for name, value in (
        ("max_concurrency", max_concurrency),
        ("requests_per_minute", requests_per_minute),
        ("tokens_per_minute", tokens_per_minute),
    ):
        if value is not None and not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
            raise ValueError(f"{name} must be positive and finite (or None for no limit), got {value!r}")
    if max_concurrency is not None and int(max_concurrency) != max_concurrency:
        raise ValueError(f"max_concurrency must be a whole number, got {max_concurrency}")
    if tokens_per_minute is not None and tokens_per_minute < 1:  # a call's estimate is capped at a whole minute's
        raise ValueError(f"tokens_per_minute must be at least 1 (or None for no limit), got {tokens_per_minute!r}")
    requests = Bucket(requests_per_minute / 60.0, 1, clock=clock) if requests_per_minute else None
    tokens = Bucket(tokens_per_minute / 60.0, tokens_per_minute, clock=clock) if tokens_per_minute else None
    concurrency = int(max_concurrency) if max_concurrency is not None else None
    return _Limited(llm, concurrency, requests, tokens, sleep)
