"""``semgrad demo``: an offline optimisation of the paper's graph on the built-in simulated LLM."""

from __future__ import annotations

import argparse
from typing import Any

from ._flags import HelpWithDefaults, add_command

__all__ = ["add_parser", "command"]


def add_parser(commands: Any) -> None:
    """Add ``demo`` to the subcommands."""
    demo = add_command(
        commands,
        "demo",
        help="an offline optimisation of the paper's graph on the built-in simulated LLM",
        formatter_class=HelpWithDefaults,
    )
    demo.add_argument("-q", "--quiet", action="store_true", help="print less")
    demo.add_argument("--iterations", type=int, default=3, help="optimisation iterations (default 3)")
    demo.set_defaults(func=command)


def command(args: argparse.Namespace) -> int:
    """Run the demo; its exit code."""
    from .. import _offline_demo

    return _offline_demo.main(quiet=args.quiet, iterations=args.iterations)
