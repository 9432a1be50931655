"""Semantic backpropagation as an explicit frozen state machine.

Theory of operation
-------------------
`backward(graph, params, trace, feedback, rule)` walks one sample's trace in
reverse. A *plan*, computed once from the structure, says for every node:

* whether it **needs a gradient**: a trainable free parameter does; an LLM node
  does when its instruction is trainable or any input needs one; a function
  node does when any input needs one; inputs never do;
* its **targets**: the inputs that need a gradient, in input order (plus its own
  instruction with ``per_edge(include_instructions=True)``);
* whether it **steps**: it is the output (whose gradient is the seed feedback)
  or receives partials, it reaches the output, and it has targets;
* how many partials it **awaits**: one from every stepping successor.

The machine starts the output's step. When a step finishes, its partials (and
failures) are delivered to its targets; a node whose last awaited partial has
arrived aggregates them (in successor order, so arrival order never matters)
and starts its own step -- at once, in the same transition, so its requests are
emitted the moment they can be. Each step is a `Program` from the rule, running
side by side with the others; requests carry tokens ``(node, *inner)``.

Failures are data: a step whose call fails, or whose reply stays unreadable
after one repair request, records a `BackwardFailure` for the targets it could
not serve; a node that receives no usable partial fails its own targets without
a call. Nodes that do not reach the output and inputs that are not trainable
receive nothing and cost nothing. The machine ends with `Gradients`.
"""

from __future__ import annotations

from numbers import Number
from typing import Any, NamedTuple

import attrs

from ._errors import ProtocolError
from ._frozen import FrozenMap
from ._gradients import BackwardFailure, Gradients, Partial, _FeedbackRow, _gradients
from ._graph import Graph, Params
from ._persistent import Chain, PVec
from ._program import Done, Emitted, Program, Token, bind, map_
from ._requests import Reply
from ._rules import NeighborAware, NodeResult, Numeric, Rule, _Base, _context
from ._trace import Trace

__all__ = ["BackwardMachine", "BackwardPlan", "backward", "plan_backward"]


@attrs.frozen
class BackwardPlan:
    """Which nodes need gradients, which step, and how many partials each expects (see module doc)."""

    needs_gradient: FrozenMap[str, bool]
    targets: FrozenMap[str, tuple[str, ...]]
    steps: tuple[str, ...]
    awaits: FrozenMap[str, int]


def plan_backward(graph: Graph, params: Params, *, include_instructions: bool = False) -> BackwardPlan:
    """The pure traversal plan for `graph` (independent of any sample).

    Examples:
        >>> from semgrad.topologies import paper_graph
        >>> graph, params = paper_graph()
        >>> plan = plan_backward(graph, params)
        >>> plan.steps, plan.targets["answer"], dict(plan.awaits)["hint_1"]
        (('answer',), ('hint_1', 'hint_2'), 1)
    """
    needs: dict[str, bool] = {}
    targets: dict[str, tuple[str, ...]] = {}
    for name, node in graph.nodes.items():
        inputs_need = any(needs[i] for i in node.inputs)
        if node.kind == "input":
            needs[name] = False
        elif node.kind == "param":
            needs[name] = params[name].trainable
        elif node.kind == "llm":
            needs[name] = params[node.instruction].trainable or inputs_need  # type: ignore[index]
        else:
            needs[name] = inputs_need
        own = (
            (node.instruction,)
            if include_instructions and node.kind == "llm" and params[node.instruction].trainable
            else ()
        )  # type: ignore[index]
        if node.kind == "tool":  # a tool's trainable description receives partials of its own
            described = getattr(node, "description_parameter", None)
            if described and described in params and params[described].trainable:
                own = (described,)
                needs[name] = True
        targets[name] = tuple(i for i in node.inputs if needs[i]) + own
    awaits = dict.fromkeys(graph.nodes, 0)
    steps = []
    for name in reversed(graph.topological_order):
        receives = name == graph.output or awaits[name] > 0
        if receives and graph.reaches_output(name) and targets[name]:
            steps.append(name)
            for target in targets[name]:
                if target in awaits:
                    awaits[target] += 1
    return BackwardPlan(FrozenMap(needs), FrozenMap(targets), tuple(reversed(steps)), FrozenMap(awaits))


