"""The ``semgrad`` command line: demo, run, compare, report, graph, sweep."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from ._loaded import systems_loaded_once

__all__ = ["EXIT_BUDGET", "build_parser", "main"]

#: The exit code of a run that stopped because its budget (--max-calls / --max-tokens) was spent.
EXIT_BUDGET = 3


def _demo(args: argparse.Namespace) -> int:
    from . import _demo

    return _demo.main(quiet=args.quiet, iterations=args.iterations)


RUN_DESCRIPTION = """Run one of the paper's experiments, or your own system on your own data:

  semgrad run bbh:navigate --data-dir DATA
  semgrad run my_system.py:build --data items.jsonl --metric exact

Your system is a Python file or importable module with a function (build unless named after the colon)
that returns (graph, params). Each run gets a new folder (printed at the start) holding config.json, the
checkpoint, results.json and report.html. Continue one with `semgrad run --resume --out DIR`; a run of your
own system must name the system again (semgrad never imports code because a file names it)."""


def _config(args: argparse.Namespace, *, optimizer: str | None = None) -> Any:
    """The `RunConfig` of `run`'s flags (or `compare`'s, which lack a few: those keep their defaults)."""
    from .experiments import RunConfig
    from .tasks import paper_iterations

    task, data = args.task, getattr(args, "data", None)
    if data is not None:
        from .experiments._custom import canonical_spec

        task, data = canonical_spec(task), str(Path(data).resolve())
    return RunConfig(
        task=task,
        data_dir=args.data_dir,
        backend=args.backend,
        optimizer=optimizer or args.optimizer,
        iterations=args.iterations if args.iterations is not None else 4 if data else paper_iterations(task),
        k=args.k,
        seed=args.seed,
        train=args.train,
        validation=args.validation,
        test=args.test,
        base_url=args.base_url,
        model=args.model,
        forward_model=args.forward_model,
        backward_model=args.backward_model,
        optimizer_model=args.optimizer_model,
        concurrency=args.concurrency,
        timeout=args.timeout,
        cache=args.cache,
        max_calls=args.max_calls,
        max_tokens=args.max_tokens,
        simulated_latency=getattr(args, "simulated_latency", 0.0),
        breadth=args.breadth,
        protocol=args.protocol,
        param=args.param,
        temperature=args.temperature,
        max_output_tokens=args.max_output_tokens,
        **{
            f"{role}_{option}": getattr(args, f"{role}_{option}")
            for role in ("forward", "backward", "optimizer")
            for option in ("temperature", "max_output_tokens")
        },
        data=data,
        metric=getattr(args, "metric", "exact"),
        criteria=getattr(args, "criteria", None),
    )


def _typed(argv: Sequence[str]) -> dict[str, Any]:
    """The options of ``semgrad run`` that `argv` gives explicitly (defaults left out)."""
    parser = build_parser()
    run = next(a for a in parser._subparsers._group_actions if a.dest == "command").choices["run"]  # type: ignore[union-attr]
    for action in run._actions:
        action.default = argparse.SUPPRESS
    given = vars(parser.parse_args(list(argv)))
    return {k: v for k, v in given.items() if k not in ("command", "func", "debug", "no_uvloop")}


def _run_config(args: argparse.Namespace) -> tuple[Any, Path]:
    """The config and run folder: from the typed flags, or on --resume from the folder's config.json."""
    from .experiments._resume import load_saved_config, resumed_config
    from .experiments._runs import new_run_dir

    if args.resume:
        if args.out is None:
            raise ValueError("--resume needs --out DIR, the run folder to continue")
        given = _typed(args.argv)
        fields = {k: v for k, v in given.items() if k not in ("resume", "out")}
        return resumed_config(load_saved_config(args.out), fields, args.out), Path(args.out)
    if args.task is None:
        raise ValueError("semgrad run needs a task (e.g. bbh:navigate) or your system (my_system.py:build --data FILE)")
    if args.data is None:
        from .experiments._custom import is_system_spec

        if is_system_spec(args.task):
            raise ValueError(f"{args.task} looks like your own system: pass --data FILE (JSON Lines or CSV items)")
    config = _config(args)
    return config, Path(args.out) if args.out is not None else new_run_dir(config)


