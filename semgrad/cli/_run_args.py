"""The flags of ``semgrad run``: what runs, how it trains, what it may spend, and what to check first."""

from __future__ import annotations

import argparse
from typing import Any

from ._flags import HelpWithDefaults, add_call_flags, add_command, add_own_code_flags, add_pareto_flags
from ._terminal import EXIT_BUDGET

__all__ = ["add_run_parser"]

RUN_DESCRIPTION = """Run one of the paper's experiments, or your own system on your own data:

  semgrad run bbh:navigate --data-dir DATA
  semgrad run my_system.py:build --data items.jsonl --metric exact
  semgrad run my_system.py:build --data items.jsonl --metric my_metric.py:score --llm my_llm.py:make

Your system is a Python file or importable module with a function (build unless named after the colon)
that returns (graph, params). Each run gets a new folder (printed at the start) holding config.json, the
checkpoint, results.json and report.html. Continue one with `semgrad run --resume --out DIR`; a run of your
own system (or your --llm, --metric) must name it again (semgrad never imports code because a file names it).
See docs/your-own-system.md."""

_RUN_EPILOG = """\
failures and exit codes:
  Every call is counted; failed calls are counted by kind (server, timeout, rate_limit, auth,
  exception, ...) in the terminal, results.json ("errors", "errors_by_kind") and the report.
  0    the run finished
  1    it could not start (a missing key or extra, a failed preflight call), or its first
       {fail_fast} calls all failed (it stops at once), or more than {share} of its calls failed
       after retries (the results are written, but not to be trusted)
  {exit_budget}    the budget (--max-calls / --max-tokens) is spent: the run stopped and kept what it
       has; raise the limit and pass --resume to go on
  130  interrupted; pass --resume to go on
"""


def add_run_parser(commands: Any) -> argparse.ArgumentParser:
    """Add ``run`` to the subcommands; its parser (the handler is set by the caller)."""
    from ..experiments import FAIL_FAST_CALLS, MAX_ERROR_SHARE

    run = add_command(
        commands,
        "run",
        help="run one of the paper's experiments (bbh:<task>, bbh:all, gsm8k, liar) or your own system on your data",
        formatter_class=HelpWithDefaults,
        description=RUN_DESCRIPTION,
        epilog=_RUN_EPILOG.format(exit_budget=EXIT_BUDGET, fail_fast=FAIL_FAST_CALLS, share=f"{MAX_ERROR_SHARE:.0%}"),
    )
    _add_what_runs(run)
    _add_training(run)
    add_call_flags(run)
    _add_budget(run)
    _add_checks(run)
    run.add_argument("--breadth", type=int, default=10, help="COPRO's candidates per round (--optimizer copro)")
    add_pareto_flags(run)
    run.add_argument("--simulated-latency", type=float, default=0.0, help=argparse.SUPPRESS)
    run.add_argument("-q", "--quiet", action="store_true", help="no progress output")
    return run


def _add_what_runs(run: argparse.ArgumentParser) -> None:
    """The task or system, its data and metric, the backend and the run folder."""
    from ..experiments._config import NAMED_BACKENDS

    run.add_argument(
        "task",
        nargs="?",
        help="the task (bbh:navigate, bbh:all, gsm8k, liar), or your system FILE.py:FUNCTION or MODULE:FUNCTION "
        "with --data; optional with --resume (except for your own system, which must be typed again)",
    )
    run.add_argument("--data-dir", help="the folder that holds bbh/, gsm8k/ and liar/")
    add_own_code_flags(run)
    run.add_argument(
        "--backend",
        default="simulated",
        choices=NAMED_BACKENDS,
        help="simulated (offline), openai-compatible or anthropic (--llm replaces it)",
    )
    run.add_argument("--out", help="the run folder (default: a new folder runs/<task>-<date>-<time>)")


def _add_training(run: argparse.ArgumentParser) -> None:
    """The iterations, resuming, the optimizer and the protocol."""
    from ..experiments import OPTIMIZERS

    run.add_argument(
        "--iterations",
        type=int,
        default=None,
        help="optimisation iterations (default: the paper's, 4; liar 8; your own system 4)",
    )
    run.add_argument(
        "--resume",
        action="store_true",
        help="continue the run in --out as its config.json says; other flags may only extend it",
    )
    run.add_argument("--optimizer", default="neighbor-sgd", choices=OPTIMIZERS, help="the optimizer")
    run.add_argument(
        "--protocol",
        choices=("official", "heldout"),
        help="official (the default, unless --validation is given): the paper's splits, and the gate scores "
        "candidates on the training items and reuses that forward; an identical temperature-0 request of the "
        "training loop is answered once (a memo hit, no call) and a redrawn sample keeps its feedback, so a run "
        "makes at most the planned calls; heldout: the gate scores them on a disjoint validation split",
    )
    run.add_argument(
        "--param", help="with --optimizer one-parameter: the parameter trained alone, e.g. answer.instruction"
    )
    run.add_argument(
        "--gate-rule",
        default="sum",
        choices=("sum", "lcb"),
        help="how the gate accepts a candidate: sum (its mean score beats the best) or lcb (also a lower "
        "confidence bound of its paired per-item gain is positive: no lucky one-item wins)",
    )
    run.add_argument("--gate-alpha", type=float, default=0.05, help="the lcb rule's one-sided level")


def _add_budget(run: argparse.ArgumentParser) -> None:
    """The limits on calls and tokens, and the prices the cost is counted in."""
    run.add_argument(
        "--max-calls",
        type=int,
        help="at most this many requests reach the provider in this invocation, preflight, retries and "
        "evaluation included (cache hits are free); then stop cleanly, keeping what the run has",
    )
    run.add_argument(
        "--max-tokens",
        type=int,
        help="at most this many tokens (each call reserves its estimate before it starts; a reply that reports "
        "no usage keeps its estimate); then stop cleanly",
    )
    run.add_argument(
        "--prices",
        help="a JSON price table {model: [usd_per_1M_in, usd_per_1M_out]} (default: the dated table shipped "
        "in semgrad/data/prices.json)",
    )
    run.add_argument(
        "--batch",
        choices=("eval", "all"),
        help="send the final evaluation (all: every phase) through the provider's batch API, one batch per "
        "dependency level, at half price; answered within 24 hours (OpenAI's API, Anthropic). A killed run "
        "resumed with --resume picks up its batches instead of paying again",
    )
    run.add_argument(
        "--batch-poll",
        type=float,
        default=5.0,
        metavar="SECONDS",
        help="seconds before a batch's first status poll; the waits grow from there up to a minute",
    )


def _add_checks(run: argparse.ArgumentParser) -> None:
    """What to see before anything is called, and when to ask first."""
    run.add_argument(
        "--otel",
        action="store_true",
        help="send OpenTelemetry spans of the run, its iterations, phases and every call over OTLP/HTTP, configured "
        "by the OTEL_EXPORTER_OTLP_* variables (needs the otel extra)",
    )
    run.add_argument("--dry-run", action="store_true", help="count the calls, tokens and cost; call nothing")
    run.add_argument(
        "--show-prompts",
        type=int,
        metavar="N",
        help="print the exact first N requests of each purpose; call nothing",
    )
    run.add_argument("--yes", action="store_true", help="start without the confirmation prompt")
    run.add_argument("--confirm-above", type=float, default=1.0, help="ask before runs estimated above this many USD")
    run.add_argument("--confirm-calls", type=int, default=20000, help="ask before runs of more calls than this")
