"""Where a run goes by default: a new folder per run, ``runs/<task>-<YYYYmmdd-HHMMSS>``."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

__all__ = ["new_run_dir", "run_slug"]


def run_slug(config: Any) -> str:
    """A file-name-safe short name for a config's task (your system: its file or module and function).

    Examples:
        >>> from semgrad.experiments import RunConfig
        >>> run_slug(RunConfig("bbh:navigate"))
        'bbh-navigate'
        >>> run_slug(RunConfig("/home/me/my_system.py:build", data="items.jsonl"))
        'my_system-build'
    """
    task = config.task
    if config.data:
        from ._custom import parse_system_spec

        target, name = parse_system_spec(task)
        task = f"{Path(target).stem if target.endswith('.py') else target}-{name}"
    return re.sub(r"[^0-9A-Za-z_.]+", "-", task).strip("-.") or "run"


def new_run_dir(config: Any, root: str | Path = "runs", *, now: float | None = None) -> Path:
    """A folder under `root` that does not exist yet: ``<slug>-<local time>``, numbered ``-2``, ``-3``... if taken."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now))
    base = Path(root) / f"{run_slug(config)}-{stamp}"
    path, n = base, 1
    while path.exists():
        n += 1
        path = base.with_name(f"{base.name}-{n}")
    return path
