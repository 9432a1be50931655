"""A run's results as values: `RunSummary` (``results.json``) and its `TaskResult` per task.

``results.json`` keeps its format on disk; these are its typed form. `run_experiment` returns
a `RunSummary`; compare, the CLI and a sweep read its fields instead of re-reading a 20-key
dictionary each their own way.

A ``results.json`` arrives with a run folder: anyone who can write the folder can edit it. So
`RunSummary.from_json` is the one place it is checked, once, before any of it is used: scores are
finite numbers from 0 to 1 (or null), counts non-negative integers up to 2**53, the cost a finite
amount of at least 0, reasons strings, and every container the type it should be; a field that
fails gives one line naming it (``tasks[0].accuracy.test must be a score ...``). A field that is
missing takes its empty value (a task's ``accuracy`` excepted), and a task's ``scored_on`` that is no
string is read as none (the test split), as a sweep always read it. Parts a run records for the
report alone (each iteration's record, the graph, the params, the predictions) are kept as frozen
JSON, read by the report leniently.

For the readers of the old dictionary, `summary["tasks"][0]["accuracy"]` still works: indexing a
`RunSummary` or a `TaskResult` by a key gives that key of `to_json()`.

Examples:
    >>> summary = RunSummary.from_json({"task": "t", "tasks": [{"task": "t", "accuracy": {"test": 0.5}}]})
    >>> summary.tasks[0].accuracy["test"], summary["tasks"][0]["accuracy"]["test"]
    (0.5, 0.5)
    >>> RunSummary.from_json({"tasks": [{"accuracy": {"test": 2}}]})
    Traceback (most recent call last):
    ...
    ValueError: tasks[0].accuracy.test must be a score from 0 to 1 (or null), got 2
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

import attrs

from ..core import FrozenMap

__all__ = ["MAX_COUNT", "RunSummary", "TaskResult", "freeze_json", "json_kind", "thaw_json"]

#: The largest count (calls, tokens, errors) believed: beyond any real run, and well inside JSON's safe range.
MAX_COUNT = 2**53

#: The parts a task is scored on, in the order results.json gives them.
SCORED_PARTS = ("train", "validation", "test", "initial_test")


def freeze_json(value: Any) -> Any:
    """A JSON value with its objects as `FrozenMap` (in their order) and its arrays as tuples.

    Examples:
        >>> freeze_json({"a": [1, {"b": None}]})
        FrozenMap({'a': (1, FrozenMap({'b': None}))})
    """
    if isinstance(value, Mapping):
        return FrozenMap((str(k), freeze_json(v)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return tuple(freeze_json(v) for v in value)
    return value


def thaw_json(value: Any) -> Any:
    """`freeze_json` undone: objects as dicts, arrays as lists.

    Examples:
        >>> thaw_json(freeze_json({"a": [1, {"b": None}]}))
        {'a': [1, {'b': None}]}
    """
    if isinstance(value, Mapping):
        return {k: thaw_json(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return [thaw_json(v) for v in value]
    return value


# --- the checks, each naming the field ------------------------------------------------------


def json_kind(value: Any) -> str:
    """What JSON kind `value` is, for a message ("a string", "an object", "null")."""
    if value is None:
        return "null"
    kinds = ((bool, "a boolean"), (str, "a string"), ((int, float), "a number"), (Mapping, "an object"))
    return next((name for kind, name in kinds if isinstance(value, kind)), "an array")


def _shown(value: Any) -> str:
    text = repr(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else json_kind(value)
    return text if len(text) <= 24 else text[:23] + "\u2026"


def _key(where: str, key: str) -> str:
    """`where` and a key of the file's, printable on one line (a key is untrusted text)."""
    if key.isidentifier() and key.isascii() and len(key) <= 40:
        return f"{where}.{key}"
    quoted = json.dumps(key)
    return f"{where}[{quoted}]" if len(quoted) <= 40 else f"{where}[{quoted[:39]}\u2026]"


def _object(value: Any, where: str, *, optional: bool = True) -> Mapping[str, Any]:
    if value is None and optional:
        return {}
    if not isinstance(value, Mapping):
        raise ValueError(f"{where} must be an object, got {json_kind(value)}")
    return value


def _array(value: Any, where: str) -> tuple[Any, ...]:
    if value is None:
        return ()
    if not isinstance(value, (list, tuple)):
        raise ValueError(f"{where} must be an array, got {json_kind(value)}")
    return tuple(value)


def _score(value: Any, where: str) -> float | None:
    if value is None:
        return None
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not number or not math.isfinite(value) or not 0 <= value <= 1:
        raise ValueError(f"{where} must be a score from 0 to 1 (or null), got {_shown(value)}")
    return value  # type: ignore[no-any-return]


