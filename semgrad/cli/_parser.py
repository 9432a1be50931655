"""The argument parser of the ``semgrad`` command: the global flags, then one subcommand from its own module."""

from __future__ import annotations

import argparse

from . import _compare, _data, _demo, _graph, _report, _run, _sweep
from ._flags import CommandParser, add_global_flags

__all__ = ["build_parser"]


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``semgrad`` command."""
    from .. import __version__

    parser = CommandParser(prog="semgrad", description="Semantic backpropagation for LLM-based agentic systems.")
    parser.add_argument("--version", action="version", version=f"semgrad {__version__}")
    add_global_flags(parser)
    commands = parser.add_subparsers(dest="command", required=True)
    for module in (_demo, _run, _compare, _report, _graph, _sweep, _data):
        module.add_parser(commands)
    return parser