def checked_rule(rule: Any) -> Rule:
    """`rule`, once checked that it is a backward rule (a rule's factory left uncalled is refused, saying so)."""
    if not all(hasattr(rule, name) for name in ("include_instructions", "resolve", "backward", "aggregate")):
        hint = " (a factory: call it to build the rule)" if callable(rule) else ""
        raise TypeError(f"rule must be a backward rule (rules.neighbor_aware(), ...), got {type(rule).__name__}{hint}")
    return rule  # type: ignore[no-any-return]


def backward(
    graph: Graph,
    params: Params,
    trace: Trace,
    feedback: Any,
    rule: Rule | None = None,
) -> Program[Gradients]:
    """Backpropagate `feedback` on the output through one sample's trace.

    Args:
        graph, params: The system, as in `forward`: the very params the trace was made
            with. The prompts show each node's instruction from `params` beside the output
            the trace recorded, so a trace made with other params (``fit``'s
            ``result.params`` against an older trace, say) is refused, as is a trace of
            another graph (by the graph's fingerprint, which leaves a function node's
            ``fn`` out). A trace built by hand carries no params digest and is not checked.
        trace: The sample's forward trace.
        feedback: The seed gradient of the output node (text, or a number for
            `rules.numeric()`).
        rule: A backward rule (default `rules.neighbor_aware()`).

    Returns:
        A program yielding `Gradients`.

    Examples:
        >>> from semgrad.backends.fake import HashLLM
        >>> from semgrad.core import forward
        >>> from semgrad.effects import run_sync
        >>> from semgrad.topologies import paper_graph
        >>> graph, params = paper_graph()
        >>> trace = run_sync(forward(graph, params, {"question": "2+2?"}), HashLLM())
        >>> backward(graph, params, trace, "The expected output is 4.")
        BackwardMachine(sample=None, in_progress=('answer',))
        >>> grads = run_sync(backward(graph, params, trace, "The expected output is 4."), HashLLM())
        >>> [(p.target, p.source, p.siblings) for p in grads.for_node("hint_1")]
        [('hint_1', 'answer', ('question', 'hint_2'))]
        >>> grads.for_node("question")
        ()
    """
    if trace.graph != graph.fingerprint:
        raise ProtocolError("the trace was produced by a different graph")
    if trace.params is not None and trace.params != params.digest:
        raise ProtocolError(
            "the trace was produced with other params: backward needs the params its forward pass used "
            "(their prompts show each instruction beside the output it produced)"
        )
    rule = checked_rule(rule if rule is not None else NeighborAware())
    if isinstance(rule, _Base):
        if not isinstance(feedback, str):  # the LLM rules show it in their prompts
            raise TypeError(f"feedback must be text for {type(rule).__name__}, got {type(feedback).__name__}")
    elif isinstance(rule, Numeric) and not isinstance(feedback, Number):  # the vjps multiply by it
        raise TypeError(f"feedback must be a number for {type(rule).__name__}, got {type(feedback).__name__}")
    statics = params.memo("backward")
    key = (graph.fingerprint, rule.include_instructions)
    static = statics.get(key)  # the plan depends only on the structure and the params
    if static is None:
        plan = plan_backward(graph, params, include_instructions=rule.include_instructions)
        static = statics[key] = _Static.of(graph, params, plan)
    return BackwardMachine.start(graph, params, trace, feedback, rule, static.plan, static=static)


#: A node's slot: its step while it runs, then the feedback it was given (a `Gradients`
#: feedback row), or None.
_Slot = Program[Any] | _FeedbackRow | None


@attrs.frozen(eq=False)
class _Static:
    """What every sample's backward pass shares for one graph, params and plan (compared by identity)."""

    plan: BackwardPlan
    stepping: tuple[bool, ...]
    awaits: tuple[int, ...]
    #: Position of each node; and of each node and instruction (its node's), for ordering
    #: results. Private dicts, never changed after construction (plain dict lookups are the fastest).
    positions: dict[str, int]
    where: dict[str, int]
    #: Per stepping node: ``(target, position)`` for each target that is a graph node.
    delivers: dict[str, tuple[tuple[str, int], ...]]
    #: Per node: receives partials but makes no step of its own (a free parameter, an LLM node
    #: whose inputs need nothing); its partials are still aggregated by the rule's aggregator.
    collecting: tuple[bool, ...]
    #: Every sample's first cells (no step, all partials awaited, none received): a
    #: persistent value, so all samples start from the same one.
    cells: PVec[tuple[Any, ...]]

    @classmethod
    def of(cls, graph: Graph, params: Params, plan: BackwardPlan) -> _Static:
        order = graph.topological_order
        steps = frozenset(plan.steps)
        where = dict(graph._index)
        for name, parameter in params.items():
            if name not in where and parameter.node is not None and parameter.node in where:
                where[name] = where[parameter.node]
        index = graph._index
        delivers = {n: tuple((t, index[t]) for t in plan.targets[n] if t in index) for n in plan.steps}
        stepping = tuple(n in steps for n in order)
        collecting = tuple(n not in steps and plan.awaits[n] > 0 for n in order)
        awaits = tuple(plan.awaits[n] for n in order)
        cells = PVec([(None, count) for count in awaits])
        return cls(plan, stepping, awaits, dict(index), where, delivers, collecting, cells)


