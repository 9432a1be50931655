"""One run of a sweep, in its own directory: skipped when finished, resumed when interrupted.

`execute_run` is what a Ray task (or a ``--local`` thread) runs. It decides
from the run directory alone what to do, so a retry after a dead worker, a
re-run of the whole sweep and a first run all take the same path:

* no ``config.json``: start the run;
* ``results.json`` complete for the config: skip it (no call is made); a run that
  stopped for its budget is complete unless the spec now gives it another
  ``max_calls`` / ``max_tokens`` (then it is resumed, as the sweep's stop message says);
* otherwise: resume it from its checkpoint (``run_experiment(resume=True)``),
  which repeats none of the calls of the iterations it had finished.

It holds the run directory while it decides and runs (`semgrad._lock`): a second sweep on the same
folder, or a Ray task retried while the first still runs, fails that run with one line naming the
holder's process id, and calls nothing.

It never raises: a run that cannot finish becomes an outcome with an error, so
one bad run does not stop its siblings (Ray retries only dead workers).

What a run directory holds is untrusted, and a run fails (one line naming the
file, nothing written) rather than trust it:

* a run directory that is a symbolic link, or not a folder inside the sweep
  directory, fails its run: the sweep writes nothing there (nor through it);
* a ``results.json`` that is not JSON, or whose scores, counts, tokens, cost or
  shape are not what a run writes (see `check_run_results`: a NaN, a score of
  2, a count that is a string), fails its run instead of being skipped as
  finished, resumed or shown. The run is not re-run over it: resuming could
  spend calls and would overwrite the evidence. Removing the file resumes the
  run from its checkpoint on the next sweep.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Literal

from .._files import read_regular_text
from .._loaded_systems import systems_loaded_once
from .._lock import hold_folder
from ..experiments import RunConfig, RunSummary, TaskResult, build_llm, load_run_tasks, run_experiment
from ..experiments._resume import CONFIG_BYTES
from ..tasks import bbh_category
from ._results import check_run_results
from ._slots import SlotsClient, slotted
from ._spec import PlannedRun, SweepError
from ._sweep_json import SweepRow

__all__ = [
    "Instrument",
    "Outcome",
    "check_run_dir",
    "execute_run",
    "failed_outcome",
    "read_results",
    "run_row",
    "run_status",
]

#: Wraps a run's LLM (before the sweep's call slots): ``instrument(llm, run_name, run_dir) -> llm``.
Instrument = Callable[[Any, str, Path], Any]

#: What `execute_run` returns: ``{"name", "status", "error", "row"}``.
Outcome = dict[str, Any]


def check_run_dir(sweep_dir: Path, run_dir: Path) -> None:
    """Raise `SweepError` unless `run_dir` is a real folder of `sweep_dir` (or does not exist yet).

    Examples:
        >>> import os, pathlib, tempfile
        >>> sweep = pathlib.Path(tempfile.mkdtemp())
        >>> os.symlink(tempfile.gettempdir(), sweep / "run")
        >>> check_run_dir(sweep, sweep / "run")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        semgrad.sweeps._spec.SweepError: .../run is a symbolic link; the sweep writes only into real folders ...
        >>> import shutil; shutil.rmtree(sweep)
    """
    fix = f"remove {run_dir} to run {run_dir.name} again"
    if run_dir.is_symlink():
        raise SweepError(
            f"{run_dir} is a symbolic link; the sweep writes only into real folders inside {sweep_dir}: {fix}"
        )
    if not run_dir.exists():
        return
    if not run_dir.is_dir():
        raise SweepError(f"{run_dir} is not a folder: {fix}")
    if run_dir.resolve() != sweep_dir.resolve() / run_dir.name:
        raise SweepError(f"{run_dir} resolves to {run_dir.resolve()}, outside the sweep directory {sweep_dir}: {fix}")


def _load_results(run_dir: Path) -> RunSummary | None:
    """The run's ``results.json``, checked; None when there is none.

    Raises:
        SweepError: It cannot be read, or it fails `check_run_results` (one line naming the file).
    """
    path = run_dir / "results.json"
    if not path.exists():
        return None
    try:
        data = json.loads(read_regular_text(path, limit=512 * 2**20))  # a FIFO or a device is refused, not read
        summary = check_run_results(data)
    except (OSError, ValueError, RecursionError) as exc:
        raise SweepError(
            f"{path}: {_unreadable(exc)}; the run is not trusted: remove that file to resume it from its checkpoint"
        ) from None
    return summary


def _unreadable(exc: BaseException) -> str:
    if isinstance(exc, json.JSONDecodeError):
        return f"not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
    if isinstance(exc, UnicodeDecodeError):
        return f"not UTF-8 text (byte {exc.start})"
    if isinstance(exc, RecursionError):
        return "not valid JSON (nested too deeply)"
    if isinstance(exc, OSError):
        return f"cannot be read ({exc.strerror or ' '.join(str(exc).split()) or type(exc).__name__})"
    return " ".join(str(exc).split())


def read_results(run_dir: Path) -> RunSummary | None:
    """The run's ``results.json``, or None when it is missing, unreadable or fails `check_run_results`."""
    try:
        return _load_results(run_dir)
    except SweepError:
        return None


