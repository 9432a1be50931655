"""The tasks a run's config names, how each is scored, and whether its protocol fits them.

Below both the planner (`_plan`) and the runner (`_run`), which read these
and must not import each other.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from ..core import Loss
from ..tasks import Task, load_tasks, metric_loss
from ._config import METRIC_NAMES, RunConfig
from ._errors import SetupError

__all__ = ["check_protocol", "load_run_tasks", "loss_for", "metric_name", "task_loss"]


def load_run_tasks(config: RunConfig) -> tuple[Task, ...]:
    """The tasks a config names, split by the paper's protocol (or the sizes it gives).

    A config with `data` names your own system: loading it imports the code its spec names.
    """
    if config.data:
        from ._custom import custom_task

        return (custom_task(config),)
    if not config.data_dir:
        raise SetupError("no data directory; pass --data-dir DIR (the folder that holds bbh/, gsm8k/ and liar/)")
    tasks = load_tasks(
        [config.task],
        config.data_dir,
        seed=config.seed,
        train=config.train,
        validation=config.validation,
        test=config.test,
        protocol=config.protocol,
        max_items=config.items_limit,
    )
    if config.metric in ("normalized", "numeric"):  # --metric replaces the protocol's metric
        tasks = tuple(attrs.evolve(task, metric=config.metric) for task in tasks)
    return tasks


def loss_for(task: Task) -> Loss:
    """The loss for a task's metric (`semgrad.tasks.Task.metric`: the protocol's unless chosen)."""
    return metric_loss(task.metric)


def task_loss(config: RunConfig, task: Task) -> Loss:
    """The loss a run of `config` scores `task` with: your own data's metric, or the task's scoring kind."""
    return loss_for(task) if not config.data and config.metric in METRIC_NAMES else _custom_loss(config)


def metric_name(config: RunConfig, task: Task) -> str:
    """What scored `task` in a run of `config`, as results.json and the report name it: the user's own metric
    by its spec (``my_metric.py:score``), ``judge`` for the LLM judge, else the task's metric."""
    if config.data and config.metric == "judge":
        return "judge"
    if config.data:
        from ._user_code import is_code_spec, short_spec

        if is_code_spec(config.metric):
            return short_spec(config.metric, "metric")
    return task.metric


def check_protocol(config: RunConfig, tasks: Sequence[Task]) -> None:
    """The config's protocol can run on the tasks' splits (held-out needs a validation split)."""
    if config.protocol == "heldout":
        empty = [t.name for t in tasks if not t.split.validation]
        if empty:
            raise SetupError(
                f"the held-out protocol needs a validation split, and {empty[0]} has none; pass --validation N"
            )


def _custom_loss(config: RunConfig) -> Loss:
    from ._custom import custom_loss

    return custom_loss(config)
