"""Backward rules: how one node turns its gradient into partials for its inputs.

A rule is a small frozen value. The backward machine calls
``rule.resolve(node).backward(context)`` for each node that needs a step and
gets a `Program[NodeResult]` back, so a rule may ask the LLM (neighbour-aware,
per-edge), or compute at once (pass-through, numeric vector-Jacobian products).
How a node's incoming partials become its gradient is the rule's `aggregate`.

* `neighbor_aware()` -- the paper: one request per (node, sample) that shows the
  node's task, ALL of its inputs, its output and its gradient, and asks for one
  partial per input that needs one.
* `per_edge()` -- the formal per-edge special case (DESIGN 1.2): one request per
  edge, showing only that input, the node's output and its gradient. It is not
  TextGrad's behaviour: TextGrad 0.1.8 also shows the node's instruction and whole
  input; `textgrad()` (in `_textgrad`) is that rule.
* `numeric()` -- the same traversal over numbers: each function node's
  vector-Jacobian product, aggregated by sum; i.e. reverse-mode autodiff.
* `pass_through()` -- a plain-function node hands its gradient to its inputs
  unchanged, with no call (the default for function nodes in text rules).
* `tool_aware()` -- a tool node (recorded from a system written as Python): one
  request per (tool, sample) showing the tool's description, its arguments, its
  result (or the error it raised) and the feedback on it, asking how each argument
  -- so the node that wrote it -- and, when trainable, the description should
  change (the default for tool nodes in text rules).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

import attrs
from returns.result import Success

from ._aggregate import Concat, Total
from ._errors import ProtocolError
from ._frozen import FrozenMap, slot_setters, to_frozen_map
from ._gradients import BackwardFailure, Partial, _partial
from ._graph import Graph, Node, Params
from ._parse import _backward_lookup, _parse_backward
from ._program import Emitted, Program, Token, ask, bind, gather, map_, pure
from ._prompts import (
    NeighborAwarePrompt,
    Shown,
    _backward_request,
    render_per_edge,
    render_repair,
    render_tool_backward,
)
from ._requests import LLMRequest, Reply, SampleId
from ._trace import Trace

__all__ = [
    "BackwardContext",
    "NeighborAware",
    "NodeResult",
    "Numeric",
    "PassThrough",
    "PerEdge",
    "Rule",
    "neighbor_aware",
    "numeric",
    "pass_through",
    "per_edge",
    "ToolAware",
    "tool_aware",
]

Aggregator = Callable[[str, str, tuple[Partial, ...]], Program[Any]]


@attrs.frozen
class BackwardContext:
    """Everything a rule may look at for one node's backward step.

    Attributes:
        graph, params, trace: The system, its parameter values and the sample's trace.
        node: The node whose step this is.
        gradient: The node's aggregated gradient (the seed feedback for the output).
        targets: The inputs (and, for per-edge with instructions, the instruction)
            that need a partial, in input order.
    """

    graph: Graph
    params: Params
    trace: Trace
    node: str
    gradient: Any
    targets: tuple[str, ...]
    # The node's structure, looked up once (every helper below reads it).
    _spec: Node = attrs.field(init=False, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        object.__setattr__(self, "_spec", self.graph[self.node])

    @property
    def sample(self) -> SampleId:
        """The dataset item."""
        return self.trace.sample

    @property
    def spec(self) -> Node:
        """The node's structure."""
        return self._spec

    @property
    def task(self) -> str:
        """What the node does: its instruction, or a function node's role."""
        spec = self.spec
        if spec.kind == "llm":
            return str(self.params.value(spec.instruction))  # type: ignore[arg-type]
        return f"(a plain function) {spec.role}"

    @property
    def output(self) -> Any:
        """The node's value in the trace."""
        return self.trace.value(self.node)

    def shown(self, name: str) -> Shown:
        """``(name, role, value)`` of one input or of the node's instruction."""
        if name in self.graph.nodes:
            return (name, self.graph[name].role, self.trace.value(name))
        param = self.params[name]
        return (name, param.role, param.value)

    def inputs_shown(self) -> tuple[Shown, ...]:
        """All inputs, in order, as a prompt shows them."""
        nodes = self.graph.nodes.view  # the FrozenMaps' dicts: lookups at C speed on the hot path
        runs = self.trace.runs.view
        return tuple((name, nodes[name].role, runs[name].value) for name in self._spec.inputs)

    def siblings(self, target: str) -> tuple[str, ...]:
        """The other inputs shown beside `target`."""
        return tuple(name for name in self._spec.inputs if name != target)


