"""The ``semgrad`` entry point: parse, run the subcommand in its event-loop setting, and turn an error into
one line on stderr and an exit code (``--debug`` shows the traceback instead)."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator, Sequence

from .._loaded_systems import systems_loaded_once
from ._parser import build_parser
from ._terminal import one_line

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the process exit code."""
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(argv)
    args.argv = argv
    try:
        with _event_loop_choice(no_uvloop=args.no_uvloop), systems_loaded_once():
            return int(args.func(args))
    except KeyboardInterrupt:
        print("semgrad: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        if args.debug:
            raise
        print(f"semgrad: error: {_error_text(exc)}", file=sys.stderr)
        return 1


def _error_text(exc: Exception) -> str:
    """The error as the terminal shows it: one line, or for an error in the user's own code one short block
    (its type and message, then the user's frames)."""
    user_code = sys.modules.get("semgrad.experiments._user_code")  # loaded whenever the user's code has run
    if user_code is not None and isinstance(exc, user_code.UserCodeError):
        head, *frames = str(exc).splitlines()
        return "\n".join([one_line(head), *(f"  {one_line(frame)}" for frame in frames)])
    return one_line(str(exc)) or type(exc).__name__


@contextlib.contextmanager
def _event_loop_choice(*, no_uvloop: bool) -> Iterator[None]:
    """With `no_uvloop`, set ``SEMGRAD_UVLOOP=0`` while the command runs (its event loops, and
    the sweep workers it starts, then keep asyncio's own loop), and restore it afterwards."""
    if not no_uvloop:
        yield
        return
    from ..effects._loop import UVLOOP_ENV

    before = os.environ.get(UVLOOP_ENV)
    os.environ[UVLOOP_ENV] = "0"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(UVLOOP_ENV, None)
        else:
            os.environ[UVLOOP_ENV] = before
