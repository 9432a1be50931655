"""What a sweep reads back from a run's ``results.json``, checked before any of it is used.

The file is untrusted: anyone who can write the run folder can edit it. It is read
once into a `RunSummary` (`RunSummary.from_json` checks every field a sweep's row
shows: scores are finite numbers from 0 to 1, counts non-negative integers, the
cost a finite non-negative number, and every container the type it should be); a
sweep also needs at least one task. A file that fails gets one line naming the
field; nothing from it reaches ``sweep.json``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..experiments import RunSummary
from ..experiments._results import MAX_COUNT, json_kind

__all__ = ["MAX_COUNT", "check_run_results"]


def check_run_results(results: Any) -> RunSummary:
    """`results` as a `RunSummary`, or `ValueError` (one line naming the field) unless it is a run's
    ``results.json`` a sweep can use.

    Examples:
        >>> summary = check_run_results({"tasks": [{"accuracy": {"test": 0.5}, "iterations": []}]})
        >>> summary.tasks[0].accuracy["test"]
        0.5
        >>> check_run_results({"tasks": [{"accuracy": {"test": float("nan")}}]})
        Traceback (most recent call last):
        ...
        ValueError: tasks[0].accuracy.test must be a score from 0 to 1 (or null), got nan
        >>> check_run_results({"tasks": [{"accuracy": {}}], "calls": {"by_purpose": {"forward": "x"}}})
        Traceback (most recent call last):
        ...
        ValueError: calls.by_purpose.forward must be a count (an integer from 0 to 2**53), got a string
    """
    if isinstance(results, Mapping):
        tasks = results.get("tasks")
        if not isinstance(tasks, list) or not tasks:
            raise ValueError(f"tasks must be a non-empty array, got {json_kind(tasks)}")
    return RunSummary.from_json(results)  # "the file must be an object" for anything else
