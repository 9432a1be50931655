"""One task's section: its scores, each parameter's diff, and the gradients behind each update."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ._chart import ChartPoint, score_chart
from ._diff import diff_html
from ._format import DASH, as_list, as_mapping, as_text, count, esc, isolate, isolate_html, number, percent
from ._gate import gate_labels
from ._lineage import lineage_section
from ._predictions import SHOWN_ALONE, SHOWN_EACH, errors_line, predictions_table, recorded_graphs

__all__ = ["chart_points", "mean_points", "task_section"]

_VERDICT = {True: "accepted", False: "rejected", None: "no gate"}


def _iteration_number(entry: Mapping[str, Any], position: int) -> int:
    found = number(entry.get("iteration"))
    return int(found) if found is not None and found.is_integer() and abs(found) < 1e9 else position


def chart_points(task: Mapping[str, Any]) -> list[ChartPoint]:
    """A task's iterations as chart points (a missing or invalid number is left out).

    Examples:
        >>> chart_points({"iterations": [{"iteration": 1, "train_score": 0.5, "validation_score": "x", "accepted": 1}]})
        [ChartPoint(iteration=1, train=0.5, validation=None, accepted=None, verdicts=None)]
    """
    found = []
    for position, item in enumerate(as_list(task.get("iterations")), start=1):
        entry = as_mapping(item)
        accepted = entry.get("accepted")
        found.append(
            ChartPoint(
                _iteration_number(entry, position),
                number(entry.get("train_score")),
                number(entry.get("validation_score")),
                accepted if isinstance(accepted, bool) else None,
            )
        )
    return found


def _mean(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if known else None


def mean_points(tasks: Sequence[Mapping[str, Any]]) -> list[ChartPoint]:
    """The mean training score and gate score over tasks, per iteration number.

    Examples:
        >>> first = {"iterations": [{"iteration": 1, "train_score": 0.25}]}
        >>> second = {"iterations": [{"iteration": 1, "train_score": 0.75}, {"iteration": 2, "train_score": 1}]}
        >>> [(p.iteration, p.train) for p in mean_points([first, second])]
        [(1, 0.5), (2, 1.0)]
    """
    by_iteration: dict[int, list[ChartPoint]] = {}
    for task in tasks:
        for point in chart_points(task):
            by_iteration.setdefault(point.iteration, []).append(point)
    return [
        ChartPoint(
            n,
            _mean([p.train for p in group]),
            _mean([p.validation for p in group]),
            verdicts=(sum(p.accepted is True for p in group), sum(p.accepted is not None for p in group)),
        )
        for n, group in sorted(by_iteration.items())
    ]


def _param_block(task_id: str, index: int, name: str, initial: str, final: str) -> str:
    status = "changed" if initial != final else "unchanged"
    return (
        f'<div class="param" id="{task_id}-param-{index}"><h4><code>{isolate(name)}</code> '
        f'<span class="tag {status}">{status}</span></h4>'
        f'<div class="texts"><div><h5>Initial</h5><pre class="initial-text">{isolate(initial)}</pre></div>'
        f'<div><h5>Final</h5><pre class="final-text">{isolate(final)}</pre></div></div>'
        f'<h5>Diff</h5><pre class="diff">{isolate_html(diff_html(initial, final), initial + final)}</pre></div>'
    )


def _params(task_id: str, task: Mapping[str, Any]) -> str:
    params = as_mapping(task.get("params"))
    initial, final = as_mapping(params.get("initial")), as_mapping(params.get("final"))
    names = list(dict.fromkeys([*initial, *final]))
    if not names:
        return '<p class="empty">No parameters recorded.</p>'
    return "".join(
        _param_block(task_id, i, as_text(name), as_text(initial.get(name)), as_text(final.get(name)))
        for i, name in enumerate(names)
    )


def _calls(value: Any) -> str:
    return ", ".join(f"{isolate(purpose)} {count(n)}" for purpose, n in as_mapping(value).items()) or DASH


def _iteration_row(entry: Mapping[str, Any], number_: int) -> str:
    accepted = entry.get("accepted") if isinstance(entry.get("accepted"), bool) else None
    updated = ", ".join(f"<code>{isolate(name)}</code>" for name in as_mapping(entry.get("updates"))) or DASH
    cells = [
        str(number_),
        percent(entry.get("train_score")),
        percent(entry.get("validation_score")),
        _VERDICT[accepted],
        "yes" if entry.get("applied") is True else "no",
        _calls(entry.get("calls")),
        updated,
    ]
    numbers = "".join(f'<td class="num">{c}</td>' for c in cells[:5])
    return (
        f'<tr class="{_VERDICT[accepted].replace(" ", "-")}">{numbers}'
        + "".join(f"<td>{c}</td>" for c in cells[5:])
        + "</tr>"
    )


def _iterations_table(task: Mapping[str, Any]) -> str:
    entries = [as_mapping(e) for e in as_list(task.get("iterations"))]
    if not entries:
        return '<p class="empty">No iterations recorded.</p>'
    gate = gate_labels([task]).column
    head = "".join(f"<th>{esc(h)}</th>" for h in ("#", "Train", gate, "Gate", "Applied", "Calls", "Updated"))
    rows = "".join(_iteration_row(e, _iteration_number(e, i)) for i, e in enumerate(entries, start=1))
    return f'<table class="iterations"><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>'


def _stage_entry(entry: Any) -> tuple[Any, list[Any]]:
    """A stage report entry -- ``[stage, [notes]]`` or ``{"stage", "notes"}`` -- as (stage, notes)."""
    if isinstance(entry, Mapping):
        stage, notes = entry.get("stage"), entry.get("notes")
    elif isinstance(entry, (list, tuple)) and entry:
        stage, notes = entry[0], entry[1] if len(entry) > 1 else None
    else:
        stage, notes = entry, None
    return stage, as_list(notes) if isinstance(notes, (list, tuple)) else [notes] if notes else []


def _stage_report(value: Any) -> str:
    items = []
    for entry in as_list(value):
        stage, notes = _stage_entry(entry)
        listed = "".join(f"<li>{isolate(note)}</li>" for note in notes)
        items.append(f"<li><strong>{isolate(stage)}</strong>" + (f"<ul>{listed}</ul>" if listed else "") + "</li>")
    return f'<ol class="stages">{"".join(items)}</ol>' if items else '<p class="empty">No stage report.</p>'


def _proposal(name: Any, updates: Mapping[str, Any], before: Mapping[str, Any]) -> str:
    """The proposed value of `name`, and its diff against the value the iteration started from."""
    if name not in updates:
        return '<p class="label">Proposed value</p><pre class="new-value">(no update proposed)</pre>'
    new, old = as_text(updates.get(name)), as_text(before.get(name))
    shown = (
        f'<p class="label">Change from the value before this iteration</p>'
        f'<pre class="diff proposal-diff">{isolate_html(diff_html(old, new), old + new)}</pre>'
        if name in before
        else ""
    )
    return f'{shown}<p class="label">Proposed value</p><pre class="new-value">{isolate(new)}</pre>'


def _update_block(block_id: str, entry: Mapping[str, Any], number_: int, before: Mapping[str, Any]) -> str:
    updates, gradients = as_mapping(entry.get("updates")), as_mapping(entry.get("gradients"))
    accepted = entry.get("accepted") if isinstance(entry.get("accepted"), bool) else None
    verdict = f"{_VERDICT[accepted]}, {'applied' if entry.get('applied') is True else 'not applied'}"
    parts = []
    for name in dict.fromkeys([*updates, *gradients]):
        gradient = as_text(gradients.get(name)) or "(no gradient recorded)"
        parts.append(
            f'<div class="param-update"><h5><code>{isolate(name)}</code></h5>'
            f'<p class="label">Gradient that drove the rewrite</p><pre class="gradient">{isolate(gradient)}</pre>'
            f"{_proposal(name, updates, before)}</div>"
        )
    return (
        f'<div class="update" id="{block_id}"><h4>Iteration {number_}: {verdict}</h4>'
        + ("".join(parts) or '<p class="empty">No updates proposed.</p>')
        + f'<p class="label">Stage report</p>{_stage_report(entry.get("report"))}</div>'
    )


def _updates(task_id: str, task: Mapping[str, Any]) -> str:
    kept: list[str] = []
    rejected: list[str] = []
    current = dict(as_mapping(as_mapping(task.get("params")).get("initial")))
    for position, item in enumerate(as_list(task.get("iterations")), start=1):
        entry = as_mapping(item)
        block = _update_block(f"{task_id}-iteration-{position}", entry, _iteration_number(entry, position), current)
        (kept if entry.get("accepted") is True or entry.get("applied") is True else rejected).append(block)
        if entry.get("applied") is True:
            current = {**current, **as_mapping(entry.get("updates"))}
    shown = "".join(kept) or '<p class="empty">No update was accepted or applied.</p>'
    if rejected:
        shown += f"<details><summary>Proposals not applied ({len(rejected)})</summary>{''.join(rejected)}</details>"
    return shown


def _facts(task: Mapping[str, Any]) -> str:
    sizes = ", ".join(f"{isolate(split)} {count(n)}" for split, n in as_mapping(task.get("sizes")).items())
    category = f"category {isolate(task.get('category'))} \u00b7 " if task.get("category") else ""
    return (
        f'<p class="task-facts">{category}sizes: {sizes or DASH} \u00b7 {esc(gate_labels([task]).score.lower())}: '
        f"{percent(task.get('initial_score'))} initially, best {percent(task.get('best_score'))}</p>"
    )


def task_section(task: Mapping[str, Any], index: int, *, several: bool) -> str:
    """The section (id ``task-<index>``) of one optimized task.

    Args:
        task: One entry of the results' ``tasks``.
        index: Its position, used only to make element ids.
        several: Whether the run had several tasks: then the section gets its own
            chart and its details start collapsed.

    Examples:
        >>> task = {"task": "gsm8k", "params": {"initial": {"p": "a b"}, "final": {"p": "a c"}}}
        >>> html = task_section(task, 0, several=False)
        >>> html.startswith('<section class="task" id="task-0">'), "<del>b</del><ins>c</ins>" in html
        (True, True)
    """
    task_id = f"task-{index}"
    chart = (
        score_chart(
            chart_points(task),
            element_id=f"score-chart-{index}",
            caption=f"Score per iteration: {as_text(task.get('task'))}",
            initial=number(task.get("initial_score")),
            gate=gate_labels([task]).series,
        )
        if several
        else ""
    )
    body = (
        f"{chart}<h3>Parameters</h3>{_params(task_id, task)}<h3>Iterations</h3>{_iterations_table(task)}"
        f"{lineage_section(task)}"
        f"<h3>Updates and the gradients that drove them</h3>{_updates(task_id, task)}"
        f"{predictions_table(task, task_id, limit=SHOWN_EACH if several else SHOWN_ALONE)}"
        f"{recorded_graphs(task, task_id)}"
    )
    if several:
        body = f"<details><summary>Parameters, iterations and gradients</summary>{body}</details>"
    name = isolate(task.get("task"))
    return (
        f'<section class="task" id="{task_id}"><h2>Task: <span class="task-name">{name}</span></h2>'
        f"{_facts(task)}{errors_line(task, f'{task_id}-errors')}{body}</section>"
    )
