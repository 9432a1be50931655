"""The report's header, summary table and per-task table, with the published figures."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ._format import as_list, as_mapping, as_text, count, esc, isolate, money, number, percent, points
from ._gate import gate_labels
from ._tokens import SIMULATED_TOKENS

__all__ = [
    "PUBLISHED",
    "average_coverage",
    "header",
    "is_simulated",
    "per_task_table",
    "published_figures",
    "summary_table",
    "task_published",
]

#: The paper's published figures (and TextGrad's on GSM8K), as fractions.
PUBLISHED: Mapping[str, float] = {"gsm8k": 0.932, "bbh_nlp": 0.825, "bbh_algorithmic": 0.856, "textgrad_gsm8k": 0.782}

_PUBLISHED_LABEL = {
    "gsm8k": "Paper (GSM8K)",
    "bbh_nlp": "Paper (BBH NLP average)",
    "bbh_algorithmic": "Paper (BBH algorithmic average)",
    "textgrad_gsm8k": "TextGrad (GSM8K)",
}

_AVERAGES = (
    ("nlp", "BBH NLP average (test, item-weighted)", "bbh_nlp"),
    ("algorithmic", "BBH algorithmic average (test, item-weighted)", "bbh_algorithmic"),
    ("overall", "Overall average (test, item-weighted)", None),
)

#: Error kinds of calls the run's own budget or stop refused: never sent, and never in a score.
_REFUSED = ("budget", "halted")

Row = tuple[str, str, str]  # label, this run, published -- all already HTML


def is_simulated(results: Mapping[str, Any]) -> bool:
    """Whether the run used the built-in simulated LLM.

    Examples:
        >>> is_simulated({"simulated": True}), is_simulated({"backend": "simulated"}), is_simulated({})
        (True, True, False)
    """
    return results.get("simulated") is True or results.get("backend") == "simulated"


def published_figures(results: Mapping[str, Any]) -> dict[str, float]:
    """`PUBLISHED`, overridden by the numeric entries of the run's ``published`` object.

    Examples:
        >>> published_figures({"published": {"gsm8k": 0.9, "bbh_nlp": "x"}})["gsm8k"], published_figures({})["bbh_nlp"]
        (0.9, 0.825)
    """
    given = as_mapping(results.get("published"))
    figures = dict(PUBLISHED)
    for key in PUBLISHED:
        value = number(given.get(key))
        figures[key] = figures[key] if value is None else value
    return figures


def task_published(task: Mapping[str, Any], figures: Mapping[str, float]) -> list[tuple[str, float]]:
    """The published figures of the same quantity as a task's test accuracy, as (label, value).

    Only a figure of the task itself: GSM8K's (the task's own ``published`` entry, or the paper's) and
    TextGrad's. A BBH task gets none: the paper gives only its category's average over all the category's
    tasks, which `summary_table` shows beside the run's category average when that covers them all. An entry
    that an older run wrote for a BBH task (its category's average) is not shown either; a newer one marks a
    figure of the task itself with ``"scope": "task"``.

    Examples:
        >>> task_published({"task": "gsm8k"}, PUBLISHED)
        [('Paper (GSM8K)', 0.932), ('TextGrad (GSM8K)', 0.782)]
        >>> task_published({"task": "bbh:navigate", "category": "algorithmic"}, PUBLISHED)
        []
        >>> old = {"label": "Paper (BBH algorithmic average)", "value": 0.856}
        >>> task_published({"task": "bbh:navigate", "category": "algorithmic", "published": old}, PUBLISHED)
        []
        >>> task_published({"task": "liar"}, PUBLISHED)
        []
    """
    entry = as_mapping(task.get("published"))
    name, category = as_text(task.get("task")), task.get("category")
    bbh = name.startswith("bbh") or category in ("nlp", "algorithmic")
    value = number(entry.get("value"))
    if value is None or (bbh and entry.get("scope") != "task"):
        found = []
    else:
        found = [(as_text(entry.get("label")) or "Published", value)]
    if name != "gsm8k":
        return found
    keys = ["textgrad_gsm8k"] if found else ["gsm8k", "textgrad_gsm8k"]
    return found + [(_PUBLISHED_LABEL[key], figures[key]) for key in keys]


def average_coverage(results: Mapping[str, Any], group: str) -> tuple[int, int | None]:
    """How many tasks the run's averages of `group` cover, and how many the paper's figure for that group
    averages (None when it has none, or the run does not say).

    ``results.json``'s ``average_tasks`` says both; a file older than that field gets its tasks counted here
    (those of the group with a test score), and, for ``bbh:all``, the paper's count is taken to be the same (a
    ``bbh:all`` run covered every BBH task; a group of it that missed one has no average).

    Examples:
        >>> average_coverage({"average_tasks": {"nlp": {"tasks": 1, "of": 12}}}, "nlp")
        (1, 12)
        >>> old = {"task": "bbh:all", "tasks": [{"category": "nlp", "accuracy": {"test": 0.5}}]}
        >>> average_coverage(old, "nlp"), average_coverage({**old, "task": "bbh:snarks"}, "nlp")
        ((1, 1), (1, None))
    """
    entry = as_mapping(as_mapping(results.get("average_tasks")).get(group))
    tasks, of = number(entry.get("tasks")), number(entry.get("of"))
    if tasks is not None:
        return int(tasks), None if of is None else int(of)
    found = sum(
        1
        for t in map(as_mapping, as_list(results.get("tasks")))
        if number(as_mapping(t.get("accuracy")).get("test")) is not None
        and (group == "overall" or t.get("category") == group)
    )
    return found, found if group in ("nlp", "algorithmic") and results.get("task") == "bbh:all" else None


def _published_html(figures: Sequence[tuple[str, float]]) -> str:
    return "<br>".join(
        f'<span class="published">{isolate(label)}: {esc(percent(value))}</span>' for label, value in figures
    )


def _fact(label: str, value: Any) -> str:
    return f"<dt>{esc(label)}</dt><dd>{isolate(value)}</dd>"


def header(results: Mapping[str, Any]) -> str:
    """The page header: the task and the run's settings, and the notices that matter.

    Examples:
        >>> "simulated-notice" in header({"task": "gsm8k", "simulated": True})
        True
    """
    facts = "".join(
        _fact(label, results.get(key))
        for label, key in (
            ("Task", "task"),
            ("Backend", "backend"),
            ("Optimizer", "optimizer"),
            ("Seed", "seed"),
            ("semgrad", "semgrad_version"),
        )
    )
    notices = []
    if is_simulated(results):
        notices.append(
            '<p id="simulated-notice" class="notice"><strong>Simulated LLM.</strong> This run used the '
            "built-in simulated LLM, not a real model: its scores show that the pipeline works and say "
            "nothing about the method's accuracy. Do not compare them with the published figures.</p>"
        )
    if isinstance(results.get("failed"), str):
        notices.append(
            f'<p id="failed-notice" class="notice warn"><strong>Failed run: its figures are not to be '
            f"trusted.</strong> {isolate(results.get('failed'))}</p>"
        )
    if results.get("stopped") is not None:
        notices.append(
            f'<p id="stopped-notice" class="notice warn"><strong>Stopped early</strong> '
            f"({isolate(results.get('stopped'))}): the figures are those of the iterations completed.</p>"
        )
    errors = number(results.get("errors"))
    if errors:
        kinds = as_mapping(results.get("errors_by_kind"))
        refused = sum(number(kinds.get(kind)) or 0 for kind in _REFUSED)
        failed = {kind: n for kind, n in kinds.items() if kind not in _REFUSED}
        listed = ", ".join(f"{isolate(kind)} {isolate(n)}" for kind, n in failed.items())
        if errors > refused:
            notices.append(
                f'<p id="errors-notice" class="notice warn"><strong>{esc(int(errors - refused))} calls without '
                f"a reply</strong>{f' ({listed})' if listed else ''}: the scores count them as wrong answers.</p>"
            )
        if refused:
            notices.append(
                f'<p id="refused-notice" class="notice"><strong>{esc(int(refused))} calls refused by the run\'s '
                "budget or stop</strong>, never sent: no score includes them (an iteration or a split they "
                "belonged to was left unfinished, and is done again when the run is resumed).</p>"
            )
    return (
        f'<header><h1>semgrad run report: <span class="task-name">{isolate(results.get("task"))}</span></h1>'
        f'<dl class="facts">{facts}</dl>{"".join(notices)}</header>'
    )


def _accuracy_rows(task: Mapping[str, Any], figures: Mapping[str, float]) -> list[Row]:
    accuracy = as_mapping(task.get("accuracy"))
    test, initial = number(accuracy.get("test")), number(accuracy.get("initial_test"))
    change = None if test is None or initial is None else test - initial
    if task.get("scored_on") == "train":  # the paper's LIAR protocol: scored on the items optimised on
        return [
            (
                "Train accuracy (the paper's score: the items optimised on)",
                f"<strong>{percent(accuracy.get('train'))}</strong>",
                "",
            ),
            ("Test accuracy (held out; our addition)", percent(test), ""),
            ("Initial test accuracy", percent(initial), ""),
            ("Test change", points(change), ""),
            (
                "Training score (initial \u2192 best)",
                f"{percent(task.get('initial_score'))} \u2192 {percent(task.get('best_score'))}",
                "",
            ),
            *_metric_row(task),
        ]
    return [
        ("Train accuracy", percent(accuracy.get("train")), ""),
        ("Validation accuracy", percent(accuracy.get("validation")), ""),
        ("Test accuracy", f"<strong>{percent(test)}</strong>", _published_html(task_published(task, figures))),
        ("Initial test accuracy", percent(initial), ""),
        ("Test change", points(change), ""),
        (
            f"{gate_labels([task]).score} (initial \u2192 best)",
            f"{percent(task.get('initial_score'))} \u2192 {percent(task.get('best_score'))}",
            "",
        ),
        *_metric_row(task),
    ]


def _metric_row(task: Mapping[str, Any]) -> list[Row]:
    """The metric the scores were computed with, when results.json names one (older runs do not)."""
    metric = task.get("metric")
    return [("Metric", f'<span class="metric">{isolate(metric)}</span>', "")] if isinstance(metric, str) else []


def _covered(
    results: Mapping[str, Any], group: str, figures: Mapping[str, float], published: str | None
) -> tuple[str, str]:
    """The words after an average's label (how many tasks it covers) and its published cell: the paper's
    figure only beside an average over the same tasks as the paper's; an average over part of a category says
    that it is not comparable, and gives no number to compare it with."""
    tasks, of = average_coverage(results, group)
    noun = "task" if tasks == 1 else "tasks"
    covers = f"over {count(tasks)} {noun}" if of is None else f"over {count(tasks)} of {count(of)} tasks"
    if published is None:
        return covers, ""
    if of is not None and tasks == of:
        return covers, _published_html([(_PUBLISHED_LABEL[published], figures[published])])
    paper = f"all {count(of)} tasks" if of is not None else "all the category's tasks"
    return covers, f'<span class="not-comparable">not comparable: the paper\'s figure averages {paper}</span>'


def _average_rows(
    results: Mapping[str, Any], figures: Mapping[str, float], *, with_published: bool = True
) -> list[Row]:
    averages, rows = as_mapping(results.get("averages")), []
    plain = as_mapping(results.get("averages_unweighted"))
    unscored = results.get("unscored_tasks")
    if isinstance(unscored, list) and unscored:
        listed = ", ".join(isolate(name) for name in unscored[:5]) + (", \u2026" if len(unscored) > 5 else "")
        rows.append(
            (
                "Tasks without a test score",
                f"{count(len(unscored))} ({listed})",
                "no average for a group that holds one: it would cover only part of the group",
            )
        )
    for key, label, published in _AVERAGES:
        value = number(averages.get(key))
        if value is not None:
            covers, shown = _covered(results, key, figures, published)
            rows.append((f"{label} {covers}", f"<strong>{percent(value)}</strong>", shown if with_published else ""))
            mean = number(plain.get(key))
            if mean is not None:
                unweighted = label.replace("item-weighted", "unweighted mean over tasks")
                rows.append((f"{unweighted} {covers}", percent(mean), ""))
    return rows


def _counts(value: Any) -> str:
    entries = as_mapping(value)
    if not entries:
        return "\u2014"
    total = sum(number(n) or 0 for n in entries.values())
    listed = " \u00b7 ".join(f"{isolate(name)}: {count(n)}" for name, n in entries.items())
    return f"{listed} (total {count(total)})"


def _unsent(results: Mapping[str, Any]) -> str:
    """The calls the run's own budget or stop refused, which the counts include but no provider received."""
    kinds = as_mapping(results.get("errors_by_kind"))
    refused = sum(number(kinds.get(kind)) or 0 for kind in _REFUSED)
    return f"; {count(refused)} of them refused by the run's budget or stop, never sent" if refused else ""