def _complete(config: RunConfig, results: RunSummary | None) -> bool:
    if results is None or not results.tasks:
        return False
    return all(len(t.iterations) >= config.iterations or bool(t.stopped) for t in results.tasks)


def run_status(run: PlannedRun, run_dir: Path) -> Literal["new", "finished", "resume"]:
    """What a run directory holds for `run`.

    Raises:
        SweepError: The directory holds a run of another config (or an unreadable one).
    """
    saved = run_dir / "config.json"
    if not saved.exists():
        return "new"
    try:  # a FIFO or a device is refused, not read (it would hang the sweep before it starts)
        before = RunConfig.from_json(json.loads(read_regular_text(saved, limit=CONFIG_BYTES)))
    except (OSError, ValueError, TypeError, RecursionError) as exc:
        raise SweepError(f"cannot read {saved}: {_unreadable(exc)}; remove {run_dir} to start that run again") from None
    changed = run.config.differs_from(before)
    if changed:
        raise SweepError(
            f"{run_dir} holds a run whose config differs in {', '.join(changed)}; "
            "choose another --out or remove that directory"
        )
    results = read_results(run_dir)
    if _budget_changed(run.config, before, results):  # the spec's new budget lets it go on
        return "resume"
    return "finished" if _complete(run.config, results) else "resume"


def _budget_changed(config: RunConfig, before: RunConfig, results: RunSummary | None) -> bool:
    """Whether the run stopped for its budget and the spec now gives it another one (max_calls or max_tokens)."""
    stopped = results is not None and (results.stopped == "budget" or any(t.stopped == "budget" for t in results.tasks))
    return stopped and (config.max_calls, config.max_tokens) != (before.max_calls, before.max_tokens)


def _category(task: str) -> str | None:
    return bbh_category(task.split(":", 1)[1]) if task.startswith("bbh:") else None


def run_row(
    run: PlannedRun, results: RunSummary | Mapping[str, Any] | None, error: str | None = None
) -> dict[str, Any]:
    """One line of the sweep's table: what the run is, and what its ``results.json`` says (a `RunSummary`,
    or the file's JSON, read into one), checked as ``sweep.json`` will read it: a `ValueError` names a field
    that would not read back (calls summed over purposes beyond 2**53, say), and that run alone fails.

    Examples:
        >>> from semgrad.sweeps import parse_spec
        >>> (run,) = parse_spec({"tasks": ["bbh:navigate"], "seeds": [0], "optimizers": ["tgd"]}).runs()
        >>> row = run_row(run, None, "no data")
        >>> row["name"], row["category"], row["accuracy"]["test"], row["error"]
        ('bbh-navigate__seed0__tgd', 'algorithmic', None, 'no data')
    """
    summary = RunSummary.from_json(results) if isinstance(results, Mapping) else results
    first = summary.tasks[0] if summary is not None and summary.tasks else TaskResult()
    size = first.sizes.get("test")
    tokens = summary.tokens if summary is not None else {}
    row = {
        "name": run.name,
        "task": run.config.task,
        "category": _category(run.config.task),
        "seed": run.config.seed,
        "optimizer": run.config.optimizer,
        "models": run.models,
        "accuracy": {part: first.score(part) for part in ("train", "validation", "test", "initial_test")},
        # The part whose accuracy is the task's score: "train" for LIAR under the paper's protocol.
        "scored_on": "train" if first.scored_on == "train" else "test",
        "test_items": size if size else None,  # the weight of its test score
        "iterations": len(first.iterations),
        "calls": summary.total_calls if summary is not None else None,
        "tokens": {"input": tokens.get("input"), "output": tokens.get("output")},
        "cost_usd": summary.cost_usd if summary is not None else None,
        "stopped": summary.stopped if summary is not None else None,
        "errors": summary.errors if summary is not None else None,
        "errors_by_kind": dict(summary.errors_by_kind) if summary is not None else None,
        "error": error,
    }
    SweepRow.from_json(row, "row")
    return row


