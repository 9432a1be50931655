"""The paper's experiments as a runnable product: configs, runs, dry runs.

Examples:
    >>> RunConfig("bbh:navigate", optimizer="tgd").k
    2
"""

from ._compare import PurposeMeter, compare, parse_optimizers
from ._config import BACKENDS, BASELINES, OPTIMIZERS, RunConfig, make_optimizer
from ._dry_run import DryRunReport, dry_run, estimate_tokens
from ._run import PUBLISHED, SetupError, build_llm, estimate_cost, load_run_tasks, loss_for, run_experiment

__all__ = [
    "BACKENDS",
    "BASELINES",
    "OPTIMIZERS",
    "PUBLISHED",
    "PurposeMeter",
    "DryRunReport",
    "RunConfig",
    "SetupError",
    "build_llm",
    "compare",
    "dry_run",
    "estimate_cost",
    "estimate_tokens",
    "load_run_tasks",
    "loss_for",
    "make_optimizer",
    "parse_optimizers",
    "run_experiment",
]
