"""Systems whose graph is recorded per sample, as plain core values.

Theory of operation
-------------------
A system written as Python (``@semgrad.system``) has no one graph: each sample's run
is recorded as its own `Graph` (the nodes that actually ran) and its own `Trace`.
The core never runs such a system. It names it with a `SystemRef` (a value: the
system's name and a digest that identifies it), and "run this system on this
example with these params" is a `SystemCall`, the one request a program may emit
that is no LLM request: `run_system` is the program that emits it, and the effects
layer answers it by recording the run (``semgrad.effects``), with a `Trace` whose
`recording` holds the sample's graph and the params it used.

Everything after the forward reads the graph of a trace from the trace itself
(`graph_of`), so backward, the optimizer stages and the gate work alike on one
static graph and on a graph per sample.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any

import attrs
from returns.result import Success

from ._errors import ProtocolError
from ._example import Example
from ._frozen import FrozenMap, to_frozen_map
from ._graph import Graph, Parameter, Params
from ._program import Done, Program, Token
from ._requests import Reply
from ._trace import RecordedGraph, Trace

__all__ = [
    "RecordedGraph",
    "SystemCall",
    "SystemRef",
    "graph_of",
    "is_system",
    "merged_params",
    "occurrences",
    "params_of",
    "run_system",
]


@attrs.frozen
class SystemRef:
    """A system recorded per sample, as the core knows it: a name and a digest, no code.

    Attributes:
        name: The system's name (its function's, for ``@semgrad.system``).
        key: What identifies it (the effects layer's digest of its code); two systems
            with one key are taken to be the same system.

    Examples:
        >>> ref = SystemRef("support", "abc")
        >>> ref.fingerprint == SystemRef("support", "abc").fingerprint != SystemRef("support", "abd").fingerprint
        True
    """

    name: str
    key: str

    @property
    def fingerprint(self) -> str:
        """A digest standing where a graph's fingerprint stands (a checkpoint is bound to it)."""
        blob = f"system|{self.name}|{self.key}"
        return hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()[:16]

    @property
    def output(self) -> str:
        """No one output node: each recorded graph has its own."""
        raise ProtocolError(f"system {self.name!r} has a graph per sample; read a trace's own (graph_of)")


@attrs.frozen
class SystemCall:
    """The request "run `system` on `example` with `params`": the effects layer answers it
    with the sample's `Trace` (its `recording` set), by running and recording the system.

    Attributes:
        system: The system.
        params: The parameter values the run uses (a parameter the run meets that they do not
            hold takes the starting value the system's code gives it).
        example: The dataset item.
        options: Sampling options of the run's forward requests.
    """

    system: SystemRef
    params: Params = attrs.field(repr=False)
    example: Example
    options: FrozenMap[str, Any] = attrs.field(factory=FrozenMap, converter=to_frozen_map, repr=False)

    #: What a runner's accounting reads of a request (a system call itself is never counted:
    #: the calls its run makes are).
    purpose = "system"
    engine = "forward"

    @property
    def sample(self) -> Any:
        """The dataset item's id."""
        return self.example.id


class _RunSystem(Program[Trace]):
    """`run_system`'s program, waiting for the recorded trace."""

    __slots__ = ("call", "emitted")

    def __init__(self, call: SystemCall) -> None:
        self.call = call
        self.emitted = (((), call),)  # type: ignore[misc,assignment]

    def feed(self, token: Token, reply: Reply) -> Program[Trace]:
        if token != ():
            raise ProtocolError(f"unknown token {token!r} for a system run")
        if type(reply) is not Success:
            error = reply.failure()
            message = getattr(error, "message", error)
            raise ProtocolError(
                f"running system {self.call.system.name!r} on item {self.call.sample!r} failed: {message}"
            )
        trace = reply.unwrap()
        if not isinstance(trace, Trace) or trace.recording is None:
            raise ProtocolError(f"a run of system {self.call.system.name!r} must yield a Trace with its recording")
        return Done(trace)

    def __repr__(self) -> str:
        return f"run_system({self.call.system.name!r}, sample={self.call.sample!r})"


def run_system(system: SystemRef, params: Params, example: Example, *, options: Any = None) -> Program[Trace]:
    """The program that runs `system` on `example` with `params`: one `SystemCall`, answered
    by the effects layer with the recorded `Trace`.

    Examples:
        >>> from semgrad.core import Example
        >>> program = run_system(SystemRef("support", "abc"), Params({}), Example({"question": "hi"}, id=3))
        >>> [type(request).__name__ for _, request in program.emitted]
        ['SystemCall']
    """
    return _RunSystem(SystemCall(system, params, example, FrozenMap(options or {})))


def is_system(graph: Any) -> bool:
    """True for a `SystemRef` (a graph per sample), False for a `Graph`."""
    return isinstance(graph, SystemRef)


def graph_of(graph: Graph | SystemRef, trace: Trace) -> Graph:
    """The graph `trace` ran on: its recording's, else `graph` (a static graph's traces).

    Raises:
        ProtocolError: When `graph` is a system and the trace has no recording.
    """
    recording = trace.recording
    if recording is not None:
        return recording.graph
    if isinstance(graph, SystemRef):
        raise ProtocolError(f"a trace of system {graph.name!r} must carry its recording")
    return graph


def params_of(params: Params, trace: Trace) -> Params:
    """The params `trace` was made with: its recording's, else `params`."""
    recording = trace.recording
    return params if recording is None else recording.params


def occurrences(graph: Graph, param: str, params: Params) -> tuple[str, ...]:
    """The nodes of `graph` whose instruction is `param` (several for a loop: ``act#1``, ``act#2``),
    in topological order; for a free parameter, the parameter's own node when `graph` has it.

    Examples:
        >>> from semgrad.topologies import paper_graph
        >>> graph, params = paper_graph()
        >>> occurrences(graph, "hint_1.instruction", params)
        ('hint_1',)
    """
    found = tuple(name for name in graph.topological_order if graph[name].instruction == param)
    if found:
        return found
    parameter = params.get(param)
    if parameter is not None and parameter.node is not None and parameter.node in graph.nodes:
        return (parameter.node,)
    return (param,) if param in graph.nodes and graph[param].kind == "param" else ()


def merged_params(params: Params, traces: Iterable[Trace]) -> Params:
    """`params` with every parameter a trace's recording used that `params` lacks (its value as
    recorded: the starting value the system's code gave it), in first-seen order.

    Examples:
        >>> p = Params({"a": Parameter("a", "x", "")})
        >>> merged_params(p, ()) is p
        True
    """
    added: dict[str, Parameter] = {}
    for trace in traces:
        recording = trace.recording
        if recording is None:
            continue
        for name, parameter in recording.params.items():
            if name not in params and name not in added:
                added[name] = parameter
    if not added:
        return params
    return Params({**dict(params.items_.items()), **added})
