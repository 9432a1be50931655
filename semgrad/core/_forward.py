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

`forward` checks the inputs at once, but when the nodes ready at the start are all
LLM nodes it defers the first transition -- rendering their requests -- until the
state is first read or fed (`_Unstarted`). Building a batch then costs a few
microseconds per sample, and the async runner, which asks a gather's children one
at a time, sends the first sample's calls before rendering the next sample's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

import attrs
from returns.result import Success

from ._errors import InputError, ProtocolError
from ._frozen import FrozenMap, freeze
from ._graph import Graph, Node, Params
from ._parse import parse_result
from ._persistent import PVec
from ._program import Done, Emitted, Program, Token, ask, bind
from ._prompts import forward_request, forward_system, forward_user, render_forward_repair
from ._requests import _NO_OPTIONS, LLMRequest, Message, Reply, SampleId, _request
from ._trace import NodeRun, Trace, _node_run

__all__ = ["ForwardMachine", "check_inputs", "forward", "llm_call", "runs_inputs"]


def check_inputs(graph: Graph, params: Params, inputs: Mapping[str, Any]) -> None:
    """Raise `InputError` unless `inputs` names exactly the graph's input fields
    and `params` holds every parameter the graph reads."""
    expected = graph.inputs
    if not isinstance(inputs, Mapping):  # a str would be read as its characters, each an unexpected field
        example = ", ".join(f"{name!r}: ..." for name in expected)
        raise InputError(
            f"inputs must be a mapping of the graph's input fields to values, such as {{{example}}}, "
            f"got {type(inputs).__name__}"
        )
    if len(inputs) != len(expected) or not all(name in inputs for name in expected):
        missing = [name for name in expected if name not in inputs]
        extra = [name for name in inputs if name not in expected]
        parts = []
        if missing:
            parts.append(f"missing input field(s) {', '.join(map(repr, missing))}")
        if extra:
            parts.append(f"unexpected input field(s) {', '.join(map(repr, extra))}")
        raise InputError(f"{'; '.join(parts)}; the graph's inputs are: {', '.join(map(repr, expected))}")
    _check_params(graph, params)


def _check_params(graph: Graph, params: Params) -> None:
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
        >>> p
        ForwardMachine(sample=0, in_flight=('answer',), unfinished=1)
        >>> [(token, r.node) for token, r in p.emitted]
        [(('answer',), 'answer')]
        >>> p.feed(("answer",), Success(LLMResponse("2 and 2 make 4. <result>4</result>"))).value.output_value
        '4'
        >>> again = p.feed(("answer",), Success(LLMResponse("4")))  # no <result>: one repair request
        >>> [(token, r.messages[-1].role) for token, r in again.emitted]
        [(('answer', 'repair'), 'user')]
        >>> again.feed(("answer", "repair"), Success(LLMResponse("4"))).value["answer"].error
        'unreadable reply: the reply has no <result> block (also after a repair request)'
        >>> forward(graph, params, {"q": "2+2?"})  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        semgrad.core._errors.InputError: missing input field(s) 'question'; unexpected input field(s) 'q'; ...
    """
    return ForwardMachine.start(
        graph, params, inputs, sample=sample, engine=engine, options=freeze(options) if options else _NO_OPTIONS
    )


class _Asked:
    """A node whose request is out: the request, the ``(name, value)`` inputs it showed,
    and whether it is the repair request sent after an unreadable reply."""

    __slots__ = ("request", "shown", "repair")

    def __init__(self, request: LLMRequest, shown: tuple[tuple[str, Any], ...], repair: bool = False) -> None:
        self.request = request
        self.shown = shown
        self.repair = repair


class _Source(NamedTuple):
    """One input of a node ready at the start, as its request shows it."""

    position: int
    name: str
    role: str


class _FirstAsk(NamedTuple):
    """What the first step needs to render one ready LLM node's request (see `_Start.first`)."""

    position: int
    token: tuple[str]
    name: str
    system: Message
    sources: tuple[_Source, ...]
    #: The index of the first earlier `_FirstAsk` with the very same sources (-1 if none),
    #: whose user message (the formatted inputs) this one shares: nodes that read only the question, say.
    like: int


