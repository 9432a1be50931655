"""The transform contract: optax-style ``(init, update)`` pairs over a shared `Step`.

A transform is two pure functions: ``init(params) -> state`` and
``update(step, state, params) -> Program[(step, state)]``. A `Step` record flows
through every stage of a chain; each stage fills the fields it owns and checks
that the fields it needs were filled by an earlier stage.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs

from .._errors import ProtocolError
from .._example import Example
from .._frozen import FrozenMap, to_frozen_map
from .._gradients import Gradients
from .._graph import Graph, Params
from .._program import Program, pure
from .._requests import SampleId
from .._scoring import Loss, Score
from .._system import SystemRef, graph_of, params_of
from .._trace import Trace

__all__ = [
    "EmptyState",
    "InstructionExample",
    "ParamGradient",
    "Proposal",
    "StageReport",
    "Step",
    "Transform",
    "apply_updates",
    "identity",
    "require",
    "stateless",
]


@attrs.frozen
class InstructionExample:
    """One sample as an instruction's optimizer sees it: the node's inputs, output and feedback."""

    sample: SampleId
    inputs: tuple[tuple[str, Any], ...]
    output: Any
    feedback: Any


@attrs.frozen
class ParamGradient:
    """What a parameter is rewritten from.

    Attributes:
        param: The parameter's name.
        examples: For an instruction, its node's examples (the paper's gradient).
        feedback: The partial gradients it received, aggregated in (sample, source)
            order (free parameters; instructions under per-edge with instructions).
    """

    param: str
    examples: tuple[InstructionExample, ...] = ()
    feedback: str = ""


@attrs.frozen
class Proposal:
    """A rewrite the optimizer LLM proposed: the new value, or None and why not."""

    param: str
    value: Any = None
    reason: str = ""

    @property
    def ok(self) -> bool:
        """True when there is a usable new value."""
        return self.value is not None


@attrs.frozen
class StageReport:
    """What one stage did, for logs and reports."""

    stage: str
    notes: tuple[str, ...] = ()


def _score_tuple(value: Any) -> tuple[Score, ...]:
    return tuple(value)


@attrs.frozen
class Step:
    """The record that flows through an optimizer chain for one iteration.

    `fit` fills the first block; stages fill the rest.

    Attributes:
        graph: The system's structure: a `Graph`, or a `SystemRef` for a system recorded per
            sample (each trace then carries its own graph: read it with `graph_of`).
        iteration: The iterations completed before this step (0 for the first): a count, which seeds the
            stages' draws; the iteration is number ``iteration + 1`` in its `IterationRecord`, the CLI and
            the report.
        train, traces, scores: The training batch, its forward traces and scores.
        validation: The validation set (the gate scores candidates on it).
        loss: The loss used to score samples.
        best_score: The validation score of the current params, when known.
        previous_rejected: Proposals rejected in earlier iterations, by parameter.
        selected: Indices (into `traces`) of the samples chosen for backward.
        gradients: Backpropagated gradients of the selected samples.
        param_gradients: What each trainable parameter is rewritten from.
        critiques: Explicit instruction gradients (the "via feedback" variant).
        history: Past gradients and rejected attempts shown to the rewrite (momentum).
        proposals: The optimizer's proposed values.
        updates: The new values to apply.
        candidate_score: The gate's score of the params with `updates` applied (on
            the validation set, or on the training items when there is none).
        candidate_results: The candidate's ``(trace, score)`` per training item, when
            the gate scored it on the training items (`fit` reuses them as the next
            iteration's forward, so the official protocol makes no extra call).
        accepted: The gate's verdict (None: no gate ran).
        active: Parameters the current stages may touch (set by `masked`).
        report: One `StageReport` per stage that ran.
        options: Sampling options per engine ("forward", "backward", "optimizer") for
            the requests the stages make (`fit` sets them; a stage's own options win).
        skipped: Whether `every_k` or `apply_if` skipped the stages it wraps this step:
            the stages after it then find nothing to work on (an update stage updates
            nothing; the gate has no candidate and rejects it without a call) instead
            of asking for the stage that was skipped.
    """

    graph: Graph | SystemRef
    iteration: int = 0
    train: tuple[Example, ...] = ()
    traces: tuple[Trace, ...] = ()
    scores: tuple[Score, ...] = attrs.field(default=(), converter=_score_tuple)
    validation: tuple[Example, ...] = ()
    loss: Loss | None = attrs.field(default=None, eq=False, repr=False)
    best_score: float | None = None
    previous_rejected: FrozenMap[str, tuple[Any, ...]] = attrs.field(factory=FrozenMap, converter=to_frozen_map)
    selected: tuple[int, ...] | None = None
    gradients: Gradients | None = None
    param_gradients: FrozenMap[str, ParamGradient] | None = None
    critiques: FrozenMap[str, str] = attrs.field(factory=FrozenMap, converter=to_frozen_map)
    history: FrozenMap[str, tuple[str, ...]] = attrs.field(factory=FrozenMap, converter=to_frozen_map)
    proposals: FrozenMap[str, Proposal] | None = None
    updates: FrozenMap[str, Any] | None = None
    candidate_score: float | None = None
    candidate_results: tuple[tuple[Trace, Score], ...] | None = None
    accepted: bool | None = None
    active: tuple[str, ...] | None = None
    report: tuple[StageReport, ...] = ()
    options: FrozenMap[str, FrozenMap[str, Any]] = attrs.field(factory=FrozenMap, converter=to_frozen_map)
    skipped: bool = False

    def graph_of(self, index: int) -> Graph:
        """The graph the training trace at `index` ran on (its own, for a system recorded per sample)."""
        return graph_of(self.graph, self.traces[index])

    def params_of(self, index: int, params: Params) -> Params:
        """The params the training trace at `index` was made with (`params`, for a static graph)."""
        return params_of(params, self.traces[index])

    def trainable(self, params: Params) -> tuple[str, ...]:
        """Trainable parameters the current stage may touch, in order."""
        names = params.trainable()
        return names if self.active is None else tuple(n for n in names if n in self.active)

    def noted(self, stage: str, *notes: object) -> Step:
        """A copy with a report entry for `stage` appended: one line of text per note (``str()``
        of a note that is no string, as a checkpoint holds the report's notes as text only).

        Examples:
            >>> from semgrad.topologies import paper_graph
            >>> Step(paper_graph()[0]).noted("count", 3, "done").report
            (StageReport(stage='count', notes=('3', 'done')),)
        """
        lines = tuple(note if type(note) is str else str(note) for note in notes)
        return attrs.evolve(self, report=self.report + (StageReport(stage, lines),))


def require(step: Step, field: str, stage: str, producer: str) -> Any:
    """The value of ``step.<field>``, or a `ProtocolError` naming the stage that must come first."""
    value = getattr(step, field)
    if value is None or (field in ("traces", "scores") and not value):
        raise ProtocolError(f"{stage} needs step.{field}; put {producer} before it in the chain")
    return value


Init = Callable[[Params], Any]
Update = Callable[[Step, Any, Params], Program[tuple[Step, Any]]]


@attrs.frozen(eq=False)
class Transform:
    """An optimizer stage or a whole optimizer: ``init(params) -> state`` and
    ``update(step, state, params) -> Program[(step, state)]``.

    A transform equals only itself: its functions cannot be compared, so two built
    alike are still two, and its `name` does not tell ``k=2`` from ``k=5``.

    Examples:
        >>> from semgrad.core import optim
        >>> t = optim.neighbor_sgd(k=2)
        >>> t == t, t == optim.neighbor_sgd(k=2), t == optim.neighbor_sgd(k=5)
        (True, False, False)
    """

    init: Init = attrs.field(eq=False, repr=False)
    update: Update = attrs.field(eq=False, repr=False)
    name: str = ""


@attrs.frozen
class EmptyState:
    """The state of a stateless transform."""


def identity() -> Transform:
    """The transform that changes nothing.

    Examples:
        >>> from semgrad.topologies import paper_graph
        >>> graph, params = paper_graph()
        >>> t = identity()
        >>> step = Step(graph)
        >>> t.update(step, t.init(params), params).value == (step, EmptyState())
        True
    """
    return Transform(lambda params: EmptyState(), lambda step, state, params: pure((step, state)), "identity")


def stateless(fn: Callable[[Step, Params], Program[Step]], name: str = "") -> Transform:
    """A transform from a function of the step and params that keeps no state.

    `fn` returns a program of the new step: ``pure(new_step)`` when it needs no LLM call.

    Raises:
        ProtocolError: From ``update``, when `fn` returns anything but a program of a `Step`.

    Examples:
        >>> from semgrad.topologies import paper_graph
        >>> graph, params = paper_graph()
        >>> t = stateless(lambda step, params: pure(step.noted("look", "nothing to do")), "look")
        >>> t.update(Step(graph), t.init(params), params).value[0].report
        (StageReport(stage='look', notes=('nothing to do',)),)
    """
    from .._program import map_

    label = name or getattr(fn, "__name__", "stage")

    def update(step: Step, state: Any, params: Params) -> Program[tuple[Step, Any]]:
        new = fn(step, params)
        if not isinstance(new, Program):
            raise ProtocolError(f"stateless stage {label!r} returned a {type(new).__name__}; {_STATELESS}")
        return map_(new, lambda value: (_new_step(label, value), state))

    return Transform(lambda params: EmptyState(), update, label)


_STATELESS = "its function must return a program of the new step, such as pure(new_step)"


def _new_step(label: str, value: Any) -> Step:
    if not isinstance(value, Step):
        raise ProtocolError(f"stateless stage {label!r} yielded a {type(value).__name__}; {_STATELESS}")
    return value


def apply_updates(params: Params, updates: Mapping[str, Any] | None) -> Params:
    """Params with `updates` applied (pure); None or ``{}`` means unchanged.

    Examples:
        >>> from semgrad.topologies import paper_graph
        >>> _, params = paper_graph()
        >>> apply_updates(params, {"answer.instruction": "Solve it carefully."}).value("answer.instruction")
        'Solve it carefully.'
    """
    if not updates:
        return params
    return params.with_values(updates)


#: The values of this module a checkpoint may hold (see `semgrad.effects._checkpoint`).
CHECKPOINT_TYPES = (EmptyState, StageReport)
