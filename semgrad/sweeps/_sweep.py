"""`run_sweep`: check a sweep, run it on Ray (or in this process), write the combined report."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import attrs

from .._lock import hold_folder
from ..experiments import RunSummary, SetupError, build_llm, load_run_tasks, make_optimizer
from ..tasks import DataError
from ._execute import Instrument, Outcome, check_run_dir, read_results, run_status
from ._page import write_sweep_report
from ._spec import PlannedRun, SweepError, SweepSpec, load_spec
from ._summary import summarize

__all__ = ["RunOutcome", "SweepResult", "check_sweep", "run_sweep"]


@attrs.frozen
class RunOutcome:
    """How one run of a sweep ended.

    Attributes:
        name: The run directory's name.
        status: "started" (ran from scratch), "resumed" (continued from its
            checkpoint), "skipped" (already finished) or "failed".
        error: Why it failed (one line), else None.
        test: Its test accuracy, when known.
        calls: The calls it made (over all its processes, when it was resumed), when known.
        stopped: Why it stopped early ("budget": its max_calls / max_tokens was spent), else None.
        errors: Its calls that got no reply (after retries), when known.
    """

    name: str
    status: str
    error: str | None = None
    test: float | None = None
    calls: int | None = None
    stopped: str | None = None
    errors: int | None = None

    @classmethod
    def of(cls, outcome: Outcome) -> RunOutcome:
        """From what `execute_run` returned."""
        row = outcome["row"]
        return cls(
            outcome["name"],
            outcome["status"],
            outcome["error"],
            row["accuracy"]["test"],
            row["calls"],
            row.get("stopped"),
            row.get("errors"),
        )


@attrs.frozen
class SweepResult:
    """What a sweep did, and where its combined report is.

    Attributes:
        directory: The sweep directory (one run directory per run, plus
            ``sweep.json`` and ``sweep.html``).
        outcomes: One per run, in the grid's order.
    """

    directory: Path
    outcomes: tuple[RunOutcome, ...]

    @property
    def failed(self) -> tuple[RunOutcome, ...]:
        """The runs that did not finish."""
        return tuple(o for o in self.outcomes if o.status == "failed")

    def summary(self, run: RunOutcome | str) -> RunSummary | None:
        """The `RunSummary` of `run` (an outcome, or its name), read from its ``results.json`` and checked; None
        when the run has none, or one that cannot be read or fails the checks (a failed run)."""
        name = run.name if isinstance(run, RunOutcome) else run
        return read_results(self.directory / name)

    def summaries(self) -> tuple[RunSummary | None, ...]:
        """Each run's `RunSummary` (see `summary`), in the order of `outcomes`."""
        return tuple(self.summary(outcome) for outcome in self.outcomes)

    @property
    def json_path(self) -> Path:
        """``sweep.json``."""
        return self.directory / "sweep.json"

    @property
    def html_path(self) -> Path:
        """``sweep.html``."""
        return self.directory / "sweep.html"


def _check_data(runs: Sequence[PlannedRun]) -> None:
    checked: dict[tuple[str, int], Any] = {}
    for run in runs:
        key = (run.config.task, run.config.seed)
        if key in checked:
            continue
        try:
            checked[key] = load_run_tasks(run.config)
        except (DataError, SetupError, OSError, ValueError) as exc:
            raise SweepError(f"{run.config.task} (seed {run.config.seed}): {' '.join(str(exc).split())}") from None
    for run in runs:  # a parameter one-parameter trains must be one of its task's (else it fails after its preflight)
        if run.config.param is not None:
            try:
                optimizer = make_optimizer(run.config)
                for task in checked[(run.config.task, run.config.seed)]:
                    optimizer.init(task.build()[1])
            except ValueError as exc:
                raise SweepError(f"{run.name}: {' '.join(str(exc).split())}") from None
    first = runs[0]
    if first.config.backend != "simulated":
        try:
            build_llm(first.config, checked[(first.config.task, first.config.seed)])
        except (SetupError, ValueError, ImportError) as exc:
            raise SweepError(" ".join(str(exc).split())) from None


def _check_sweep_dir(out: Path, runs: Sequence[PlannedRun]) -> None:
    """A sweep goes into a new or empty folder, or one a sweep wrote (it holds ``sweep.json`` or a
    folder of one of its runs): never among files of other kinds (hidden entries aside)."""
    if not out.is_dir():
        return
    entries = sorted(e.name for e in out.iterdir() if not e.name.startswith("."))
    if entries and not {"sweep.json", *(run.name for run in runs)} & set(entries):
        shown = ", ".join(entries[:3]) + (", ..." if len(entries) > 3 else "")
        raise SweepError(
            f"{out} is not empty ({shown}) and holds no sweep; a sweep writes its runs into a folder of its own: "
            "choose a new or empty --out"
        )


