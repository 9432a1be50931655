"""Averages over tasks: item-weighted as the paper reports them, and the plain mean beside them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["task_averages"]

_GROUPS = ("nlp", "algorithmic", "overall")


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
            (float(t["accuracy"]["test"]), int((t.get("sizes") or {}).get("test") or 0))
            for t in tasks
            if (t.get("accuracy") or {}).get("test") is not None and (group == "overall" or t.get("category") == group)
        ]
        items = sum(n for _, n in scored)
        weighted[group] = sum(a * n for a, n in scored) / items if items else None
        plain[group] = sum(a for a, _ in scored) / len(scored) if scored else None
    return weighted, plain
