"""Sweeps: many runs of the paper's experiments as Ray tasks (or threads), resumable, one combined report.

A TOML spec names tasks, seeds, optimizers, the models per role and the
settings every run shares; each combination is one run with its own run
directory under the sweep directory::

    name = "bbh-paper"
    tasks = ["bbh:all", "gsm8k"]
    seeds = [0, 1, 2]
    optimizers = ["neighbor-sgd", "tgd"]

    [models]                        # per role; or [[models]] tables with a `name` each
    forward = "gpt-4o-mini"
    backward = "gpt-4-turbo"
    optimizer = "gpt-4-turbo"

    [settings]                      # `semgrad run` options; paths relative to this file
    data_dir = "data"
    backend = "openai-compatible"
    iterations = 4
    max_concurrent_calls = 16       # calls in flight across the sweep, per backend

    [resources]
    cpus_per_run = 1                # Ray CPUs per run
    max_retries = 3                 # retries of a run whose worker died (they resume)
    lease_seconds = 10              # a dead worker's call slots are freed this long after its last heartbeat

``semgrad sweep SPEC.toml --out DIR`` (or `run_sweep`) starts a Ray on this
machine, or joins one with ``--address``; ``--local`` runs the same sweep in
this process without Ray, with equal results. Re-running it skips finished
runs and resumes interrupted ones. ``DIR/sweep.json`` and ``DIR/sweep.html``
hold a row per run, the BBH NLP / algorithmic averages beside the paper's
figures, and a chart comparing optimizers across tasks.

Examples:
    >>> spec = parse_spec({"tasks": ["bbh:navigate", "gsm8k"], "seeds": [0], "optimizers": ["neighbor-sgd", "tgd"]})
    >>> [run.name for run in spec.runs()][:2]
    ['bbh-navigate__seed0__neighbor-sgd', 'bbh-navigate__seed0__tgd']

.. versionadded:: 0.1.0
"""

from ._chart import optimizer_chart as optimizer_chart
from ._execute import execute_run as execute_run
from ._execute import run_status as run_status
from ._page import render_sweep as render_sweep
from ._page import write_sweep_report as write_sweep_report
from ._slots import CallSlots as CallSlots
from ._slots import local_call_slots as local_call_slots
from ._slots import slotted as slotted
from ._spec import (
    ModelSet as ModelSet,
)
from ._spec import (
    PlannedRun as PlannedRun,
)
from ._spec import (
    Resources as Resources,
)
from ._spec import (
    SweepError as SweepError,
)
from ._spec import (
    SweepSpec as SweepSpec,
)
from ._spec import (
    load_spec as load_spec,
)
from ._spec import (
    parse_spec as parse_spec,
)
from ._spec import (
    run_name as run_name,
)
from ._summary import summarize as summarize
from ._sweep import RunOutcome as RunOutcome
from ._sweep import SweepResult as SweepResult
from ._sweep import check_sweep as check_sweep
from ._sweep import run_sweep as run_sweep
from ._sweep_json import SweepRow as SweepRow
from ._sweep_json import SweepSummary as SweepSummary

__all__ = [
    "CallSlots",
    "ModelSet",
    "PlannedRun",
    "Resources",
    "RunOutcome",
    "SweepError",
    "SweepResult",
    "SweepRow",
    "SweepSpec",
    "SweepSummary",
    "check_sweep",
    "execute_run",
    "load_spec",
    "local_call_slots",
    "optimizer_chart",
    "parse_spec",
    "render_sweep",
    "run_name",
    "run_status",
    "run_sweep",
    "slotted",
    "summarize",
    "write_sweep_report",
]
