"""Backward rules and aggregators (public namespace).

Examples:
    >>> from semgrad.core import rules
    >>> rules.neighbor_aware().include_instructions, rules.per_edge(include_instructions=True).include_instructions
    (False, True)
    >>> rules.textgrad_backward().include_instructions
    True
"""

from ._aggregate import Concat, Summarize, Total, concat, concat_texts, summarize, total
from ._deprecated import moved_names
from ._rules import (
    BackwardContext,
    NeighborAware,
    NodeResult,
    Numeric,
    PassThrough,
    PerEdge,
    Rule,
    ToolAware,
    neighbor_aware,
    numeric,
    pass_through,
    per_edge,
    tool_aware,
)
from ._textgrad import TextGrad
from ._textgrad import textgrad as textgrad_backward

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
    "ToolAware",
    "Total",
    "concat",
    "concat_texts",
    "neighbor_aware",
    "numeric",
    "pass_through",
    "per_edge",
    "summarize",
    "textgrad_backward",
    "tool_aware",
    "total",
]

#: The rule ``textgrad`` clashed with the optimizer ``optim.textgrad``: the rule is
#: `textgrad_backward`, and the old name resolves to it with a warning for one release.
__getattr__ = moved_names(__name__, {"textgrad": ("semgrad.core.rules.textgrad_backward", textgrad_backward)})
del moved_names