def _tokens_text(results: Mapping[str, Any], tokens: Mapping[str, Any]) -> str:
    """The tokens used, or none for the simulated LLM (`SIMULATED_TOKENS`: it counts and estimates none)."""
    if results.get("simulated") is True and tokens.get("input") is None and tokens.get("output") is None:
        return esc(SIMULATED_TOKENS)
    return f"{count(tokens.get('input'))} in \u00b7 {count(tokens.get('output'))} out"


def _usage_rows(results: Mapping[str, Any]) -> list[Row]:
    calls, tokens = as_mapping(results.get("calls")), as_mapping(results.get("tokens"))
    return (
        [
            ("Calls by purpose", _counts(calls.get("by_purpose")) + _unsent(results), ""),
            ("Calls by role", _counts(calls.get("by_role")), ""),
            ("Tokens", _tokens_text(results, tokens), ""),
            ("Cost", esc(money(results.get("cost_usd"))), ""),
        ]
        + _hits_row(results)
        + _batch_row(results)
        + _tool_row(results)
    )


def _tool_row(results: Mapping[str, Any]) -> list[Row]:
    """The tool calls of a system written as Python (``ctx.tool``): not LLM calls, so not in the calls or cost."""
    counters = as_mapping(results.get("counters"))
    n, failed = counters.get("tool_calls"), counters.get("tool_errors")
    if type(n) is not int or n <= 0:
        return []
    failures = f", {count(failed)} failed" if type(failed) is int and failed > 0 else ""
    return [("Tool calls", esc(f"{count(n)} (not LLM calls{failures})"), "")]