@attrs.frozen
class _Start:
    """What every sample's forward pass starts from, for one graph and its params:
    the cells once all inputs and params are available (param runs filled in, other
    nodes' counts of missing inputs), the nodes ready then, and how many are unfinished."""

    cells: tuple[Any, ...]
    ready: tuple[int, ...]
    unfinished: int
    #: Each graph input's ``(name, position)``.
    inputs: tuple[tuple[str, int], ...]
    #: Only LLM nodes are ready at the start (at least one): the first step renders their
    #: requests and nothing else, so it can wait until they are first asked for.
    lazy: bool
    #: When `lazy`, what that step needs per ready node, in topological order.
    first: tuple[_FirstAsk, ...]


def _start(graph: Graph, params: Params) -> _Start:
    _check_params(graph, params)
    tools = graph.of_kind("tool")
    if tools:
        raise InputError(
            f"the graph has tool node(s) {', '.join(map(repr, tools))}: a tool is an effect, which only the"
            " recorder of a system written as Python runs (semgrad.effects), so forward cannot run this graph"
        )
    cells: list[Any] = [len(p) for p in graph.input_positions]
    ready = []
    unfinished = len(cells)
    for pos, node in enumerate(graph.nodes.values()):
        if node.kind == "param":
            cells[pos] = NodeRun(node.name, "param", value=params.value(node.name))
        elif node.kind != "input":
            if not node.inputs:
                ready.append(pos)
            continue
        unfinished -= 1
        for succ in graph.successor_positions[pos]:
            cells[succ] -= 1
            if cells[succ] == 0:
                ready.append(succ)
    inputs = tuple((name, graph.position(name)) for name in graph.inputs)
    order = graph.topological_order
    lazy = bool(ready) and all(graph.nodes[order[pos]].kind == "llm" for pos in ready)
    first: list[_FirstAsk] = []
    if lazy:
        seen: dict[tuple[_Source, ...], int] = {}
        for pos in sorted(ready):
            sources = tuple(_Source(p, order[p], graph.roles[p]) for p in graph.input_positions[pos])
            like = seen.setdefault(sources, len(first))
            first.append(
                _FirstAsk(
                    pos,
                    graph._tokens[pos],
                    order[pos],
                    _system_message(params, graph.nodes[order[pos]]),
                    sources,
                    -1 if like == len(first) else like,
                )
            )
    return _Start(tuple(cells), tuple(ready), unfinished, inputs, lazy, tuple(first))


def _system_message(params: Params, node: Node) -> Message:
    """The node's rendered system message, shared by every sample run with these params."""
    systems = params.memo("forward_system")
    system = systems.get(node.name)
    if system is None:
        instruction = params.value(node.instruction)  # type: ignore[arg-type]
        system = systems[node.name] = forward_system(instruction, node.output_format, reason=node.reason)
    return system  # type: ignore[no-any-return]


