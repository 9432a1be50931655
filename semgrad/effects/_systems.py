"""Training systems recorded per sample: what `fit` and the runner need of one.

A system written as Python is run and recorded in this layer; the core knows it only
as a `SystemRef`, and its forward as the `SystemCall` request of `run_system`. A
*trainable system* here is any value with

* ``ref``: its `SystemRef`, and
* ``async run(call, ask) -> Trace``: record one run on ``call.example`` with
  ``call.params``, making every LLM call with ``await ask(request)`` (a `Reply`),
  and return the trace with its `Recording` (the sample's graph and params).

`as_trainable` finds those parts (a `Graph` has none), and `answer` runs a pure
program through `ask`, one call at a time: a stand-in that returns hand-built graphs
forwards them with it, and so may a recorder.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from ..core import Graph, LLMRequest, Program, Reply, Trace
from ..core._system import SystemCall, SystemRef
from ._runner import Systems

__all__ = ["Ask", "answer", "as_trainable"]

#: One LLM call, counted by the runner: ``await ask(request)`` is its `Reply`.
Ask = Callable[[LLMRequest], Awaitable[Reply]]


async def answer(program: Program[Any], ask: Ask) -> Any:
    """`program`'s value, each request it emits answered by ``await ask(request)``, one at a time, in the
    order emitted (what a reply makes ready after what was ready before)."""
    queue = list(program.emitted)
    while not program.done:
        if not queue:
            raise RuntimeError("the program is waiting for replies but has asked for none")
        token, request = queue.pop(0)
        program = program.feed(token, await ask(request))
        queue.extend(program.emitted)
    return program.value


def as_trainable(system: Any) -> tuple[Graph | SystemRef, Systems | None]:
    """``(graph, None)`` for a `Graph`; ``(ref, systems)`` for a trainable system (see the module doc),
    `systems` being what a `Runner` answers its `SystemCall`\\ s with.

    Raises:
        TypeError: When `system` is neither.
    """
    if isinstance(system, Graph):
        return system, None
    ref = getattr(system, "ref", None)
    run = getattr(system, "run", None)
    if not isinstance(ref, SystemRef) or not callable(run):
        raise TypeError(
            f"expected a Graph or a system (@semgrad.system), got {type(system).__name__}"
        )

    async def systems(call: SystemCall, ask: Ask) -> Trace:
        if call.system != ref:
            raise TypeError(f"this run knows system {ref.name!r}, not {call.system.name!r}")
        trace = await run(call, ask)
        if not isinstance(trace, Trace) or trace.recording is None:
            raise TypeError(f"system {ref.name!r}: a run must return a Trace with its recording")
        return trace

    return ref, systems
