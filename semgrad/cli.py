"""The ``semgrad`` command line."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

__all__ = ["main"]


def _demo(args: argparse.Namespace) -> int:
    from . import _demo

    return _demo.main(quiet=args.quiet)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``semgrad`` command."""
    parser = argparse.ArgumentParser(prog="semgrad", description="Semantic backpropagation for LLM-based agentic systems.")
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="an offline forward pass of the paper's graph on the built-in simulated LLM")
    demo.add_argument("-q", "--quiet", action="store_true", help="print less")
    demo.set_defaults(func=_demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the process exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        print("semgrad: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        if args.debug:
            raise
        print(f"semgrad: error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