class BackwardMachine(Program[Gradients]):
    """The backward state machine for one sample; build it with `backward`.

    Per node (by topological position) it keeps one *cell*, the tuple ``(slot, awaited,
    *partials)``: its slot (its running step; once the step is over, the feedback it was
    given, as a `Gradients` feedback row; or None), how many steps it still awaits, and
    the partials received so far. The cells are a persistent array (`PVec`) and a reply
    writes all it changes in one copy of the array's paths, so it costs O(the node's
    targets), never O(the graph).

    The result is read from the cells at the end: they hold every partial for a graph
    node, so only partials for other targets (instructions) and failures are kept in
    append-only `Chain`s -- a pass allocates no per-step log, which the cyclic garbage
    collector would otherwise scan for as long as the sample runs.
    """

    __slots__ = (
        "graph",
        "params",
        "trace",
        "rule",
        "_static",
        "_cells",
        "_n_running",
        "_partials",
        "_failures",
        "_seed",
        "emitted",
    )

    def __init__(
        self,
        graph: Graph,
        params: Params,
        trace: Trace,
        rule: Rule,
        static: _Static,
        cells: PVec[tuple[Any, ...]],
        n_running: int,
        partials: Chain[Partial],
        failures: Chain[BackwardFailure],
        seed: _FeedbackRow,
        emitted: Emitted,
    ) -> None:
        self.graph = graph
        self.params = params
        self.trace = trace
        self.rule = rule
        self._static = static
        self._cells = cells
        self._n_running = n_running
        self._partials = partials
        self._failures = failures
        self._seed = seed
        self.emitted: Emitted = emitted  # type: ignore[misc]

    @classmethod
    def start(
        cls,
        graph: Graph,
        params: Params,
        trace: Trace,
        feedback: Any,
        rule: Rule,
        plan: BackwardPlan,
        *,
        static: _Static | None = None,
    ) -> Program[Gradients]:
        """The machine's first state (`backward` checks its arguments and shares `static` across samples)."""
        static = static if static is not None and static.plan is plan else _Static.of(graph, params, plan)
        state = cls(
            graph,
            params,
            trace,
            rule,
            static,
            static.cells,
            0,
            Chain(),
            Chain(),
            (graph.output, feedback, trace.sample),
            (),
        )
        steps = plan.steps
        if graph.output not in steps:
            return Done(state._result())
        return state._advance(state._cells, 0, [], {graph.output: _Launch(feedback, seeded=True)}, [])

    def _with(
        self,
        cells: PVec[tuple[Any, ...]],
        n_running: int,
        partials: Chain[Partial],
        failures: Chain[BackwardFailure],
        emitted: Emitted,
    ) -> BackwardMachine:
        return BackwardMachine(
            self.graph, self.params, self.trace, self.rule, self._static,
            cells, n_running, partials, failures, self._seed, emitted,
        )  # fmt: skip

    @property
    def in_progress(self) -> tuple[str, ...]:
        """Nodes whose backward step is under way, in topological order."""
        names = self.graph.topological_order
        return tuple(names[pos] for pos, cell in enumerate(self._cells.tolist()) if isinstance(cell[0], Program))

    def __repr__(self) -> str:
        return f"BackwardMachine(sample={self.trace.sample!r}, in_progress={self.in_progress!r})"

    def feed(self, token: Token, reply: Reply) -> Program[Gradients]:
        node = token[0] if token else None
        pos = self.graph._index.view.get(node, -1) if isinstance(node, str) else -1
        cell = self._cells.get(pos) if pos >= 0 else (None,)
        current = cell[0]
        if not isinstance(current, Program):
            raise ProtocolError(f"backward machine got a reply for {token!r}, which it is not waiting for")
        step = current.feed(token[1:], reply)
        if not step.done:
            return self._with(
                self._cells.set(pos, (step, *cell[1:])), self._n_running,
                self._partials, self._failures,
                tuple(((node, *t), r) for t, r in step.emitted),
            )  # fmt: skip
        # `_advance` overwrites the finished step's slot (with its feedback, or None).
        return self._advance(self._cells, self._n_running - 1, [(node, step.value)], {}, [])

    def _advance(
        self,
        cells: PVec[tuple[Any, ...]],
        n_running: int,
        finished: list[tuple[str, Any]],
        ready: dict[str, _Launch],
        emitted: list[Any],
    ) -> Program[Gradients]:
        """Record finished steps, deliver their partials, and launch what became ready.

        `cells` and `n_running` replace this state's; the other fields change in local
        variables, and one new state is built at the end.
        """
        partials, failures = self._partials, self._failures
        static = self._static
        position = static.positions.__getitem__
        stepping, collecting = static.stepping, static.collecting
        # Every cell this call changes, written in one copy of the array's paths at the end.
        changed: dict[int, tuple[Any, ...]] = {}
        while finished or ready:
            if finished:
                node, (gradient, result) = finished.pop()
                # Deliver: the partials to their targets, and one fewer awaited step to each.
                delivers = static.delivers.get(node, ())
                given = result.partials
                in_order = len(given) == len(delivers)  # one partial per target, in order: the usual case
                if in_order:
                    for partial, (target, _) in zip(given, delivers):
                        if partial.target != target:
                            in_order = False
                            break
                if in_order:  # each target's cell copied once, for its partial and its count
                    for partial, (target, pos) in zip(given, delivers):
                        entry = changed.get(pos) or cells.get(pos)
                        count = entry[1]
                        changed[pos] = entry = (entry[0], count - 1, *entry[2:], partial)
                        if count == 1 and (stepping[pos] or collecting[pos]):
                            ready[target] = _Launch(None, entry[2:])
                else:
                    for partial in given:
                        pos = static.positions.get(partial.target)
                        if pos is not None:
                            changed[pos] = (changed.get(pos) or cells.get(pos)) + (partial,)
                        else:  # instruction targets are not graph nodes: no cell, and they never step
                            partials = partials.append(partial)
                    for target, pos in delivers:
                        entry = changed.get(pos) or cells.get(pos)
                        count = entry[1]
                        changed[pos] = (entry[0], count - 1, *entry[2:])
                        if count == 1 and (stepping[pos] or collecting[pos]):
                            ready[target] = _Launch(None, entry[2:])
                pos = position(node)
                entry = changed.get(pos) or cells.get(pos)
                if node != self.graph.output and (gradient is not None or not collecting[pos]):
                    # The finished step's slot keeps the feedback it was given, for `_result`.
                    changed[pos] = ((node, gradient, self.trace.sample), *entry[1:])  # a feedback row
                elif entry[0] is not None:
                    changed[pos] = (None, *entry[1:])
                if result.failures:
                    failures = failures.extend(result.failures)
                continue
            node = next(iter(ready)) if len(ready) == 1 else min(ready, key=position)
            step = self._step(node, ready.pop(node))
            if step.done:
                finished.append((node, step.value))
            else:
                pos = position(node)
                entry = changed.get(pos) or cells.get(pos)
                changed[pos] = (step, *entry[1:])
                n_running += 1
                asks = step.emitted
                if len(asks) == 1:  # one request per step, as a rule
                    token, request = asks[0]
                    emitted.append(((node, *token), request))
                else:
                    emitted.extend(((node, *t), r) for t, r in asks)
        if changed:
            cells = cells.set_many(changed)
        state = self._with(cells, n_running, partials, failures, tuple(emitted))
        return Done(state._result()) if n_running == 0 else state

    def _step(self, node: str, launch: _Launch) -> Program[tuple[Any, NodeResult]]:
        if self._static.collecting[self._static.positions[node]]:
            # A node that only collects partials: its gradient is aggregated by the same rule as
            # every other node's (a summary, say), and it makes no step of its own.
            positions = self._static.positions
            received = tuple(sorted(launch.partials, key=lambda p: positions[p.source]))
            if not received:
                return Done((None, NodeResult()))
            return map_(self.rule.aggregate(node, self.graph.nodes.view[node].role, received), _collected)
        targets = self._static.plan.targets[node]
        sample = self.trace.sample
        run = self.trace.runs.view[node]  # the FrozenMaps' dicts: C-speed lookups on the hot path
        spec = self.graph.nodes.view[node]
        if run.error is not None and spec.kind != "tool":  # a tool that raised: its rule shows the error
            reason = f"node {node!r} has no output (its forward step failed)"
            return Done((None, NodeResult((), (BackwardFailure(node, targets, reason, sample),))))
        if launch.seeded:
            gradient_program: Program[Any] = Done(launch.gradient)
        else:
            partials = launch.partials
            if len(partials) > 1:
                positions = self._static.positions
                partials = tuple(sorted(partials, key=lambda p: positions[p.source]))
            if not partials:
                reason = f"no feedback reached node {node!r}"
                return Done((None, NodeResult((), (BackwardFailure(node, targets, reason, sample),))))
            gradient_program = self.rule.aggregate(node, spec.role, partials)
        rule = self.rule.resolve(spec)
        if gradient_program.done:  # concatenation and sums: the usual case, with no closure
            return _node_step(self.graph, self.params, self.trace, node, spec, gradient_program.value, targets, rule)

        # The closure holds only the values it needs, not `self`, so a running step keeps no
        # old machine state (and the arrays only it still uses) alive.
        graph, params, trace = self.graph, self.params, self.trace

        def step(gradient: Any) -> Program[tuple[Any, NodeResult]]:
            return _node_step(graph, params, trace, node, spec, gradient, targets, rule)

        return bind(gradient_program, step)

    @property
    def plan(self) -> BackwardPlan:
        """The traversal plan this machine follows."""
        return self._static.plan

    def _result(self) -> Gradients:
        where = self._static.where
        cells = self._cells.tolist()
        if self._partials:  # partials for instructions too: one sort puts them among the rest
            found = [partial for cell in cells for partial in cell[2:]]
            found.extend(self._partials.items())
            found.sort(key=lambda p: (where[p.target], p.target, where[p.source]))
        else:
            # The cells are in the targets' order already (one target each): only a cell with
            # several partials needs sorting, by source -- the order the one sort above gives.
            found = []
            for cell in cells:
                if len(cell) == 3:
                    found.append(cell[2])
                elif len(cell) > 3:
                    found.extend(sorted(cell[2:], key=lambda p: where[p.source]))
        failures = tuple(sorted(self._failures.items(), key=lambda f: where[f.source]))
        given = [self._seed]
        given.extend(cell[0] for cell in cells if type(cell[0]) is tuple)
        given.sort(key=lambda row: -where[row[0]])
        return _gradients(
            tuple([(p.target, p.source, p.value, p.siblings, p.sample) for p in found]), tuple(given), failures
        )