def _count(value: Any, where: str, *, nullable: bool = True) -> Any:
    if value is None and nullable:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_COUNT:
        null = ", or null" if nullable else ""
        raise ValueError(f"{where} must be a count (an integer from 0 to 2**53{null}), got {_shown(value)}")
    return value


def _counts(value: Any, where: str) -> FrozenMap[str, int]:
    return FrozenMap((key, _count(n, _key(where, key), nullable=False)) for key, n in _object(value, where).items())


def _text(value: Any, where: str) -> str | None:
    if value is not None and not isinstance(value, str):
        raise ValueError(f"{where} must be a string (or null), got {json_kind(value)}")
    return value


def _cost(value: Any, where: str) -> float | None:
    if value is not None and (
        isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0
    ):
        raise ValueError(f"{where} must be a finite amount of at least 0 (or null), got {_shown(value)}")
    return value


def _scores(value: Any, where: str) -> FrozenMap[str, float | None]:
    scores = _object(value, where, optional=False)
    for part in SCORED_PARTS:
        _score(scores.get(part), f"{where}.{part}")
    return FrozenMap((key, _score(v, _key(where, key))) for key, v in scores.items())


def _averages(value: Any, where: str) -> FrozenMap[str, float | None]:
    return FrozenMap((key, _score(v, _key(where, key))) for key, v in _object(value, where).items())


def _coverage(value: Any, where: str) -> FrozenMap[str, FrozenMap[str, int | None]]:
    """``average_tasks``: per group, ``{"tasks": count, "of": count or null}``."""
    return FrozenMap(
        (
            key,
            FrozenMap(
                (part, _count(n, _key(_key(where, key), part)))
                for part, n in _object(entry, _key(where, key), optional=False).items()
            ),
        )
        for key, entry in _object(value, where).items()
    )


class _View:
    """Indexing by a key of `to_json()`, for readers of the dictionary a run returned before."""

    def to_json(self) -> dict[str, Any]:
        raise NotImplementedError

    def __getitem__(self, key: str) -> Any:
        return self.to_json()[key]

    def get(self, key: str, default: Any = None) -> Any:
        """`to_json().get(key, default)`."""
        return self.to_json().get(key, default)

    def keys(self) -> Any:
        """The keys of `to_json()`."""
        return self.to_json().keys()


@attrs.frozen
class TaskResult(_View):
    """One task's entry of ``results.json``: its splits, scores, iterations, params and graph."""

    task: str = ""
    category: str | None = None
    sizes: FrozenMap[str, int] = FrozenMap()
    protocol: str | None = None
    scored_on: str | None = None
    metric: str | None = None
    initial_score: float | None = None
    best_score: float | None = None
    stopped: str | None = None
    iterations: tuple[Any, ...] = ()
    accuracy: FrozenMap[str, float | None] = FrozenMap()
    carried_over: tuple[str, ...] = ()
    errors: int = 0
    errors_by_kind: FrozenMap[str, int] = FrozenMap()
    params: Any = FrozenMap()
    graph: Any = FrozenMap()
    published: Any = None
    predictions: tuple[Any, ...] = ()
    predictions_split: str = "test"

    def score(self, part: str = "test") -> float | None:
        """The score on `part` (train, validation, test, initial_test), None if it has none."""
        score: float | None = self.accuracy.get(part)
        return score

    def to_json(self) -> dict[str, Any]:
        """The entry as ``results.json`` holds it."""
        return {field.name: thaw_json(getattr(self, field.name)) for field in attrs.fields(TaskResult)}

    @classmethod
    def from_json(cls, data: Any, where: str = "task") -> TaskResult:
        """The entry `data` read from a ``results.json``, checked (`ValueError` names the field)."""
        data = _object(data, where, optional=False)
        return cls(
            task=_text(data.get("task"), f"{where}.task") or "",
            category=_text(data.get("category"), f"{where}.category"),
            sizes=_counts(data.get("sizes"), f"{where}.sizes"),
            protocol=_text(data.get("protocol"), f"{where}.protocol"),
            # read as the sweep always read it: anything but the string "train" means the test split
            scored_on=data.get("scored_on") if isinstance(data.get("scored_on"), str) else None,
            metric=_text(data.get("metric"), f"{where}.metric"),
            initial_score=_score(data.get("initial_score"), f"{where}.initial_score"),
            best_score=_score(data.get("best_score"), f"{where}.best_score"),
            stopped=_text(data.get("stopped"), f"{where}.stopped"),
            iterations=freeze_json(_array(data.get("iterations"), f"{where}.iterations")),
            accuracy=_scores(data.get("accuracy"), f"{where}.accuracy"),
            carried_over=tuple(
                _text(s, f"{where}.carried_over[{i}]") or ""
                for i, s in enumerate(_array(data.get("carried_over"), f"{where}.carried_over"))
            ),
            errors=_count(data.get("errors"), f"{where}.errors") or 0,
            errors_by_kind=_counts(data.get("errors_by_kind"), f"{where}.errors_by_kind"),
            params=freeze_json(data.get("params") or {}),
            graph=freeze_json(data.get("graph") or {}),
            published=freeze_json(data.get("published")),
            predictions=freeze_json(_array(data.get("predictions"), f"{where}.predictions")),
            predictions_split=_text(data.get("predictions_split"), f"{where}.predictions_split") or "test",
        )


