"""``semgrad compare``: several optimizers on one task, with the same splits and seed, side by side."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._config import run_config
from ._flags import add_call_flags, add_command, add_own_code_flags, add_pareto_flags
from ._terminal import EXIT_BUDGET, SIMULATED_NOTICE

if TYPE_CHECKING:
    from ..experiments import CompareResult

__all__ = ["add_parser", "command"]


def add_parser(commands: Any) -> None:
    """Add ``compare`` to the subcommands."""
    from ..experiments import OPTIMIZERS
    from ..experiments._config import NAMED_BACKENDS

    cmp = add_command(
        commands,
        "compare",
        help="run several optimizers on one task (same splits and seed) and tabulate them side by side",
    )
    cmp.add_argument(
        "task",
        help="the task, e.g. bbh:navigate, gsm8k, or your system FILE.py:FUNCTION or MODULE:FUNCTION with --data",
    )
    cmp.add_argument(
        "--optimizers",
        default="neighbor-sgd,textgrad,optoprime,copro",
        help=f"comma-separated, from: {', '.join(OPTIMIZERS)} (default neighbor-sgd,textgrad,optoprime,copro)",
    )
    cmp.add_argument("--data-dir", help="the folder that holds bbh/, gsm8k/ and liar/")
    cmp.add_argument("--backend", default="simulated", choices=NAMED_BACKENDS)
    add_own_code_flags(cmp)
    cmp.add_argument("--out", default="runs/compare", help="the comparison directory (default runs/compare)")
    cmp.add_argument(
        "--iterations", type=int, help="optimisation iterations (default: the paper's, 4; liar 8; your own system 4)"
    )
    cmp.add_argument("--breadth", type=int, default=10, help="COPRO's candidates per round (default 10)")
    add_pareto_flags(cmp)
    add_call_flags(cmp)
    _add_method_and_budget_flags(cmp)
    cmp.set_defaults(func=command)


def _add_method_and_budget_flags(cmp: argparse.ArgumentParser) -> None:
    cmp.add_argument(
        "--protocol",
        choices=("official", "heldout"),
        help="as for semgrad run (default official, unless --validation is given)",
    )
    cmp.add_argument(
        "--param", help="with one-parameter among --optimizers: the parameter it trains alone, e.g. answer.instruction"
    )
    cmp.add_argument(
        "--max-calls", type=int, help="each optimizer's run sends at most this many requests; then it stops cleanly"
    )
    cmp.add_argument("--max-tokens", type=int, help="each optimizer's run uses at most this many tokens")
    cmp.add_argument("--prices", help="a JSON price table {model: [usd_per_1M_in, usd_per_1M_out]}")
    cmp.add_argument("--dry-run", action="store_true", help="each optimizer's calls, tokens and cost; call nothing")
    cmp.add_argument("--yes", action="store_true", help="allow a real backend (check the cost with --dry-run first)")
    cmp.add_argument("-q", "--quiet", action="store_true", help="no progress output")


def command(args: argparse.Namespace) -> int:
    """Run (or only count) each optimizer in turn, then print the table; its exit code."""
    from ..experiments import compare, parse_optimizers
    from ..experiments._prices import load_prices

    optimizers = parse_optimizers(args.optimizers)
    if args.data is None:
        from ..experiments._custom import is_system_spec

        if is_system_spec(args.task):
            raise ValueError(f"{args.task} looks like your own system: pass --data FILE (JSON Lines, JSON or CSV)")
    if args.param and "one-parameter" not in optimizers:
        raise ValueError("--param is for the one-parameter optimizer, which --optimizers does not list")
    # `compare` gives each optimizer its turn, and `param` to one-parameter alone.
    config = run_config(args, optimizer="one-parameter" if args.param else "neighbor-sgd")
    prices = load_prices(args.prices).models
    if not args.dry_run and config.backend != "simulated" and not args.yes:
        raise ValueError(
            "a comparison on a real backend calls it for every optimizer; check it with --dry-run, then pass --yes"
        )
    if config.backend == "simulated" and not args.quiet:
        print(SIMULATED_NOTICE, file=sys.stderr)
    out = Path(args.out)

    def show(optimizer: str, task: str, event: Any) -> None:
        if not args.quiet and event.phase in ("done", "evaluating"):
            task = task.rsplit("/", 1)[-1]  # your own system: its file name, as `semgrad run`'s lines show it
            print(
                f"{optimizer}: {task} {event.phase} {event.iteration}/{event.iterations} ({event.calls} calls)",
                file=sys.stderr,
                flush=True,
            )

    def said(tasks: Any) -> None:
        from ._split import split_line

        if not args.quiet:
            print(split_line(tasks, config.protocol), flush=True)

    summary = compare(
        config, optimizers, out, dry_run_only=args.dry_run, prices=prices, on_progress=show, on_tasks=said
    )
    return _finish(args, config, summary, out)


def _finish(args: argparse.Namespace, config: Any, summary: CompareResult, out: Path) -> int:
    """Print the table and where it was written, and say which optimizers stopped early."""
    from ..report._compare import compare_table

    if args.dry_run:
        print(f"Dry run ({config.task}, {config.backend}, {config.iterations} iterations): nothing was called.")
    print(compare_table(summary))
    if not args.dry_run:
        print(f"Wrote {out / 'compare.json'}, {out / 'compare.md'} and {out / 'compare.html'}")
    stopped = [m for m in summary.methods if m.stopped]
    for method in stopped:
        detail = method.stopped_detail or method.stopped
        print(f"semgrad: {method.optimizer} stopped early: {detail}; its row is partial", file=sys.stderr)
    return EXIT_BUDGET if any(m.stopped == "budget" for m in stopped) else 0