def _calls_made(out: Path) -> int:
    """Calls the earlier processes of a resumed run made (its ledger; the preflight left out, as in the plan)."""
    from .experiments._ledger import Ledger

    try:
        ledger = Ledger.load(out)
    except Exception:  # a damaged ledger: the run itself says so; the progress just counts from zero
        return 0
    return int(ledger.total()["calls"]) - int(ledger.preflight["calls"])


def _run(args: argparse.Namespace) -> int:
    from .experiments import build_llm, plan, run_experiment
    from .experiments._dry_run import report_of
    from .experiments._prices import load_prices
    from .experiments._progress import RunProgress
    from .experiments._run import _check_run_dir as check_run_dir

    config, out = _run_config(args)
    if args.show_prompts is None and not args.dry_run:
        check_run_dir(config, out, args.resume)  # before the plan, the prompt and the backend's cache
    prices = load_prices(args.prices)
    if args.show_prompts is not None:
        from .experiments._inspect import show_prompts

        print(show_prompts(config, args.show_prompts))
        return 0
    # The plan loads the tasks once (bad data fails here, before anything runs); the run takes them from it.
    planned = (
        plan(config, prices=prices.models) if args.dry_run or config.backend != "simulated" or not args.quiet else None
    )
    backend = None
    if config.backend != "simulated" and not args.dry_run:
        assert planned is not None
        backend = build_llm(config, planned.tasks)  # a missing key fails here, before anything runs
    if planned is not None and (args.dry_run or config.backend != "simulated"):
        report = report_of(planned)
        where = f" at {config.base_url}" if config.base_url and config.backend != "simulated" else ""
        print(
            ("Dry run" if args.dry_run else "This run will make at most")
            + f" ({config.task}, {config.backend}{where}):"
        )
        print(report.table())
        if not args.dry_run:
            print(
                f"(the preflight's {planned.preflight_calls} calls, retries, and repair requests after unreadable "
                "replies come on top: --max-calls caps them all)"
            )
        if config.backend != "simulated":
            print(f"(cost from {prices.describe()})")
        if args.dry_run:
            from .experiments._dry_run import dry_run_protocols, protocols_table

            print(f"Calls by protocol (this run: {config.protocol}):")
            print(protocols_table(dry_run_protocols(config, prices=prices.models, known=report)))
            return 0
        if not args.yes and ((report.cost_usd or 0) > args.confirm_above or report.total_calls > args.confirm_calls):
            if not sys.stdin.isatty():
                raise ValueError(
                    "this run is above the confirmation threshold; pass --yes to start it without a prompt"
                )
            if input("Start the run? [y/N] ").strip().lower() not in ("y", "yes"):
                print("not started")
                return 1
    banner = (
        "The LLM is SIMULATED (offline, deterministic): scores say nothing about real models."
        if config.backend == "simulated"
        else ""
    )
    if not args.quiet:
        print(f"{'Continuing' if args.resume else 'Writing'} the run in {out}", flush=True)
    progress = RunProgress(
        sys.stderr,
        planned=planned.total_calls if planned is not None else None,
        prices=None if config.backend == "simulated" else prices.models,
        quiet=args.quiet,
        banner=banner,
        already=_calls_made(out) if args.resume else 0,
    )
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
        )
    except KeyboardInterrupt:
        progress.close(finished=False)
        print(f"\nsemgrad: interrupted; the checkpoint in {out} is intact -- continue with --resume", file=sys.stderr)
        return 130
    except BaseException:
        progress.close(finished=False)  # the error's one line follows (main)
        raise
    progress.close(finished=not summary.get("stopped"))  # a stop is said below, with its reason
    if not args.quiet:
        for task in summary["tasks"]:
            acc = task["accuracy"]
            fmt = lambda v: "-" if v is None else f"{v:.3f}"  # noqa: E731
            scores = ", ".join(f"{part} {fmt(acc[part])}" for part in ("train", "validation", "test"))
            print(
                f"{task['task']}: {scores} (initial test {fmt(acc['initial_test'])})"
                + _errors_text(task)
                + _unanswered_text(task)
                + _carried_text(task)
            )
        unscored = summary.get("unscored_tasks") or []
        if len(summary["tasks"]) > 1 or unscored:
            both = (("item-weighted", summary["averages"]), ("unweighted", summary["averages_unweighted"]))
            for name, values in both:
                shown = ", ".join(f"{group} {fmt(v)}" for group, v in values.items() if v is not None)
                print(f"averages over tasks ({name}): {shown or 'none'}")
            if unscored:
                listed = ", ".join(unscored[:3]) + (", ..." if len(unscored) > 3 else "")
                print(f"no average for a group with a task that has no test score: {len(unscored)} such ({listed})")
        print(
            f"Wrote {out / 'results.json'}" + (f" and {out / 'report.html'}" if (out / "report.html").exists() else "")
        )
    if summary.get("stopped") == "budget":
        print(
            f"semgrad: stopped: {summary['stopped_detail']}; what the run has is in {out} "
            "-- raise --max-calls / --max-tokens and pass --resume to go on",
            file=sys.stderr,
        )
        return EXIT_BUDGET
    return 0


