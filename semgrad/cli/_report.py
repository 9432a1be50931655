"""``semgrad report``: (re)write report.html of a run folder."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ._flags import add_command

__all__ = ["add_parser", "command"]


def add_parser(commands: Any) -> None:
    """Add ``report`` to the subcommands."""
    report = add_command(commands, "report", help="(re)write report.html of a run directory")
    report.add_argument("run_dir")
    report.set_defaults(func=command)


def command(args: argparse.Namespace) -> int:
    """Write the report and say where."""
    from ..report import write_report

    path = write_report(Path(args.run_dir))
    print(f"Wrote {path}")
    return 0
