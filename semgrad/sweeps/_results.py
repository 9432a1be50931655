"""What a sweep reads back from a run's ``results.json``, checked before any of it is used.

The file is untrusted: anyone who can write the run folder can edit it. A sweep
takes from it only what its row shows (scores, counts, tokens, cost, why the run
stopped) and whether the run finished, so those fields are checked here: scores
are finite numbers from 0 to 1, counts non-negative integers, the cost a finite
non-negative number, and every container the type it should be. A file that
fails gets one line naming the field; nothing from it reaches ``sweep.json``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

__all__ = ["MAX_COUNT", "check_run_results"]

#: The largest count (calls, tokens, errors) believed: beyond any real run, and well inside JSON's safe range.
MAX_COUNT = 2**53

_SCORES = ("train", "validation", "test", "initial_test")


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    kinds = ((bool, "a boolean"), (str, "a string"), ((int, float), "a number"), (Mapping, "an object"))
    return next((name for kind, name in kinds if isinstance(value, kind)), "an array")


def _shown(value: Any) -> str:
    text = repr(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else _kind(value)
    return text if len(text) <= 24 else text[:23] + "\u2026"


def _object(value: Any, where: str, *, optional: bool = True) -> Mapping[str, Any]:
    if value is None and optional:
        return {}
    if not isinstance(value, Mapping):
        raise ValueError(f"{where} must be an object, got {_kind(value)}")
    return value


def _score(value: Any, where: str) -> None:
    if value is None:
        return
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not number or not math.isfinite(value) or not 0 <= value <= 1:
        raise ValueError(f"{where} must be a score from 0 to 1 (or null), got {_shown(value)}")


def _count(value: Any, where: str, *, nullable: bool = True) -> None:
    if value is None and nullable:
        return
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_COUNT:
        null = ", or null" if nullable else ""
        raise ValueError(f"{where} must be a count (an integer from 0 to 2**53{null}), got {_shown(value)}")


def _key(where: str, key: str) -> str:
    """`where` and a key of the file's, printable on one line (a key is untrusted text)."""
    if key.isidentifier() and key.isascii() and len(key) <= 40:
        return f"{where}.{key}"
    quoted = json.dumps(key)
    return f"{where}[{quoted}]" if len(quoted) <= 40 else f"{where}[{quoted[:39]}\u2026]"


def _counts(value: Any, where: str) -> None:
    for key, n in _object(value, where).items():
        _count(n, _key(where, key), nullable=False)


def _reason(value: Any, where: str) -> None:
    if value is not None and not isinstance(value, str):
        raise ValueError(f"{where} must be a string (or null), got {_kind(value)}")


def _task(task: Any, where: str) -> None:
    task = _object(task, where, optional=False)
    accuracy = _object(task.get("accuracy"), f"{where}.accuracy", optional=False)
    for part in _SCORES:
        _score(accuracy.get(part), f"{where}.accuracy.{part}")
    iterations = task.get("iterations")
    if iterations is not None and not isinstance(iterations, list):
        raise ValueError(f"{where}.iterations must be an array, got {_kind(iterations)}")
    _reason(task.get("stopped"), f"{where}.stopped")


def check_run_results(results: Any) -> None:
    """Raise `ValueError` (one line naming the field) unless `results` is a run's ``results.json`` a sweep can use.

    Examples:
        >>> check_run_results({"tasks": [{"accuracy": {"test": 0.5}, "iterations": []}], "calls": {"by_purpose": {}}})
        >>> check_run_results({"tasks": [{"accuracy": {"test": float("nan")}}]})
        Traceback (most recent call last):
        ...
        ValueError: tasks[0].accuracy.test must be a score from 0 to 1 (or null), got nan
        >>> check_run_results({"tasks": [{"accuracy": {}}], "calls": {"by_purpose": {"forward": "x"}}})
        Traceback (most recent call last):
        ...
        ValueError: calls.by_purpose.forward must be a count (an integer from 0 to 2**53), got a string
    """
    results = _object(results, "the file", optional=False)
    tasks = results.get("tasks")
    if not isinstance(tasks, list) or not tasks:
        raise ValueError(f"tasks must be a non-empty array, got {_kind(tasks)}")
    for i, task in enumerate(tasks):
        _task(task, f"tasks[{i}]")
    calls = _object(results.get("calls"), "calls")
    _counts(calls.get("by_purpose"), "calls.by_purpose")
    tokens = _object(results.get("tokens"), "tokens")
    for side in ("input", "output"):
        _count(tokens.get(side), f"tokens.{side}")
    cost = results.get("cost_usd")
    if cost is not None and (
        isinstance(cost, bool) or not isinstance(cost, (int, float)) or not math.isfinite(cost) or cost < 0
    ):
        raise ValueError(f"cost_usd must be a finite amount of at least 0 (or null), got {_shown(cost)}")
    _reason(results.get("stopped"), "stopped")
    _reason(results.get("failed"), "failed")
    _count(results.get("errors"), "errors")
    _counts(results.get("errors_by_kind"), "errors_by_kind")