def _compare(args: argparse.Namespace) -> int:
    from .experiments import compare, parse_optimizers

    optimizers = parse_optimizers(args.optimizers)
    if args.param and "one-parameter" not in optimizers:
        raise ValueError("--param is for the one-parameter optimizer, which --optimizers does not list")
    # `compare` gives each optimizer its turn, and `param` to one-parameter alone.
    config = _config(args, optimizer="one-parameter" if args.param else "neighbor-sgd")
    from .experiments._prices import load_prices

    prices = load_prices(args.prices).models
    if not args.dry_run and config.backend != "simulated" and not args.yes:
        raise ValueError(
            "a comparison on a real backend calls it for every optimizer; check it with --dry-run, then pass --yes"
        )
    if config.backend == "simulated" and not args.quiet:
        print("The LLM is SIMULATED (offline, deterministic): scores say nothing about real models.", file=sys.stderr)
    out = Path(args.out)

    def show(optimizer: str, task: str, event: Any) -> None:
        if not args.quiet and event.phase in ("done", "evaluating"):
            print(
                f"{optimizer}: {task} {event.phase} {event.iteration}/{event.iterations} ({event.calls} calls)",
                file=sys.stderr,
                flush=True,
            )

    summary = compare(config, optimizers, out, dry_run_only=args.dry_run, prices=prices, on_progress=show)
    from .report._compare import compare_table

    if args.dry_run:
        print(f"Dry run ({config.task}, {config.backend}, {config.iterations} iterations): nothing was called.")
    print(compare_table(summary))
    if not args.dry_run:
        print(f"Wrote {out / 'compare.json'}, {out / 'compare.md'} and {out / 'compare.html'}")
    stopped = [m for m in summary["methods"] if m.get("stopped")]
    for method in stopped:
        detail = method.get("stopped_detail") or method["stopped"]
        print(f"semgrad: {method['optimizer']} stopped early: {detail}; its row is partial", file=sys.stderr)
    return EXIT_BUDGET if any(m["stopped"] == "budget" for m in stopped) else 0


def _errors_text(task: dict[str, Any]) -> str:
    if not task.get("errors"):
        return ""
    kinds = ", ".join(f"{k} {n}" for k, n in sorted(task["errors_by_kind"].items(), key=lambda kv: -kv[1]))
    return f"; {task['errors']} calls without a reply ({kinds})"


def _carried_text(task: dict[str, Any]) -> str:
    """Which scores an earlier process of a resumed run computed (read back from its ledger.json)."""
    carried = [str(split).replace("_", " ") for split in task.get("carried_over") or ()]
    return f"; {', '.join(carried)} scored by an earlier process of this run" if carried else ""


def _unanswered_text(task: dict[str, Any]) -> str:
    """How many test samples got no answer at all: a score of 0 from unreadable replies is not a wrong answer."""
    predictions = task.get("predictions") or []
    missing = sum(1 for p in predictions if isinstance(p, dict) and p.get("output") is None)
    if not missing:
        return ""
    return (
        f"; {missing} of {len(predictions)} test samples have no answer "
        "(unreadable or failed replies: each sample's errors are in results.json)"
    )


