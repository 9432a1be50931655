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


@attrs.frozen
class Gradients:
    """The result of backpropagation over one or more samples.

    Partials are ordered by sample, then target, then source (topological order
    within a sample), whatever order replies arrived in.

    Attributes:
        partials: Every partial gradient computed.
        feedback: The aggregated gradient each node that ran a backward step (or
            that collects gradients, such as a free parameter) was given.
        failures: What could not be computed, and why.
    """

    partials: tuple[Partial, ...] = ()
    feedback: tuple[NodeFeedback, ...] = ()
    failures: tuple[BackwardFailure, ...] = ()

    def for_node(self, name: str) -> tuple[Partial, ...]:
        """The partials `name` received, ordered by (sample, source); ``()`` when none."""
        return tuple(p for p in self.partials if p.target == name)

    def feedback_for(self, name: str) -> tuple[NodeFeedback, ...]:
        """The aggregated gradient `name` was given, per sample."""
        return tuple(f for f in self.feedback if f.node == name)

    def failures_for(self, name: str) -> tuple[BackwardFailure, ...]:
        """Failures that left `name` without a partial it should have had."""
        return tuple(f for f in self.failures if name in f.targets)

    @property
    def ok(self) -> bool:
        """True when nothing failed."""
        return not self.failures


def merge_gradients(parts: Iterable[Gradients]) -> Gradients:
    """Concatenate gradients of several samples, keeping the given sample order.

    Examples:
        >>> a = Gradients((Partial("x", "y", "more", sample=0),))
        >>> b = Gradients((Partial("x", "y", "less", sample=1),))
        >>> [p.text for p in merge_gradients([a, b]).for_node("x")]
        ['more', 'less']
    """
    parts = tuple(parts)
    return Gradients(
        tuple(p for g in parts for p in g.partials),
        tuple(f for g in parts for f in g.feedback),
        tuple(f for g in parts for f in g.failures),
    )