class ForwardMachine(Program[Trace]):
    """The forward state machine for one sample; build it with `forward`.

    It keeps one *cell* per node (by topological position): the number of inputs
    the node still misses (an int), the request it is waiting on (`_Asked`), or its
    `NodeRun`. The cells are a persistent array (`PVec`), so a reply updates
    O(the node's successors) cells, never the whole graph, and every earlier state
    stays valid. What all samples share -- each param's run, the counts once the
    inputs are there, each instruction's rendered system message -- is computed
    once per params and reused (`Params` memo).
    """

    __slots__ = ("graph", "params", "sample", "engine", "options", "_cells", "unfinished", "emitted")

    def __init__(
        self,
        graph: Graph,
        params: Params,
        sample: SampleId,
        engine: str,
        options: FrozenMap[str, Any],
        cells: PVec[Any],
        unfinished: int,
        emitted: Emitted,
    ) -> None:
        self.graph = graph
        self.params = params
        self.sample = sample
        self.engine = engine
        self.options = options
        self._cells = cells
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
        options: FrozenMap[str, Any],
    ) -> Program[Trace]:
        """The machine's first state; raises `InputError` for missing or unexpected inputs or params."""
        starts = params.memo("forward_start")
        begin = starts.get(graph.fingerprint)  # the fingerprint names the structure _start depends on
        if begin is None:
            begin = starts[graph.fingerprint] = _start(graph, params)
        cells = list(begin.cells)
        if len(inputs) != len(begin.inputs):
            check_inputs(graph, params, inputs)  # raises the detailed error
        try:
            for name, pos in begin.inputs:
                cells[pos] = _node_run(name, "input", (), inputs[name], None, None, None)
        except (KeyError, TypeError):  # TypeError: not a mapping (a str of the input's length, say)
            check_inputs(graph, params, inputs)
            raise
        if type(options) is not FrozenMap:
            options = freeze(options)
        if begin.lazy:
            return _Unstarted(graph, params, sample, engine, options, cells, begin.unfinished, begin.first)
        state = cls(graph, params, sample, engine, options, PVec(cells), begin.unfinished, ())
        return state._advance(state._cells, {}, list(begin.ready), begin.unfinished)

    @property
    def runs(self) -> tuple[NodeRun | None, ...]:
        """Each node's run so far (None until it has one), in topological order."""
        return tuple(c if type(c) is NodeRun else None for c in self._cells.tolist())

    @property
    def in_flight(self) -> tuple[str, ...]:
        """Names of the LLM nodes whose request is out and unanswered, in order."""
        names = self.graph.topological_order
        return tuple(names[pos] for pos, c in enumerate(self._cells.tolist()) if type(c) is _Asked)

    def __repr__(self) -> str:
        return f"ForwardMachine(sample={self.sample!r}, in_flight={self.in_flight!r}, unfinished={self.unfinished})"

    def feed(self, token: Token, reply: Reply) -> Program[Trace]:
        name = token[0] if 0 < len(token) <= 2 else None
        pos = self.graph._index.view.get(name, -1) if type(name) is str else -1
        cells = self._cells
        asked = cells.get(pos) if pos >= 0 else None
        if type(asked) is not _Asked or asked.repair != (len(token) == 2):
            raise ProtocolError(f"forward machine got a reply for {token!r}, which it is not waiting for")
        if isinstance(reply, Success):
            text = reply.unwrap().text
            parsed = parse_result(text)
            if isinstance(parsed, Success):
                run = _node_run(name, "llm", asked.shown, parsed.unwrap(), asked.request, text, None)  # type: ignore[arg-type]
            elif not asked.repair:
                # One repair request, then a recorded failure (never the whole reply as the value).
                request = render_forward_repair(asked.request, text, parsed.failure().reason)
                return ForwardMachine(
                    self.graph,
                    self.params,
                    self.sample,
                    self.engine,
                    self.options,
                    cells.set(pos, _Asked(request, asked.shown, True)),
                    self.unfinished,
                    (((name, "repair"), request),),
                )
            else:
                error = f"unreadable reply: {parsed.failure().reason} (also after a repair request)"
                run = _node_run(name, "llm", asked.shown, None, asked.request, text, error)  # type: ignore[arg-type]
        else:
            run = _node_run(name, "llm", asked.shown, None, asked.request, None, reply.failure())  # type: ignore[arg-type]
        # The run and each successor's count of inputs still missing, and the requests of what
        # became ready, in one copy of the array's paths (successors are mostly near the node:
        # often the same leaf).
        changes: dict[int, Any] = {pos: run}
        ready = []
        for succ in self.graph.successor_positions[pos]:
            left = changes[succ] = cells.get(succ) - 1
            if left == 0:
                ready.append(succ)
        if not ready and self.unfinished > 1:
            # Nothing became ready (the common case in a wide graph): no rendering to do.
            return ForwardMachine(
                self.graph,
                self.params,
                self.sample,
                self.engine,
                self.options,
                cells.set_many(changes),
                self.unfinished - 1,
                (),
            )
        return self._advance(cells, changes, ready, self.unfinished - 1)

    def _advance(self, cells: PVec[Any], changes: dict[int, Any], ready: list[int], unfinished: int) -> Program[Trace]:
        """Run the function nodes and emit the requests of the LLM nodes that became ready.

        `changes` are cells not yet written into `cells` (read through them); they and this
        call's own are written at the end, in one copy of the array's paths.
        """
        emitted: list[tuple[int, Token, LLMRequest]] = []  # (position, token, request): sorted by position
        graph = self.graph
        names = graph._order  # (the property, without the call)
        nodes = graph.nodes.view  # the FrozenMap's dict: C-speed lookups
        roles = graph.roles
        input_positions = graph.input_positions
        while ready:
            pos = ready.pop()
            node = nodes[names[pos]]
            failed = None
            shown_list = []
            labelled = []
            for p in input_positions[pos]:
                source = changes[p] if p in changes else cells.get(p)
                if source.error is not None and failed is None:
                    failed = names[p]
                shown_list.append((names[p], source.value))
                labelled.append((names[p], roles[p], source.value))
            shown = tuple(shown_list)
            if failed is not None:
                changes[pos] = NodeRun(node.name, node.kind, shown, error=f"input {failed!r} failed")
            elif node.kind == "llm":
                request = forward_request(
                    node.name, _system_message(self.params, node), labelled, self.sample, self.engine, self.options
                )
                changes[pos] = _Asked(request, shown)
                emitted.append((pos, graph._tokens[pos], request))
                continue
            else:
                changes[pos] = _call_function(node.name, node.fn, shown)
            unfinished -= 1
            for succ in graph.successor_positions[pos]:
                left = changes[succ] = (changes[succ] if succ in changes else cells.get(succ)) - 1
                if left == 0:
                    ready.append(succ)
        if changes:
            cells = cells.set_many(changes)
        if unfinished == 0:
            runs = FrozenMap(zip(names, cells.tolist()))
            return Done(Trace(self.sample, graph.fingerprint, graph.output, runs, params=self.params.digest))
        if len(emitted) == 1:
            ((_, token, request),) = emitted
            ready_requests: Emitted = ((token, request),)
        else:
            emitted.sort(key=_first)
            ready_requests = tuple((token, request) for _, token, request in emitted)
        return ForwardMachine(
            graph,
            self.params,
            self.sample,
            self.engine,
            self.options,
            cells,
            unfinished,
            ready_requests,
        )


