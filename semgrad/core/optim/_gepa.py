"""GEPA (the `gepa` package, 0.1.4, with its default adapter) as a transform.

`gepa()` is `pareto_search` (the pool, the per-instance front, the parent draw, the
minibatch, the strict minibatch acceptance, the full evaluation of accepted children, merge
and the metric-call budget: see `semgrad.core.optim._search`) with GEPA's proposal step:
*reflect on one component with the system's global feedback*. For each component chosen
(round-robin, or all), one request shows the reflection model the component's current text
and its reflective dataset -- per minibatch example, the inputs the component read, what it
produced and the feedback on the system's final result (the loss's feedback: GEPA's default
adapter has no other) -- and asks for a new text. The wording is ours; the information and
the decisions are GEPA's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from returns.result import Success

from .._frozen import FrozenMap
from .._parse import parse_tagged
from .._program import Program, ask, gather, map_
from .._prompts import render_examples
from .._requests import LLMRequest, Message
from .._sampling import merged_options
from .._system import graph_of, is_system, occurrences
from ._base import InstructionExample, ParamGradient, Transform
from ._pareto import COMPONENT_CHOICES
from ._search import ProposalTask, Propose, Proposed, pareto_search

__all__ = ["GEPA_SYSTEM", "GEPA_USER", "gepa", "reflection_examples", "render_reflection"]

GEPA_SYSTEM = (
    "You improve one text component of a system built from language-model calls, learning from how the "
    "system did on real task inputs."
)
GEPA_USER = """The component "{name}" ({role}) currently reads:
<current>
{current}
</current>

Below are task inputs the system ran on with this text, each with what the component was given, what it \
produced, and feedback on the system's final result:
{examples}