def _batch_row(results: Mapping[str, Any]) -> list[Row]:
    """The calls a provider's batch answered (``--batch``): counted in the calls, priced at half in the cost."""
    n = as_mapping(results.get("counters")).get("batch_calls")
    if type(n) is not int or n <= 0:
        return []
    return [("Batch calls", esc(f"{count(n)} (priced at half in the cost)"), "")]


def _hits_row(results: Mapping[str, Any]) -> list[Row]:
    """The requests a cache, the run's journal or a memo answered: not calls, and not paid for."""
    hits = as_mapping(as_mapping(results.get("counters")).get("hits"))
    if not hits:
        return []
    return [("Answered without a call", _counts(hits), "")]


def summary_table(results: Mapping[str, Any]) -> str:
    """The summary table (id ``summary``): accuracies beside the published figures, calls,
    tokens and cost. A single task shows its accuracies; several show the averages.

    Examples:
        >>> "93.2 %" in summary_table({"task": "gsm8k", "tasks": [{"task": "gsm8k"}]})
        True
    """
    figures, tasks = published_figures(results), [as_mapping(t) for t in as_list(results.get("tasks"))]
    rows = _accuracy_rows(tasks[0], figures) if len(tasks) == 1 else [("Tasks optimized", count(len(tasks)), "")]
    rows += _average_rows(results, figures) if len(tasks) != 1 or results.get("unscored_tasks") else []
    rows += _usage_rows(results)
    body = "".join(
        f'<tr><th scope="row">{esc(label)}</th><td>{ours}</td><td class="published-cell">{paper}</td></tr>'
        for label, ours, paper in rows
    )
    return (
        '<table id="summary" class="summary"><thead><tr><th>Measure</th><th>This run</th><th>Published</th></tr>'
        f"</thead><tbody>{body}</tbody></table>"
    )