def _report(args: argparse.Namespace) -> int:
    from .report import write_report

    path = write_report(Path(args.run_dir))
    print(f"Wrote {path}")
    return 0


#: The largest layered graph `semgrad graph` draws: each side, and nodes in all (a drawing of more is unreadable).
MAX_LAYERED_SIDE, MAX_LAYERED_NODES = 100, 1000


def _check_layered_size(width: int, depth: int) -> None:
    if not 1 <= width <= MAX_LAYERED_SIDE or not 0 <= depth <= MAX_LAYERED_SIDE or width * depth > MAX_LAYERED_NODES:
        raise ValueError(
            f"--width {width} --depth {depth} is not a graph to draw: --width must be 1 to {MAX_LAYERED_SIDE}, "
            f"--depth 0 to {MAX_LAYERED_SIDE}, and width x depth at most {MAX_LAYERED_NODES} nodes"
        )


def _graph(args: argparse.Namespace) -> int:
    from .graphviz import to_dot, to_mermaid
    from .topologies import layered_graph, liar_graph, paper_graph

    if args.topology == "layered":
        _check_layered_size(args.width, args.depth)
    builders = {"paper": paper_graph, "liar": liar_graph, "layered": lambda: layered_graph(args.width, args.depth)}
    graph, _ = builders[args.topology]()
    print(to_dot(graph) if args.format == "dot" else to_mermaid(graph))
    return 0


def _sweep(args: argparse.Namespace) -> int:
    from .sweeps import SweepError, load_spec, run_sweep

    if args.max_parallel is not None and args.max_parallel < 1:
        raise SweepError(f"--max-parallel must be at least 1, got {args.max_parallel}")
    if args.num_cpus is not None and args.num_cpus < 1:  # 0 would be taken as no value: all the CPUs
        raise SweepError(f"--num-cpus must be at least 1, got {args.num_cpus}")
    spec = load_spec(args.spec)
    out = Path(args.out) if args.out else Path("sweeps") / spec.name
    total, done = len(spec.runs()), [0]
    if spec.backend == "simulated" and not args.quiet:
        print("The LLM is SIMULATED (offline, deterministic): scores say nothing about real models.", file=sys.stderr)

    def show(outcome: Any) -> None:
        done[0] += 1
        if args.quiet:
            return
        if outcome.status == "failed":
            detail = f"failed: {outcome.error}"
        else:
            test = "-" if outcome.test is None else f"{outcome.test:.3f}"
            calls = f", {outcome.calls} calls" if outcome.status != "skipped" else ""
            errors = f", {outcome.errors} without a reply" if outcome.errors else ""
            stopped = f", stopped: {outcome.stopped}" if outcome.stopped else ""
            detail = f"{outcome.status}, test {test}{calls}{errors}{stopped}"
        print(f"[{done[0]}/{total}] {outcome.name}: {detail}", file=sys.stderr, flush=True)

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
    if not args.quiet:
        print(f"Wrote {result.json_path} and {result.html_path}")
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


class _HelpWithDefaults(argparse.RawDescriptionHelpFormatter, argparse.ArgumentDefaultsHelpFormatter):
    """Help that keeps the description's lines and shows each option's default, when it has one worth showing."""

    def _get_help_string(self, action: argparse.Action) -> str:
        if action.default is None or action.default is False or "default" in (action.help or ""):
            return action.help or ""
        return super()._get_help_string(action) or ""


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


