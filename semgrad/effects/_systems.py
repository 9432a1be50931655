"""Training systems recorded per sample: what `fit` and the runner need of one.

A system written as Python is run and recorded in this layer; the core knows it only
as a `SystemRef`, and its forward as the `SystemCall` request of `run_system`. `fit`,
`semgrad run` and the dry run accept, wherever they accept a `Graph`:

* a `PythonSystem` (``@semgrad.system``), recorded by `record` with the runner's LLM
  (its tool calls counted apart, deterministic tools' results kept in one `ToolCache`
  per `as_trainable`), or
* any *trainable system*: a value with ``ref`` (its `SystemRef`) and ``async run(call,
  runner) -> Trace`` that records one run on ``call.example`` with ``call.params``,
  making its LLM calls through `runner` (``await runner.ask(request)``), and returns the
  trace with its `RecordedGraph` (the sample's graph and the params it used).

`as_trainable` finds those parts (a `Graph` has none), and `answer` runs a pure
program through ``runner.ask``, one call at a time (a stand-in that returns hand-built
graphs forwards them with it).
"""

from __future__ import annotations

import hashlib
import inspect
from collections.abc import Awaitable, Callable
from typing import Any

import attrs

from ..core import Graph, LLMRequest, Program, Reply, Trace
from ..core._trace import RecordedGraph
from ..core.programs import SystemCall, SystemRef
from ._record import record
from ._runner import Runner, Systems
from ._system import PythonSystem
from ._tools import ToolCache

__all__ = ["Ask", "answer", "as_trainable", "system_ref"]

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


def system_ref(system: PythonSystem) -> SystemRef:
    """The core's name for a `PythonSystem`: its name, and a digest of its function's module, name and code
    and its `max_nodes` (stable across processes, so a checkpoint is bound to the code that wrote it).

    Examples:
        >>> from semgrad.effects import system
        >>> @system
        ... async def support(ctx, question):
        ...     return await ctx.llm("answer", instruction="Answer.", inputs={"question": question})
        >>> system_ref(support).name, system_ref(support) == system_ref(support)
        ('support', True)
    """
    fn = system.fn
    try:
        code = inspect.getsource(fn)
    except (OSError, TypeError):  # no source file (a REPL): the compiled code stands for it
        code = repr(getattr(fn, "__code__", None) and fn.__code__.co_code)
    blob = f"{getattr(fn, '__module__', '')}|{getattr(fn, '__qualname__', system.name)}|{system.max_nodes}|{code}"
    return SystemRef(system.name, hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()[:16])


@attrs.frozen(eq=False)
class _Recorded:
    """A `PythonSystem` as a trainable system: each call recorded by `record`."""

    system: PythonSystem
    ref: SystemRef
    tools: ToolCache

    async def run(self, call: SystemCall, runner: Runner) -> Trace:
        recorded = await record(
            self.system, call.params, call.example, llm=runner, tool_cache=self.tools, options=call.options or None
        )
        return attrs.evolve(recorded.trace, recording=RecordedGraph(recorded.graph, recorded.params))


def as_trainable(system: Any) -> tuple[Graph | SystemRef, Systems | None]:
    """``(graph, None)`` for a `Graph`; ``(ref, systems)`` for a `PythonSystem` or another trainable system
    (see the module doc), `systems` being what a `Runner` answers its `SystemCall`\\ s with.

    Raises:
        TypeError: When `system` is none of these.
    """
    if isinstance(system, Graph):
        return system, None
    if isinstance(system, PythonSystem):
        system = _Recorded(system, system_ref(system), ToolCache())
    ref = getattr(system, "ref", None)
    run = getattr(system, "run", None)
    if not isinstance(ref, SystemRef) or not callable(run):
        raise TypeError(f"expected a Graph or a system (@semgrad.system), got {type(system).__name__}")

    async def systems(call: SystemCall, runner: Runner) -> Trace:
        if call.system != ref:
            raise TypeError(f"this run knows system {ref.name!r}, not {call.system.name!r}")
        trace = await run(call, runner)
        if not isinstance(trace, Trace) or trace.recording is None:
            raise TypeError(f"system {ref.name!r}: a run must return a Trace with its recording")
        return trace

    return ref, systems
