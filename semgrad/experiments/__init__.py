"""The paper's experiments as a runnable product: configs, runs, dry runs.

Examples:
    >>> RunConfig("bbh:navigate", optimizer="tgd").k
    2
"""

from ._compare import PurposeMeter, compare, parse_optimizers
from ._config import BACKENDS, BASELINES, OPTIMIZERS, PROTOCOLS, RunConfig, make_optimizer
from ._dry_run import DryRunReport, dry_run, dry_run_protocols, estimate_tokens
from ._run import (
    PUBLISHED,
    RunFailed,
    SetupError,
    build_llm,
    estimate_cost,
    load_run_tasks,
    loss_for,
    run_experiment,
    run_stack,
)
from ._stack import FAIL_FAST_CALLS, MAX_ERROR_SHARE, RunStack

__all__ = [
    "BACKENDS",
    "BASELINES",
    "FAIL_FAST_CALLS",
    "MAX_ERROR_SHARE",
    "OPTIMIZERS",
    "PROTOCOLS",
    "PUBLISHED",
    "PurposeMeter",
    "DryRunReport",
    "RunConfig",
    "RunFailed",
    "RunStack",
    "SetupError",
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
    "run_experiment",
    "run_stack",
]
