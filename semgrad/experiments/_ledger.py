"""The run ledger: what each task spent and evaluated, kept across the processes of a resumed run.

``ledger.json`` in a run directory holds, per task, the call counters of every
process so far (`semgrad.experiments._run_stack.empty_counters`) and the score of
each evaluation split already done, with a digest of the params it scored and
the items it scored them on (and, for the test split, its per-sample predictions,
so a resumed run reports them; the score must be their mean).
`fit`'s checkpoint makes training resumable; the ledger does the same for the
final evaluation (a resumed run repeats no split it finished, unless the
params changed) and keeps ``results.json``'s counts cumulative. The calls a
process finished after its last write are not lost when it is killed: the
ledger records how many lines of the run's journal (``journal.jsonl``, see
`semgrad.experiments._journal`) its counts hold, and a resumed run adds the
lines past that mark (`Ledger.absorb`); only calls in flight at the kill go
uncounted.

With ``--batch`` it also keeps every provider batch the run created (``batches``: provider, id and the
ids of its lines), written the moment the batch exists: a killed process's batches are picked up by the
resumed one (`semgrad.effects._batching.batched`'s ``known``), never paid for again.

It is written with `semgrad.effects._checkpoint.write_checkpoint` (atomically)
and read with its decoder; then every field is checked, and anything
unexpected is refused with one line naming the file.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..core import Example, Params
from ..effects import CheckpointError
from ..effects._batching import BatchRecord
from ..effects._checkpoint import encode, read_checkpoint, write_checkpoint
from ._run_stack import add_counters, counters_of, empty_counters

__all__ = ["Ledger", "params_digest"]

SPLITS = ("train", "validation", "test", "initial_test")
#: The most batches a ledger may name (a run makes a few per evaluation split and level).
MAX_BATCHES = 100_000


def params_digest(params: Params, examples: Sequence[Example] = ()) -> str:
    """A short digest of params' texts and the items they are scored on: an evaluation is reused only
    for the same params on the same items (a changed data file is scored again).

    Examples:
        >>> from semgrad.core import GraphBuilder
        >>> b = GraphBuilder(); q = b.input("q"); _ = b.llm("a", inputs=[q], instruction="Solve.")
        >>> _, params = b.build(output="a")
        >>> len(params_digest(params)), params_digest(params) == params_digest(params, [Example({"q": "1"}, "1")])
        (16, False)
    """
    items = [[sorted((str(k), repr(v)) for k, v in e.inputs.items()), repr(e.target), repr(e.id)] for e in examples]
    blob = json.dumps([sorted(params.texts().items()), items] if items else sorted(params.texts().items()))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]


def _is_count(value: Any) -> bool:
    return type(value) is int and value >= 0


#: The counters' key sets a ledger holds that was written before tool calls, batch calls or cached tokens were kept
#: (any of them), or before all three and hits and tokens by model (a ledger written then still loads).
_TOOL_KEYS = frozenset({"tool_calls", "tool_errors"})
_BATCH_KEYS = frozenset({"batch_calls", "batch_tokens_by_model"})
_CACHE_KEYS = frozenset({"prompt_cache_by_model"})
_KEY_SETS = tuple(
    frozenset(empty_counters()) - frozenset().union(*dropped)
    for n in range(4)
    for dropped in itertools.combinations((_TOOL_KEYS, _BATCH_KEYS, _CACHE_KEYS), n)
) + (frozenset(empty_counters()) - _TOOL_KEYS - _BATCH_KEYS - _CACHE_KEYS - {"hits", "tokens_by_model"},)
_COUNTS = ("calls", "errors", "input_tokens", "output_tokens", "batch_calls", "tool_calls", "tool_errors")


def _check_counters(value: Any) -> bool:
    if not isinstance(value, dict) or frozenset(value) not in _KEY_SETS:
        return False
    if not all(_is_count(value.get(k, 0)) for k in _COUNTS):
        return False
    for key in ("calls_by_purpose", "calls_by_engine", "errors_by_kind", "hits"):
        inner = value.get(key, {})
        if not isinstance(inner, dict) or not all(isinstance(k, str) and _is_count(v) for k, v in inner.items()):
            return False
    for key in ("tokens_by_engine", "tokens_by_model", "batch_tokens_by_model", "prompt_cache_by_model"):
        tokens = value.get(key, {})
        if not (
            isinstance(tokens, dict)
            and all(
                isinstance(k, str) and isinstance(v, list) and len(v) == 2 and all(map(_is_count, v))
                for k, v in tokens.items()
            )
        ):
            return False
    return True


def _complete(counters: Mapping[str, Any]) -> dict[str, Any]:
    """Counters with every key (an older ledger's lack hits and tokens by model)."""
    return {**empty_counters(), **counters}


def _is_plain(value: Any) -> bool:
    return value is None or type(value) in (str, int, float, bool)


def _is_plain_map(value: Any) -> bool:
    return isinstance(value, dict) and all(isinstance(k, str) and _is_plain(x) for k, x in value.items())


#: The fields of a prediction (`semgrad.experiments._predictions.predictions_json`), and their checks.
_PREDICTION_FIELDS = {
    "sample": _is_plain,
    "inputs": _is_plain_map,
    "output": _is_plain,
    "nodes": _is_plain_map,
    "target": _is_plain,
    "answer": _is_plain,
    "correct": lambda v: type(v) is bool,
    "score": lambda v: type(v) in (int, float) and math.isfinite(v),
    "errors": lambda v: isinstance(v, list) and all(isinstance(e, str) for e in v),
}


def _check_predictions(value: Any) -> bool:
    return isinstance(value, list) and all(
        isinstance(entry, dict)
        and set(entry) <= set(_PREDICTION_FIELDS)
        and all(_PREDICTION_FIELDS[k](v) for k, v in entry.items())
        for entry in value
    )


def _check_split(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and set(value) in ({"params", "score"}, {"params", "score", "predictions"})
        and isinstance(value["params"], str)
        and type(value["score"]) in (int, float)
        and math.isfinite(value["score"])
        and 0 <= value["score"] <= 1
        and ("predictions" not in value or _check_predictions(value["predictions"]))
        and ("predictions" not in value or _score_is_their_mean(value["score"], value["predictions"]))
    )


def _score_is_their_mean(score: float, predictions: list[dict[str, Any]]) -> bool:
    """A split's score is the mean of its predictions' (when it kept them): one changed alone is refused."""
    if not predictions:
        return True
    if not all("score" in p for p in predictions):
        return False
    return math.isclose(score, math.fsum(p["score"] for p in predictions) / len(predictions), abs_tol=1e-9)


def _check_task(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and set(value) == {"counters", "evaluation"}
        and _check_counters(value["counters"])
        and isinstance(value["evaluation"], dict)
        and all(k in SPLITS and _check_split(v) for k, v in value["evaluation"].items())
    )


class Ledger:
    """A run directory's ``ledger.json``, in memory; `save` writes it.

    Examples:
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as d:
        ...     ledger = Ledger(Path(d))
        ...     ledger.add("gsm8k", {**empty_counters(), "calls": 3})
        ...     ledger.save()
        ...     Ledger.load(Path(d)).counters("gsm8k")["calls"]
        3
    """

    FILE = "ledger.json"

    def __init__(self, run_dir: Path, data: Mapping[str, Any] | None = None) -> None:
        self.path = run_dir / self.FILE
        self.preflight: dict[str, Any] = _complete((data or {}).get("preflight") or empty_counters())
        self.tasks: dict[str, dict[str, Any]] = {
            k: {**v, "counters": _complete(v["counters"])} for k, v in ((data or {}).get("tasks") or {}).items()
        }
        #: Lines of the run's journal whose calls these counters hold (the calls past it: see `absorb`).
        self.journal: int = int((data or {}).get("journal", 0))
        #: The provider batches the run created (`BatchRecord.to_json`'s form), oldest first.
        self.batches: list[dict[str, Any]] = list((data or {}).get("batches") or [])
        self.journal_source: Any = None  # the run's `Journal`: `save` records its lines
        # Each task's entry in `encode`'s form, as last saved; a task that changed since is left out. A run
        # saves after every iteration and split, and a task's predictions are most of the file: encoding
        # every task at every save made a run of all 27 BBH tasks spend minutes in `save`.
        self._encoded: dict[str, Any] = {}

    @classmethod
    def load(cls, run_dir: Path) -> Ledger:
        """The ledger of `run_dir` (an empty one when there is none yet).

        Raises:
            CheckpointError: The file is damaged or holds something unexpected.
        """
        path = run_dir / cls.FILE
        if not path.exists():
            return cls(run_dir)
        content = read_checkpoint(path)
        data = content.get("ledger")
        ok = (
            isinstance(data, dict)
            and {"preflight", "tasks"} <= set(data) <= {"preflight", "tasks", "journal", "batches"}
            and _is_count(data.get("journal", 0))
            and isinstance(data.get("batches", []), list)
            and len(data.get("batches", [])) <= MAX_BATCHES
            and all(BatchRecord.from_json(b) is not None for b in data.get("batches", []))
            and _check_counters(data["preflight"])
            and isinstance(data["tasks"], dict)
            and all(isinstance(k, str) and _check_task(v) for k, v in data["tasks"].items())
        )
        if not ok:
            raise CheckpointError(
                f"{path} is not a valid run ledger; remove it to resume without its counts and evaluations"
            )
        return cls(run_dir, data)

    def _task(self, name: str) -> dict[str, Any]:
        self._encoded.pop(name, None)  # the caller may change it
        return self.tasks.setdefault(name, {"counters": empty_counters(), "evaluation": {}})

    def add(self, task: str | None, counters: Mapping[str, Any]) -> None:
        """Add `counters` to a task's (None: to the preflight's)."""
        if task is None:
            self.preflight = add_counters(self.preflight, counters)
        else:
            entry = self._task(task)
            entry["counters"] = add_counters(entry["counters"], counters)

    def absorb(self, journal: Any) -> None:
        """Add the calls `journal` holds past this ledger's mark (a killed process made them after its last
        save) to the counters of the task each names, and take the journal's lines as the new mark."""
        for task, accounts in journal.unledgered(min(self.journal, journal.lines)):
            self.add(task, counters_of(accounts))
        self.journal = journal.lines
        self.journal_source = journal

    def batch_records(self) -> tuple[BatchRecord, ...]:
        """The batches the run created (for the run's stack to pick up)."""
        found = (BatchRecord.from_json(b) for b in self.batches)
        return tuple(record for record in found if record is not None)

    def batch_created(self, record: BatchRecord) -> None:
        """Keep a batch the run just created, and write the ledger now: a kill from here on loses nothing."""
        self.batches.append(record.to_json())
        self.save()

    def counters(self, task: str) -> dict[str, Any]:
        """A task's counters over every process so far."""
        return self._task(task)["counters"]

    def evaluation(self, task: str, split: str, params: Params, examples: Sequence[Example] = ()) -> float | None:
        """The score of `split` for `params` on `examples`, if a process already evaluated it."""
        saved = self._task(task)["evaluation"].get(split)
        return saved["score"] if saved is not None and saved["params"] == params_digest(params, examples) else None

    def evaluated(
        self,
        task: str,
        split: str,
        params: Params,
        score: float,
        predictions: list[dict[str, Any]] | None = None,
        examples: Sequence[Example] = (),
    ) -> None:
        """Record the score of `split` for `params` on `examples`, and its per-sample `predictions` when given."""
        entry: dict[str, Any] = {"params": params_digest(params, examples), "score": score}
        if predictions is not None:
            entry["predictions"] = predictions
        self._task(task)["evaluation"][split] = entry

    def predictions(
        self, task: str, split: str, params: Params, examples: Sequence[Example] = ()
    ) -> list[dict[str, Any]] | None:
        """The per-sample predictions recorded with `split`'s score for `params` on `examples`, if any.

        Examples:
            >>> from semgrad.core import GraphBuilder
            >>> b = GraphBuilder(); q = b.input("q"); _ = b.llm("a", inputs=[q], instruction="Solve.")
            >>> _, params = b.build(output="a")
            >>> ledger = Ledger(Path("unused"))
            >>> ledger.evaluated("t", "test", params, 1.0, [{"sample": 0, "correct": True}])
            >>> ledger.predictions("t", "test", params), ledger.predictions("t", "train", params)
            ([{'sample': 0, 'correct': True}], None)
        """
        saved = self._task(task)["evaluation"].get(split)
        if saved is None or saved["params"] != params_digest(params, examples):
            return None
        return saved.get("predictions")

    def total(self) -> dict[str, Any]:
        """The counters of the whole run: the preflight's and every task's."""
        total = self.preflight
        for entry in self.tasks.values():
            total = add_counters(total, entry["counters"])
        return total

    def save(self) -> None:
        """Write ``ledger.json`` atomically (as `encode` writes the whole ledger; only changed tasks are encoded)."""
        if self.journal_source is not None:
            self.journal = self.journal_source.lines
        for name, entry in self.tasks.items():
            if name not in self._encoded:
                self._encoded[name] = encode(entry)
        tasks = {"$dict": [[name, self._encoded[name]] for name in self.tasks]}
        entries = [["preflight", encode(self.preflight)], ["tasks", tasks], ["journal", self.journal]]
        if self.batches:
            entries.append(["batches", encode(self.batches)])
        ledger = {"$dict": entries}
        write_checkpoint(self.path, {}, encoded={"ledger": ledger})