_C_GRAPH, _C_PARAMS, _C_TRACE, _C_NODE, _C_GRADIENT, _C_TARGETS, _C_SPEC = slot_setters(
    BackwardContext, "graph", "params", "trace", "node", "gradient", "targets", "_spec"
)


def _context(
    graph: Graph, params: Params, trace: Trace, node: str, gradient: Any, targets: tuple[str, ...], spec: Node
) -> BackwardContext:
    """`BackwardContext(...)` for the backward machine's hot path, given the node's `spec` (``graph[node]``)."""
    context = object.__new__(BackwardContext)
    _C_GRAPH(context, graph)
    _C_PARAMS(context, params)
    _C_TRACE(context, trace)
    _C_NODE(context, node)
    _C_GRADIENT(context, gradient)
    _C_TARGETS(context, targets)
    _C_SPEC(context, spec)
    return context


@attrs.frozen
class NodeResult:
    """What one backward step produced: partials, and the targets it failed for."""

    partials: tuple[Partial, ...] = ()
    failures: tuple[BackwardFailure, ...] = ()

    @staticmethod
    def combine(results: tuple[NodeResult, ...]) -> NodeResult:
        """All partials and failures of several results, in order."""
        return NodeResult(tuple(p for r in results for p in r.partials), tuple(f for r in results for f in r.failures))


_R_PARTIALS, _R_FAILURES = slot_setters(NodeResult, "partials", "failures")


def _node_result(partials: tuple[Partial, ...], failures: tuple[BackwardFailure, ...]) -> NodeResult:
    """`NodeResult(partials, failures)` for the backward hot path."""
    result = object.__new__(NodeResult)
    _R_PARTIALS(result, partials)
    _R_FAILURES(result, failures)
    return result


class Rule(Protocol):
    """The interface the backward machine uses (read-only attributes: the built-in rules are frozen).

    A rule of your own is any value with these four members: pass it as `backward`'s
    ``rule``, or for some nodes only in a built-in rule's ``overrides`` (by node name or kind).

    Examples:
        >>> import attrs
        >>> from semgrad.backends import fake
        >>> from semgrad.core import backward, forward
        >>> from semgrad.effects import run_sync
        >>> from semgrad.topologies import paper_graph
        >>> @attrs.frozen
        ... class Terse:
        ...     aggregate: Aggregator = Concat()
        ...     include_instructions: bool = False
        ...     def resolve(self, node):
        ...         return self
        ...     def backward(self, context):
        ...         said = tuple(Partial(t, context.node, "Be terse.", (), context.sample) for t in context.targets)
        ...         return pure(NodeResult(said))
        >>> graph, params = paper_graph()
        >>> trace = run_sync(forward(graph, params, {"question": "What is 3 + 4?"}), fake.HashLLM())
        >>> rule = neighbor_aware(overrides={"answer": Terse()})
        >>> grads = run_sync(backward(graph, params, trace, "Wrong.", rule=rule), fake.HashLLM())
        >>> [(p.target, p.source, p.text) for p in grads.for_node("hint_1")]
        [('hint_1', 'answer', 'Be terse.')]
    """

    @property
    def aggregate(self) -> Aggregator:
        """How the partials a node receives become its gradient."""
        ...

    @property
    def include_instructions(self) -> bool:
        """Whether instructions receive partials of their own (in the backward plan)."""
        ...

    def resolve(self, node: Node) -> Rule:
        """The rule that makes `node`'s step: this one, or another (the built-in rules look
        `node` up in their ``overrides``, by name and then by kind)."""
        ...

    def backward(self, context: BackwardContext) -> Program[NodeResult]:
        """One node's step: a program (``pure(...)`` when no call is needed) of a `NodeResult`
        with one `Partial` per name in ``context.targets``, in that order, each from
        ``context.node`` for ``context.sample``; a target it cannot give one goes in the
        result's `failures` instead (a `BackwardFailure`)."""
        ...


def _default_overrides() -> FrozenMap[str, Any]:
    return FrozenMap({"function": PassThrough()})


