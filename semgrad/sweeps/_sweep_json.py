"""``sweep.json`` as a value: a `SweepSummary`, with a `SweepRow` per run.

`summarize` returns a `SweepSummary`; its `to_json` is the file, key for key and in the
same order. A ``sweep.json`` is text anyone who can write the sweep folder can edit, so
`SweepSummary.from_json` checks it once, as `RunSummary.from_json` checks a run's
``results.json``: scores finite numbers from 0 to 1 (or null), counts non-negative
integers, costs finite amounts of at least 0, texts strings, and every container the type
it should be; a field that fails gives one line naming it. A run's ``name`` that is no string is
read as none (it names no run folder: the page always showed it without a link). A field that is missing (an older
file has no ``average_tasks``, a hand-made one may hold only ``sweep`` and ``runs``) takes its
empty value. The page reads the typed fields, never the dictionary.

Examples:
    >>> summary = SweepSummary.from_json({"sweep": {"name": "s"}, "runs": [{"task": "gsm8k", "seed": 0}]})
    >>> summary.name, summary.runs[0].task, summary.runs[0].score("test")
    ('s', 'gsm8k', None)
    >>> SweepSummary.from_json({"runs": [{"accuracy": {"test": 7}}]})
    Traceback (most recent call last):
    ...
    ValueError: runs[0].accuracy.test must be a score from 0 to 1 (or null), got 7
"""

from __future__ import annotations

from typing import Any

import attrs

from ..core import FrozenMap
from ..experiments._results import (
    _array,
    _averages,
    _cost,
    _count,
    _counts,
    _coverage,
    _key,
    _object,
    _shown,
    _text,
    freeze_json,
    thaw_json,
)

__all__ = ["SweepRow", "SweepSummary"]


def _integer(value: Any, where: str) -> int | None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
        raise ValueError(f"{where} must be an integer (or null), got {_shown(value)}")
    return value


def _tokens(value: Any, where: str) -> FrozenMap[str, int | None]:
    """``{"input": count or null, "output": count or null}``: both sides, in that order."""
    tokens = _object(value, where)
    return FrozenMap((side, _count(tokens.get(side), f"{where}.{side}")) for side in ("input", "output"))


def _table(value: Any, where: str) -> FrozenMap[str, FrozenMap[str, float | None]]:
    """Scores by one key, then by another (``by_task``, ``averages``)."""
    return FrozenMap((key, _averages(entry, _key(where, key))) for key, entry in _object(value, where).items())


def _texts(value: Any, where: str) -> FrozenMap[str, str]:
    return FrozenMap((key, _text(v, _key(where, key)) or "") for key, v in _object(value, where).items())


@attrs.frozen
class SweepRow:
    """One run's row of ``sweep.json``: what ran, its scores, calls, tokens, cost, and how it ended."""

    name: str | None = None
    task: str | None = None
    category: str | None = None
    seed: int | None = None
    optimizer: str = ""
    models: str | None = None
    accuracy: FrozenMap[str, float | None] = FrozenMap()
    scored_on: str | None = None
    test_items: int | None = None
    iterations: int | None = None
    calls: int | None = None
    tokens: FrozenMap[str, int | None] = FrozenMap()
    cost_usd: float | None = None
    stopped: str | None = None
    errors: int | None = None
    errors_by_kind: FrozenMap[str, int] | None = None
    error: str | None = None

    def score(self, part: str = "test") -> float | None:
        """The run's score on `part` (train, validation, test, initial_test), None if it has none."""
        score: float | None = self.accuracy.get(part)
        return score

    @property
    def total_tokens(self) -> int | None:
        """Input and output tokens together; None when neither is counted."""
        counted = [n for n in self.tokens.values() if n is not None]
        return sum(counted) if counted else None

    def to_json(self) -> dict[str, Any]:
        """The row as ``sweep.json`` holds it."""
        return {field.name: thaw_json(getattr(self, field.name)) for field in attrs.fields(SweepRow)}

    @classmethod
    def from_json(cls, data: Any, where: str = "run") -> SweepRow:
        """The row `data` read from a ``sweep.json``, checked (`ValueError` names the field)."""
        data = _object(data, where, optional=False)
        kinds = data.get("errors_by_kind")
        return cls(
            # read as the page always read it: a name that is no string names no run folder (and gets no link)
            name=data.get("name") if isinstance(data.get("name"), str) else None,
            task=_text(data.get("task"), f"{where}.task"),
            category=_text(data.get("category"), f"{where}.category"),
            seed=_integer(data.get("seed"), f"{where}.seed"),
            optimizer=_text(data.get("optimizer"), f"{where}.optimizer") or "",
            models=_text(data.get("models"), f"{where}.models"),
            accuracy=_averages(data.get("accuracy"), f"{where}.accuracy"),
            scored_on=_text(data.get("scored_on"), f"{where}.scored_on"),
            test_items=_count(data.get("test_items"), f"{where}.test_items"),
            iterations=_count(data.get("iterations"), f"{where}.iterations"),
            calls=_count(data.get("calls"), f"{where}.calls"),
            tokens=_tokens(data.get("tokens"), f"{where}.tokens"),
            cost_usd=_cost(data.get("cost_usd"), f"{where}.cost_usd"),
            stopped=_text(data.get("stopped"), f"{where}.stopped"),
            errors=_count(data.get("errors"), f"{where}.errors"),
            errors_by_kind=None if kinds is None else _counts(kinds, f"{where}.errors_by_kind"),
            error=_text(data.get("error"), f"{where}.error"),
        )