def check_sweep(spec: SweepSpec, out_dir: str | os.PathLike[str]) -> tuple[PlannedRun, ...]:
    """Everything that can be checked before a sweep starts; return its runs.

    Checks that every task's data loads with the spec's sizes, that each
    parameter a one-parameter run trains is one of its task's, that the
    backend can be built (an API key, when it needs one), and that no run
    directory under `out_dir` holds a run of another config. A run directory
    that is a symbolic link (or not a folder of `out_dir`) is not read here:
    that run fails alone when the sweep reaches it.

    Raises:
        SweepError: One line naming the first problem.
    """
    runs = spec.runs()
    if not runs:
        raise SweepError("the sweep is empty: it names no runs")
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise SweepError(f"the sweep directory {out} is a file; choose another --out")
    _check_sweep_dir(out, runs)
    _check_data(runs)
    for run in runs:
        try:
            check_run_dir(out, out / run.name)
        except SweepError:
            continue  # not read through; `execute_run` fails that run
        run_status(run, out / run.name)
    return runs


def run_sweep(
    spec: SweepSpec | str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    *,
    local: bool = False,
    address: str | None = None,
    max_parallel: int | None = None,
    num_cpus: int | None = None,
    on_run: Callable[[RunOutcome], None] | None = None,
    instrument: Instrument | None = None,
) -> SweepResult:
    """Run every combination of a sweep, each in its own run directory, and write ``sweep.json`` and ``sweep.html``.

    Runs execute as Ray tasks (Ray started on this machine, or joined at
    `address`), or with `local` in threads of this process. Re-running the same
    sweep into the same directory skips finished runs and resumes interrupted
    ones from their checkpoints.

    Args:
        spec: A `SweepSpec`, or the path of a TOML spec.
        out_dir: The sweep directory.
        local: Run in this process, without Ray.
        address: Join the Ray cluster at this address (default: start Ray here,
            unless this process already initialised it).
        max_parallel: Runs in progress at once (default: the spec's, else as
            many as the CPUs allow).
        num_cpus: The CPUs of a Ray started here (default: the spec's, else all).
        on_run: Called (in this thread) as each run ends.
        instrument: Wraps each run's LLM, ``instrument(llm, run_name, run_dir)``
            (must be picklable for Ray): call logs, fault injection.

    Returns:
        A `SweepResult`. Runs that failed are in `SweepResult.failed` and in
        the report; they do not raise.

    Raises:
        SweepError: The sweep cannot start (bad spec, bad data, missing Ray, ...).
        FolderInUse: Another process holds `out_dir` (`semgrad._lock`): nothing was done.

    Examples:
        >>> import tempfile
        >>> from semgrad.sweeps import parse_spec
        >>> spec = parse_spec({"tasks": ["gsm8k"], "seeds": [0], "optimizers": ["tgd"]})
        >>> with tempfile.TemporaryDirectory() as out:
        ...     run_sweep(spec, out, local=True)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        semgrad.sweeps._spec.SweepError: gsm8k (seed 0): no data directory; pass --data-dir DIR (...)

    .. versionadded:: 0.1.0
    """
    spec = spec if isinstance(spec, SweepSpec) else load_spec(spec)
    if local and address:
        raise SweepError("--local runs the sweep in this process; drop it to use the Ray cluster at --address")
    out = Path(out_dir)
    with hold_folder(out):  # one sweep at a time in a sweep folder (each run holds its own folder too)
        runs = check_sweep(spec, out)
        started_ray = False if local else _start_ray(address, num_cpus or spec.resources.num_cpus)
        out.mkdir(parents=True, exist_ok=True)
        report = (lambda outcome: on_run(RunOutcome.of(outcome))) if on_run is not None else None
        try:
            parallel = max_parallel or spec.resources.max_parallel
            outcomes = _execute(spec, runs, out, local, parallel, instrument, report)
        finally:
            if started_ray:
                import ray

                ray.shutdown()
        write_sweep_report(out, summarize(spec, [o["row"] for o in outcomes]))
    return SweepResult(out, tuple(RunOutcome.of(o) for o in outcomes))


def _start_ray(address: str | None, num_cpus: int | None) -> bool:
    """Start Ray here, or join it at `address`; whether this process started it (and so shuts it down)."""
    from ._ray import init_ray

    return init_ray(address, num_cpus=num_cpus)


def _execute(
    spec: SweepSpec,
    runs: Sequence[PlannedRun],
    out: Path,
    local: bool,
    parallel: int | None,
    instrument: Instrument | None,
    report: Callable[[Outcome], None] | None,
) -> list[Outcome]:
    """Every run of the sweep, in threads of this process (`local`) or as Ray tasks; their outcomes in order."""
    if local:
        from ._local import run_local

        return run_local(
            runs, out, limits=spec.max_concurrent_calls, max_parallel=parallel, instrument=instrument, on_outcome=report
        )
    from ._ray import run_on_ray

    return run_on_ray(
        runs,
        out,
        limits=spec.max_concurrent_calls,
        resources=spec.resources,
        max_parallel=parallel,
        instrument=instrument,
        on_outcome=report,
    )
