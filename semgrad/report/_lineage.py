"""The Pareto searches' candidates (``optim.gepa``, ``optim.pareto_sgd``): which parent each came from, which
components it changed, whether it was accepted, and the front.

The search ends its stage's notes in each iteration's report with lineage notes, each ``LINEAGE_PREFIX`` and one
JSON object (`semgrad.core.optim._lineage` writes them): a proposal (``"candidate"``,
``"parents"``, ``"kind"``, ``"components"``, ``"accepted"``, the minibatch sums ``"parent_sum"`` and
``"child_sum"``, the full evaluation's ``"score"``) or the front after the step (``"front"``: each candidate on
it with the number of instances it is best on). Everything here is read from ``results.json`` as hostile input:
a note that is not such an object is skipped, a field of the wrong type is shown as a dash, every value is
escaped.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..core.optim._lineage import LINEAGE_PREFIX, lineage_note
from ._format import DASH, as_list, as_mapping, count, esc, isolate, number

__all__ = ["LINEAGE_PREFIX", "lineage_entries", "lineage_note", "lineage_section"]

#: A note longer than this is not read (a search writes a few hundred characters per note).
MAX_NOTE_CHARS = 20_000
#: The most proposals and front entries shown (a longer history is cut, and says so).
MAX_ROWS = 500


def _stage_notes(entry: Any) -> list[Any]:
    """The notes of a stage entry, ``[stage, [notes]]`` or ``{"stage", "notes"}`` (any other shape: none)."""
    if isinstance(entry, Mapping):
        return as_list(entry.get("notes"))
    if isinstance(entry, (list, tuple)) and len(entry) == 2:
        return as_list(entry[1])
    return []


def _parsed(note: Any) -> Mapping[str, Any] | None:
    if not isinstance(note, str) or len(note) > MAX_NOTE_CHARS or not note.startswith(LINEAGE_PREFIX):
        return None
    try:
        value = json.loads(note[len(LINEAGE_PREFIX) :])
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, Mapping) else None


def lineage_entries(task: Mapping[str, Any]) -> tuple[list[tuple[int, Mapping[str, Any]]], Mapping[str, Any]]:
    """The proposals of a task's iterations as ``(iteration, note)``, and the last front recorded (``{}``: none).

    Examples:
        >>> note = lineage_note(candidate=1, parents=[0], accepted=False)
        >>> task = {"iterations": [{"iteration": 1, "report": [["gepa", ["proposal 1", note, "junk", 3]]]}]}
        >>> lineage_entries(task)
        ([(1, {'candidate': 1, 'parents': [0], 'accepted': False})], {})
    """
    proposals: list[tuple[int, Mapping[str, Any]]] = []
    front: Mapping[str, Any] = {}
    for position, item in enumerate(as_list(task.get("iterations")), start=1):
        entry = as_mapping(item)
        found = number(entry.get("iteration"))
        iteration = int(found) if found is not None and found.is_integer() and abs(found) < 1e9 else position
        for stage in as_list(entry.get("report")):
            for note in _stage_notes(stage):
                parsed = _parsed(note)
                if parsed is None:
                    continue
                if "front" in parsed:
                    front = as_mapping(parsed.get("front"))
                else:
                    proposals.append((iteration, parsed))
    return proposals, front


def _ids(value: Any) -> str:
    shown = [count(v) for v in as_list(value)[:20]]
    return ", ".join(s for s in shown if s != DASH) or DASH


def _names(value: Any) -> str:
    names = [v for v in as_list(value)[:50] if isinstance(v, str)]
    return ", ".join(f"<code>{isolate(n)}</code>" for n in names) or DASH


def _sum(value: Any) -> str:
    found = number(value)
    return DASH if found is None else f"{found:g}"


def _verdict(value: Any) -> str:
    return {True: "accepted", False: "rejected"}.get(value, DASH) if isinstance(value, bool) else DASH


def _row(iteration: int, note: Mapping[str, Any]) -> str:
    cells = [
        count(iteration),
        count(note.get("candidate")),
        _ids(note.get("parents")),
        esc(note.get("kind")) if isinstance(note.get("kind"), str) else DASH,
        _names(note.get("components")),
        f"{_sum(note.get('parent_sum'))} \u2192 {_sum(note.get('child_sum'))}",
        _verdict(note.get("accepted")),
        _sum(note.get("score")),
    ]
    kind = _verdict(note.get("accepted"))
    return f'<tr class="{kind if kind != DASH else "unknown"}">' + "".join(f"<td>{c}</td>" for c in cells) + "</tr>"


def _front(front: Mapping[str, Any]) -> str:
    rows = []
    for key, instances in list(front.items())[:MAX_ROWS]:
        rows.append(f"<tr><td>{isolate(key)}</td><td>{count(instances)}</td></tr>")
    if not rows:
        return '<p class="empty">No front recorded.</p>'
    head = "<tr><th>Candidate</th><th>Instances it is best on</th></tr>"
    return f'<table class="front"><thead>{head}</thead><tbody>{"".join(rows)}</tbody></table>'


def lineage_section(task: Mapping[str, Any]) -> str:
    """The lineage table and the final front of a task, or "" when its iterations recorded none.

    Examples:
        >>> note = lineage_note(candidate=1, parents=[0], components=["<b>x"], accepted=True, parent_sum=1,
        ...                     child_sum=2, score=0.5)
        >>> front = lineage_note(front={"0": 3, "1": 4})
        >>> html = lineage_section({"iterations": [{"report": [["pareto_sgd", [note, front]]]}]})
        >>> "&lt;b&gt;x" in html and "<b>x" not in html, "1 \u2192 2" in html, html.count('<tr class="accepted">')
        (True, True, 1)
        >>> lineage_section({"iterations": [{"report": [["gepa", ["lineage: {", "lineage: []", "{}", 7]]]}]})
        ''
    """
    proposals, front = lineage_entries(task)
    if not proposals and not front:
        return ""
    head = "".join(
        f"<th>{esc(h)}</th>"
        for h in ("#", "Candidate", "Parent(s)", "Kind", "Components", "Minibatch sum", "Verdict", "Score")
    )
    shown = proposals[:MAX_ROWS]
    rows = "".join(_row(iteration, note) for iteration, note in shown)
    cut = (
        f'<p class="empty">{len(proposals) - MAX_ROWS:,} more proposals not shown.</p>'
        if len(proposals) > MAX_ROWS
        else ""
    )
    table = (
        f'<table class="lineage"><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>{cut}'
        if shown
        else '<p class="empty">No proposals recorded.</p>'
    )
    return f"<h3>Candidates: lineage</h3>{table}<h3>Pareto front</h3>{_front(front)}"
