"""``semgrad sweep``: a grid of experiments from a TOML spec, as Ray tasks or threads, resumably."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import attrs

from ..core import FrozenMap
from ._flags import add_command, add_max_items_flag
from ._terminal import EXIT_BUDGET, SIMULATED_NOTICE

__all__ = ["add_parser", "command"]


def add_parser(commands: Any) -> None:
    """Add ``sweep`` to the subcommands."""
    from ..sweeps._spec_format import SPEC_HELP

    sweep = add_command(
        commands,
        "sweep",
        help="run a grid of experiments from a TOML spec as Ray tasks (or --local), resumably",
        epilog=SPEC_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sweep.add_argument("spec", help="the sweep spec (TOML): tasks, seeds, optimizers, models and shared settings")
    sweep.add_argument("--out", help="the sweep directory (default sweeps/<spec name>); re-running skips finished runs")
    sweep.add_argument("--local", action="store_true", help="run in this process (threads), without Ray")
    sweep.add_argument("--address", help="join the Ray cluster at this address (default: start Ray on this machine)")
    sweep.add_argument("--max-parallel", type=int, help="runs in progress at once (default: as many as the CPUs allow)")
    sweep.add_argument(
        "--num-cpus", type=int, help="CPUs of a Ray started on this machine (default: the spec's, else all)"
    )
    add_max_items_flag(sweep)
    sweep.add_argument("-q", "--quiet", action="store_true", help="no progress output")
    sweep.set_defaults(func=command)


def command(args: argparse.Namespace) -> int:
    """Run (or resume) the sweep, one line per finished run; its exit code."""
    from .._lock import hold_folder
    from ..sweeps import load_spec

    _check_limits(args)
    spec = load_spec(args.spec)
    if args.max_items is not None:  # the flag over the spec's settings.max_items
        spec = attrs.evolve(spec, settings=FrozenMap({**spec.settings, "max_items": args.max_items}))
    out = Path(args.out) if args.out else Path("sweeps") / spec.name
    with hold_folder(out):  # a second sweep on this folder stops here, in one line, before any call
        return _run(args, spec, out)


def _run(args: argparse.Namespace, spec: Any, out: Path) -> int:
    """Run the sweep in `out` (held), one line per finished run; its exit code."""
    from ..sweeps import run_sweep

    total = len(spec.runs())
    if not args.quiet:
        print(f"Sweep {spec.name}: {total} runs in {out}", file=sys.stderr, flush=True)  # at once, before Ray
        if spec.backend == "simulated":
            print(SIMULATED_NOTICE, file=sys.stderr, flush=True)
    show = SweepProgress(total, quiet=args.quiet)

    try:
        result = run_sweep(
            spec,
            out,
            local=args.local,
            address=args.address,
            max_parallel=args.max_parallel,
            num_cpus=args.num_cpus,
            on_run=show,
        )
    except KeyboardInterrupt:
        print(
            f"\nsemgrad: interrupted; the finished runs and checkpoints in {out} are kept -- "
            "run the same command to resume",
            file=sys.stderr,
        )
        return 130
    return _finish(args, result, out, total)


class SweepProgress:
    """A line per finished run (an ``on_run`` hook): runs done / in all, the run's outcome, and the calls the
    sweep's runs made so far (those finished by an earlier process included)."""

    def __init__(self, total: int, *, quiet: bool = False, stream: Any = None) -> None:
        self.total, self.quiet, self.stream = total, quiet, stream
        self.done = self.calls = 0

    def __call__(self, outcome: Any) -> None:
        self.done += 1
        self.calls += outcome.calls or 0
        if not self.quiet:
            print(self.line(outcome), file=self.stream or sys.stderr, flush=True)

    def line(self, outcome: Any) -> str:
        """The line of a run that just finished."""
        return (
            f"[{self.done}/{self.total}] {outcome.name}: {_outcome_text(outcome)} "
            f"(sweep so far: {self.done}/{self.total} runs, {self.calls:,} calls)"
        )


def _check_limits(args: argparse.Namespace) -> None:
    from ..sweeps import SweepError

    if args.max_parallel is not None and args.max_parallel < 1:
        raise SweepError(f"--max-parallel must be at least 1, got {args.max_parallel}")
    if args.num_cpus is not None and args.num_cpus < 1:  # 0 would be taken as no value: all the CPUs
        raise SweepError(f"--num-cpus must be at least 1, got {args.num_cpus}")


def _outcome_text(outcome: Any) -> str:
    """How one finished run went, after its name on its progress line."""
    if outcome.status == "failed":
        return f"failed: {outcome.error}"
    test = "-" if outcome.test is None else f"{outcome.test:.3f}"
    calls = f", {outcome.calls} calls" if outcome.status != "skipped" else ""
    errors = f", {outcome.errors} without a reply" if outcome.errors else ""
    stopped = f", stopped: {outcome.stopped}" if outcome.stopped else ""
    return f"{outcome.status}, test {test}{calls}{errors}{stopped}"


def _finish(args: argparse.Namespace, result: Any, out: Path, total: int) -> int:
    """Say where the sweep's pages are, raise on failed runs, and say which runs spent their budget."""
    from ..sweeps import SweepError

    print(f"Wrote {result.json_path} and {result.html_path}")  # even quiet: the sweep's result and folder
    if result.failed:
        first = result.failed[0]
        failed = f"{len(result.failed)} of {total} runs failed (see {result.html_path})"
        raise SweepError(f"{failed}; {first.name}: {first.error}")
    spent = [o.name for o in result.outcomes if o.stopped == "budget"]
    if spent:  # as `semgrad run` does for one run
        print(
            f"semgrad: stopped: {len(spent)} of {total} runs spent their budget "
            f"({', '.join(spent[:3])}{', ...' if len(spent) > 3 else ''}); what they have is in {out} -- "
            "raise max_calls / max_tokens in the spec and run it again to go on",
            file=sys.stderr,
        )
        return EXIT_BUDGET
    return 0
