"""The forward pass as an explicit frozen state machine.

Theory of operation
-------------------
`ForwardMachine` is a `Program[Trace]` for one sample. Its state holds, per node
in topological order, the value (or a failure), and how many of the node's
inputs are still missing. When a node's last input arrives:

* a function node is computed at once, inside the same transition;
* an LLM node's request is rendered and *emitted* -- in that very transition,
  so an interpreter starts it immediately, whatever other nodes are doing.

`feed((node,), reply)` records the node's reply and lets its successors
advance. A failed call (or a failed function) is recorded as the node's error;
the nodes that depend on it fail too, without a call. The machine is done when
every node has a value or an error, and yields the `Trace`.

Many samples run together with `gather(*(forward(...) for each sample))`: their
machines advance independently, each request going out the moment it is ready.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from returns.result import Success

from ._errors import InputError, ProtocolError
from ._frozen import FrozenMap
from ._graph import Graph, Params
from ._program import Done, Emitted, Program, Token
from ._prompts import render_forward
from ._requests import LLMRequest, Reply, SampleId, request_key
from ._trace import NodeRun, Trace

__all__ = ["ForwardMachine", "check_inputs", "forward", "runs_inputs"]


def check_inputs(graph: Graph, params: Params, inputs: Mapping[str, Any]) -> None:
    """Raise `InputError` unless `inputs` names exactly the graph's input fields
    and `params` holds every parameter the graph reads."""
    expected = graph.inputs
    missing = [name for name in expected if name not in inputs]
    extra = [name for name in inputs if name not in expected]
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"missing input field(s) {', '.join(map(repr, missing))}")
        if extra:
            parts.append(f"unexpected input field(s) {', '.join(map(repr, extra))}")
        raise InputError(f"{'; '.join(parts)}; the graph's inputs are: {', '.join(map(repr, expected))}")
    needed = [n.instruction or n.name for n in graph.nodes.values() if n.kind in ("llm", "param")]
    absent = [name for name in needed if name not in params]
    if absent:
        raise InputError(f"params lack {', '.join(map(repr, absent))}; pass the params built with this graph")


def forward(
    graph: Graph,
    params: Params,
    inputs: Mapping[str, Any],
    *,
    sample: SampleId = None,
    engine: str = "forward",
    options: Mapping[str, Any] | None = None,
) -> Program[Trace]:
    """Run the graph on one sample: a program that yields its `Trace`.

    Makes exactly one LLM call per LLM node. Missing or unexpected input fields
    raise `InputError` before any call is made.

    Examples:
        >>> from semgrad.core import GraphBuilder, LLMResponse
        >>> b = GraphBuilder(); q = b.input("question")
        >>> _ = b.llm("answer", inputs=[q], instruction="Solve the problem.")
        >>> graph, params = b.build(output="answer")
        >>> p = forward(graph, params, {"question": "2+2?"}, sample=0)
        >>> [(token, r.node) for token, r in p.emitted]
        [(('answer',), 'answer')]
        >>> p.feed(("answer",), Success(LLMResponse("4"))).value.output_value
        '4'
        >>> forward(graph, params, {"q": "2+2?"})  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        semgrad.core._errors.InputError: missing input field(s) 'question'; unexpected input field(s) 'q'; ...
    """
    check_inputs(graph, params, inputs)
    return ForwardMachine.start(graph, params, inputs, sample=sample, engine=engine, options=dict(options or {}))


_MISSING = object()


class ForwardMachine(Program[Trace]):
    """The forward state machine for one sample; build it with `forward`."""

    __slots__ = ("graph", "params", "sample", "engine", "options", "runs", "waiting", "unfinished", "emitted")

    def __init__(
        self,
        graph: Graph,
        params: Params,
        sample: SampleId,
        engine: str,
        options: dict[str, Any],
        runs: tuple[NodeRun | None, ...],
        waiting: tuple[int, ...],
        unfinished: int,
        emitted: Emitted,
    ) -> None:
        self.graph = graph
        self.params = params
        self.sample = sample
        self.engine = engine
        self.options = options
        self.runs = runs
        self.waiting = waiting
        self.unfinished = unfinished
        self.emitted: Emitted = emitted  # type: ignore[misc]

    @classmethod
    def start(
        cls,
        graph: Graph,
        params: Params,
        inputs: Mapping[str, Any],
        *,
        sample: SampleId,
        engine: str,
        options: dict[str, Any],
    ) -> Program[Trace]:
        runs: list[NodeRun | None] = [None] * len(graph.nodes)
        waiting = [len(p) for p in graph.input_positions]
        state = cls(graph, params, sample, engine, options, (), (), len(runs), ())
        ready = []
        for pos, node in enumerate(graph.nodes.values()):
            if node.kind == "input":
                runs[pos] = NodeRun(node.name, "input", value=inputs[node.name])
            elif node.kind == "param":
                runs[pos] = NodeRun(node.name, "param", value=params.value(node.name))
            elif not node.inputs:
                ready.append(pos)
                continue
            else:
                continue
            ready.extend(state._release(pos, waiting))
        return state._advance(runs, waiting, ready, len(runs) - sum(r is not None for r in runs))

    @property
    def in_flight(self) -> tuple[str, ...]:
        """Names of the LLM nodes whose request is out and unanswered, in order."""
        return tuple(
            name
            for pos, (name, node) in enumerate(self.graph.nodes.items())
            if node.kind == "llm" and self.runs[pos] is None and self.waiting[pos] == 0
        )

    def feed(self, token: Token, reply: Reply) -> Program[Trace]:
        name = token[0] if len(token) == 1 else None
        pos = self.graph.position(name) if isinstance(name, str) and name in self.graph.nodes else -1
        if pos < 0 or self.runs[pos] is not None or self.waiting[pos] != 0 or self.graph[name].kind != "llm":
            raise ProtocolError(f"forward machine got a reply for {token!r}, which it is not waiting for")
        runs = list(self.runs)
        waiting = list(self.waiting)
        request = self._request(pos, runs)
        key = request_key(request)
        shown = runs_inputs(self.graph, pos, runs)
        if isinstance(reply, Success):
            text = reply.unwrap().text
            runs[pos] = NodeRun(name, "llm", shown, text.strip(), key, text)
        else:
            runs[pos] = NodeRun(name, "llm", shown, None, key, None, reply.failure())
        ready = self._release(pos, waiting)
        return self._advance(runs, waiting, ready, self.unfinished - 1)

    def _release(self, pos: int, waiting: list[int]) -> list[int]:
        ready = []
        for succ in self.graph.successor_positions[pos]:
            waiting[succ] -= 1
            if waiting[succ] == 0:
                ready.append(succ)
        return ready

    def _advance(
        self, runs: list[NodeRun | None], waiting: list[int], ready: list[int], unfinished: int
    ) -> Program[Trace]:
        emitted = []
        nodes = self.graph.nodes
        names = self.graph.topological_order
        while ready:
            pos = ready.pop(0)
            node = nodes[names[pos]]
            shown = runs_inputs(self.graph, pos, runs)
            failed = next((n for n, _ in shown if runs[self.graph.position(n)].error is not None), None)  # type: ignore[union-attr]
            if failed is not None:
                runs[pos] = NodeRun(node.name, node.kind, shown, error=f"input {failed!r} failed")
            elif node.kind == "llm":
                emitted.append(((node.name,), self._request(pos, runs)))
                continue
            else:
                runs[pos] = _call_function(node.name, node.fn, shown)
            unfinished -= 1
            ready.extend(self._release(pos, waiting))
        if unfinished == 0:
            return Done(self._trace(runs))
        return ForwardMachine(
            self.graph,
            self.params,
            self.sample,
            self.engine,
            self.options,
            tuple(runs),
            tuple(waiting),
            unfinished,
            tuple(emitted),
        )

    def _request(self, pos: int, runs: list[NodeRun | None]) -> LLMRequest:
        graph = self.graph
        node = graph.nodes[graph.topological_order[pos]]
        shown = tuple((name, graph[name].role, value) for name, value in runs_inputs(graph, pos, runs))
        instruction = self.params.value(node.instruction)  # type: ignore[arg-type]
        return render_forward(
            node.name, instruction, shown, sample=self.sample, engine=self.engine, options=self.options
        )

    def _trace(self, runs: list[NodeRun | None]) -> Trace:
        return Trace(
            self.sample, self.graph.fingerprint, self.graph.output, FrozenMap(zip(self.graph.topological_order, runs))
        )


def runs_inputs(
    graph: Graph, pos: int, runs: list[NodeRun | None] | tuple[NodeRun | None, ...]
) -> tuple[tuple[str, Any], ...]:
    """``(name, value)`` of node `pos`'s inputs (all of which have run)."""
    names = graph.topological_order
    return tuple((names[p], runs[p].value) for p in graph.input_positions[pos])  # type: ignore[union-attr]


def _call_function(name: str, fn: Any, shown: tuple[tuple[str, Any], ...]) -> NodeRun:
    try:
        value = fn(*(value for _, value in shown))
    except Exception as exc:  # a user function's failure is data, like a failed call
        return NodeRun(name, "function", shown, error=f"function raised {type(exc).__name__}: {exc}")
    return NodeRun(name, "function", shown, value)