def _message(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    text = text if len(text) <= 400 else text[:399] + "\u2026"
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def failed_outcome(run: PlannedRun, exc: BaseException | str) -> Outcome:
    """The outcome of a run that could not finish."""
    error = exc if isinstance(exc, str) else _message(exc)
    return {"name": run.name, "status": "failed", "error": error, "row": run_row(run, None, error)}


def execute_run(
    run: PlannedRun, sweep_dir: str, slots: SlotsClient | None = None, instrument: Instrument | None = None
) -> Outcome:
    """Bring `run` to completion in ``sweep_dir/run.name``; never raises.

    Args:
        run: The run.
        sweep_dir: The sweep directory (a string: it crosses process boundaries).
        slots: The sweep's shared call limit (None: no limit).
        instrument: Wraps the run's LLM (logging, fault injection in tests).

    Returns:
        ``{"name", "status", "error", "row"}`` with status "started", "resumed",
        "skipped" or "failed".
    """
    run_dir = Path(sweep_dir) / run.name
    try:
        check_run_dir(Path(sweep_dir), run_dir)  # before the lock: it writes nothing through a symbolic link
        with hold_folder(run_dir):  # one process at a time in it, a Ray worker as much as a thread
            check_run_dir(Path(sweep_dir), run_dir)  # again, now that no other sweep may change it
            _load_results(run_dir)  # a results.json left there is checked before anything is decided from it
            status = run_status(run, run_dir)
            resumed = status == "resume" and any(run_dir.glob("checkpoint*.json"))
            if status != "finished":
                _run(run, run_dir, status == "resume", slots, instrument)
        results = _load_results(run_dir)
        if results is None:
            raise SweepError(f"{run_dir} has no results.json after the run")
        if status == "finished" and results.failed:  # its scores are not to be trusted: never a finished run
            raise SweepError(f"the run failed: {results.failed} (remove {run_dir} to run it again)")
        row = run_row(run, results)
    except Exception as exc:  # one bad run must not stop the sweep
        return failed_outcome(run, exc)
    label = "skipped" if status == "finished" else "resumed" if resumed else "started"
    return {"name": run.name, "status": label, "error": None, "row": row}


def _run(
    run: PlannedRun, run_dir: Path, resume: bool, slots: SlotsClient | None, instrument: Instrument | None
) -> None:
    with systems_loaded_once():  # checked, then run: a system the user typed is loaded once per run
        _run_loaded(run, run_dir, resume, slots, instrument)


def _run_loaded(
    run: PlannedRun, run_dir: Path, resume: bool, slots: SlotsClient | None, instrument: Instrument | None
) -> None:
    llm = build_llm(run.config, load_run_tasks(run.config))
    if instrument is not None:
        llm = instrument(llm, run.name, run_dir)
    key = run.config.backend
    if slots is None or not slots.limited(key):
        run_experiment(run.config, run_dir, resume=resume, llm=llm)
        return
    with slots.attempt(run.name) as attempt:
        run_experiment(
            run.config, run_dir, resume=resume, llm=slotted(llm, slots, key=key, run=run.name, attempt=attempt)
        )
