"""Running a sweep in this process: one thread per run in progress, no Ray needed.

Each run runs in its own thread (and so in its own ``anyio.run`` event loops),
and every run's LLM goes through one set of `CallSlots` on a private thread,
so the sweep-wide call limit holds exactly as it does under Ray.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from pathlib import Path

from ._execute import Instrument, Outcome, execute_run
from ._slots import local_call_slots
from ._spec import PlannedRun

__all__ = ["run_local"]


def run_local(
    runs: Sequence[PlannedRun],
    sweep_dir: Path,
    *,
    limits: Mapping[str, int],
    max_parallel: int | None = None,
    instrument: Instrument | None = None,
    on_outcome: Callable[[Outcome], None] | None = None,
) -> list[Outcome]:
    """Run `runs` concurrently in threads; return their outcomes in the order of `runs`.

    Args:
        runs: The planned runs.
        sweep_dir: Where their run directories go.
        limits: Calls in flight at once across all runs, per backend.
        max_parallel: Runs in progress at once (default: the number of CPUs).
        instrument: Wraps each run's LLM.
        on_outcome: Called (in this thread) as each run ends.
    """
    workers = max(1, min(len(runs), max_parallel or os.cpu_count() or 1))
    outcomes: dict[str, Outcome] = {}
    with local_call_slots(limits) as slots:
        pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="semgrad-sweep")
        try:
            futures: dict[Future[Outcome], PlannedRun] = {
                pool.submit(execute_run, run, str(sweep_dir), slots, instrument): run for run in runs
            }
            for future in as_completed(futures):
                outcome = future.result()
                outcomes[outcome["name"]] = outcome
                if on_outcome is not None:
                    on_outcome(outcome)
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
    return [outcomes[run.name] for run in runs]
