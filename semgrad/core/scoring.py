"""Losses and metrics: how an output is scored against its target (public namespace).

Examples:
    >>> from semgrad.core.scoring import normalize
    >>> normalize(" Yes. ")
    'yes'
"""

from ._scoring import (
    Loss,
    Score,
    exact_match,
    extract_answer,
    llm_judge,
    normalize,
    normalized_match,
    numeric_match,
    parse_number,
)

__all__ = [
    "Loss",
    "Score",
    "exact_match",
    "extract_answer",
    "llm_judge",
    "normalize",
    "normalized_match",
    "numeric_match",
    "parse_number",
]