class _Unstarted(ForwardMachine):
    """A forward machine before its first step, which renders the requests of the LLM nodes
    ready at the start (their inputs are all inputs and params), run when first needed.

    `forward` checks the inputs at once and returns this; the step runs, once, the first time
    anything reads the state (`emitted`, `runs`, `in_flight`) or feeds it. So a batch of
    samples is built in a few microseconds each, and the async runner, which asks a
    `gather`'s children one at a time, sends the first sample's requests before it renders
    the second's. Which state it stands for is decided at construction; the value it shows
    is the started machine's, whenever it is read.
    """

    __slots__ = ("_first", "_started")

    def __init__(
        self,
        graph: Graph,
        params: Params,
        sample: SampleId,
        engine: str,
        options: FrozenMap[str, Any],
        cells: list[Any],
        unfinished: int,
        first: tuple[_FirstAsk, ...],
    ) -> None:
        self.graph = graph
        self.params = params
        self.sample = sample
        self.engine = engine
        self.options = options
        self._cells = cells  # type: ignore[assignment]  # a list until the first step
        self.unfinished = unfinished
        self._first = first
        self._started: ForwardMachine | None = None

    def _start(self) -> ForwardMachine:
        """The started machine: the first step, run on the first call and kept.

        It is `_advance`'s step for LLM nodes whose inputs are all inputs and params (which
        never fail), written out: each request rendered and its cell set in this sample's
        own list, before the array is built; the requests in topological order.
        """
        started = self._started
        if started is None:
            cells: list[Any] | None = self._cells  # type: ignore[assignment]
            if cells is None:  # another thread has just started it (it sets `_started` first)
                return self._started  # type: ignore[return-value]  # set by then
            sample, engine, options = self.sample, self.engine, self.options
            emitted = []
            made: list[tuple[tuple[tuple[str, Any], ...], Message]] = []  # per node: its inputs, user message
            for pos, token, name, system, sources, like in self._first:
                if like < 0:
                    values = [cells[p].value for p, _, _ in sources]
                    user = forward_user([(source, role, value) for (_, source, role), value in zip(sources, values)])
                    shown = tuple([(source, value) for (_, source, _), value in zip(sources, values)])
                else:
                    shown, user = made[like]
                made.append((shown, user))
                request = _request((system, user), engine, "forward", name, sample, (), options)
                cells[pos] = _Asked(request, shown)
                emitted.append((token, request))
            started = ForwardMachine(
                self.graph, self.params, sample, engine, options, PVec(cells), self.unfinished, tuple(emitted)
            )
            self._started = started
            self._cells = None  # type: ignore[assignment]  # the started state has its own copy
        return started

    @property  # type: ignore[override]
    def emitted(self) -> Emitted:  # type: ignore[override]
        return self._start().emitted

    @property
    def runs(self) -> tuple[NodeRun | None, ...]:
        return self._start().runs

    @property
    def in_flight(self) -> tuple[str, ...]:
        return self._start().in_flight

    def feed(self, token: Token, reply: Reply) -> Program[Trace]:
        return self._start().feed(token, reply)