def _shared_flags(parser: argparse.ArgumentParser) -> None:
    """The flags `run` and `compare` share: the split and seed, the server, models and sampling, and the calls."""
    parser.add_argument("--k", type=int, default=2, help="error samples per iteration")
    parser.add_argument("--seed", type=int, default=0, help="the seed of the split and the optimizer")
    parser.add_argument("--train", type=int, help="training items (default: the paper's)")
    parser.add_argument("--validation", type=int, help="validation items")
    parser.add_argument("--test", type=int, help="test items (default: all held out)")
    parser.add_argument("--base-url", help="the API root of an OpenAI-compatible or Anthropic server")
    parser.add_argument(
        "--model",
        help="the model for every role (default: gpt-4o-mini on openai-compatible, claude-haiku-4-5 on anthropic; "
        "a paper task under --protocol official on openai-compatible: forward gpt-4o-mini, backward and optimizer "
        "gpt-4-turbo, as the paper ran)",
    )
    parser.add_argument("--forward-model", help="the model for forward calls")
    parser.add_argument(
        "--backward-model", help="the model for backward calls (default: --optimizer-model, as the paper's code)"
    )
    parser.add_argument(
        "--optimizer-model", help="the model for rewrite and critique calls, and backward ones unless --backward-model"
    )
    parser.add_argument(
        "--temperature",
        type=_temperature,
        default=0.0,
        help="sampling temperature of every call (default: 0), or none to send none: for models that refuse one "
        "(Claude Opus 4.7, OpenAI's reasoning models); a role's own --ROLE-temperature is still sent",
    )
    parser.add_argument("--max-output-tokens", type=int, default=1024, help="reply length cap of every call")
    for role in ("forward", "backward", "optimizer"):
        parser.add_argument(f"--{role}-temperature", type=float, help=f"the temperature of {role} calls")
        parser.add_argument(f"--{role}-max-output-tokens", type=int, help=f"the reply length cap of {role} calls")
    parser.add_argument("--concurrency", type=int, default=8, help="calls in flight at most")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per call")
    parser.add_argument("--cache", help="a SQLite file caching replies (re-runs make no repeated calls)")


