"""The lineage of a Pareto search as notes the report reads: `LINEAGE_PREFIX` and one JSON object per note.

`pareto_search` ends its stage's notes in each step's report with the proposal's record (its candidate,
parents, kind, components, minibatch sums, verdict and full score) and the front after it (each candidate on
the pruned front with the instances it is best on). `semgrad.report` renders them, reading them as hostile
input.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

__all__ = ["LINEAGE_PREFIX", "lineage_note", "lineage_notes"]

#: How a lineage note begins (the JSON object follows), in whichever stage's notes it is.
LINEAGE_PREFIX = "lineage: "


def lineage_note(**fields: Any) -> str:
    """One lineage note: `LINEAGE_PREFIX` and `fields` as compact JSON.

    Examples:
        >>> lineage_note(candidate=2, parents=[0], components=["answer.instruction"], accepted=True)
        'lineage: {"candidate": 2, "parents": [0], "components": ["answer.instruction"], "accepted": true}'
    """
    return LINEAGE_PREFIX + json.dumps(fields, ensure_ascii=False, default=str)


def lineage_notes(record: Any, averages: Sequence[float], counts: Sequence[tuple[int, int]]) -> tuple[str, ...]:
    """The notes of one step: `record` (a `ProposalRecord`; none for a spent budget) and the pruned front's
    `counts` (``(candidate, instances)``), with each candidate's mean score from `averages` (by pool index)."""
    notes = []
    if record.kind != "budget":
        accepted = record.child >= 0
        notes.append(
            lineage_note(
                proposal=record.iteration,
                candidate=record.child if accepted else None,
                parents=list(record.parents),
                kind=record.kind,
                components=list(record.components),
                parent_sum=round(sum(record.before), 6) if record.before else None,
                child_sum=round(sum(record.after), 6) if record.after else None,
                accepted=record.accepted,
                score=round(averages[record.child], 6) if accepted and record.child < len(averages) else None,
            )
        )
    notes.append(lineage_note(front={str(k): n for k, n in counts}))
    return tuple(notes)
