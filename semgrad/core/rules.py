"""Backward rules and aggregators (public namespace).

Examples:
    >>> from semgrad.core import rules
    >>> rules.neighbor_aware().include_instructions, rules.per_edge(include_instructions=True).include_instructions
    (False, True)
    >>> rules.textgrad().include_instructions
    True
"""

from ._aggregate import Concat, Summarize, Total, concat, concat_texts, summarize, total
from ._rules import (
    BackwardContext,
    NeighborAware,
    NodeResult,
    Numeric,
    PassThrough,
    PerEdge,
    Rule,
    neighbor_aware,
    numeric,
    pass_through,
    per_edge,
)
from ._textgrad import TextGrad, textgrad

__all__ = [
    "BackwardContext",
    "Concat",
    "NeighborAware",
    "NodeResult",
    "Numeric",
    "PassThrough",
    "PerEdge",
    "Rule",
    "Summarize",
    "TextGrad",
    "Total",
    "concat",
    "concat_texts",
    "neighbor_aware",
    "numeric",
    "pass_through",
    "per_edge",
    "summarize",
    "textgrad",
    "total",
]