@attrs.frozen
class RunSummary(_View):
    """A run's ``results.json``: what ran, each task's `TaskResult`, averages, calls, tokens, cost, and
    whether (and why) it stopped or failed."""

    semgrad_version: str | None = None
    task: str = ""
    backend: str | None = None
    optimizer: str | None = None
    seed: int | None = None
    simulated: bool = False
    tasks: tuple[TaskResult, ...] = ()
    averages: FrozenMap[str, float | None] = FrozenMap()
    averages_unweighted: FrozenMap[str, float | None] = FrozenMap()
    unscored_tasks: tuple[str, ...] = ()
    average_tasks: FrozenMap[str, FrozenMap[str, int | None]] = FrozenMap()
    published: FrozenMap[str, float] = FrozenMap()
    calls: Any = FrozenMap()
    tokens: Any = FrozenMap()
    cost_usd: float | None = None
    errors: int | None = None
    errors_by_kind: FrozenMap[str, int] = FrozenMap()
    counters: Any = FrozenMap()
    stopped: str | None = None
    stopped_detail: str | None = None
    failed: str | None = None

    @property
    def calls_by_purpose(self) -> FrozenMap[str, int]:
        """Calls per purpose."""
        found: FrozenMap[str, int] = self.calls.get("by_purpose") or FrozenMap()
        return found

    @property
    def total_calls(self) -> int:
        """All calls."""
        return sum(self.calls_by_purpose.values())

    def coverage(self, group: str) -> tuple[int, int | None]:
        """How many tasks the averages of `group` cover, and how many the paper's figure for it averages (None
        if it has none, or the file is older than ``average_tasks``: then the tasks are counted here)."""
        entry = self.average_tasks.get(group) or FrozenMap()
        tasks, of = entry.get("tasks"), entry.get("of")
        if tasks is None:
            tasks = sum(
                1 for t in self.tasks if t.score("test") is not None and (group == "overall" or t.category == group)
            )
        return tasks, of

    def to_json(self) -> dict[str, Any]:
        """The summary as ``results.json`` holds it."""
        data = {field.name: thaw_json(getattr(self, field.name)) for field in attrs.fields(RunSummary)}
        data["tasks"] = [task.to_json() for task in self.tasks]
        return data

    @classmethod
    def from_json(cls, data: Any) -> RunSummary:
        """The ``results.json`` `data`, checked once (a `ValueError` of one line names the field)."""
        data = _object(data, "the file", optional=False)
        tasks = data.get("tasks")
        if not isinstance(tasks, (list, tuple)):
            raise ValueError(f"tasks must be an array, got {json_kind(tasks)}")
        read = tuple(TaskResult.from_json(task, f"tasks[{i}]") for i, task in enumerate(tasks))
        calls = _object(data.get("calls"), "calls")
        tokens = _object(data.get("tokens"), "tokens")
        counted = {**calls, "by_purpose": _counts(calls.get("by_purpose"), "calls.by_purpose")} if calls else {}
        for side in ("input", "output"):
            _count(tokens.get(side), f"tokens.{side}")
        seed = data.get("seed")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
            raise ValueError(f"seed must be an integer (or null), got {_shown(seed)}")
        return cls(
            semgrad_version=_text(data.get("semgrad_version"), "semgrad_version"),
            task=_text(data.get("task"), "task") or "",
            backend=_text(data.get("backend"), "backend"),
            optimizer=_text(data.get("optimizer"), "optimizer"),
            seed=seed,
            simulated=data.get("simulated") is True,
            tasks=read,
            averages=_averages(data.get("averages"), "averages"),
            averages_unweighted=_averages(data.get("averages_unweighted"), "averages_unweighted"),
            unscored_tasks=tuple(str(t) for t in _array(data.get("unscored_tasks"), "unscored_tasks")),
            average_tasks=_coverage(data.get("average_tasks"), "average_tasks"),
            published=freeze_json(_object(data.get("published"), "published")),
            calls=freeze_json(counted),
            tokens=freeze_json(tokens),
            cost_usd=_cost(data.get("cost_usd"), "cost_usd"),
            errors=_count(data.get("errors"), "errors"),
            errors_by_kind=_counts(data.get("errors_by_kind"), "errors_by_kind"),
            counters=freeze_json(_object(data.get("counters"), "counters")),
            stopped=_text(data.get("stopped"), "stopped"),
            stopped_detail=_text(data.get("stopped_detail"), "stopped_detail"),
            failed=_text(data.get("failed"), "failed"),
        )