@attrs.frozen
class _Base:
    aggregate: Aggregator = Concat()
    overrides: FrozenMap[str, Any] = attrs.field(factory=_default_overrides, converter=to_frozen_map)
    engine: str = "backward"
    options: FrozenMap[str, Any] = attrs.field(factory=FrozenMap, converter=to_frozen_map)
    repair: bool = True
    include_instructions: bool = False

    def resolve(self, node: Node) -> Rule:
        """The rule for `node`: an override by node name, then by kind, else this rule (for a tool node,
        `tool_aware` with this rule's engine, options and repair: a tool's code is no task to explain)."""
        overrides = self.overrides.view  # the FrozenMap's dict: C-speed lookups, on every backward step
        found = overrides.get(node.name) or overrides.get(node.kind)
        if found is not None:
            return found  # type: ignore[no-any-return]
        if node.kind == "tool":
            return ToolAware(aggregate=self.aggregate, overrides=FrozenMap(), engine=self.engine,
                             options=self.options, repair=self.repair)  # fmt: skip
        return self

    def _read(
        self,
        context: BackwardContext,
        request: LLMRequest,
        reply: Reply,
        siblings: Callable[[str], tuple[str, ...]],
        found: FrozenMap[str, str],
        repaired: bool,
        lookup: Mapping[str, str] | None = None,
    ) -> Program[NodeResult]:
        if type(reply) is not Success:  # `Success` is final: an exact check is enough, and cheaper
            error = reply.failure()
            return pure(
                _result(
                    context,
                    found,
                    request.targets,
                    f"the backward call failed ({error.kind}: {error.message})",
                    siblings,
                )
            )
        text = reply.unwrap().text
        if lookup is None:  # the labels of `request.targets` (NeighborAware passes them, built once per node)
            lookup = _backward_lookup(request.targets, dict(enumerate(context.spec.inputs, 1)))
        parsed = _parse_backward(text, request.targets, lookup)
        if type(parsed) is Success:
            read = parsed.unwrap()
            return pure(_result(context, found.update(read) if found.view else read, (), "", siblings))
        error = parsed.failure()
        found = found.update(error.found)
        if self.repair and not repaired:
            again = render_repair(request, text, error.reason, error.missing)
            return bind(ask(again), lambda r: self._read(context, again, r, siblings, found, True))
        reason = f"unreadable reply{' after one repair' if repaired else ''}: {error.reason}"
        return pure(_result(context, found, error.missing, reason, siblings))


def _result(
    context: BackwardContext,
    found: Mapping[str, str],
    missing: tuple[str, ...],
    reason: str,
    siblings: Callable[[str], tuple[str, ...]],
) -> NodeResult:
    node, sample = context.node, context.trace.sample
    text = found.view if type(found) is FrozenMap else found  # C-speed lookups
    partials = tuple(_partial(t, node, text[t], siblings(t), sample) for t in context.targets if t in text)
    failures = (BackwardFailure(context.node, missing, reason, context.sample),) if missing else ()
    return _node_result(partials, failures)


@attrs.frozen
class NeighborAware(_Base):
    """The paper's rule; build it with `neighbor_aware`."""

    def backward(self, context: BackwardContext) -> Program[NodeResult]:
        # What depends only on the node -- the prompt with its task, numbered targets, reply form
        # and input headings filled in (`NeighborAwarePrompt`, the one `render_neighbor_aware`
        # fills), the siblings, the reply's labels -- is worked out once per params and graph.
        fixed = context.params.memo("neighbor_aware")
        key = (context.trace.graph, context.node, context.targets)  # the trace's graph fingerprint: the roles shown
        parts = fixed.get(key)
        if parts is None:
            parts = fixed[key] = _NeighborParts.of(context)
        runs = context.trace.runs.view
        user = parts.prompt.fill(
            [runs[name].value for name in context.spec.inputs], runs[context.node].value, context.gradient
        )
        request = _backward_request(
            user, context.node, context.targets, context.trace.sample, self.engine, self.options
        )
        return _NeighborStep(self, context, request, parts)


@attrs.frozen(eq=False)
class _NeighborParts:
    """The node-only parts of a neighbour-aware step (kept in the params' memo, compared by
    identity): its prompt, each target's siblings, and the labels a reply may use."""

    prompt: NeighborAwarePrompt
    siblings_of: Callable[[str], tuple[str, ...]]
    lookup: dict[str, str]

    @classmethod
    def of(cls, context: BackwardContext) -> _NeighborParts:
        inputs = context.spec.inputs
        nodes = context.graph.nodes.view
        prompt = NeighborAwarePrompt.of(context.task, context.targets, [(name, nodes[name].role) for name in inputs])
        siblings = {t: tuple(n for n in inputs if n != t) for t in context.targets}
        lookup = _backward_lookup(context.targets, dict(enumerate(inputs, 1)))
        return cls(prompt, siblings.__getitem__, lookup)  # type: ignore[arg-type]