def _first(item: tuple[int, Any, Any]) -> int:
    return item[0]


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


def llm_call(
    node: Node,
    params: Params,
    shown: tuple[tuple[str, str, Any], ...],
    *,
    sample: SampleId = None,
    engine: str = "forward",
    options: Mapping[str, Any] | None = None,
) -> Program[NodeRun]:
    """One LLM node's forward call on its own, as the forward machine makes it: the request of
    `node` (named by its component, ``node.component``) showing `shown` -- ``(name, role, value)``
    per input, in order -- one repair request after an unreadable reply, and the node's run (its
    value, or its error). The recorder of a system written as Python makes its ``ctx.llm`` calls
    with it, so they are the requests a `GraphBuilder` graph's forward pass makes.

    Examples:
        >>> from semgrad.core import GraphBuilder, LLMResponse
        >>> b = GraphBuilder(); q = b.input("question")
        >>> _ = b.llm("answer", inputs=[q], instruction="Solve the problem.")
        >>> graph, params = b.build(output="answer")
        >>> p = llm_call(graph["answer"], params, (("question", "the question", "2+2?"),), sample=0)
        >>> [(token, r.node, r.purpose) for token, r in p.emitted]
        [((), 'answer', 'forward')]
        >>> p.feed((), Success(LLMResponse("<result>4</result>"))).value.value
        '4'
    """
    frozen = freeze(options) if options else _NO_OPTIONS
    system = forward_system(params.value(node.instruction), node.output_format, reason=node.reason)  # type: ignore[arg-type]
    request = forward_request(node.component, system, shown, sample, engine, frozen)
    inputs = tuple((name, value) for name, _, value in shown)

    def answered(reply: Reply, asked: LLMRequest, repaired: bool) -> Program[NodeRun]:
        if not isinstance(reply, Success):
            return Done(NodeRun(node.name, "llm", inputs, None, asked, None, reply.failure()))
        text = reply.unwrap().text
        parsed = parse_result(text)
        if isinstance(parsed, Success):
            return Done(NodeRun(node.name, "llm", inputs, parsed.unwrap(), asked, text))
        if repaired:
            error = f"unreadable reply: {parsed.failure().reason} (also after a repair request)"
            return Done(NodeRun(node.name, "llm", inputs, None, asked, text, error))
        again = render_forward_repair(asked, text, parsed.failure().reason)
        return bind(ask(again), lambda second: answered(second, again, True))

    return bind(ask(request), lambda reply: answered(reply, request, False))