def _temperature(text: str) -> float | None:
    """A temperature, or None for ``none`` (no temperature is sent)."""
    if text.strip().lower() == "none":
        return None
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"a number or none, got {text!r}") from None


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``semgrad`` command."""
    from . import __version__
    from .experiments import BACKENDS, FAIL_FAST_CALLS, MAX_ERROR_SHARE, OPTIMIZERS

    parser = argparse.ArgumentParser(
        prog="semgrad", description="Semantic backpropagation for LLM-based agentic systems."
    )
    parser.add_argument("--version", action="version", version=f"semgrad {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    parser.add_argument(
        "--no-uvloop",
        action="store_true",
        help="use asyncio's own event loop even where uvloop is installed (also: SEMGRAD_UVLOOP=0)",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    demo = sub.add_parser(
        "demo",
        help="an offline optimisation of the paper's graph on the built-in simulated LLM",
        formatter_class=_HelpWithDefaults,
    )
    demo.add_argument("-q", "--quiet", action="store_true", help="print less")
    demo.add_argument("--iterations", type=int, default=3, help="optimisation iterations (default 3)")
    demo.set_defaults(func=_demo)

    run = sub.add_parser(
        "run",
        help="run one of the paper's experiments (bbh:<task>, bbh:all, gsm8k, liar) or your own system on your data",
        formatter_class=_HelpWithDefaults,
        description=RUN_DESCRIPTION,
        epilog=_RUN_EPILOG.format(exit_budget=EXIT_BUDGET, fail_fast=FAIL_FAST_CALLS, share=f"{MAX_ERROR_SHARE:.0%}"),
    )
    run.add_argument(
        "task",
        nargs="?",
        help="the task (bbh:navigate, bbh:all, gsm8k, liar), or your system FILE.py:FUNCTION or MODULE:FUNCTION "
        "with --data; optional with --resume (except for your own system, which must be typed again)",
    )
    run.add_argument("--data-dir", help="the folder that holds bbh/, gsm8k/ and liar/")
    run.add_argument("--data", help="your items: JSON Lines {'inputs': {...}, 'target': ...} or CSV (a target column)")
    run.add_argument(
        "--metric",
        default="exact",
        choices=("exact", "normalized", "numeric", "judge"),
        help="how your items are scored: normalised exact match, numbers, or an LLM judge; a paper task is "
        "scored by its protocol's metric (exact) unless normalized or numeric replaces it",
    )
    run.add_argument("--criteria", help="the LLM judge's criteria (--metric judge)")
    run.add_argument(
        "--backend", default="simulated", choices=BACKENDS, help="simulated (offline), openai-compatible or anthropic"
    )
    run.add_argument("--out", help="the run folder (default: a new folder runs/<task>-<date>-<time>)")
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
        "candidates on the training items and reuses that forward; heldout: the gate scores them on a disjoint "
        "validation split",
    )
    run.add_argument(
        "--param", help="with --optimizer one-parameter: the parameter trained alone, e.g. answer.instruction"
    )
    _shared_flags(run)
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
    run.add_argument("--breadth", type=int, default=10, help="COPRO's candidates per round (--optimizer copro)")
    run.add_argument("--simulated-latency", type=float, default=0.0, help=argparse.SUPPRESS)
    run.add_argument("-q", "--quiet", action="store_true", help="no progress output")
    run.set_defaults(func=_run)

    cmp = sub.add_parser(
        "compare", help="run several optimizers on one task (same splits and seed) and tabulate them side by side"
    )
    cmp.add_argument("task", help="the task, e.g. bbh:navigate, gsm8k")
    cmp.add_argument(
        "--optimizers",
        default="neighbor-sgd,textgrad,optoprime,copro",
        help=f"comma-separated, from: {', '.join(OPTIMIZERS)} (default neighbor-sgd,textgrad,optoprime,copro)",
    )
    cmp.add_argument("--data-dir", help="the folder that holds bbh/, gsm8k/ and liar/")
    cmp.add_argument("--backend", default="simulated", choices=BACKENDS)
    cmp.add_argument("--out", default="runs/compare", help="the comparison directory (default runs/compare)")
    cmp.add_argument(
        "--iterations", type=int, help="optimisation iterations (default: the paper's, 4; liar 8; your own system 4)"
    )
    cmp.add_argument("--breadth", type=int, default=10, help="COPRO's candidates per round (default 10)")
    _shared_flags(cmp)
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
    cmp.set_defaults(func=_compare)

    report = sub.add_parser("report", help="(re)write report.html of a run directory")
    report.add_argument("run_dir")
    report.set_defaults(func=_report)

    graph = sub.add_parser(
        "graph", help="print a topology as Graphviz DOT or Mermaid", formatter_class=_HelpWithDefaults
    )
    graph.add_argument("topology", choices=("paper", "liar", "layered"))
    graph.add_argument("--format", choices=("dot", "mermaid"), default="dot", help="the output format")
    graph.add_argument("--width", type=int, default=4, help="nodes per layer (layered)")
    graph.add_argument("--depth", type=int, default=4, help="layers (layered)")
    graph.set_defaults(func=_graph)

    from .sweeps._spec_format import SPEC_HELP

    sweep = sub.add_parser(
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
    sweep.add_argument("-q", "--quiet", action="store_true", help="no progress output")
    sweep.set_defaults(func=_sweep)
    return parser


@contextlib.contextmanager
def _event_loop_choice(*, no_uvloop: bool) -> Iterator[None]:
    """With `no_uvloop`, set ``SEMGRAD_UVLOOP=0`` while the command runs (its event loops, and
    the sweep workers it starts, then keep asyncio's own loop), and restore it afterwards."""
    if not no_uvloop:
        yield
        return
    from .effects._loop import UVLOOP_ENV

    before = os.environ.get(UVLOOP_ENV)
    os.environ[UVLOOP_ENV] = "0"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(UVLOOP_ENV, None)
        else:
            os.environ[UVLOOP_ENV] = before


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
        print(f"semgrad: error: {one_line(str(exc)) or type(exc).__name__}", file=sys.stderr)
        return 1


def one_line(text: str) -> str:
    r"""`text` on one line for a terminal: whitespace runs as one space, other control characters escaped.

    An error may quote a file's contents (a run folder's config.json, say): its escape sequences must not
    reach the terminal, which would act on them.

    Examples:
        >>> one_line("bad\n  value \x1b]52;c;ZWNobw==\x07!")
        'bad value \\x1b]52;c;ZWNobw==\\x07!'
    """
    flat = " ".join(text.split())
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in flat)


if __name__ == "__main__":
    sys.exit(main())
