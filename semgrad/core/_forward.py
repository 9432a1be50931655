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
from ._frozen import FrozenMap, freeze
from ._graph import Graph, Node, Params
from ._program import Done, Emitted, Program, Token
from ._prompts import render_forward
from ._requests import LLMRequest, Reply, SampleId
from ._trace import NodeRun, Trace

__all__ = ["ForwardMachine", "check_inputs", "forward", "runs_inputs"]


def check_inputs(graph: Graph, params: Params, inputs: Mapping[str, Any]) -> None:
    """Raise `InputError` unless `inputs` names exactly the graph's input fields
    and `params` holds every parameter the graph reads."""
    expected = graph.inputs
    if len(inputs) != len(expected) or not all(name in inputs for name in expected):
        missing = [name for name in expected if name not in inputs]
        extra = [name for name in inputs if name not in expected]
        parts = []
        if missing:
            parts.append(f"missing input field(s) {', '.join(map(repr, missing))}")
        if extra:
            parts.append(f"unexpected input field(s) {', '.join(map(repr, extra))}")
        raise InputError(f"{'; '.join(parts)}; the graph's inputs are: {', '.join(map(repr, expected))}")
    for node in graph.nodes.values():
        name = node.instruction or node.name
        if node.kind in ("llm", "param") and name not in params:
            raise InputError(f"params lack {name!r}; pass the params built with this graph")


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
    return ForwardMachine.start(graph, params, inputs, sample=sample, engine=engine, options=freeze(options or {}))


_MISSING = object()


class ForwardMachine(Program[Trace]):
    """The forward state machine for one sample; build it with `forward`."""

    __slots__ = ("graph", "params", "sample", "engine", "options", "runs", "waiting", "asked", "unfinished", "emitted")

    def __init__(
        self,
        graph: Graph,
        params: Params,
        sample: SampleId,
        engine: str,
        options: dict[str, Any],
        runs: tuple[NodeRun | None, ...],
        waiting: tuple[int, ...],
        asked: tuple[tuple[LLMRequest, tuple[tuple[str, Any], ...]] | None, ...],
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
        self.asked = asked
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
        size = len(graph.nodes)
        runs: list[NodeRun | None] = [None] * size
        waiting = [len(p) for p in graph.input_positions]
        state = cls(graph, params, sample, engine, options, (), (), (), size, ())
        ready = []
        unfinished = size
        for pos, node in enumerate(graph.nodes.values()):
            if node.kind == "input":
                runs[pos] = NodeRun(node.name, "input", value=inputs[node.name])
            elif node.kind == "param":
                runs[pos] = NodeRun(node.name, "param", value=params.value(node.name))
            else:
                if not node.inputs:
                    ready.append(pos)
                continue
            unfinished -= 1
            ready.extend(state._release(pos, waiting))
        return state._advance(runs, waiting, [None] * size, ready, unfinished)

    @property
    def in_flight(self) -> tuple[str, ...]:
        """Names of the LLM nodes whose request is out and unanswered, in order."""
        names = self.graph.topological_order
        return tuple(names[pos] for pos, asked in enumerate(self.asked) if asked is not None)

    def feed(self, token: Token, reply: Reply) -> Program[Trace]:
        name = token[0] if len(token) == 1 else None
        pos = self.graph.position(name) if isinstance(name, str) and name in self.graph.nodes else -1
        if pos < 0 or self.asked[pos] is None:
            raise ProtocolError(f"forward machine got a reply for {token!r}, which it is not waiting for")
        request, shown = self.asked[pos]  # type: ignore[misc]
        runs = list(self.runs)
        waiting = list(self.waiting)
        asked = list(self.asked)
        asked[pos] = None
        if isinstance(reply, Success):
            text = reply.unwrap().text
            runs[pos] = NodeRun(name, "llm", shown, text.strip(), request, text)  # type: ignore[arg-type]
        else:
            runs[pos] = NodeRun(name, "llm", shown, None, request, None, reply.failure())  # type: ignore[arg-type]
        ready = self._release(pos, waiting)
        return self._advance(runs, waiting, asked, ready, self.unfinished - 1)

    def _release(self, pos: int, waiting: list[int]) -> list[int]:
        ready = []
        for succ in self.graph.successor_positions[pos]:
            waiting[succ] -= 1
            if waiting[succ] == 0:
                ready.append(succ)
        return ready

    def _advance(
        self,
        runs: list[NodeRun | None],
        waiting: list[int],
        asked: list[Any],
        ready: list[int],
        unfinished: int,
    ) -> Program[Trace]:
        emitted = []
        graph = self.graph
        names = graph.topological_order
        nodes = graph.nodes
        while ready:
            pos = ready.pop()
            node = nodes[names[pos]]
            sources = graph.input_positions[pos]
            shown = tuple((names[p], runs[p].value) for p in sources)  # type: ignore[union-attr]
            failed = None
            for p in sources:
                if runs[p].error is not None:  # type: ignore[union-attr]
                    failed = names[p]
                    break
            if failed is not None:
                runs[pos] = NodeRun(node.name, node.kind, shown, error=f"input {failed!r} failed")
            elif node.kind == "llm":
                request = self._request(node, shown)
                asked[pos] = (request, shown)
                emitted.append(((node.name,), request))
                continue
            else:
                runs[pos] = _call_function(node.name, node.fn, shown)
            unfinished -= 1
            ready.extend(self._release(pos, waiting))
        if unfinished == 0:
            return Done(Trace(self.sample, graph.fingerprint, graph.output, FrozenMap(zip(names, runs))))
        emitted.sort(key=lambda item: graph.position(item[1].node))  # type: ignore[arg-type]
        return ForwardMachine(
            graph,
            self.params,
            self.sample,
            self.engine,
            self.options,
            tuple(runs),
            tuple(waiting),
            tuple(asked),
            unfinished,
            tuple(emitted),
        )

    def _request(self, node: Node, shown: tuple[tuple[str, Any], ...]) -> LLMRequest:
        nodes = self.graph.nodes
        labelled = tuple((name, nodes[name].role, value) for name, value in shown)
        instruction = self.params.value(node.instruction)  # type: ignore[arg-type]
        return render_forward(
            node.name, instruction, labelled, sample=self.sample, engine=self.engine, options=self.options
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
