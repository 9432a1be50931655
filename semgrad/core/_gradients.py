"""Gradient values: partials, what each node was told, and what failed."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import attrs

from ._frozen import slot_setters
from ._requests import SampleId

__all__ = ["BackwardFailure", "Gradients", "NodeFeedback", "Partial", "merge_gradients"]


@attrs.frozen
class Partial:
    """One partial gradient: what `source` says its input `target` should change.

    Attributes:
        target: The input (node or parameter name) the partial is for.
        source: The successor that sent it.
        value: Text for semantic rules, a number for `rules.numeric()`.
        siblings: The other inputs of `source` that the LLM was shown beside
            `target` (empty for per-edge and pass-through rules).
        sample: The dataset item.
    """

    target: str
    source: str
    value: Any
    siblings: tuple[str, ...] = ()
    sample: SampleId = None

    @property
    def text(self) -> str:
        """The value as text."""
        return self.value if isinstance(self.value, str) else repr(self.value)


_T_TARGET, _T_SOURCE, _T_VALUE, _T_SIBLINGS, _T_SAMPLE = slot_setters(
    Partial, "target", "source", "value", "siblings", "sample"
)


def _partial(target: str, source: str, value: Any, siblings: tuple[str, ...], sample: SampleId) -> Partial:
    """`Partial(...)` with every field given, for the backward hot path."""
    partial = object.__new__(Partial)
    _T_TARGET(partial, target)
    _T_SOURCE(partial, source)
    _T_VALUE(partial, value)
    _T_SIBLINGS(partial, siblings)
    _T_SAMPLE(partial, sample)
    return partial


@attrs.frozen
class NodeFeedback:
    """The aggregated gradient a node was given (the output: the seed feedback)."""

    node: str
    value: Any
    sample: SampleId = None


_F_NODE, _F_VALUE, _F_SAMPLE = slot_setters(NodeFeedback, "node", "value", "sample")


def _node_feedback(node: str, value: Any, sample: SampleId) -> NodeFeedback:
    """`NodeFeedback(...)` with every field given, for the backward hot path."""
    feedback = object.__new__(NodeFeedback)
    _F_NODE(feedback, node)
    _F_VALUE(feedback, value)
    _F_SAMPLE(feedback, sample)
    return feedback


@attrs.frozen
class BackwardFailure:
    """Partials that could not be computed, with the reason.

    Attributes:
        source: The node whose backward step failed.
        targets: The inputs that therefore received nothing from it.
        reason: Why (a failed call, an unreadable reply after one repair, ...).
        sample: The dataset item.
    """

    source: str
    targets: tuple[str, ...]
    reason: str
    sample: SampleId = None


#: A partial as the fields of `Partial`, ``(target, source, value, siblings, sample)``, and a
#: node's feedback as those of `NodeFeedback`, ``(node, value, sample)``: how `Gradients`
#: keeps them (see its docstring).
_PartialRow = tuple[str, str, Any, tuple[str, ...], SampleId]
_FeedbackRow = tuple[str, Any, SampleId]


def _partial_row(p: Partial) -> _PartialRow:
    return (p.target, p.source, p.value, p.siblings, p.sample)


def _feedback_row(f: NodeFeedback) -> _FeedbackRow:
    return (f.node, f.value, f.sample)


@attrs.frozen(init=False, repr=False)
class Gradients:
    """The result of backpropagation over one or more samples.

    Partials are ordered by sample, then target, then source (topological order
    within a sample), whatever order replies arrived in.

    Attributes:
        partials: Every partial gradient computed.
        feedback: The aggregated gradient each node that ran a backward step (or
            that collects gradients, such as a free parameter) was given.
        failures: What could not be computed, and why.

    `partials` and `feedback` are kept as plain tuples of their fields and built
    as `Partial` and `NodeFeedback` values when read. A tuple of text is an object
    CPython's cyclic garbage collector stops tracking, so gradients kept for many
    samples (three objects per node and sample, otherwise) cost its full passes
    nothing; equality, hashing and the repr are those of the values.

    Examples:
        >>> g = Gradients((Partial("x", "y", "more", sample=0),), (NodeFeedback("y", "fix", 0),))
        >>> g.partials
        (Partial(target='x', source='y', value='more', siblings=(), sample=0),)
        >>> g.for_node("x")[0].text, g.feedback_for("y")[0].value
        ('more', 'fix')
        >>> attrs.evolve(g, failures=(BackwardFailure("y", ("z",), "no reply"),)).partials == g.partials
        True
    """

    # The aliases are the constructor's argument names, so `attrs.evolve` works as before
    # (it passes the rows, which the constructor keeps as they are).
    _partial_rows: tuple[_PartialRow, ...] = attrs.field(alias="partials")
    _feedback_rows: tuple[_FeedbackRow, ...] = attrs.field(alias="feedback")
    failures: tuple[BackwardFailure, ...]

    def __init__(
        self,
        partials: Iterable[Partial] = (),
        feedback: Iterable[NodeFeedback] = (),
        failures: Iterable[BackwardFailure] = (),
    ) -> None:
        _G_PARTIALS(self, tuple(p if type(p) is tuple else _partial_row(p) for p in partials))
        _G_FEEDBACK(self, tuple(f if type(f) is tuple else _feedback_row(f) for f in feedback))
        _G_FAILURES(self, tuple(failures))

    @property
    def partials(self) -> tuple[Partial, ...]:
        """Every partial gradient computed."""
        return tuple(_partial(*row) for row in self._partial_rows)

    @property
    def feedback(self) -> tuple[NodeFeedback, ...]:
        """The aggregated gradient each node that ran a backward step was given."""
        return tuple(_node_feedback(*row) for row in self._feedback_rows)

    def for_node(self, name: str) -> tuple[Partial, ...]:
        """The partials `name` received, ordered by (sample, source); ``()`` when none."""
        return tuple(_partial(*row) for row in self._partial_rows if row[0] == name)

    def feedback_for(self, name: str) -> tuple[NodeFeedback, ...]:
        """The aggregated gradient `name` was given, per sample."""
        return tuple(_node_feedback(*row) for row in self._feedback_rows if row[0] == name)

    def failures_for(self, name: str) -> tuple[BackwardFailure, ...]:
        """Failures that left `name` without a partial it should have had."""
        return tuple(f for f in self.failures if name in f.targets)

    @property
    def ok(self) -> bool:
        """True when nothing failed."""
        return not self.failures

    def __repr__(self) -> str:
        return f"Gradients(partials={self.partials!r}, feedback={self.feedback!r}, failures={self.failures!r})"


_G_PARTIALS, _G_FEEDBACK, _G_FAILURES = slot_setters(Gradients, "_partial_rows", "_feedback_rows", "failures")


def _gradients(
    partial_rows: tuple[_PartialRow, ...],
    feedback_rows: tuple[_FeedbackRow, ...],
    failures: tuple[BackwardFailure, ...],
) -> Gradients:
    """`Gradients` from rows already built, for the backward machine."""
    grads = object.__new__(Gradients)
    _G_PARTIALS(grads, partial_rows)
    _G_FEEDBACK(grads, feedback_rows)
    _G_FAILURES(grads, failures)
    return grads


def merge_gradients(parts: Iterable[Gradients]) -> Gradients:
    """Concatenate gradients of several samples, keeping the given sample order.

    Examples:
        >>> a = Gradients((Partial("x", "y", "more", sample=0),))
        >>> b = Gradients((Partial("x", "y", "less", sample=1),))
        >>> [p.text for p in merge_gradients([a, b]).for_node("x")]
        ['more', 'less']
    """
    parts = tuple(parts)
    return _gradients(
        tuple(row for g in parts for row in g._partial_rows),
        tuple(row for g in parts for row in g._feedback_rows),
        tuple(f for g in parts for f in g.failures),
    )