class _NeighborStep(Program[NodeResult]):
    """A neighbour-aware step waiting for its one reply (`bind(ask(request), read)`, without the closure)."""

    __slots__ = ("rule", "context", "request", "parts", "emitted")

    def __init__(self, rule: NeighborAware, context: BackwardContext, request: LLMRequest, parts: _NeighborParts):
        self.rule = rule
        self.context = context
        self.request = request
        self.parts = parts
        self.emitted: Emitted = (((), request),)  # type: ignore[misc]

    def feed(self, token: Token, reply: Reply) -> Program[NodeResult]:
        if token != ():
            raise ProtocolError(f"unknown token {token!r} for a single request")
        parts = self.parts
        return self.rule._read(self.context, self.request, reply, parts.siblings_of, _NO_FEEDBACK, False, parts.lookup)

    def __repr__(self) -> str:
        return f"ask(node={self.request.node!r}, purpose={self.request.purpose!r})"


_NO_FEEDBACK: FrozenMap[str, str] = FrozenMap()


@attrs.frozen
class PerEdge(_Base):
    """The formal per-edge rule; build it with `per_edge`."""

    def backward(self, context: BackwardContext) -> Program[NodeResult]:
        return map_(gather(*(self._edge(context, t) for t in context.targets)), NodeResult.combine)

    def _edge(self, context: BackwardContext, target: str) -> Program[NodeResult]:
        request = render_per_edge(
            context.node,
            context.shown(target),
            context.output,
            context.gradient,
            sample=context.sample,
            engine=self.engine,
            options=self.options,
        )
        one = attrs.evolve(context, targets=(target,))
        return bind(ask(request), lambda reply: self._read(one, request, reply, lambda t: (), FrozenMap(), False))


@attrs.frozen
class ToolAware(_Base):
    """The backward rule of a tool node; build it with `tool_aware`.

    A tool's code cannot be trained; what can change is what it was called with. The rule shows the
    tool's description (or its trainable description parameter's value), each argument beside the
    node that wrote it, the result -- or, when the tool raised, the error, whose message so reaches
    the node that wrote the arguments -- and the feedback on the result, and asks for one partial per
    target. A node of another kind is handed to `neighbor_aware`'s way of asking.
    """

    overrides: FrozenMap[str, Any] = attrs.field(factory=FrozenMap, converter=to_frozen_map)

    def resolve(self, node: Node) -> Rule:
        return self

    def backward(self, context: BackwardContext) -> Program[NodeResult]:
        spec = context.spec
        if spec.kind != "tool":
            return NeighborAware(self.aggregate, FrozenMap(), self.engine, self.options, self.repair).backward(context)
        described = getattr(spec, "description_parameter", None)
        description = (
            str(context.params.value(described)) if described and described in context.params else spec.description
        ) if hasattr(spec, "description") else spec.role  # fmt: skip
        names = tuple(getattr(spec, "arguments", ()) or spec.inputs)
        runs = context.trace.runs.view
        arguments = tuple((argument, name, runs[name].value) for argument, name in zip(names, spec.inputs))
        run = runs[context.node]
        error = None if run.error is None else str(getattr(run.error, "message", run.error))
        request = render_tool_backward(
            context.node, description, arguments, run.value, context.gradient, context.targets,
            error=error, sample=context.sample, engine=self.engine, options=self.options,
        )  # fmt: skip
        siblings = {t: tuple(n for n in spec.inputs if n != t) for t in context.targets}
        return bind(
            ask(request),
            lambda reply: self._read(context, request, reply, siblings.__getitem__, FrozenMap(), False),
        )


@attrs.frozen
class PassThrough:
    """Hands the node's gradient to every target unchanged, with no call."""

    aggregate: Aggregator = Concat()
    include_instructions: bool = False

    def resolve(self, node: Node) -> Rule:
        return self

    def backward(self, context: BackwardContext) -> Program[NodeResult]:
        return pure(
            NodeResult(tuple(Partial(t, context.node, context.gradient, (), context.sample) for t in context.targets))
        )


