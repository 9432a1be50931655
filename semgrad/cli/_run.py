"""``semgrad run``: one experiment, or the user's own system on their data.

A run goes through these phases, each a function below: the config and run folder (typed, or read back on
``--resume``), the folder's check, then either the prompts shown or the plan (the calls, tokens and cost a
counting fake makes) printed and confirmed, then the run with its progress line, and last the scores and the
exit code. ``--show-prompts`` and ``--dry-run`` stop early and call nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ._config import run_config
from ._flags import CommandParser, add_global_flags
from ._progress import say_start
from ._run_args import add_run_parser
from ._run_summary import exit_code, print_summary
from ._terminal import SIMULATED_NOTICE

__all__ = ["add_parser", "command", "typed_options"]


def add_parser(commands: Any) -> None:
    """Add ``run`` to the subcommands."""
    add_run_parser(commands).set_defaults(func=command)


def command(args: argparse.Namespace) -> int:
    """Run the experiment the flags describe; the process's exit code."""
    config, out = _config_and_folder(args)
    if args.show_prompts is None and not args.dry_run:
        with contextlib.ExitStack() as held:
            out = _held_folder(held, args, config, out)  # a second process on it stops here, before any call
            return _command(args, config, out)
    return _command(args, config, out)


#: How many names a run without --out tries when other processes started in the same second took the first ones.
_NAME_TRIES = 100


def _held_folder(held: contextlib.ExitStack, args: argparse.Namespace, config: Any, out: Path) -> Path:
    """The run folder, held against other processes for the rest of the command: the folder typed (--out) or, for
    a name semgrad chose, the next free name when another process started in the same second holds this one."""
    from .._lock import FolderInUse, hold_folder
    from ..experiments._run_folder import new_run_dir

    for _ in range(_NAME_TRIES):
        try:
            return held.enter_context(hold_folder(out))
        except FolderInUse:
            if args.out is not None:
                raise
            out = new_run_dir(config)  # the other process made the folder, so the next name is free or numbered
    raise FolderInUse(out, None)


def _command(args: argparse.Namespace, config: Any, out: Path) -> int:
    """`command` once the folder is held (when the run writes it)."""
    if args.show_prompts is None and not args.dry_run:
        from ..experiments._run import check_run_dir

        check_run_dir(config, out, args.resume)  # before the plan, the prompt and the backend's cache
        say_start(args, config, out)  # the first line, before the plan loads the tasks (seconds)
    from ..experiments._prices import load_prices

    prices = load_prices(args.prices)
    if args.show_prompts is not None:
        from ..experiments._inspect import show_prompts

        print(show_prompts(config, args.show_prompts))
        return 0
    # The plan loads the tasks once (bad data fails here, before anything runs); the run takes them from it.
    needed = args.dry_run or config.backend != "simulated" or not args.quiet
    planned = _plan(config, prices) if needed else None
    backend = None
    if config.backend != "simulated" and not args.dry_run:
        from ..experiments import build_llm

        backend = build_llm(config, planned.tasks)  # a missing key fails here, before anything runs
    if args.dry_run:
        return _dry_run(config, prices, planned)
    if config.backend != "simulated":
        _show_plan(config, prices, planned, dry=False)
        if not _confirmed(args, planned):
            print("not started")
            return 1
    summary = _execute(args, config, out, planned, prices, backend)
    if summary is None:
        return 130
    print_summary(summary, out)  # even quiet: the scores and where they are written are the run's result
    return exit_code(summary, out)


def _config_and_folder(args: argparse.Namespace) -> tuple[Any, Path]:
    """The config and run folder: from the typed flags, or on --resume from the folder's config.json."""
    from ..experiments._resume import load_saved_config, resumed_config
    from ..experiments._run_folder import new_run_dir

    if args.resume:
        if args.out is None:
            raise ValueError("--resume needs --out DIR, the run folder to continue")
        given = typed_options(args.argv)
        fields = {k: v for k, v in given.items() if k not in ("resume", "out")}
        return resumed_config(load_saved_config(args.out), fields, args.out), Path(args.out)
    if args.task is None:
        raise ValueError("semgrad run needs a task (e.g. bbh:navigate) or your system (my_system.py:build --data FILE)")
    if args.data is None:
        from ..experiments._custom import is_system_spec

        if is_system_spec(args.task):
            raise ValueError(f"{args.task} looks like your own system: pass --data FILE (JSON Lines or CSV items)")
    config = run_config(args)
    return config, Path(args.out) if args.out is not None else new_run_dir(config)


def typed_options(argv: Sequence[str]) -> dict[str, Any]:
    """The options of ``semgrad run`` that `argv` gives explicitly (defaults left out)."""
    parser = CommandParser(prog="semgrad")
    add_global_flags(parser)
    run = add_run_parser(parser.add_subparsers(dest="command", required=True))
    for action in run._actions:
        action.default = argparse.SUPPRESS
    given = vars(parser.parse_args(list(argv)))
    return {k: v for k, v in given.items() if k not in ("command", "func", "debug", "no_uvloop")}