def _task_row(index: int, task: Mapping[str, Any], figures: Mapping[str, float]) -> str:
    accuracy = as_mapping(task.get("accuracy"))
    test, initial = number(accuracy.get("test")), number(accuracy.get("initial_test"))
    cells = [
        f'<a href="#task-{index}">{isolate(task.get("task"))}</a>',
        isolate(task.get("category") or "\u2014"),
        percent(accuracy.get("train")),
        percent(accuracy.get("validation")),
        f"<strong>{percent(test)}</strong>",
        percent(initial),
        points(None if test is None or initial is None else test - initial),
    ]
    published = _published_html(task_published(task, figures))
    numbers = "".join(f'<td class="num">{cell}</td>' for cell in cells[2:])
    return f"<tr><td>{cells[0]}</td><td>{cells[1]}</td>{numbers}" + f'<td class="published-cell">{published}</td></tr>'


def per_task_table(results: Mapping[str, Any]) -> str:
    """One row per task (id ``per-task``) with the NLP / algorithmic / overall averages below.

    Examples:
        >>> table = per_task_table({"tasks": [{"task": "bbh:a"}, {"task": "bbh:b"}], "averages": {"nlp": 0.5}})
        >>> table.count("<tr"), "50.0 %" in table
        (4, True)
    """
    figures = published_figures(results)
    rows = "".join(_task_row(i, as_mapping(t), figures) for i, t in enumerate(as_list(results.get("tasks"))))
    averages = "".join(
        f'<tr class="average"><th scope="row" colspan="4">{esc(label)}</th><td>{ours}</td>'
        f'<td colspan="2"></td><td class="published-cell">{paper}</td></tr>'
        for label, ours, paper in _average_rows(results, figures, with_published=False)
    )
    head = "".join(
        f"<th>{h}</th>"
        for h in ("Task", "Category", "Train", "Validation", "Test", "Initial test", "Change", "Published")
    )
    return (
        f'<table id="per-task" class="per-task"><thead><tr>{head}</tr></thead><tbody>{rows}</tbody>'
        f"<tfoot>{averages}</tfoot></table>"
    )
