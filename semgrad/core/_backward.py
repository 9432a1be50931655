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

from typing import Any

import attrs

from ._errors import ProtocolError
from ._frozen import FrozenMap
from ._gradients import BackwardFailure, Gradients, NodeFeedback, Partial
from ._graph import Graph, Params
from ._program import Done, Program, Token, bind, map_
from ._requests import Reply
from ._rules import BackwardContext, NeighborAware, NodeResult, Rule
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


def backward(
    graph: Graph,
    params: Params,
    trace: Trace,
    feedback: Any,
    rule: Rule | None = None,
) -> Program[Gradients]:
    """Backpropagate `feedback` on the output through one sample's trace.

    Args:
        graph, params: The system, as in `forward`.
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
        >>> grads = run_sync(backward(graph, params, trace, "The expected output is 4."), HashLLM())
        >>> [(p.target, p.source, p.siblings) for p in grads.for_node("hint_1")]
        [('hint_1', 'answer', ('question', 'hint_2'))]
        >>> grads.for_node("question")
        ()
    """
    if trace.graph != graph.fingerprint:
        raise ProtocolError("the trace was produced by a different graph")
    rule = rule if rule is not None else NeighborAware()
    plan = plan_backward(graph, params, include_instructions=rule.include_instructions)
    return BackwardMachine.start(graph, params, trace, feedback, rule, plan)


class BackwardMachine(Program[Gradients]):
    """The backward state machine for one sample; build it with `backward`."""

    __slots__ = (
        "graph",
        "params",
        "trace",
        "rule",
        "plan",
        "stepping",
        "received",
        "waiting",
        "running",
        "partials",
        "failures",
        "feedback",
        "emitted",
    )

    def __init__(self, **fields: Any) -> None:
        for key, value in fields.items():
            object.__setattr__(self, key, value)

    @classmethod
    def start(
        cls, graph: Graph, params: Params, trace: Trace, feedback: Any, rule: Rule, plan: BackwardPlan
    ) -> Program[Gradients]:
        state = cls(
            graph=graph,
            params=params,
            trace=trace,
            rule=rule,
            plan=plan,
            stepping=frozenset(plan.steps),
            received={},
            waiting=plan.awaits.to_dict(),
            running=FrozenMap(),
            partials=(),
            failures=(),
            feedback=(NodeFeedback(graph.output, feedback, trace.sample),),
            emitted=(),
        )
        if graph.output not in plan.steps:
            return Done(state._result())
        return state._advance([], {graph.output: _Launch(feedback, seeded=True)})

    def _evolve(self, **changes: Any) -> BackwardMachine:
        fields = {name: getattr(self, name) for name in self.__slots__}
        fields.update(changes)
        return BackwardMachine(**fields)

    @property
    def in_progress(self) -> tuple[str, ...]:
        """Nodes whose backward step is under way."""
        return tuple(self.running)

    def feed(self, token: Token, reply: Reply) -> Program[Gradients]:
        node = token[0] if token else None
        if node not in self.running:
            raise ProtocolError(f"backward machine got a reply for {token!r}, which it is not waiting for")
        step = self.running[node].feed(token[1:], reply)
        if not step.done:
            return self._evolve(
                running=self.running.set(node, step), emitted=tuple(((node, *t), r) for t, r in step.emitted)
            )
        return self._evolve(running=self.running.without(node), emitted=())._advance([(node, step.value)], {})

    def _advance(self, finished: list[tuple[str, Any]], ready: dict[str, _Launch]) -> Program[Gradients]:
        """Record finished steps, deliver their partials, and launch what became ready."""
        state: BackwardMachine = self
        emitted = list(self.emitted)
        while finished or ready:
            if finished:
                node, (gradient, result) = finished.pop()
                state = state._deliver(node, gradient, result, ready)
                continue
            node = min(ready, key=self.graph.position)
            step = state._step(node, ready.pop(node))
            if step.done:
                finished.append((node, step.value))
            else:
                state = state._evolve(running=state.running.set(node, step))
                emitted.extend(((node, *t), r) for t, r in step.emitted)
        if not state.running:
            return Done(state._result())
        return state._evolve(emitted=tuple(emitted))

    def _deliver(self, node: str, gradient: Any, result: NodeResult, ready: dict[str, _Launch]) -> BackwardMachine:
        # `received` and `waiting` are private dicts, copied (never changed in place) per transition.
        received = self.received.copy()
        waiting = self.waiting.copy()
        for partial in result.partials:
            received[partial.target] = received.get(partial.target, ()) + (partial,)
        for target in self.plan.targets[node]:
            if target in waiting:
                waiting[target] -= 1
                if waiting[target] == 0 and target in self.stepping:
                    ready[target] = _Launch(None, received.get(target, ()))
        told = (NodeFeedback(node, gradient, self.trace.sample),) if node != self.graph.output else ()
        return self._evolve(
            received=received,
            waiting=waiting,
            partials=self.partials + result.partials,
            failures=self.failures + result.failures,
            feedback=self.feedback + told,
        )

    def _step(self, node: str, launch: _Launch) -> Program[tuple[Any, NodeResult]]:
        targets = self.plan.targets[node]
        sample = self.trace.sample
        run = self.trace[node]
        if run.error is not None:
            reason = f"node {node!r} has no output (its forward step failed)"
            return Done((None, NodeResult((), (BackwardFailure(node, targets, reason, sample),))))
        if launch.seeded:
            gradient_program: Program[Any] = Done(launch.gradient)
        else:
            partials = tuple(sorted(launch.partials, key=lambda p: self.graph.position(p.source)))
            if not partials:
                reason = f"no feedback reached node {node!r}"
                return Done((None, NodeResult((), (BackwardFailure(node, targets, reason, sample),))))
            gradient_program = self.rule.aggregate(node, self.graph[node].role, partials)
        rule = self.rule.resolve(self.graph[node])

        def step(gradient: Any) -> Program[tuple[Any, NodeResult]]:
            context = BackwardContext(self.graph, self.params, self.trace, node, gradient, targets)
            return map_(rule.backward(context), lambda result: (gradient, result))

        return bind(gradient_program, step)

    def _result(self) -> Gradients:
        graph = self.graph

        def where(name: str) -> int:
            if name in graph.nodes:
                return graph.position(name)
            return graph.position(self.params[name].node)  # type: ignore[arg-type]

        partials = tuple(sorted(self.partials, key=lambda p: (where(p.target), p.target, where(p.source))))
        failures = tuple(sorted(self.failures, key=lambda f: where(f.source)))
        feedback = tuple(sorted(self.feedback, key=lambda f: -where(f.node)))
        return Gradients(partials, feedback, failures)


@attrs.frozen
class _Launch:
    gradient: Any = None
    partials: tuple[Partial, ...] = ()
    seeded: bool = False
