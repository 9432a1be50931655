"""Running a sweep on Ray: one Ray task per run, one Ray actor for the shared call limit.

Ray is an optional extra (``pip install -e '.[ray]'``), imported only here
and only when a sweep runs on it. `init_ray` starts a Ray on this machine (the
embedded default: listening on 127.0.0.1 only, no dashboard, no usage
statistics) or joins a cluster at an address. The run directories must be on storage every
node sees: a retried run resumes from the checkpoint its dead worker wrote.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ._execute import Instrument, Outcome, execute_run, failed_outcome
from ._slots import CallSlots, RaySlots
from ._spec import PlannedRun, Resources, SweepError

__all__ = ["init_ray", "run_on_ray"]


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise SweepError(
            "Ray is not installed: pip install -e '.[ray]' in the semgrad checkout, "
            "or pass --local to run the sweep in this process"
        ) from None
    return ray


def init_ray(address: str | None = None, *, num_cpus: int | None = None) -> bool:
    """Start Ray on this machine, or join the cluster at `address`, unless this process already did.

    Args:
        address: A Ray cluster's address ("auto", "ray://host:10001", "host:6379");
            None starts a local Ray. Unless this process imported Ray before,
            that Ray listens on 127.0.0.1 only (``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``:
            Ray's single-machine mode, so no other machine can join it).
        num_cpus: The CPUs of a local Ray (None: all of this machine's).

    Returns:
        True when this call started or joined Ray (the caller shuts it down),
        False when Ray was already initialised.

    Raises:
        SweepError: Ray is not installed.
    """
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    if not address:
        os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # read when Ray is imported
    ray = _ray()
    if ray.is_initialized():
        return False
    quiet = {"configure_logging": False, "log_to_driver": False}
    if address:
        ray.init(address=address, **quiet)
    else:
        ray.init(num_cpus=num_cpus, include_dashboard=False, **quiet)
    return True


def run_on_ray(
    runs: Sequence[PlannedRun],
    sweep_dir: Path,
    *,
    limits: Mapping[str, int],
    resources: Resources,
    max_parallel: int | None = None,
    instrument: Instrument | None = None,
    on_outcome: Callable[[Outcome], None] | None = None,
) -> list[Outcome]:
    """Run `runs` as Ray tasks on the initialised Ray; return their outcomes in the order of `runs`.

    Each task reserves ``resources.cpus_per_run`` CPUs and is retried up to
    ``resources.max_retries`` times when its worker dies (a retry resumes the
    run from its checkpoint). At most `max_parallel` runs are submitted at once
    (default: all; Ray then runs as many as the CPUs allow). The call slots of a
    worker that died are freed ``resources.lease_seconds`` after its last heartbeat.
    """
    ray = _ray()
    actor = ray.remote(num_cpus=0)(CallSlots).remote(dict(limits), expire_after=resources.lease_seconds)
    slots = RaySlots(actor, limits, beat_every=resources.lease_seconds / 10)
    task = ray.remote(num_cpus=resources.cpus_per_run, max_retries=resources.max_retries, retry_exceptions=False)(
        execute_run
    )
    queue = list(runs)
    pending: dict[Any, PlannedRun] = {}
    outcomes: dict[str, Outcome] = {}
    try:
        while queue or pending:
            while queue and len(pending) < (max_parallel or len(runs)):
                run = queue.pop(0)
                pending[task.options(name=run.name).remote(run, str(sweep_dir), slots, instrument)] = run
            (ready,), _ = ray.wait(list(pending), num_returns=1)
            run = pending.pop(ready)
            outcome = _collect(ray, ready, run, actor)
            outcomes[run.name] = outcome
            if on_outcome is not None:
                on_outcome(outcome)
    finally:
        for ref in pending:
            ray.cancel(ref, force=True)
        ray.kill(actor)
    return [outcomes[run.name] for run in runs]


def _collect(ray: Any, ref: Any, run: PlannedRun, actor: Any) -> Outcome:
    try:
        return dict(ray.get(ref))
    except ray.exceptions.RayError as exc:  # the worker died more often than max_retries allows
        actor.retire.remote(run.name)
        return failed_outcome(run, exc)
