"""Per-sample predictions and failed-call counts of a task, as report sections.

Both read fields of ``results.json`` that may be missing (older runs, `write_html`
of a `fit` without test data): then they show nothing. Every value is untrusted
text and goes through `esc`; numbers go through `count`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ._format import DASH, as_list, as_mapping, as_text, count, esc, isolate, number

__all__ = ["errors_json", "errors_line", "predictions_table", "recorded_graphs", "shown_predictions", "total_errors"]

#: Above this many rows, the predictions table starts collapsed.
_OPEN_ROWS = 200
#: The most predictions a task's table shows: a report of one task, and each task of a report of several (a
#: ``bbh:all`` report showing every prediction of its 27 tasks weighed 5.5 MB). results.json keeps them all.
SHOWN_ALONE, SHOWN_EACH = 200, 20
#: The most characters of one input, output or target a cell shows.
_CELL_CHARS = 1500
_CORRECT = {True: ("yes", "correct"), False: ("no", "wrong"), None: (DASH, "unknown")}


def _inputs_text(value: Any) -> str:
    fields = as_mapping(value)
    if len(fields) == 1:
        return as_text(next(iter(fields.values())))
    return "\n".join(f"{as_text(name)}: {as_text(text)}" for name, text in fields.items()) or as_text(value)


def _clipped(text: str) -> str:
    """`text` as a cell shows it: at most `_CELL_CHARS` characters, and how many more there are.

    Examples:
        >>> _clipped("abc"), _clipped("x" * 1600)[-40:]
        ('abc', 'x\u2026 (100 more characters in results.json)')
    """
    if len(text) <= _CELL_CHARS:
        return text
    return f"{text[:_CELL_CHARS]}\u2026 ({len(text) - _CELL_CHARS:,} more characters in results.json)"


def _text_cell(text: str) -> str:
    return f'<td><div class="cell-text">{isolate(_clipped(text))}</div></td>'


def _output_cell(entry: Mapping[str, Any], output: str) -> str:
    """The output, after the value of every other node the prediction recorded (older results record none)."""
    nodes = as_mapping(entry.get("nodes"))
    if not nodes:
        return _text_cell(as_text(entry.get("output")))
    named = [*((as_text(name), value) for name, value in nodes.items()), (output or "output", entry.get("output"))]
    parts = "".join(
        f'<div class="node-output" data-node="{esc(name)}"><div class="node-name">{isolate(name)}</div>'
        f'<div class="cell-text">{isolate(_clipped(as_text(value)))}</div></div>'
        for name, value in named
    )
    return f'<td class="node-outputs">{parts}</td>'


def _row(position: int, entry: Mapping[str, Any], output: str) -> str:
    correct = entry.get("correct") if isinstance(entry.get("correct"), bool) else None
    label, kind = _CORRECT[correct]
    cells = (
        _text_cell(_inputs_text(entry.get("inputs")))
        + _output_cell(entry, output)
        + _text_cell(as_text(entry.get("target")))
    )
    return f'<tr class="{kind}"><td class="num">{position}</td>{cells}<td class="num verdict">{label}</td></tr>'


def shown_predictions(entries: Sequence[Mapping[str, Any]], limit: int) -> list[int]:
    """The positions (0-based, in order) of the predictions a table of at most `limit` rows shows: the wrong
    ones first (what a reader looks for), then the others, each in the order of the split.

    Examples:
        >>> shown_predictions([{"correct": c} for c in (True, False, True, None, False)], 3)
        [0, 1, 4]
        >>> shown_predictions([{"correct": True}] * 2, 5)
        [0, 1]
    """
    wrong = [i for i, e in enumerate(entries) if e.get("correct") is False]
    others = [i for i, e in enumerate(entries) if e.get("correct") is not False]
    return sorted((wrong + others)[: max(limit, 0)])


def _shown_note(shown: Sequence[int], entries: Sequence[Mapping[str, Any]]) -> str:
    """What a table that leaves predictions out says of them, or ""."""
    if len(shown) == len(entries):
        return ""
    wrong = sum(1 for i in shown if entries[i].get("correct") is False)
    total_wrong = sum(1 for e in entries if e.get("correct") is False)
    others = len(shown) - wrong
    if wrong < total_wrong:
        which = f"the first {count(wrong)} wrong ones"
    elif total_wrong:
        which = f"all {count(total_wrong)} wrong ones" + (f" and the first {count(others)} others" if others else "")
    else:
        which = f"the first {count(others)}"
    return (
        f'<p class="caption shown-note">Showing {count(len(shown))} of {count(len(entries))} predictions: '
        f"{which}, numbered as in the split. Every prediction is in this task's entry of results.json.</p>"
    )


def predictions_table(task: Mapping[str, Any], task_id: str, *, limit: int = SHOWN_ALONE) -> str:
    """The table (id ``<task_id>-predictions``) of the task's per-sample predictions, or "".

    Each entry of ``task["predictions"]`` is ``{"inputs", "output", "nodes", "target", "correct"}``
    (the final params on the test split, as ``semgrad run`` records them). ``nodes`` (every
    other node's value, by name) is shown in the output cell above the output; results
    written before it existed lack it and show the output alone. The table shows at most `limit`
    of them (see `shown_predictions`), and says how many it leaves out; its summary counts them all.

    Examples:
        >>> entry = {"inputs": {"q": "2+2?"}, "output": "<b>4</b>", "target": "4", "correct": True}
        >>> task = {"predictions": [entry]}
        >>> html = predictions_table(task, "task-0")
        >>> 'id="task-0-predictions"' in html, "&lt;b&gt;4&lt;/b&gt;" in html, "1 of 1 correct" in html
        (True, True, True)
        >>> entry["nodes"] = {"plan": "add them"}
        >>> html = predictions_table({"predictions": [entry], "graph": {"output": "answer"}}, "task-0")
        >>> 'data-node="plan"' in html, "add them" in html, 'data-node="answer"' in html
        (True, True, True)
        >>> predictions_table({}, "task-0")
        ''
    """
    entries = [as_mapping(e) for e in as_list(task.get("predictions"))]
    if not entries:
        return ""
    right = sum(1 for e in entries if e.get("correct") is True)
    split = as_text(task.get("predictions_split")) or "test"
    head = "".join(f"<th>{h}</th>" for h in ("#", "Input", "Output", "Target", "Correct"))
    output = as_text(as_mapping(task.get("graph")).get("output"))
    shown = shown_predictions(entries, limit)
    rows = "".join(_row(i + 1, entries[i], output) for i in shown)
    opened = " open" if len(shown) <= _OPEN_ROWS else ""
    return (
        f'<h3>Predictions</h3><details class="predictions-block"{opened}><summary>'
        f"{count(right)} of {count(len(entries))} correct on the {isolate(split)} split with the final parameters"
        f"</summary>{_shown_note(shown, entries)}"
        f'<table class="predictions" id="{task_id}-predictions"><thead><tr>{head}</tr></thead>'
        f"<tbody>{rows}</tbody></table></details>"
    )


def recorded_graphs(task: Mapping[str, Any], task_id: str, *, limit: int = SHOWN_EACH) -> str:
    """The graphs a system written as Python recorded, one per prediction that carries one (at most `limit`,
    chosen as the predictions table chooses its rows), each drawn with its sample's id; "" when none has one.

    Examples:
        >>> graph = {"nodes": [{"name": "q", "kind": "input"}, {"name": "answer", "kind": "llm"}],
        ...          "edges": [["q", "answer"]], "output": "answer"}
        >>> html = recorded_graphs({"predictions": [{"sample": 7, "graph": graph, "correct": False}]}, "task-0")
        >>> 'id="task-0-recorded-0"' in html, "sample 7" in html, 'data-node="answer"' in html
        (True, True, True)
        >>> recorded_graphs({"predictions": [{"sample": 7}]}, "task-0")
        ''
    """
    from ._graph import graph_svg

    entries = [as_mapping(e) for e in as_list(task.get("predictions"))]
    having = [i for i, e in enumerate(entries) if as_mapping(e.get("graph")).get("nodes")]
    if not having:
        return ""
    shown = [having[i] for i in shown_predictions([entries[i] for i in having], limit)]
    figures = "".join(
        f'<figure class="recorded-graph">{graph_svg(entries[i].get("graph"), element_id=f"{task_id}-recorded-{n}")}'
        f"<figcaption>sample {isolate(entries[i].get('sample'))} \u00b7 "
        f"{'correct' if entries[i].get('correct') is True else 'wrong'}</figcaption></figure>"
        for n, i in enumerate(shown)
    )
    return (
        f'<h3>Recorded graphs</h3><details class="recorded-graphs"><summary>The graph each of '
        f"{count(len(shown))} of {count(len(having))} samples' runs recorded (your system is Python: the nodes "
        f"that ran, per sample)</summary>{figures}</details>"
    )


def _kinds(value: Any) -> str:
    listed = [(as_text(kind), count(n)) for kind, n in as_mapping(value).items()]
    return ", ".join(f"{isolate(kind)} {n}" for kind, n in listed)


def errors_line(source: Mapping[str, Any], element_id: str) -> str:
    """A paragraph (id `element_id`) with the failed calls of `source` (``errors`` and
    ``errors_by_kind``), or "" when it records none.

    Examples:
        >>> errors_line({"errors": 3, "errors_by_kind": {"timeout": 2, "<x>": 1}}, "e")
        '<p class="errors" id="e">Failed calls: <strong>3</strong> (timeout 2, &lt;x&gt; 1)</p>'
        >>> errors_line({"errors": 0}, "e")
        '<p class="errors none" id="e">Failed calls: <strong>0</strong></p>'
        >>> errors_line({}, "e")
        ''
    """
    total, kinds = number(source.get("errors")), _kinds(source.get("errors_by_kind"))
    if total is None and not kinds:
        return ""
    if total is None:
        total = sum(number(n) or 0 for n in as_mapping(source.get("errors_by_kind")).values())
    shown = count(total)
    none = " none" if total == 0 and not kinds else ""
    detail = f" ({kinds})" if kinds else ""
    return f'<p class="errors{none}" id="{element_id}">Failed calls: <strong>{shown}</strong>{detail}</p>'


def total_errors(tasks: list[Mapping[str, Any]]) -> dict[str, Any]:
    """The ``errors`` / ``errors_by_kind`` summed over the tasks that record them ({} if none does).

    Examples:
        >>> total_errors([{"errors": 1, "errors_by_kind": {"timeout": 1}}, {"errors": 2, "errors_by_kind": {"x": 2}}])
        {'errors': 3, 'errors_by_kind': {'timeout': 1, 'x': 2}}
    """
    found = [t for t in tasks if number(t.get("errors")) is not None or as_mapping(t.get("errors_by_kind"))]
    if not found:
        return {}
    kinds: dict[str, float] = {}
    for task in found:
        for kind, n in as_mapping(task.get("errors_by_kind")).items():
            kinds[as_text(kind)] = kinds.get(as_text(kind), 0) + (number(n) or 0)
    total = sum(number(t.get("errors")) or 0 for t in found)
    return {"errors": int(total), "errors_by_kind": {k: int(v) for k, v in kinds.items()}}


def errors_json(statistics: Any) -> dict[str, Any]:
    """The ``errors`` and ``errors_by_kind`` fields for a `RunStatistics` (e.g. a `FitResult`'s).

    Examples:
        >>> from semgrad.core import FrozenMap
        >>> from semgrad.effects import RunStatistics
        >>> errors_json(RunStatistics(errors=2, errors_by_kind=FrozenMap({"timeout": 2})))
        {'errors': 2, 'errors_by_kind': {'timeout': 2}}
    """
    return {"errors": int(statistics.errors), "errors_by_kind": dict(statistics.errors_by_kind)}
