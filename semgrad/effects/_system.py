"""`@semgrad.system`: an async Python function as a system whose runs are recorded as core graphs.

The decorator returns a `PythonSystem`, a value of this layer: the function, its
name, the names of its inputs (its arguments after ``ctx``) and `max_nodes`. The
recorder (`semgrad.effects.record`) runs it for one example with a ``ctx`` whose
``ctx.llm``, ``ctx.tool`` and ``ctx.param`` calls become the nodes of that run's
`Graph` and `Trace`.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import attrs

__all__ = ["DEFAULT_MAX_NODES", "PythonSystem", "system"]

#: The most nodes one recorded run may have, unless the system says otherwise.
DEFAULT_MAX_NODES = 1000


def _input_names(fn: Callable[..., Any]) -> tuple[str, ...] | None:
    """The names of `fn`'s inputs (its parameters after ``ctx``), or None when it takes ``**inputs``."""
    parameters = list(inspect.signature(fn).parameters.values())
    if not parameters or parameters[0].kind not in (parameters[0].POSITIONAL_ONLY, parameters[0].POSITIONAL_OR_KEYWORD):
        raise TypeError(f"a system's function takes ctx first, as in async def {fn.__name__}(ctx, question)")
    rest = parameters[1:]
    if any(p.kind is p.VAR_KEYWORD for p in rest):
        return None
    if any(p.kind in (p.POSITIONAL_ONLY, p.VAR_POSITIONAL) for p in rest):
        raise TypeError(
            f"system {fn.__name__!r}: its inputs are given by name, so it cannot take *args or positional-only inputs"
        )
    return tuple(p.name for p in rest)


@attrs.frozen
class PythonSystem:
    """A system written as an async Python function (made by `system`).

    Attributes:
        fn: The async function ``fn(ctx, **inputs)``.
        name: Its name (the function's).
        inputs: The names of its inputs, its parameters after ``ctx`` in order; None when
            it takes ``**inputs`` (then an example's fields, in their order).
        max_nodes: The most nodes one recorded run may have (a loop that does not end
            fails clearly past it).

    Examples:
        >>> @system
        ... async def answer(ctx, question):
        ...     return await ctx.llm("answer", instruction="Answer.", inputs={"question": question})
        >>> answer.name, answer.inputs, answer.max_nodes
        ('answer', ('question',), 1000)
    """

    fn: Callable[..., Any] = attrs.field(eq=False, repr=False)
    name: str
    inputs: tuple[str, ...] | None
    max_nodes: int = DEFAULT_MAX_NODES


def system(fn: Callable[..., Any] | None = None, *, max_nodes: int = DEFAULT_MAX_NODES) -> Any:
    """Turn an async function ``fn(ctx, **inputs)`` into a `PythonSystem`; ``@system`` or ``@system(max_nodes=...)``.

    In the function, ``await ctx.llm(name, instruction=..., inputs={...})`` is an LLM node
    whose instruction is the trainable parameter ``f"{name}.instruction"`` (the literal is
    its starting value), ``ctx.param(name, value)`` a free trainable text, and ``await
    ctx.tool(name, fn, **arguments)`` a tool node. Each example's run is recorded as a core
    `Graph` and `Trace` of the nodes it ran (`semgrad.effects.record`).

    Examples:
        >>> @system(max_nodes=50)
        ... async def support(ctx, question):
        ...     return await ctx.llm("answer", instruction="Answer the customer.", inputs={"question": question})
        >>> support
        PythonSystem(name='support', inputs=('question',), max_nodes=50)
    """
    if type(max_nodes) is not int or max_nodes < 1:
        raise ValueError(f"max_nodes must be a whole number of at least 1, got {max_nodes!r}")

    def make(fn: Callable[..., Any]) -> PythonSystem:
        if isinstance(fn, PythonSystem):
            return attrs.evolve(fn, max_nodes=max_nodes)
        if not inspect.iscoroutinefunction(fn):
            raise TypeError(f"@semgrad.system needs an async function (async def), got {fn!r}")
        return PythonSystem(fn, fn.__name__, _input_names(fn), max_nodes)

    return make if fn is None else make(fn)
