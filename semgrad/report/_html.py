"""`render_report`: a run's ``results.json`` (and ``config.json``) as one self-contained HTML page.

The page has inline CSS and inline SVG only: no script, no external font, image or
style sheet, and a Content-Security-Policy that forbids loading anything, so it
can be opened, mailed and archived as a single file. Every string from the run
is untrusted and goes through `esc` (see `semgrad.report._format`); element ids
are the report's own (``task-3``, ``graph-picture-1``), never taken from the data.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ._chart import score_chart
from ._format import as_list, as_mapping, as_text, esc, isolate, number
from ._gate import gate_labels
from ._graph import GraphShape, graph_shape, graph_svg
from ._predictions import errors_line, total_errors
from ._style import page_head
from ._summary import header, per_task_table, summary_table
from ._task import chart_points, mean_points, task_section

__all__ = ["check_results", "render_report"]


def check_results(results: Any) -> None:
    """Raise `ValueError` (one line) unless `results` has the shape of a ``results.json``:
    an object whose ``tasks`` is an array of objects. Other fields are read leniently.

    Examples:
        >>> check_results({"tasks": []})
        >>> check_results([])
        Traceback (most recent call last):
        ...
        ValueError: results must be a JSON object, got an array
        >>> check_results({"tasks": [1]})
        Traceback (most recent call last):
        ...
        ValueError: results "tasks" must be an array of objects; entry 0 is a number
    """
    if not isinstance(results, Mapping):
        raise ValueError(f"results must be a JSON object, got {_json_type(results)}")
    tasks = results.get("tasks")
    if not isinstance(tasks, (list, tuple)):
        raise ValueError(f'results "tasks" must be an array of objects, got {_json_type(tasks)}')
    for i, task in enumerate(tasks):
        if not isinstance(task, Mapping):
            raise ValueError(f'results "tasks" must be an array of objects; entry {i} is {_json_type(task)}')


def _json_type(value: Any) -> str:
    if value is None:
        return "null (or nothing)"
    kinds = ((bool, "a boolean"), (str, "a string"), ((int, float), "a number"), (Mapping, "an object"))
    return next((name for kind, name in kinds if isinstance(value, kind)), "an array")


def _chart_section(tasks: list[Mapping[str, Any]]) -> str:
    if len(tasks) == 1:
        points, initial, caption = chart_points(tasks[0]), number(tasks[0].get("initial_score")), "Score per iteration"
    else:
        initials = [v for v in (number(t.get("initial_score")) for t in tasks) if v is not None]
        points, initial = mean_points(tasks), (sum(initials) / len(initials) if initials else None)
        caption = f"Mean score per iteration over {len(tasks)} tasks"
    gate = gate_labels(tasks)
    chart = score_chart(points, element_id="score-chart", caption=caption, initial=initial, gate=gate.series)
    note = f"Train: the mean training score of the params each iteration started from. {gate.note}"
    return f'<section id="chart-section"><h2>{esc(caption)}</h2>{chart}<p class="caption">{note}</p></section>'


def _graph_groups(tasks: list[Mapping[str, Any]]) -> dict[tuple[GraphShape, str, str], list[str]]:
    groups: dict[tuple[GraphShape, str, str], list[str]] = {}
    for task in tasks:
        graph = as_mapping(task.get("graph"))
        key = (graph_shape(graph), as_text(graph.get("dot")), as_text(graph.get("mermaid")))
        groups.setdefault(key, []).append(as_text(task.get("task")))
    return groups or {(graph_shape({}), "", ""): []}


def _text_details(title: str, text: str) -> str:
    return f'<details class="source"><summary>{title}</summary><pre>{isolate(text)}</pre></details>' if text else ""


def _graph_section(tasks: list[Mapping[str, Any]]) -> str:
    groups, parts = _graph_groups(tasks), []
    for k, ((shape, dot, mermaid), names) in enumerate(groups.items()):
        element_id = "graph-picture" if k == 0 else f"graph-picture-{k}"
        listed = ", ".join(isolate(name) for name in names)
        used_by = f'<p class="used-by">Used by: {listed}</p>' if len(groups) > 1 else ""
        parts.append(
            f'<div class="graph-block">{used_by}{graph_svg(shape, element_id=element_id)}'
            f"{_text_details('Graphviz DOT', dot)}{_text_details('Mermaid', mermaid)}</div>"
        )
    return f'<section id="graph-section"><h2>Graph</h2>{"".join(parts)}</section>'


def _config_section(config: Mapping[str, Any] | None) -> str:
    if config is None:
        return ""
    text = json.dumps(config, indent=2, ensure_ascii=False, default=str)
    return (
        f'<section id="config-section"><h2>Configuration</h2><details><summary>config.json</summary>'
        f"<pre>{isolate(text)}</pre></details></section>"
    )


def _errors(results: Mapping[str, Any], tasks: list[Mapping[str, Any]]) -> str:
    """The run's failed calls: its own ``errors`` fields, else the sum of its tasks'."""
    recorded = "errors" in results or "errors_by_kind" in results
    return errors_line(results if recorded else total_errors(tasks), "errors-summary")


def _nav(tasks: int) -> str:
    links = [("summary-section", "Summary"), ("chart-section", "Scores"), ("graph-section", "Graph")]
    links += [("per-task-section", "Per task")] if tasks > 1 else []
    links += [("task-0", "Tasks" if tasks > 1 else "Parameters and gradients")] if tasks else []
    return "<nav><ul>" + "".join(f'<li><a href="#{target}">{label}</a></li>' for target, label in links) + "</ul></nav>"


def _body(results: Mapping[str, Any], config: Mapping[str, Any] | None) -> str:
    tasks = [as_mapping(t) for t in as_list(results.get("tasks"))]
    several = len(tasks) > 1
    per_task = f'<section id="per-task-section"><h2>Per task</h2>{per_task_table(results)}</section>' if several else ""
    sections = "".join(task_section(task, i, several=several) for i, task in enumerate(tasks))
    return (
        f"{header(results)}{_nav(len(tasks))}"
        f'<section id="summary-section"><h2>Summary</h2>{summary_table(results)}{_errors(results, tasks)}</section>'
        f"{_chart_section(tasks)}{_graph_section(tasks)}{per_task}{sections}{_config_section(config)}"
        "<footer>Generated by semgrad. A self-contained page: no script, nothing loaded from the network.</footer>"
    )


def render_report(results: Mapping[str, Any] | Any, config: Mapping[str, Any] | None = None) -> str:
    """The HTML report of a run, as text (pure: no I/O).

    Args:
        results: The run's ``results.json``, parsed, or its `semgrad.experiments.RunSummary` (read as
            its ``to_json()``; a file edited by hand is read leniently, a wrong field shown as a dash).
        config: Its ``config.json``, parsed (shown as JSON at the end), or None.

    Returns:
        A complete HTML document with inline CSS and SVG and no script.

    Raises:
        ValueError: `results` is not an object whose ``tasks`` is an array of objects.

    Examples:
        >>> page = render_report({"task": "gsm8k", "simulated": True, "tasks": [{"task": "gsm8k"}]})
        >>> page.startswith("<!DOCTYPE html>"), 'id="score-chart"' in page, "<script" in page
        (True, True, False)

    .. versionadded:: 0.1.0
    """
    if not isinstance(results, Mapping) and callable(getattr(results, "to_json", None)):
        results = results.to_json()  # a RunSummary (the report sits below experiments: no import of it)
    check_results(results)
    if config is not None and not isinstance(config, Mapping):
        raise ValueError(f"config must be a JSON object, got {_json_type(config)}")
    return (
        page_head(f"semgrad report: {as_text(results.get('task'))}")
        + f"<body><main>{_body(results, config)}</main></body></html>\n"
    )
