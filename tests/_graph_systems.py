"""A stand-in for a system recorded per sample: hand-built `GraphBuilder` graphs, one per item.

`GraphSystem(name, build)` is a trainable system (see `semgrad.effects._systems`): for each
item, ``build(example)`` gives the graph that item "took" and the starting params of its
parameters; the run forwards that graph with the call's params (where they hold a value)
through ``runner.ask``, and the trace carries the graph and the params it used.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

from semgrad.core import Example, Graph, GraphBuilder, Params, Trace, forward
from semgrad.core._system import SystemCall, SystemRef
from semgrad.core._trace import RecordedGraph
from semgrad.effects import Runner
from semgrad.effects._systems import answer

Build = Callable[[Example], tuple[Graph, Params]]


@attrs.frozen(eq=False)
class GraphSystem:
    """Each item's graph from `build`; `ref` names the system."""

    name: str
    build: Build

    @property
    def ref(self) -> SystemRef:
        return SystemRef(self.name, f"stand-in:{self.name}")

    async def run(self, call: SystemCall, runner: Runner) -> Trace:
        graph, own = self.build(call.example)
        given = {name: call.params.value(name) for name in own if name in call.params}
        used = own.with_values(given)
        program = forward(graph, used, call.example.inputs, sample=call.example.id, options=call.options or None)
        trace = await answer(program, runner.ask)
        return attrs.evolve(trace, recording=RecordedGraph(graph, used))


def branching(every: int = 5, *, taken: Callable[[Example], bool] | None = None) -> Build:
    """classify -> [lookup, on the items `taken` picks (every `every`-th by id)] -> answer."""

    def build(example: Example) -> tuple[Graph, Params]:
        b = GraphBuilder()
        q = b.input("question")
        topic = b.llm("classify", inputs=[q], instruction="Name the topic of the question.")
        inputs = [q, topic]
        if taken(example) if taken is not None else int(example.id) % every == 0:
            inputs.append(b.llm("lookup", inputs=[topic], instruction="Recall the facts about the topic."))
        b.llm("answer", inputs=inputs, instruction="Answer the customer.")
        return b.build(output="answer")

    return build


def static(build_graph: Callable[[], tuple[Graph, Params]]) -> Build:
    """The same graph for every item (the static-equivalence stand-in)."""

    def build(example: Example) -> tuple[Graph, Params]:
        return build_graph()

    return build


def items(n: int) -> list[dict[str, Any]]:
    """`n` items with ids 0..n-1 whose target no fake answer matches."""
    return [{"inputs": {"question": f"question {i}?"}, "target": "never said", "id": i} for i in range(n)]
