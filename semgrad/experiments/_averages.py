"""Averages over tasks: item-weighted as the paper reports them, and the plain mean beside them; how many tasks
each covers, and which of the paper's figures measure the same thing."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..tasks import BBH_ALGORITHMIC, BBH_NLP

__all__ = ["average_coverage", "comparable_figures", "task_averages"]

_GROUPS = ("nlp", "algorithmic", "overall")

#: The tasks each of the paper's BBH figures averages: every task of the category.
_PAPER_GROUPS: Mapping[str, frozenset[str]] = {
    "nlp": frozenset(f"bbh:{name}" for name in BBH_NLP),
    "algorithmic": frozenset(f"bbh:{name}" for name in BBH_ALGORITHMIC),
}


def _scored(tasks: Sequence[Mapping[str, Any]], group: str) -> list[Mapping[str, Any]]:
    """The tasks of `group` with a test score: those its averages cover."""
    return [
        t
        for t in tasks
        if (t.get("accuracy") or {}).get("test") is not None and (group == "overall" or t.get("category") == group)
    ]


def task_averages(tasks: Sequence[Mapping[str, Any]]) -> tuple[dict[str, float | None], dict[str, float | None]]:
    """``(item_weighted, unweighted)`` test accuracy by group: ``nlp``, ``algorithmic`` (BBH
    categories) and ``overall`` (every task with a test score).

    The item-weighted average is the accuracy over all test items of the group's tasks
    (each task weighs its number of test items), which is how the paper reports BBH; the
    unweighted one is the mean of the tasks' accuracies. Tasks without a test score are left out.

    Examples:
        >>> a = {"category": "nlp", "accuracy": {"test": 1.0}, "sizes": {"test": 30}}
        >>> b = {"category": "nlp", "accuracy": {"test": 0.0}, "sizes": {"test": 10}}
        >>> weighted, plain = task_averages([a, b])
        >>> weighted["nlp"], plain["nlp"], weighted["algorithmic"]
        (0.75, 0.5, None)
    """
    weighted: dict[str, float | None] = {}
    plain: dict[str, float | None] = {}
    for group in _GROUPS:
        scored = [
            (float(t["accuracy"]["test"]), int((t.get("sizes") or {}).get("test") or 0)) for t in _scored(tasks, group)
        ]
        items = sum(n for _, n in scored)
        weighted[group] = sum(a * n for a, n in scored) / items if items else None
        plain[group] = sum(a for a, _ in scored) / len(scored) if scored else None
    return weighted, plain


def average_coverage(tasks: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, int | None]]:
    """Per group, how many tasks its averages cover (``tasks``: those with a test score) and how many the
    paper's figure for the group averages (``of``: all the BBH category's tasks; None for ``overall``, for
    which the paper gives no figure). Written to ``results.json`` as ``average_tasks``.

    Examples:
        >>> average_coverage([{"task": "bbh:navigate", "category": "algorithmic", "accuracy": {"test": 0.5}}])
        {'nlp': {'tasks': 0, 'of': 12}, 'algorithmic': {'tasks': 1, 'of': 15}, 'overall': {'tasks': 1, 'of': None}}
    """
    return {
        group: {
            "tasks": len(_scored(tasks, group)),
            "of": len(_PAPER_GROUPS[group]) if group in _PAPER_GROUPS else None,
        }
        for group in _GROUPS
    }


def comparable_figures(tasks: Sequence[Mapping[str, Any]]) -> tuple[str, ...]:
    """The keys of the paper's figures (`PUBLISHED`) that measure something this run reports: a BBH category's
    average only when the run's average of that category covers every one of its tasks (the same set the paper
    averages; never one task, nor part of the category), GSM8K's (and TextGrad's) when the run has GSM8K.

    Examples:
        >>> comparable_figures([{"task": "bbh:navigate", "category": "algorithmic", "accuracy": {"test": 0.5}}])
        ()
        >>> comparable_figures([{"task": "gsm8k", "accuracy": {"test": 0.9}}])
        ('gsm8k', 'textgrad_gsm8k')
    """
    keys = [
        f"bbh_{group}"
        for group, names in _PAPER_GROUPS.items()
        if {t.get("task") for t in _scored(tasks, group)} == names
    ]
    if any(t.get("task") == "gsm8k" for t in tasks):
        keys += ["gsm8k", "textgrad_gsm8k"]
    return tuple(keys)
