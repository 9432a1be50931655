"""A comparison's results as values: `CompareResult` (``compare.json``) and its `MethodResult` per optimizer.

`compare` returns a `CompareResult`; the CLI and the comparison page read its fields instead of
indexing a dictionary. ``compare.json`` keeps its format on disk: `CompareResult.to_json` gives it,
and `CompareResult.from_json` reads one back, checked once the way `RunSummary.from_json` checks
``results.json`` (scores from 0 to 1 or null, counts non-negative integers, amounts finite and at
least 0, names strings); a field that fails gives one line naming it. A field that is missing takes
its empty value.

For the readers of the old dictionary, ``result["methods"][0]["calls"]`` still works: indexing a
`CompareResult` or a `MethodResult` by a key gives that key of `to_json()`.

Examples:
    >>> result = CompareResult.from_json({"task": "t", "methods": [{"optimizer": "tgd", "calls": 9}]})
    >>> result.methods[0].calls, result["methods"][0]["calls"]
    (9, 9)
    >>> CompareResult.from_json({"methods": [{"optimizer": "tgd", "test": 1.5}]})
    Traceback (most recent call last):
    ...
    ValueError: methods[0].test must be a score from 0 to 1 (or null), got 1.5
"""

from __future__ import annotations

from typing import Any

import attrs

from ..core import FrozenMap
from ._results import _array, _cost, _count, _counts, _object, _score, _shown, _text, _View, thaw_json

__all__ = ["CompareResult", "MethodResult"]


def _integer(value: Any, where: str) -> int | None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
        raise ValueError(f"{where} must be an integer (or null), got {_shown(value)}")
    return value


def _flag(value: Any, where: str) -> bool:
    if value is None:
        return False
    if not isinstance(value, bool):
        raise ValueError(f"{where} must be true or false, got {_shown(value)}")
    return value


@attrs.frozen
class MethodResult(_View):
    """One optimizer's row of a comparison: its scores (none on a dry run), its calls, tokens, cost and time,
    and whether its run stopped early.

    Attributes:
        optimizer: The optimizer's name.
        scores: The mean training score at each iteration's start, then the final params'.
        test: The test score of the final params (averaged over the run's tasks).
        initial_test: The test score of the starting params.
        calls: Every call made (the refused ones included); requests answered without a call are `hits`.
        hits: Requests a cache, the run's journal or a memo answered: no call, no cost.
        calls_by_purpose: `calls` by request purpose.
        tokens_by_purpose: Input and output tokens by request purpose.
        input_tokens: Tokens sent.
        output_tokens: Tokens received.
        cost_usd: What the calls cost (0 on the simulated backend; None when unknown).
        wall_s: The run's wall time in seconds (None on a dry run).
        run_dir: The run's folder under the comparison's (None on a dry run).
        stopped: Why the run stopped early ("budget"), else None: its figures are partial.
        stopped_detail: The stop in words.
        refused: Calls counted in `calls` that the run's own budget or stop refused: never sent.
        failed_calls: Calls that failed at the backend after retries (scored as wrong answers).
    """

    optimizer: str = ""
    scores: tuple[float | None, ...] = ()
    test: float | None = None
    initial_test: float | None = None
    calls: int = 0
    hits: int = 0
    calls_by_purpose: FrozenMap[str, int] = FrozenMap()
    tokens_by_purpose: FrozenMap[str, int] = FrozenMap()
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    wall_s: float | None = None
    run_dir: str | None = None
    stopped: str | None = None
    stopped_detail: str | None = None
    refused: int = 0
    failed_calls: int = 0

    def to_json(self) -> dict[str, Any]:
        """The row as ``compare.json`` holds it."""
        return {field.name: thaw_json(getattr(self, field.name)) for field in attrs.fields(MethodResult)}

    @classmethod
    def from_json(cls, data: Any, where: str = "method") -> MethodResult:
        """The row `data` read from a ``compare.json``, checked (`ValueError` names the field)."""
        data = _object(data, where, optional=False)
        scores = _array(data.get("scores"), f"{where}.scores")
        return cls(
            optimizer=_text(data.get("optimizer"), f"{where}.optimizer") or "",
            scores=tuple(_score(s, f"{where}.scores[{i}]") for i, s in enumerate(scores)),
            test=_score(data.get("test"), f"{where}.test"),
            initial_test=_score(data.get("initial_test"), f"{where}.initial_test"),
            calls=_count(data.get("calls"), f"{where}.calls") or 0,
            hits=_count(data.get("hits"), f"{where}.hits") or 0,
            calls_by_purpose=_counts(data.get("calls_by_purpose"), f"{where}.calls_by_purpose"),
            tokens_by_purpose=_counts(data.get("tokens_by_purpose"), f"{where}.tokens_by_purpose"),
            input_tokens=_count(data.get("input_tokens"), f"{where}.input_tokens") or 0,
            output_tokens=_count(data.get("output_tokens"), f"{where}.output_tokens") or 0,
            cost_usd=_cost(data.get("cost_usd"), f"{where}.cost_usd"),
            wall_s=_cost(data.get("wall_s"), f"{where}.wall_s"),
            run_dir=_text(data.get("run_dir"), f"{where}.run_dir"),
            stopped=_text(data.get("stopped"), f"{where}.stopped"),
            stopped_detail=_text(data.get("stopped_detail"), f"{where}.stopped_detail"),
            refused=_count(data.get("refused"), f"{where}.refused") or 0,
            failed_calls=_count(data.get("failed_calls"), f"{where}.failed_calls") or 0,
        )