@attrs.frozen
class SweepTotals:
    """``sweep.json``'s totals: runs, failed runs, calls, tokens and cost over every run."""

    runs: int | None = None
    failed: int = 0
    calls: int | None = None
    tokens: FrozenMap[str, int | None] = FrozenMap()
    cost_usd: float | None = None

    @classmethod
    def from_json(cls, data: Any, where: str = "totals") -> SweepTotals:
        """The totals `data`, checked (`ValueError` names the field)."""
        data = _object(data, where)
        return cls(
            runs=_count(data.get("runs"), f"{where}.runs"),
            failed=_count(data.get("failed"), f"{where}.failed") or 0,
            calls=_count(data.get("calls"), f"{where}.calls"),
            tokens=_tokens(data.get("tokens"), f"{where}.tokens"),
            cost_usd=_cost(data.get("cost_usd"), f"{where}.cost_usd"),
        )


@attrs.frozen
class SweepSummary:
    """A sweep's ``sweep.json``: its spec, a `SweepRow` per run, each task's score per variant, the averages
    (item-weighted and not) with the tasks they cover, the paper's comparable figures, and the totals."""

    sweep: Any = FrozenMap()
    backend: str | None = None
    simulated: bool = False
    runs: tuple[SweepRow, ...] = ()
    by_task: FrozenMap[str, FrozenMap[str, float | None]] = FrozenMap()
    scored_on: FrozenMap[str, str] = FrozenMap()
    averages: FrozenMap[str, FrozenMap[str, float | None]] = FrozenMap()
    averages_unweighted: FrozenMap[str, FrozenMap[str, float | None]] = FrozenMap()
    average_tasks: FrozenMap[str, FrozenMap[str, int | None]] = FrozenMap()
    published: FrozenMap[str, float | None] = FrozenMap()
    totals: SweepTotals = SweepTotals()

    @property
    def name(self) -> str | None:
        """The sweep's name (from its spec)."""
        name = self.sweep.get("name")
        return name if isinstance(name, str) else None

    @property
    def settings(self) -> Any:
        """The settings every run shares (from its spec), as plain JSON."""
        return thaw_json(self.sweep.get("settings") or {})

    def to_json(self) -> dict[str, Any]:
        """The summary as ``sweep.json`` holds it."""
        data = {field.name: thaw_json(getattr(self, field.name)) for field in attrs.fields(SweepSummary)}
        data["runs"] = [row.to_json() for row in self.runs]
        totals = self.totals
        data["totals"] = {
            "runs": totals.runs,
            "failed": totals.failed,
            "calls": totals.calls,
            "tokens": thaw_json(totals.tokens),
            "cost_usd": totals.cost_usd,
        }
        return data

    @classmethod
    def from_json(cls, data: Any) -> SweepSummary:
        """The ``sweep.json`` `data`, checked once (a `ValueError` of one line names the field)."""
        data = _object(data, "the file", optional=False)
        sweep = _object(data.get("sweep"), "sweep")
        _text(sweep.get("name"), "sweep.name")
        _object(sweep.get("settings"), "sweep.settings")
        runs = _array(data.get("runs"), "runs")
        return cls(
            sweep=freeze_json(sweep),
            backend=_text(data.get("backend"), "backend"),
            simulated=data.get("simulated") is True,
            runs=tuple(SweepRow.from_json(row, f"runs[{i}]") for i, row in enumerate(runs)),
            by_task=_table(data.get("by_task"), "by_task"),
            scored_on=_texts(data.get("scored_on"), "scored_on"),
            averages=_table(data.get("averages"), "averages"),
            averages_unweighted=_table(data.get("averages_unweighted"), "averages_unweighted"),
            average_tasks=_coverage(data.get("average_tasks"), "average_tasks"),
            published=_averages(data.get("published"), "published"),
            totals=SweepTotals.from_json(data.get("totals")),
        )
