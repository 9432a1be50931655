"""The combined results of a sweep: ``sweep.json`` content, built from the runs' rows.

Everything here is a pure function of the spec and the rows, in the grid's
order, with no timing fields: a sweep run on Ray and the same sweep run with
``--local`` give equal ``sweep.json`` files.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from ..experiments import PUBLISHED
from ..experiments._results import MAX_COUNT
from ..tasks import BBH_ALGORITHMIC, BBH_NLP
from ._spec import SweepSpec
from ._sweep_json import SweepSummary

__all__ = ["AVERAGES", "average_tasks", "comparable_figures", "summarize"]

#: The averages of the combined report, by key: label, and which rows count.
AVERAGES = {
    "bbh_nlp": "BBH NLP",
    "bbh_algorithmic": "BBH algorithmic",
    "gsm8k": "GSM8K",
    "overall": "All tasks",
}


#: The tasks each of the paper's figures averages, by the key of the sweep's average it compares with.
_PAPER_TASKS: Mapping[str, frozenset[str]] = {
    "bbh_nlp": frozenset(f"bbh:{name}" for name in BBH_NLP),
    "bbh_algorithmic": frozenset(f"bbh:{name}" for name in BBH_ALGORITHMIC),
    "gsm8k": frozenset({"gsm8k"}),
}

#: The paper's figures (`PUBLISHED` keys) that compare with each average: the paper's own, and TextGrad's.
_FIGURES = {"bbh_nlp": ("bbh_nlp",), "bbh_algorithmic": ("bbh_algorithmic",), "gsm8k": ("gsm8k", "textgrad_gsm8k")}


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _group(row: Mapping[str, Any]) -> str | None:
    if row["category"] in ("nlp", "algorithmic"):
        return f"bbh_{row['category']}"
    return "gsm8k" if row["task"] == "gsm8k" else None


def _label(row: Mapping[str, Any]) -> str:
    return row["optimizer"] + (f" / {row['models']}" if row.get("models") else "")


def _scored_on(row: Mapping[str, Any]) -> str:
    return "train" if row.get("scored_on") == "train" else "test"


def by_task(rows: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, float | None]]:
    """Each task's score, its mean over seeds, by task, then by variant (optimizer, and model set
    if several): test accuracy, or train accuracy for a task scored on the items it was optimised
    on (``scored_on == "train"``: LIAR under the paper's protocol, as the run's report headlines it).

    Examples:
        >>> rows = [{"task": "gsm8k", "optimizer": "tgd", "accuracy": {"test": t}} for t in (0.5, 1.0)]
        >>> by_task(rows)
        {'gsm8k': {'tgd': 0.75}}
        >>> liar = {"task": "liar", "optimizer": "tgd", "scored_on": "train", "accuracy": {"train": 0.8, "test": 0.6}}
        >>> by_task([liar])
        {'liar': {'tgd': 0.8}}
    """
    table: dict[str, dict[str, list[float]]] = {}
    for row in rows:
        scores = table.setdefault(row["task"], {}).setdefault(_label(row), [])
        score = row["accuracy"].get(_scored_on(row))
        if score is not None:
            scores.append(score)
    return {task: {variant: _mean(s) for variant, s in variants.items()} for task, variants in table.items()}


def scored_on(rows: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """Per task, the part of its split whose accuracy `by_task` shows ("test", or "train").

    Examples:
        >>> scored_on([{"task": "liar", "scored_on": "train"}, {"task": "gsm8k"}])
        {'liar': 'train', 'gsm8k': 'test'}
    """
    return {row["task"]: _scored_on(row) for row in rows}


def averages(rows: Sequence[Mapping[str, Any]], *, weighted: bool = True) -> dict[str, dict[str, float | None]]:
    """Per variant: each task's mean test accuracy (over seeds), averaged over the tasks of a group.

    Kept for BBH NLP, BBH algorithmic, GSM8K and all tasks. `weighted` (the default) weighs each
    task by its number of test items, as the paper reports BBH and as `semgrad run bbh:all` does
    (a task's size is the one its runs report; a failed run reports none, and a group with a task
    whose size is unknown, or reported differently, has no weighted average); else every task
    counts once. A variant with no test score for some task of a group (its runs of that task
    failed or stopped) has no average for that group: an average over the other tasks would sit
    beside the complete ones as if it were one.

    Examples:
        >>> row = {"category": "nlp", "optimizer": "tgd"}
        >>> rows = [
        ...     {**row, "task": "bbh:snarks", "accuracy": {"test": 1.0}, "test_items": 30},
        ...     {**row, "task": "bbh:hyperbaton", "accuracy": {"test": 0.0}, "test_items": 10},
        ... ]
        >>> averages(rows)["tgd"]["bbh_nlp"], averages(rows, weighted=False)["tgd"]["bbh_nlp"]
        (0.75, 0.5)
    """
    per_task = by_task(rows)
    groups = {row["task"]: _group(row) for row in rows}
    known: dict[str, set[int]] = {row["task"]: set() for row in rows}
    for row in rows:
        size = row.get("test_items")
        if type(size) is int and size > 0:
            known[row["task"]].add(size)
    sizes = {task: next(iter(found)) if len(found) == 1 else None for task, found in known.items()}
    variants = list(dict.fromkeys(_label(row) for row in rows))
    result = {}
    for variant in variants:
        found: dict[str, list[tuple[float | None, int | None]]] = {key: [] for key in AVERAGES}
        for task, scores in per_task.items():
            score = scores.get(variant)
            weight = sizes.get(task) if weighted else 1
            found["overall"].append((score, weight))
            group = groups[task]
            if group is not None:
                found[group].append((score, weight))
        result[variant] = {key: _weighted_mean(values) for key, values in found.items()}
    return result


def _weighted_mean(values: Sequence[tuple[float | None, int | None]]) -> float | None:
    if not values or any(score is None or weight is None for score, weight in values):
        return None
    total = sum(weight for _, weight in values if weight is not None)
    return sum(score * weight for score, weight in values if score is not None and weight is not None) / total


def _grid_tasks(rows: Sequence[Any]) -> dict[str, list[str]]:
    """The sweep's task names by average key, from its rows (read leniently: sweep.json's rows are text)."""
    found: dict[str, list[str]] = {key: [] for key in AVERAGES}
    for row in rows:
        task = row.get("task") if isinstance(row, Mapping) else None
        if not isinstance(task, str):
            continue
        keys = ["overall"]
        category = row.get("category")
        if category in ("nlp", "algorithmic"):
            keys.append(f"bbh_{category}")
        elif task == "gsm8k":
            keys.append("gsm8k")
        for key in keys:
            if task not in found[key]:
                found[key].append(task)
    return found


def average_tasks(rows: Sequence[Any]) -> dict[str, dict[str, int | None]]:
    """Per average, how many of the sweep's tasks it covers (``tasks``) and how many the paper's figure for it
    averages (``of``: every task of the BBH category, GSM8K alone; None for all tasks, which has no figure).

    Examples:
        >>> average_tasks([{"task": "bbh:navigate", "category": "algorithmic"}])["bbh_algorithmic"]
        {'tasks': 1, 'of': 15}
    """
    found = _grid_tasks(rows)
    return {
        key: {"tasks": len(found[key]), "of": len(_PAPER_TASKS[key]) if key in _PAPER_TASKS else None}
        for key in AVERAGES
    }


def comparable_figures(rows: Sequence[Any]) -> tuple[str, ...]:
    """The keys of the paper's figures that compare with an average of this sweep: a BBH category's only when
    the sweep holds every task of the category (the set the paper averages), GSM8K's when it holds GSM8K.

    Examples:
        >>> comparable_figures([{"task": "bbh:navigate", "category": "algorithmic"}, {"task": "gsm8k"}])
        ('gsm8k', 'textgrad_gsm8k')
    """
    found = _grid_tasks(rows)
    return tuple(figure for key, names in _PAPER_TASKS.items() if set(found[key]) == names for figure in _FIGURES[key])


def _total(rows: Sequence[Mapping[str, Any]], *path: str) -> float | None:
    """The sum of the finite numbers at `path` in `rows`; None when there are none, or the sum is not finite,
    or it is a count beyond 2**53 (``sweep.json`` would not read back).

    Examples:
        >>> _total([{"cost_usd": 1e308}, {"cost_usd": 1e308}, {"cost_usd": True}], "cost_usd") is None
        True
        >>> _total([{"calls": 2**53}, {"calls": 1}], "calls") is None
        True
    """
    values = []
    for row in rows:
        value: Any = row
        for key in path:
            value = value.get(key) if isinstance(value, Mapping) else None
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            values.append(value)
    total = sum(values) if values else None
    if isinstance(total, int) and total > MAX_COUNT:
        return None
    return total if total is None or math.isfinite(total) else None


def summarize(spec: SweepSpec, rows: Sequence[Mapping[str, Any]]) -> SweepSummary:
    """The content of ``sweep.json``: the spec, one row per run, per-task means, averages and totals."""
    return SweepSummary.from_json(_summary_json(spec, rows))


def _summary_json(spec: SweepSpec, rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """`summarize`'s value as ``sweep.json`` holds it."""
    return {
        "sweep": spec.describe(),
        "backend": spec.backend,
        "simulated": spec.backend == "simulated",
        "runs": [dict(row) for row in rows],
        "by_task": by_task(rows),
        "scored_on": scored_on(rows),
        "averages": averages(rows),
        "averages_unweighted": averages(rows, weighted=False),
        "average_tasks": average_tasks(rows),
        "published": {key: PUBLISHED[key] for key in comparable_figures(rows)},
        "totals": {
            "runs": len(rows),
            "failed": sum(1 for row in rows if row.get("error")),
            "calls": _total(rows, "calls"),
            "tokens": {"input": _total(rows, "tokens", "input"), "output": _total(rows, "tokens", "output")},
            "cost_usd": _total(rows, "cost_usd"),
        },
    }
