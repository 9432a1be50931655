"""The LLM protocol: one small callable from request to response."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable
from typing import Any, Protocol, runtime_checkable

from ..core import LLMRequest, LLMResponse

__all__ = ["LLM", "AsyncLLM", "SyncLLM", "is_async_llm"]


@runtime_checkable
class AsyncLLM(Protocol):
    """An async callable ``await llm(request) -> LLMResponse | str``.

    Report a typed failure by raising `semgrad.core.LLMFailure`; any other
    exception becomes an ``LLMError(kind="exception")`` reply.
    """

    async def __call__(self, request: LLMRequest) -> LLMResponse | str: ...


@runtime_checkable
class SyncLLM(Protocol):
    """A plain callable ``llm(request) -> LLMResponse | str`` (fakes, scripts).

    The async runner calls it inline, on the event loop: its calls are not
    concurrent, each blocks the loop until it returns, and a runner's `timeout`
    cannot cut one short. Wrap a blocking client as an `AsyncLLM` that calls it
    with ``await anyio.to_thread.run_sync(...)`` instead.
    """

    def __call__(self, request: LLMRequest) -> LLMResponse | str: ...


LLM = AsyncLLM | SyncLLM


def is_async_llm(llm: Any) -> bool:
    """True when calling `llm` returns an awaitable.

    An object may say so itself with an ``is_async`` attribute (wrappers whose
    inner callable decides); otherwise coroutine functions are detected.
    """
    flag = getattr(llm, "is_async", None)
    if isinstance(flag, bool):
        return flag
    return inspect.iscoroutinefunction(llm) or inspect.iscoroutinefunction(getattr(llm, "__call__", None))  # noqa: B004


def _is_awaitable(value: Any) -> bool:
    return isinstance(value, Awaitable)
