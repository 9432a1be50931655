"""Where the ``semgrad`` command keeps the systems it has loaded, for one invocation.

A system spec the user types (``FILE.py:FUNCTION``) is loaded by running their
code; one command checks, plans and runs the same system, and should run that
code once. `systems_loaded_once` scopes that memory to a block (a context
variable, not process state): nothing is remembered outside it. This module
imports nothing heavy, so the command can enter the block before it knows which
subcommand runs.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

__all__ = ["systems_loaded_once"]

#: The systems loaded in the current `systems_loaded_once` block, by canonical spec (None outside one).
_LOADED: ContextVar[dict[str, Any] | None] = ContextVar("semgrad_loaded_systems", default=None)


@contextmanager
def systems_loaded_once() -> Iterator[None]:
    """Within the block, `load_system` runs the code of each spec once (a command checks, plans
    and runs the same system); the loaded systems are forgotten when the outermost block ends.

    Examples:
        >>> with systems_loaded_once():
        ...     _LOADED.get()
        {}
        >>> _LOADED.get() is None
        True
    """
    if _LOADED.get() is not None:  # nested: share the enclosing block's systems
        yield
        return
    token = _LOADED.set({})
    try:
        yield
    finally:
        _LOADED.reset(token)