def _plan(config: Any, prices: Any) -> Any:
    """The run as a value (`semgrad.experiments.RunPlan`): its tasks, and the calls, tokens and cost per phase."""
    from ..experiments import plan

    return plan(config, prices=prices.models)


def _show_plan(config: Any, prices: Any, planned: Any, *, dry: bool) -> None:
    """Print what the run will make at most (on --dry-run, what it would make)."""
    from ..experiments._dry_run import report_of

    where = f" at {config.base_url}" if config.base_url and config.backend != "simulated" else ""
    print(("Dry run" if dry else "This run will make at most") + f" ({config.task}, {config.backend}{where}):")
    print(report_of(planned).table())
    if getattr(planned, "estimate", False):
        print(
            "(an estimate: your system is Python, and these are the calls of the branches and loops its runs took "
            "against a counting fake; a real run may take others -- --max-calls stays a hard cap)"
        )
    if not dry:
        print(
            f"(the preflight's {planned.preflight_calls} calls, retries, and repair requests after unreadable "
            "replies come on top: --max-calls caps them all)"
        )
    if config.backend not in ("simulated", "custom"):  # your own LLM (--llm) has no price of ours
        print(f"(cost from {prices.describe()})")
    if config.batch:
        phases = "the final evaluation's calls" if config.batch == "eval" else "every call"
        print(f"(--batch {config.batch}: {phases} go as provider batches, priced at half; answered within 24 hours)")


def _dry_run(config: Any, prices: Any, planned: Any) -> int:
    """--dry-run: the plan, and the calls each protocol would make; nothing is called."""
    from ..experiments._dry_run import dry_run_protocols, protocols_table, report_of
    from ._split import split_line

    print(split_line(planned.tasks, config.protocol))  # the items the plan counts calls for
    _show_plan(config, prices, planned, dry=True)
    print(f"Calls by protocol (this run: {config.protocol}):")
    print(protocols_table(dry_run_protocols(config, prices=prices.models, known=report_of(planned))))
    return 0


def _confirmed(args: argparse.Namespace, planned: Any) -> bool:
    """Whether the run may start: below both thresholds, --yes, or a yes typed at the prompt."""
    if args.yes or ((planned.cost_usd or 0) <= args.confirm_above and planned.total_calls <= args.confirm_calls):
        return True
    if not sys.stdin.isatty():
        raise ValueError("this run is above the confirmation threshold; pass --yes to start it without a prompt")
    return input("Start the run? [y/N] ").strip().lower() in ("y", "yes")


def _execute(args: argparse.Namespace, config: Any, out: Path, planned: Any, prices: Any, backend: Any) -> Any:
    """Run the experiment with its progress line; its summary, or None when interrupted."""
    from ..experiments import run_experiment
    from ..experiments._progress import RunProgress

    if not args.quiet and planned is not None:
        from ._split import split_line

        print(split_line(planned.tasks, config.protocol), flush=True)
    progress = RunProgress(
        sys.stderr,
        planned=planned.total_calls if planned is not None else None,
        prices=None if config.backend == "simulated" else prices.models,
        quiet=args.quiet,
        banner=SIMULATED_NOTICE if config.backend == "simulated" else "",
        already=_calls_made(out) if args.resume else 0,
        simulated=config.backend == "simulated",
    )
    tracer, stop_tracing = _tracing(args)
    try:
        summary = run_experiment(
            config,
            out,
            resume=args.resume,
            on_progress=progress.on_progress,
            on_reply=progress,
            prices=prices.models,
            plan=planned,
            llm=backend,
            enter_llm=backend is not None,
            checked=True,
            tracer=tracer,
        )
    except KeyboardInterrupt:
        progress.close(finished=False)
        print(f"\nsemgrad: interrupted; the checkpoint in {out} is intact -- continue with --resume", file=sys.stderr)
        return None
    except BaseException:
        progress.close(finished=False)  # the error's one line follows (main)
        raise
    finally:
        stop_tracing()  # the spans still buffered are exported before the command returns
    progress.close(finished=not summary.stopped)  # a stop is said below, with its reason
    return summary


def _tracing(args: argparse.Namespace) -> tuple[Any, Any]:
    """``--otel``: an OTLP/HTTP tracer and the function that flushes it; else no tracer and nothing to flush."""
    if not getattr(args, "otel", False):
        return None, lambda: None
    from ..experiments._otel import otel_tracer

    return otel_tracer()


def _calls_made(out: Path) -> int:
    """Calls the earlier processes of a resumed run made (its ledger; the preflight left out, as in the plan)."""
    from ..experiments._ledger import Ledger

    try:
        ledger = Ledger.load(out)
    except Exception:  # a damaged ledger: the run itself says so; the progress just counts from zero
        return 0
    return int(ledger.total()["calls"]) - int(ledger.preflight["calls"])