@attrs.frozen
class CompareResult(_View):
    """A comparison: the settings every optimizer shared, and one `MethodResult` per optimizer, in order.

    Attributes:
        task: The task compared on.
        backend: The backend every run called.
        simulated: Whether that backend is the simulated one (its figures say nothing about real models).
        seed: The seed of the splits and the runs.
        iterations: The optimisation iterations of each run.
        k: The error samples per iteration.
        protocol: The split protocol ("official" or "heldout").
        sizes: The items per split (train, validation, test) over the task's parts.
        dry_run: Whether only the calls were counted (nothing ran).
        token_note: How the tokens were counted, for the page.
        methods: One per optimizer, in the order they were given.
    """

    task: str = ""
    backend: str | None = None
    simulated: bool = False
    seed: int | None = None
    iterations: int | None = None
    k: int | None = None
    protocol: str | None = None
    sizes: FrozenMap[str, int] = FrozenMap()
    dry_run: bool = False
    token_note: str = ""
    methods: tuple[MethodResult, ...] = ()

    def method(self, optimizer: str) -> MethodResult:
        """The row of `optimizer` (`KeyError` when it was not compared)."""
        for found in self.methods:
            if found.optimizer == optimizer:
                return found
        raise KeyError(optimizer)

    def to_json(self) -> dict[str, Any]:
        """The comparison as ``compare.json`` holds it."""
        data = {field.name: thaw_json(getattr(self, field.name)) for field in attrs.fields(CompareResult)}
        data["methods"] = [method.to_json() for method in self.methods]
        return data

    @classmethod
    def from_json(cls, data: Any) -> CompareResult:
        """The ``compare.json`` `data`, checked once (a `ValueError` of one line names the field)."""
        data = _object(data, "the file", optional=False)
        methods = _array(data.get("methods"), "methods")
        return cls(
            task=_text(data.get("task"), "task") or "",
            backend=_text(data.get("backend"), "backend"),
            simulated=_flag(data.get("simulated"), "simulated"),
            seed=_integer(data.get("seed"), "seed"),
            iterations=_count(data.get("iterations"), "iterations"),
            k=_count(data.get("k"), "k"),
            protocol=_text(data.get("protocol"), "protocol"),
            sizes=_counts(data.get("sizes"), "sizes"),
            dry_run=_flag(data.get("dry_run"), "dry_run"),
            token_note=_text(data.get("token_note"), "token_note") or "",
            methods=tuple(MethodResult.from_json(m, f"methods[{i}]") for i, m in enumerate(methods)),
        )