@attrs.frozen
class Numeric:
    """Reverse-mode autodiff over function nodes with a ``vjp``; build it with `numeric`."""

    aggregate: Aggregator = Total()
    include_instructions: bool = False

    def resolve(self, node: Node) -> Rule:
        return self

    def backward(self, context: BackwardContext) -> Program[NodeResult]:
        spec = context.spec
        if spec.kind != "function" or spec.vjp is None:
            reason = f"node {context.node!r} has no vjp; numeric() needs function nodes with vjp=..."
            return pure(NodeResult((), (BackwardFailure(context.node, context.targets, reason, context.sample),)))
        values = tuple(context.trace.value(name) for name in spec.inputs)
        try:
            cotangents = spec.vjp(values, context.output, context.gradient)
        except Exception as exc:  # a user vjp's failure is data, as a user function's is in forward
            reason = f"the vjp of node {context.node!r} raised {type(exc).__name__}: {exc}"
            return pure(NodeResult((), (BackwardFailure(context.node, context.targets, reason, context.sample),)))
        count = len(cotangents) if hasattr(cotangents, "__len__") else None
        if count != len(values):  # zip would drop extra cotangents, and a missing one is a bare KeyError
            got = f"{count} cotangent(s)" if count is not None else f"a {type(cotangents).__name__}"
            reason = (
                f"the vjp of node {context.node!r} returned {got} for its {len(values)} input(s);"
                " it must return a tuple of one cotangent per input, in input order"
            )
            return pure(NodeResult((), (BackwardFailure(context.node, context.targets, reason, context.sample),)))
        by_input = dict(zip(spec.inputs, cotangents))
        return pure(
            NodeResult(tuple(Partial(t, context.node, by_input[t], (), context.sample) for t in context.targets))
        )


def neighbor_aware(
    *,
    aggregate: Aggregator | None = None,
    overrides: Mapping[str, Any] | None = None,
    engine: str = "backward",
    options: Mapping[str, Any] | None = None,
    repair: bool = True,
) -> NeighborAware:
    """The paper's backward rule: one request per (node, sample) showing all inputs.

    Args:
        aggregate: How incoming partials become a node's gradient
            (default: ordered concatenation with de-duplication).
        overrides: Rules by node name or node kind; function nodes pass their
            gradient through unchanged unless you override ``"function"``.
        engine: The logical engine of backward requests.
        options: Sampling options for backward requests.
        repair: Ask once more when a reply cannot be read.
    """
    return NeighborAware(
        aggregate or Concat(),
        FrozenMap({**_default_overrides(), **(overrides or {})}),
        engine,
        FrozenMap(options or {}),
        repair,
    )


def per_edge(
    *,
    include_instructions: bool = False,
    aggregate: Aggregator | None = None,
    overrides: Mapping[str, Any] | None = None,
    engine: str = "backward",
    options: Mapping[str, Any] | None = None,
    repair: bool = True,
) -> PerEdge:
    """The formal per-edge rule: one request per edge, showing only that input,
    the node's output and its gradient (the (u, w, grad w) form of DESIGN 1.2).

    With `include_instructions`, each LLM node also sends one request for its own
    instruction (the instruction parameter then receives partials). TextGrad itself
    shows more (the instruction and the node's whole input): see `textgrad()`.
    """
    return PerEdge(
        aggregate or Concat(),
        FrozenMap({**_default_overrides(), **(overrides or {})}),
        engine,
        FrozenMap(options or {}),
        repair,
        include_instructions,
    )


def tool_aware(*, engine: str = "backward", options: Mapping[str, Any] | None = None, repair: bool = True) -> ToolAware:
    """The backward rule of tool nodes (what `neighbor_aware` and `per_edge` use for them, with their own engine
    and options, unless an override names the node or ``"tool"``):
    from the tool's description, arguments, result and the feedback on it, how each argument should change.

    Examples:
        >>> tool_aware().resolve(None) == tool_aware()
        True
    """
    return ToolAware(
        aggregate=Concat(), overrides=FrozenMap(), engine=engine, options=FrozenMap(options or {}), repair=repair
    )


def pass_through() -> PassThrough:
    """A rule that hands a node's gradient to its inputs unchanged (no call)."""
    return PassThrough()


def numeric() -> Numeric:
    """Reverse-mode autodiff: vector-Jacobian products aggregated by sum."""
    return Numeric()
