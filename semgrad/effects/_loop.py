"""Starting an event loop: anyio on asyncio, with uvloop's faster loop whenever it is installed.

`run_sync` (with an async LLM), `fit_sync` and the CLI start their event loops
through `run_loop`. uvloop (the ``fast`` extra, ``pip install -e '.[fast]'``; not on Windows) wakes
tasks and fires timers for less CPU than asyncio's own loop, which matters when
calls are short; the library's behaviour is the same on both loops.

Which loop: ``use_uvloop=True`` asks for uvloop (an `ImportError` when it is not
installed), ``False`` for asyncio's own loop, and ``None`` (the default) for
uvloop when it is installed and the environment variable ``SEMGRAD_UVLOOP`` is
not ``0`` (``false``, ``no`` and ``off`` count too), else asyncio's loop, silently.
The CLI's ``--no-uvloop`` sets that variable for its process.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import anyio

__all__ = ["UVLOOP_ENV", "run_loop", "uvloop_available", "uvloop_enabled"]

T = TypeVar("T")

#: Set to ``0`` to keep asyncio's own loop where uvloop is installed.
UVLOOP_ENV = "SEMGRAD_UVLOOP"
_OFF = frozenset({"0", "false", "no", "off"})


def uvloop_available() -> bool:
    """True when uvloop can be imported here (it is never imported to find out)."""
    return importlib.util.find_spec("uvloop") is not None


def uvloop_enabled(use_uvloop: bool | None = None) -> bool:
    """Whether `run_loop` would run on uvloop with this `use_uvloop` (see the module docstring).

    Examples:
        >>> uvloop_enabled(False)
        False
    """
    if use_uvloop is None:
        return os.environ.get(UVLOOP_ENV, "").strip().lower() not in _OFF and uvloop_available()
    if use_uvloop and not uvloop_available():
        raise ImportError(
            "use_uvloop=True, but uvloop is not installed (pip install -e '.[fast]' in the semgrad checkout)"
        )
    return bool(use_uvloop)


def run_loop(fn: Callable[..., Awaitable[T]], *args: Any, use_uvloop: bool | None = None) -> T:
    """``anyio.run(fn, *args)`` on asyncio, on uvloop's loop when `uvloop_enabled(use_uvloop)`.

    Examples:
        >>> async def answer() -> int:
        ...     return 42
        >>> run_loop(answer), run_loop(answer, use_uvloop=False)
        (42, 42)
    """
    # The value comes back in a box: asyncio's runner, when it ends, looks up SIGINT's handler,
    # and the look-up formats that handler, which holds the main task, whose repr shows its
    # result -- a batch of traces, say: milliseconds for a large one, for nothing.
    if uvloop_enabled(use_uvloop):
        box = anyio.run(_boxed, fn, args, backend="asyncio", backend_options={"use_uvloop": True})
    else:
        box = anyio.run(_boxed, fn, args)
    return box.value


class _Box:
    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __repr__(self) -> str:
        return "<run_loop's value>"


async def _boxed(fn: Callable[..., Awaitable[Any]], args: tuple[Any, ...]) -> _Box:
    return _Box(await fn(*args))
