"""What ``semgrad run`` says before and while it runs, beside the progress line of `RunProgress`: its first
line, printed before anything slow (the plan loads and splits the tasks, which can take seconds)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ._terminal import SIMULATED_NOTICE

__all__ = ["say_start"]


def say_start(args: argparse.Namespace, config: Any, out: Path) -> None:
    """The run's first lines, at once (none when quiet: the result's lines name the folder): the run folder
    (stdout) and, on the simulated backend, that its scores say nothing about real models (stderr)."""
    if args.quiet:
        return
    print(f"{'Continuing' if args.resume else 'Writing'} the run in {out}", flush=True)
    if config.backend == "simulated":
        print(SIMULATED_NOTICE, file=sys.stderr, flush=True)
