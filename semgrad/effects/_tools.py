"""Tool calls of systems written as Python: a timeout, retries of their own, a cache when deterministic.

A tool (``ctx.tool(name, fn, **arguments)``) is an effect: the recorder calls it here,
never in the core. `call_tool` calls a sync or async `fn` with the arguments, each
attempt within `timeout` seconds (a sync function is then run in a worker thread,
abandoned when its time is up), and tries again up to `retries` times after it raised
or ran out of time; the outcome is a `ToolOutcome`, a value or the failure's message.

A tool the user marks deterministic is answered from a `ToolCache` when the same
arguments were seen before: a store of `cached`'s kind (`MemoryStore`, `SqliteStore`),
keyed by the tool's name and its arguments as JSON. Only calls whose arguments and
result survive JSON exactly are kept, so a replay gives the very value; what is read
back is checked like any file's content (a damaged entry is a miss).
"""

from __future__ import annotations

import hashlib
import inspect
import json
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

import anyio
import attrs

from ..core import LLMRequest, LLMResponse, Message
from ._cache import MemoryStore, Store

__all__ = ["ToolCache", "ToolOutcome", "call_tool"]

#: The largest cached result read back, in characters (a bigger one is a damaged entry).
_MAX_CACHED = 10_000_000


@attrs.frozen
class ToolOutcome:
    """What one tool call gave: its value, or why it failed.

    Attributes:
        value: The tool's result (None when it failed).
        error: "" on success, else the failure's message (``"tool 'lookup' raised KeyError: ..."``).
        kind: "" on success, else ``"exception"`` or ``"timeout"``.
        cache_hit: True when a `ToolCache` answered it (no call was made).
    """

    value: Any = None
    error: str = ""
    kind: str = ""
    cache_hit: bool = False


class ToolCache:
    """Results of deterministic tools, in a store of `cached`'s kind (a dict by default).

    Examples:
        >>> cache = ToolCache()
        >>> anyio.run(call_tool, "double", lambda x: 2 * x, {"x": 3}, None, 0, cache)
        ToolOutcome(value=6, error='', kind='', cache_hit=False)
        >>> anyio.run(call_tool, "double", lambda x: 0, {"x": 3}, None, 0, cache).cache_hit
        True
    """

    def __init__(self, store: Store | None = None) -> None:
        self.store = store if store is not None else MemoryStore()

    @staticmethod
    def key(tool: str, arguments: Mapping[str, Any]) -> tuple[str, str] | None:
        """The cache key of a call and its arguments as JSON, or None when they do not survive JSON exactly."""
        text = _exact_json({"tool": tool, "arguments": dict(arguments)})
        if text is None:
            return None
        return hashlib.sha256(("tool\n" + text).encode("utf-8")).hexdigest(), text

    async def get(self, key: str) -> tuple[bool, Any]:
        """``(True, result)`` for a stored result, else ``(False, None)`` (a damaged entry is a miss)."""
        stored = await self.store.get(key)
        if stored is None or not isinstance(stored.text, str) or len(stored.text) > _MAX_CACHED:
            return False, None
        try:
            return True, json.loads(stored.text)
        except (ValueError, RecursionError):
            return False, None

    async def put(self, key: str, tool: str, arguments: str, result: Any) -> None:
        """Keep `result` when it survives JSON exactly."""
        text = _exact_json(result)
        if text is not None:
            request = LLMRequest((Message("user", arguments),), engine="tool", node=tool)
            await self.store.put(key, request, LLMResponse(text, model=f"tool:{tool}"))


def _exact_json(value: Any) -> str | None:
    """`value` as canonical JSON when reading it back gives an equal value of the same types, else None."""
    try:
        text = json.dumps(value, sort_keys=True, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        return None
    return text if _same(json.loads(text), value) else None


def _same(read: Any, value: Any) -> bool:
    if type(read) is not type(value):
        return False
    if isinstance(value, dict):
        return read.keys() == value.keys() and all(_same(read[k], value[k]) for k in value)
    if isinstance(value, list):
        return len(read) == len(value) and all(_same(a, b) for a, b in zip(read, value))
    return bool(read == value)


async def call_tool(
    tool: str,
    fn: Callable[..., Any],
    arguments: Mapping[str, Any],
    timeout: float | None = None,
    retries: int = 0,
    cache: ToolCache | None = None,
) -> ToolOutcome:
    """Call `fn(**arguments)`: each attempt within `timeout` seconds, up to `retries` more attempts
    after a failure; with a `cache` (a deterministic tool), answered from it when it can be."""
    key = ToolCache.key(tool, arguments) if cache is not None else None
    if key is not None:
        found, value = await cache.get(key[0])  # type: ignore[union-attr]
        if found:
            return ToolOutcome(value, cache_hit=True)
    outcome = ToolOutcome(error=f"tool {tool!r} was not called", kind="exception")
    for _ in range(retries + 1):
        outcome = await _attempt(tool, fn, arguments, timeout)
        if not outcome.kind:
            break
    if key is not None and not outcome.kind:
        await cache.put(key[0], tool, key[1], outcome.value)  # type: ignore[union-attr]
    return outcome


async def _attempt(
    tool: str, fn: Callable[..., Any], arguments: Mapping[str, Any], timeout: float | None
) -> ToolOutcome:
    """One call of the tool, its failure (an exception, or no result within `timeout`) as data."""
    try:
        with anyio.fail_after(timeout):
            if inspect.iscoroutinefunction(fn):
                value = await fn(**arguments)
            elif timeout is not None:  # a sync tool in a thread, so that the time limit can stop waiting for it
                value = await anyio.to_thread.run_sync(partial(fn, **arguments), abandon_on_cancel=True)
            else:
                value = fn(**arguments)
                if inspect.isawaitable(value):
                    value = await value
    except TimeoutError:
        return ToolOutcome(error=f"tool {tool!r} gave no result within {timeout} s", kind="timeout")
    except Exception as exc:  # a tool's failure is data: its message becomes part of the feedback
        return ToolOutcome(error=f"tool {tool!r} raised {type(exc).__name__}: {exc}", kind="exception")
    return ToolOutcome(value)
