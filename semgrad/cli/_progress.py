"""What ``semgrad run`` says before it runs, beside the progress line of `RunProgress`: its first line,
printed before anything slow (the plan loads and splits the tasks and builds their graphs, which can take
seconds)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

__all__ = ["say_start"]


def say_start(args: argparse.Namespace, config: Any, out: Path) -> None:
    """The run's first line, at once: its folder (none when quiet: the result's lines name it). The simulated
    notice waits for the progress (stderr), so that an error of the plan stays the one line there."""
    if not args.quiet:
        print(f"{'Continuing' if args.resume else 'Writing'} the run in {out}", flush=True)