def _collected(gradient: Any) -> tuple[Any, NodeResult]:
    return gradient, NodeResult()


def _node_step(
    graph: Graph,
    params: Params,
    trace: Trace,
    node: str,
    spec: Any,
    gradient: Any,
    targets: tuple[str, ...],
    rule: Rule,
) -> Program[tuple[Any, NodeResult]]:
    """The rule's step for `node`, yielding ``(gradient, result)``."""
    program = rule.backward(_context(graph, params, trace, node, gradient, targets, spec))
    if program.done:
        return Done((gradient, program.value))
    return _WithGradient(program, gradient, program.emitted)


class _WithGradient(Program[tuple[Any, NodeResult]]):
    """``map_(program, lambda result: (gradient, result))``, without the two closures."""

    __slots__ = ("inner", "gradient", "emitted")

    def __init__(self, inner: Program[NodeResult], gradient: Any, emitted: Emitted) -> None:
        self.inner = inner
        self.gradient = gradient
        self.emitted: Emitted = emitted  # type: ignore[misc]

    def feed(self, token: Token, reply: Reply) -> Program[tuple[Any, NodeResult]]:
        inner = self.inner.feed(token, reply)
        if inner.done:
            return Done((self.gradient, inner.value))
        return _WithGradient(inner, self.gradient, inner.emitted)


class _Launch(NamedTuple):
    """A node's step about to start: the seed feedback, or the partials it received."""

    gradient: Any = None
    partials: tuple[Partial, ...] = ()
    seeded: bool = False
