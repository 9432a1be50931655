"""Retrying: exponential backoff with jitter, on retryable errors only.

The schedule is a pure function of a frozen `RetryPolicy` (and a seed), so it can
be inspected and tested without waiting; `retrying` only decides *whether* to try
again (the error is retryable, its kind has attempts left, the provider's
``Retry-After`` is not absurd) and sleeps.
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import attrs

from ..core import FrozenMap, LLMError, LLMFailure, LLMRequest, LLMResponse, request_key
from ..core._frozen import to_frozen_map
from ._routing import Middleware, call

__all__ = ["RetryPolicy", "retrying"]

Sleep = Callable[[float], Awaitable[Any]]


def _positive_int(instance: Any, attribute: attrs.Attribute, value: int) -> None:  # type: ignore[type-arg]
    if value < 1:
        raise ValueError(f"RetryPolicy.{attribute.name} must be at least 1, got {value}")


def _non_negative(instance: Any, attribute: attrs.Attribute, value: float | None) -> None:  # type: ignore[type-arg]
    if value is not None and not value >= 0:  # NaN too
        raise ValueError(f"RetryPolicy.{attribute.name} must be >= 0, got {value}")


@attrs.frozen
class RetryPolicy:
    """How often and how long to wait before trying a failed call again.

    Attributes:
        max_attempts: Attempts in all, the first included (1 disables retries).
        base_delay: Seconds before the first retry; each retry doubles it.
        max_delay: The backoff never exceeds this many seconds.
        jitter: Scale each delay by a random factor in [0.5, 1) so that many
            clients that failed together do not retry together.
        seed: Makes the jitter reproducible (per request); None draws fresh randomness.
        max_attempts_by_kind: A lower cap for some error kinds; by default a
            malformed reply is retried once.
        max_retry_after: When a provider asks us to wait longer than this
            (a daily quota, say), give up at once instead of waiting.

    Examples:
        >>> RetryPolicy(base_delay=1, max_delay=5, jitter=False).delays()
        (1.0, 2.0, 4.0)
        >>> RetryPolicy(max_attempts=6, base_delay=1, max_delay=5, jitter=False).delays()
        (1.0, 2.0, 4.0, 5.0, 5.0)
        >>> p = RetryPolicy(seed=7)
        >>> p.delays("k") == p.delays("k"), all(0.25 <= d < 0.5 for d in p.delays()[:1])
        (True, True)
    """

    max_attempts: int = attrs.field(default=4, validator=_positive_int)
    base_delay: float = attrs.field(default=0.5, validator=_non_negative)
    max_delay: float = attrs.field(default=30.0, validator=_non_negative)
    jitter: bool = True
    seed: int | None = None
    max_attempts_by_kind: FrozenMap[str, int] = attrs.field(
        default=FrozenMap({"malformed": 2}), converter=to_frozen_map
    )
    max_retry_after: float = attrs.field(default=120.0, validator=_non_negative)

    def delays(self, salt: str = "") -> tuple[float, ...]:
        """The waits before attempts 2, 3, ... (``max_attempts - 1`` of them).

        Pure when `jitter` is off or `seed` is set: the jitter is drawn from a
        generator seeded with ``(seed, salt)``; `retrying` salts with the request key.
        """
        rng = random.Random(f"{self.seed}:{salt}") if self.seed is not None else random.Random()
        schedule = []
        for attempt in range(self.max_attempts - 1):
            delay = min(self.max_delay, self.base_delay * 2.0**attempt)
            schedule.append(delay * rng.uniform(0.5, 1.0) if self.jitter else float(delay))
        return tuple(schedule)

    def attempts_for(self, kind: str) -> int:
        """Attempts allowed for errors of `kind`."""
        return min(self.max_attempts, self.max_attempts_by_kind.get(kind, self.max_attempts))


def _error_of(exc: BaseException) -> LLMError | None:
    if isinstance(exc, LLMFailure):
        return exc.error
    if isinstance(exc, TimeoutError):
        return LLMError("timeout", str(exc) or "the call timed out", retryable=True)
    return None


class _Retrying(Middleware):
    """An async LLM that retries its inner LLM's retryable failures."""

    def __init__(self, inner: Any, policy: RetryPolicy, sleep: Sleep) -> None:
        self.inner = inner
        self.policy = policy
        self._sleep = sleep
        self.retries = 0

    async def __call__(self, request: LLMRequest) -> LLMResponse:
        delays = self.policy.delays(request_key(request))
        attempt = 0
        while True:
            attempt += 1
            try:
                return await call(self.inner, request)
            except (LLMFailure, TimeoutError) as exc:
                wait = self._wait_before_retry(_error_of(exc), attempt, delays)
                if wait is None:
                    raise
            self.retries += 1
            await self._sleep(wait)

    def _wait_before_retry(self, error: LLMError | None, attempt: int, delays: tuple[float, ...]) -> float | None:
        if error is None or not error.retryable or attempt >= self.policy.attempts_for(error.kind):
            return None
        wait = delays[attempt - 1]
        if error.retry_after is not None:
            if error.retry_after > self.policy.max_retry_after:
                return None
            wait = max(wait, error.retry_after)
        return wait

    def __repr__(self) -> str:
        return f"retrying({self.inner!r}, policy={self.policy!r})"


def retrying(llm: Any, policy: RetryPolicy = RetryPolicy(), *, sleep: Sleep = anyio.sleep) -> Any:
    """Wrap `llm` so retryable failures are tried again with backoff and jitter.

    Only errors marked ``retryable`` (rate limits, server errors, timeouts,
    dropped connections, a malformed reply) and `TimeoutError` are retried;
    the wait honours the provider's ``retry_after``. When attempts run out, the
    last error is raised unchanged. ``.retries`` counts the retries made.

    Args:
        llm: A sync or async LLM.
        policy: The retry schedule and caps.
        sleep: Awaitable sleep (tests pass a fake to skip real waiting).

    Returns:
        An async LLM with the same ``identity`` as `llm`.

    Examples:
        >>> from semgrad.core import LLMRequest, Message
        >>> calls = []
        >>> def flaky(request):
        ...     calls.append(request)
        ...     if len(calls) < 3:
        ...         raise LLMFailure(LLMError("server", "HTTP 503", retryable=True))
        ...     return "ok"
        >>> llm = retrying(flaky, RetryPolicy(base_delay=0.001))
        >>> anyio.run(llm, LLMRequest((Message("user", "hi"),))).text, llm.retries
        ('ok', 2)
    """
    if not callable(llm):
        raise TypeError(f"retrying needs an LLM (a callable), got {type(llm).__name__}")
    if not isinstance(policy, RetryPolicy):
        raise TypeError(f"policy must be a RetryPolicy, got {type(policy).__name__}")
    return _Retrying(llm, policy, sleep)
