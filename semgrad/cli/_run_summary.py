"""What ``semgrad run`` prints when the run ends: each task's scores, the averages, where the files are, and a
stop for a spent budget (with its exit code).

It reads the run's `RunSummary` (and each `TaskResult`) by their fields; a summary given as ``results.json``'s
dictionary is read into one first.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._terminal import EXIT_BUDGET, score_text

if TYPE_CHECKING:
    from ..experiments import RunSummary, TaskResult

__all__ = ["exit_code", "print_summary"]


def _typed(summary: RunSummary | Mapping[str, Any]) -> RunSummary:
    """`summary` as a `RunSummary` (a dictionary in ``results.json``'s form is read, and checked, into one)."""
    if isinstance(summary, Mapping):
        from ..experiments import RunSummary

        return RunSummary.from_json(summary)
    return summary


def print_summary(summary: RunSummary | Mapping[str, Any], out: Path) -> None:
    """Print each task's scores, the averages over several tasks, and the files written."""
    summary = _typed(summary)
    for task in summary.tasks:
        print(_task_line(task))
    if len(summary.tasks) > 1 or summary.unscored_tasks:
        _print_averages(summary)
    batch_calls = summary.counters.get("batch_calls", 0) if isinstance(summary.counters, Mapping) else 0
    if batch_calls:
        print(f"{batch_calls} of the calls went as provider batches (--batch), priced at half")
    print(f"Wrote {out / 'results.json'}" + (f" and {out / 'report.html'}" if (out / "report.html").exists() else ""))


def exit_code(summary: RunSummary | Mapping[str, Any], out: Path) -> int:
    """0, or `EXIT_BUDGET` (said on stderr with how to go on) when the run stopped on its budget."""
    summary = _typed(summary)
    if summary.stopped == "budget":
        print(
            f"semgrad: stopped: {summary.stopped_detail}; what the run has is in {out} "
            "-- raise --max-calls / --max-tokens and pass --resume to go on",
            file=sys.stderr,
        )
        return EXIT_BUDGET
    return 0


def _task_line(task: TaskResult) -> str:
    """A task's scores on each split, and what the reader must know beside them."""
    scores = ", ".join(f"{part} {score_text(task.score(part))}" for part in ("train", "validation", "test"))
    return (
        f"{task.task}: {scores} (initial test {score_text(task.score('initial_test'))})"
        + _errors_text(task)
        + _unanswered_text(task)
        + _carried_text(task)
    )


def _print_averages(summary: RunSummary) -> None:
    both = (("item-weighted", summary.averages), ("unweighted", summary.averages_unweighted))
    for name, values in both:
        shown = ", ".join(
            f"{group} {score_text(v)} ({_covers(summary, group)})" for group, v in values.items() if v is not None
        )
        print(f"averages over tasks ({name}): {shown or 'none'}")
    unscored = summary.unscored_tasks
    if unscored:
        listed = ", ".join(unscored[:3]) + (", ..." if len(unscored) > 3 else "")
        print(f"no average for a group with a task that has no test score: {len(unscored)} such ({listed})")


def _covers(summary: RunSummary, group: str) -> str:
    """How many tasks a group's average covers, and of how many the paper's figure for the group averages.

    A BBH category's average over some of its tasks is not the paper's average over all of them: the line says so.
    """
    tasks, of = summary.coverage(group)
    noun = "task" if tasks == 1 and of is None else "tasks"
    return f"over {tasks} {noun}" if of is None else f"over {tasks} of {of} tasks"


def _errors_text(task: TaskResult) -> str:
    if not task.errors:
        return ""
    kinds = ", ".join(f"{k} {n}" for k, n in sorted(task.errors_by_kind.items(), key=lambda kv: -kv[1]))
    return f"; {task.errors} calls without a reply ({kinds})"


def _carried_text(task: TaskResult) -> str:
    """Which scores an earlier process of a resumed run computed (read back from its ledger.json)."""
    carried = [str(split).replace("_", " ") for split in task.carried_over]
    return f"; {', '.join(carried)} scored by an earlier process of this run" if carried else ""


def _unanswered_text(task: TaskResult) -> str:
    """How many test samples got no answer at all: a score of 0 from unreadable replies is not a wrong answer."""
    predictions = task.predictions
    missing = sum(1 for p in predictions if isinstance(p, Mapping) and p.get("output") is None)
    if not missing:
        return ""
    return (
        f"; {missing} of {len(predictions)} test samples have no answer "
        "(unreadable or failed replies: each sample's errors are in results.json)"
    )
