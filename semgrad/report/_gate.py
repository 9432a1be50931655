"""What the update gate scored candidates on, as the report names it.

Under the official protocol (the default) there is no validation set: the gate
scores each candidate on the training items, and calling that score
"validation" would pass it off as a held-out figure. Only the heldout protocol's
gate score is a validation score. Results without a known ``protocol`` (older
runs, `write_html`) get the neutral "gate score".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import attrs

__all__ = ["GateLabels", "gate_labels"]


@attrs.frozen
class GateLabels:
    """The words for the gate's score under one protocol.

    Attributes:
        series: The chart's name for it (legend, tooltips), short.
        score: The name of the score in tables and sentences.
        column: The iterations table's column heading.
        note: What the chart's gate series is, one sentence.
    """

    series: str
    score: str
    column: str
    note: str


_LABELS = {
    "heldout": GateLabels(
        "validation",
        "Validation score",
        "Validation",
        "Validation: the score of the iteration's candidate on the validation set, which the gate accepted or "
        "rejected.",
    ),
    "official": GateLabels(
        "gate score",
        "Gate score on the training items",
        "Gate score (training items)",
        "Gate score: the score of the iteration's candidate on the training items (the official protocol has no "
        "validation set), which the gate accepted or rejected.",
    ),
    None: GateLabels(
        "gate score",
        "Gate score",
        "Gate score",
        "Gate score: the score of the iteration's candidate (on the validation set, or on the training items "
        "without one), which the gate accepted or rejected.",
    ),
}


def gate_labels(tasks: Iterable[Mapping[str, Any]]) -> GateLabels:
    """The labels for the gate's score of `tasks` (entries of ``results.json``'s ``tasks``).

    Their common ``protocol`` decides; unknown or mixed protocols get the neutral labels.

    Examples:
        >>> gate_labels([{"protocol": "official"}]).score
        'Gate score on the training items'
        >>> gate_labels([{"protocol": "heldout"}]).series, gate_labels([{"protocol": "heldout"}, {}]).series
        ('validation', 'gate score')
        >>> gate_labels([{"protocol": ["heldout"]}]).score
        'Gate score'
    """
    found = {protocol if protocol in ("heldout", "official") else None for protocol in _protocols(tasks)}
    return _LABELS[found.pop() if len(found) == 1 else None]


def _protocols(tasks: Iterable[Mapping[str, Any]]) -> Iterable[str | None]:
    for task in tasks:
        protocol = task.get("protocol")
        yield protocol if isinstance(protocol, str) else None
