"""The paper's experiments as a runnable product: configs, plans, runs, dry runs.

A run is plan -> middleware stack -> tasks -> results: `plan(config)` loads the tasks and counts
the calls, `run_experiment(config, out, plan=...)` runs them through one `RunStack`.

Examples:
    >>> RunConfig("bbh:navigate", optimizer="tgd").k
    2
"""

from ..report import PUBLISHED
from ._compare import PurposeMeter, compare, parse_optimizers
from ._compare_result import CompareResult, MethodResult
from ._config import BACKENDS, BASELINES, OPTIMIZERS, PROTOCOLS, RunConfig, make_optimizer
from ._dry_run import DryRunReport, dry_run, dry_run_protocols, estimate_tokens
from ._plan import RunPlan, plan
from ._prices import estimate_cost
from ._results import RunSummary, TaskResult
from ._run import (
    RunFailed,
    SetupError,
    build_llm,
    load_run_tasks,
    loss_for,
    run_experiment,
    run_stack,
)
from ._run_stack import FAIL_FAST_CALLS, MAX_ERROR_SHARE, RunStack

__all__ = [
    "BACKENDS",
    "BASELINES",
    "CompareResult",
    "FAIL_FAST_CALLS",
    "MAX_ERROR_SHARE",
    "MethodResult",
    "OPTIMIZERS",
    "PROTOCOLS",
    "PUBLISHED",
    "PurposeMeter",
    "DryRunReport",
    "RunConfig",
    "RunPlan",
    "RunFailed",
    "RunStack",
    "RunSummary",
    "SetupError",
    "TaskResult",
    "build_llm",
    "compare",
    "dry_run",
    "dry_run_protocols",
    "estimate_cost",
    "estimate_tokens",
    "load_run_tasks",
    "loss_for",
    "make_optimizer",
    "parse_optimizers",
    "plan",
    "run_experiment",
    "run_stack",
]