Write a better text for this component. Work out from the inputs what the task is and how its inputs are \
laid out; carry into the new text every task-specific fact the feedback reveals (the component will not see \
these examples again), and any general strategy that worked. Reply with the new text inside tags, exactly in \
this form:
<improved>
the new text
</improved>"""


def reflection_examples(task: ProposalTask, name: str) -> tuple[InstructionExample, ...]:
    """The reflective dataset of component `name`: per minibatch example, what the component read and
    produced (a free parameter: the system's inputs and output) and the system's feedback.

    Each trace is read on its own graph (`graph_of`: a system recorded per sample has one per trace): a
    component run several times in one trace (a loop's ``act#1``, ``act#2``) gives one example per
    occurrence, and a trace of a system whose run never reached the component gives none."""
    param = task.params[name]
    found = []
    for trace, score in task.results:
        graph = graph_of(task.step.graph, trace)
        if not param.node:
            inputs = tuple((k, trace[k].value) for k in graph.inputs)
            found.append(InstructionExample(trace.sample, inputs, trace[graph.output].value, score.feedback))
            continue
        nodes = tuple(n for n in occurrences(graph, name, task.params) if graph[n].kind != "param")
        if not nodes and param.node in graph.nodes:
            nodes = (param.node,)
        if not nodes and not is_system(task.step.graph):
            nodes = (graph.output,)  # a static graph's parameter no node reads: the system's output
        for node in nodes:
            run = trace[node]
            found.append(InstructionExample(trace.sample, run.inputs, run.value, score.feedback))
    return tuple(found)


def render_reflection(
    name: str,
    role: str,
    current: Any,
    examples: tuple[InstructionExample, ...],
    *,
    engine: str = "optimizer",
    options: Mapping[str, Any] | None = None,
) -> LLMRequest:
    """The reflection request for one component: its current text and its reflective dataset.

    Examples:
        >>> ex = InstructionExample("q0", (("question", "2+2?"),), "5", "wrong: the answer is 4")
        >>> request = render_reflection("answer.instruction", "the answer", "Solve it.", (ex,))
        >>> request.purpose, request.node, "wrong: the answer is 4" in request.prompt
        ('rewrite', 'answer.instruction', True)
    """
    shown = render_examples([(e.inputs, e.output, e.feedback) for e in examples])
    user = GEPA_USER.format(name=name, role=role or "no role given", current=current, examples=shown)
    return LLMRequest(
        (Message("system", GEPA_SYSTEM), Message("user", user)),
        engine=engine,
        purpose="rewrite",
        node=name,
        options=options or {},
    )


def _read(reply: Any) -> str | None:
    if not isinstance(reply, Success):
        return None
    parsed = parse_tagged(reply.unwrap().text, ["improved"])
    if not isinstance(parsed, Success):
        return None
    text = parsed.unwrap().strip()
    return text or None


def reflect(engine: str = "optimizer") -> Propose:
    """GEPA's proposal step: one reflection request per chosen component, with the global feedback."""

    def propose(task: ProposalTask) -> Program[Proposed]:
        names = task.components
        examples = {n: reflection_examples(task, n) for n in names}
        asking = merged_options(task.step.options.get(engine), None)
        requests = [
            render_reflection(n, task.params[n].role, task.params.value(n), examples[n], engine=engine, options=asking)
            for n in names
        ]

        def done(replies: tuple[Any, ...]) -> Proposed:
            read = [(n, _read(r)) for n, r in zip(names, replies, strict=True)]
            values = FrozenMap((n, v) for n, v in read if v is not None)
            notes = tuple(f"{n}: no usable reply" for n, v in read if v is None)
            gradients = FrozenMap((n, ParamGradient(n, examples[n])) for n in names)
            return Proposed(values, notes, gradients)

        return map_(gather(*(ask(r) for r in requests)), done)

    return propose


def gepa(
    *,
    minibatch: int = 3,
    components: str = "round_robin",
    merge: bool = False,
    max_merges: int = 5,
    max_metric_calls: int | None = None,
    seed: int = 0,
    skip_perfect: bool = True,
    perfect_score: float = 1.0,
    engine: str = "optimizer",
) -> Transform:
    """GEPA 0.1.4 as its default adapter runs it: one proposal per `fit` iteration.

    A pool of candidates and, per instance (validation item, or training item without a
    validation set), the candidates best on it; the parent drawn with probability proportional
    to the instances on whose (pruned) front it is; `minibatch` training items; one component
    rewritten in turn (``components="all"``: every one) by a reflection request that shows its
    text and, per minibatch example, its inputs, its output and the system's feedback; the child
    kept only when its minibatch sum strictly beats the parent's, and then scored on every
    instance. Each step proposes the pool's best candidate by mean score. The search (pool,
    front, generator, lineage) is the transform's state, so a checkpointed run resumes it.

    One *metric call* is one item evaluated (a forward of the graph and its loss), counted as
    GEPA counts them: the seed's evaluation, 2 x `minibatch` per proposal, and a full evaluation
    per accepted child. `max_metric_calls` is GEPA's budget: once spent, the steps change
    nothing (give `fit` iterations enough). In semgrad's budget a metric call is one forward
    call per LLM node of the graph (plus the loss's own calls, if it makes any), so
    ``Budget(calls=...)`` on `fit` bounds the same run in LLM calls. `fit`'s own training forward
    each iteration comes on top (GEPA has none); it is not wasted: when the parent drawn is the
    current params, its minibatch run is taken from it (counted as GEPA counts it, with no call).
    On a validation set, the seed's scoring repeats `fit`'s scoring of the initial params item by
    item (a cache answers it); without one, the seed's scores are `fit`'s training forward.

    Args:
        minibatch: Training items per proposal (GEPA's ``reflection_minibatch_size``, 3).
        components: ``"round_robin"`` or ``"all"`` (GEPA's ``module_selector``).
        merge: GEPA's ``use_merge``; `max_merges` is its ``max_merge_invocations`` (5).
        max_metric_calls: GEPA's budget in items evaluated (None: no limit).
        seed: GEPA's ``seed``: its parent draws, minibatches and merges are those of ``Random(seed)``.
        skip_perfect, perfect_score: Propose nothing when the parent is perfect on the minibatch.
        engine: The logical engine of the reflection requests.

    Examples:
        >>> from semgrad.core import Example
        >>> from semgrad.effects import fit_sync
        >>> from semgrad.backends.fake import HashLLM
        >>> from semgrad.topologies import paper_graph
        >>> graph, params = paper_graph()
        >>> train = [Example({"question": f"What is {i} + 1?"}, str(i + 1), id=f"q{i}") for i in range(4)]
        >>> result = fit_sync(graph, params, gepa(max_metric_calls=20), train=train, llm=HashLLM(), iterations=3)
        >>> len(result.history), result.history[0].report[0].stage
        (3, 'gepa')
    """
    if components not in COMPONENT_CHOICES:
        raise ValueError(f"gepa: unknown components {components!r}; choose one of: {', '.join(COMPONENT_CHOICES)}")
    return pareto_search(
        reflect(engine),
        name="gepa",
        minibatch=minibatch,
        components=components,
        merge=merge,
        max_merges=max_merges,
        max_metric_calls=max_metric_calls,
        seed=seed,
        skip_perfect=skip_perfect,
        perfect_score=perfect_score,
    )
