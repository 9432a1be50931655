"""The ``semgrad`` command line: demo, run, compare, report, graph, sweep."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

__all__ = ["EXIT_BUDGET", "build_parser", "main"]

#: The exit code of a run that stopped because its budget (--max-calls / --max-tokens) was spent.
EXIT_BUDGET = 3


def _demo(args: argparse.Namespace) -> int:
    from . import _demo

    return _demo.main(quiet=args.quiet, iterations=args.iterations)


class ProgressBar:
    """A one-line progress display on stderr (a bar on a terminal, plain lines otherwise)."""

    def __init__(self, stream: TextIO, *, quiet: bool, banner: str = "") -> None:
        self.stream, self.quiet, self.banner = stream, quiet, banner
        self.tty = hasattr(stream, "isatty") and stream.isatty()

    def __call__(self, task: str, event: Any) -> None:
        if self.quiet:
            return
        if self.banner:
            self.stream.write(self.banner + "\n")
            self.banner = ""
        done = min(event.iteration, event.iterations)
        width = 20
        filled = int(width * done / event.iterations) if event.iterations else width
        bar = "#" * filled + "-" * (width - filled)
        score = "" if event.score is None else f" train {event.score:.2f}"
        line = f"{task} [{bar}] {done}/{event.iterations} {event.phase}{score} ({event.calls} calls)"
        if self.tty:
            self.stream.write("\r\x1b[2K" + line)
            if event.phase == "evaluating":
                self.stream.write("\n")
        elif event.phase in ("done", "evaluating"):
            self.stream.write(line + "\n")
        self.stream.flush()


def _config(args: argparse.Namespace) -> Any:
    from .experiments import RunConfig
    from .tasks import paper_iterations

    return RunConfig(
        task=args.task,
        data_dir=args.data_dir,
        backend=args.backend,
        optimizer=args.optimizer,
        iterations=paper_iterations(args.task) if args.iterations is None else args.iterations,
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
        simulated_latency=args.simulated_latency,
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
    )


def _prices(path: str | None) -> dict[str, tuple[float, float]] | None:
    if not path:
        return None
    try:
        data = json.loads(Path(path).read_text("utf-8"))
        return {str(model): (float(p[0]), float(p[1])) for model, p in data.items()}
    except (OSError, ValueError, TypeError, IndexError, AttributeError) as exc:
        raise ValueError(
            f"cannot read the price table {path}: expected JSON {{model: [usd_per_1M_in, usd_per_1M_out]}} ({exc})"
        ) from None


def _run(args: argparse.Namespace) -> int:
    from .experiments import build_llm, dry_run, load_run_tasks, run_experiment

    config = _config(args)
    if config.backend != "simulated" and not args.dry_run:
        build_llm(config, load_run_tasks(config))  # a missing key or bad data fails here, before anything runs
    if args.dry_run or config.backend != "simulated":
        report = dry_run(config, prices=_prices(args.prices))
        print(("Dry run" if args.dry_run else "This run will make at most") + f" ({config.task}, {config.backend}):")
        print(report.table())
        if args.dry_run:
            from .experiments._dry_run import dry_run_protocols, protocols_table

            print(f"Calls by protocol (this run: {config.protocol}):")
            print(protocols_table(dry_run_protocols(config, prices=_prices(args.prices))))
            return 0
        if not args.yes and ((report.cost_usd or 0) > args.confirm_above or report.total_calls > args.confirm_calls):
            if not sys.stdin.isatty():
                raise ValueError(
                    "this run is above the confirmation threshold; pass --yes to start it without a prompt"
                )
            if input("Start the run? [y/N] ").strip().lower() not in ("y", "yes"):
                print("not started")
                return 1
    out = Path(args.out)
    banner = (
        "The LLM is SIMULATED (offline, deterministic): scores say nothing about real models."
        if config.backend == "simulated"
        else ""
    )
    try:
        summary = run_experiment(
            config,
            out,
            resume=args.resume,
            on_progress=ProgressBar(sys.stderr, quiet=args.quiet, banner=banner),
            prices=_prices(args.prices),
        )
    except KeyboardInterrupt:
        print(f"\nsemgrad: interrupted; the checkpoint in {out} is intact -- continue with --resume", file=sys.stderr)
        return 130
    if not args.quiet:
        for task in summary["tasks"]:
            acc = task["accuracy"]
            fmt = lambda v: "-" if v is None else f"{v:.3f}"  # noqa: E731
            scores = ", ".join(f"{part} {fmt(acc[part])}" for part in ("train", "validation", "test"))
            print(f"{task['task']}: {scores} (initial test {fmt(acc['initial_test'])}){_errors_text(task)}")
        if len(summary["tasks"]) > 1:
            both = (("item-weighted", summary["averages"]), ("unweighted", summary["averages_unweighted"]))
            for name, values in both:
                shown = ", ".join(f"{group} {fmt(v)}" for group, v in values.items() if v is not None)
                print(f"averages over tasks ({name}): {shown}")
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
    from .experiments import RunConfig, compare, parse_optimizers

    optimizers = parse_optimizers(args.optimizers)
    config = RunConfig(
        task=args.task,
        data_dir=args.data_dir,
        backend=args.backend,
        iterations=args.iterations,
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
        breadth=args.breadth,
    )
    prices = _prices(args.prices)
    if not args.dry_run and config.backend != "simulated" and not args.yes:
        raise ValueError("a comparison on a real backend calls it for every optimizer; check it with --dry-run, "
                         "then pass --yes")
    if config.backend == "simulated" and not args.quiet:
        print("The LLM is SIMULATED (offline, deterministic): scores say nothing about real models.", file=sys.stderr)
    out = Path(args.out)

    def show(optimizer: str, task: str, event: Any) -> None:
        if not args.quiet and event.phase in ("done", "evaluating"):
            print(f"{optimizer}: {task} {event.phase} {event.iteration}/{event.iterations} ({event.calls} calls)",
                  file=sys.stderr, flush=True)

    summary = compare(config, optimizers, out, dry_run_only=args.dry_run, prices=prices, on_progress=show)
    from .report._compare import compare_table

    if args.dry_run:
        print(f"Dry run ({config.task}, {config.backend}, {config.iterations} iterations): nothing was called.")
    print(compare_table(summary))
    if not args.dry_run:
        print(f"Wrote {out / 'compare.json'}, {out / 'compare.md'} and {out / 'compare.html'}")
    return 0


def _errors_text(task: dict[str, Any]) -> str:
    if not task.get("errors"):
        return ""
    kinds = ", ".join(f"{k} {n}" for k, n in sorted(task["errors_by_kind"].items(), key=lambda kv: -kv[1]))
    return f"; {task['errors']} calls without a reply ({kinds})"


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
    return 0


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


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``semgrad`` command."""
    from .experiments import BACKENDS, FAIL_FAST_CALLS, MAX_ERROR_SHARE, OPTIMIZERS

    parser = argparse.ArgumentParser(
        prog="semgrad", description="Semantic backpropagation for LLM-based agentic systems."
    )
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    sub = parser.add_subparsers(dest="command", required=True)

    demo = sub.add_parser("demo", help="an offline optimisation of the paper's graph on the built-in simulated LLM")
    demo.add_argument("-q", "--quiet", action="store_true", help="print less")
    demo.add_argument("--iterations", type=int, default=3, help="optimisation iterations (default 3)")
    demo.set_defaults(func=_demo)

    run = sub.add_parser(
        "run",
        help="run one of the paper's experiments (bbh:<task>, bbh:all, gsm8k, liar)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=_RUN_EPILOG.format(
            exit_budget=EXIT_BUDGET, fail_fast=FAIL_FAST_CALLS, share=f"{MAX_ERROR_SHARE:.0%}"
        ),
    )
    run.add_argument("task", help="the task, e.g. bbh:navigate, bbh:all, gsm8k, liar")
    run.add_argument("--data-dir", help="the folder that holds bbh/, gsm8k/ and liar/")
    run.add_argument(
        "--backend", default="simulated", choices=BACKENDS, help="simulated (offline), openai-compatible or anthropic"
    )
    run.add_argument("--out", default="runs/latest", help="the run directory (default runs/latest)")
    run.add_argument(
        "--iterations", type=int, default=None, help="optimisation iterations (default: the paper's, 4; liar 8)"
    )
    run.add_argument("--resume", action="store_true", help="continue the run in --out from its checkpoint")
    run.add_argument("--optimizer", default="neighbor-sgd", choices=OPTIMIZERS)
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
    run.add_argument("--k", type=int, default=2, help="error samples per iteration (default 2)")
    run.add_argument("--seed", type=int, default=0)
    run.add_argument("--train", type=int, help="training items (default: the paper's)")
    run.add_argument("--validation", type=int, help="validation items")
    run.add_argument("--test", type=int, help="test items (default: all held out)")
    run.add_argument("--base-url", help="the API root of an OpenAI-compatible or Anthropic server")
    run.add_argument("--model", help="the model for every role")
    run.add_argument("--forward-model", help="the model for forward calls")
    run.add_argument("--backward-model", help="the model for backward calls")
    run.add_argument("--optimizer-model", help="the model for rewrite and critique calls")
    run.add_argument("--temperature", type=float, default=0.0, help="sampling temperature of every call (default 0)")
    run.add_argument(
        "--max-output-tokens", type=int, default=1024, help="reply length cap of every call (default 1024)"
    )
    for role in ("forward", "backward", "optimizer"):
        run.add_argument(f"--{role}-temperature", type=float, help=f"the temperature of {role} calls")
        run.add_argument(f"--{role}-max-output-tokens", type=int, help=f"the reply length cap of {role} calls")
    run.add_argument("--concurrency", type=int, default=8, help="calls in flight at most (default 8)")
    run.add_argument("--timeout", type=float, default=120.0, help="seconds per call")
    run.add_argument("--cache", help="a SQLite file caching replies (re-runs make no repeated calls)")
    run.add_argument(
        "--max-calls",
        type=int,
        help="at most this many requests reach the provider in this invocation, preflight, retries and "
        "evaluation included (cache hits are free); then stop cleanly, keeping what the run has",
    )
    run.add_argument(
        "--max-tokens",
        type=int,
        help="at most this many tokens (each call reserves its estimate before it starts); then stop cleanly",
    )
    run.add_argument("--prices", help="a JSON price table {model: [usd_per_1M_in, usd_per_1M_out]}")
    run.add_argument("--dry-run", action="store_true", help="count the calls, tokens and cost; call nothing")
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
    cmp.add_argument("--iterations", type=int, default=4)
    cmp.add_argument("--k", type=int, default=2, help="error samples per iteration (default 2)")
    cmp.add_argument("--breadth", type=int, default=10, help="COPRO's candidates per round (default 10)")
    cmp.add_argument("--seed", type=int, default=0)
    cmp.add_argument("--train", type=int, help="training items (default: the paper's)")
    cmp.add_argument("--validation", type=int, help="validation items")
    cmp.add_argument("--test", type=int, help="test items (default: all held out)")
    cmp.add_argument("--base-url", help="the API root of an OpenAI-compatible or Anthropic server")
    cmp.add_argument("--model", help="the model for every role")
    cmp.add_argument("--forward-model", help="the model for forward calls")
    cmp.add_argument("--backward-model", help="the model for backward calls")
    cmp.add_argument("--optimizer-model", help="the model for rewrite and critique calls")
    cmp.add_argument("--concurrency", type=int, default=8, help="calls in flight at most (default 8)")
    cmp.add_argument("--timeout", type=float, default=120.0, help="seconds per call")
    cmp.add_argument("--cache", help="a SQLite file caching replies")
    cmp.add_argument("--prices", help="a JSON price table {model: [usd_per_1M_in, usd_per_1M_out]}")
    cmp.add_argument("--dry-run", action="store_true", help="each optimizer's calls, tokens and cost; call nothing")
    cmp.add_argument("--yes", action="store_true", help="allow a real backend (check the cost with --dry-run first)")
    cmp.add_argument("-q", "--quiet", action="store_true", help="no progress output")
    cmp.set_defaults(func=_compare)

    report = sub.add_parser("report", help="(re)write report.html of a run directory")
    report.add_argument("run_dir")
    report.set_defaults(func=_report)

    graph = sub.add_parser("graph", help="print a topology as Graphviz DOT or Mermaid")
    graph.add_argument("topology", choices=("paper", "liar", "layered"))
    graph.add_argument("--format", choices=("dot", "mermaid"), default="dot")
    graph.add_argument("--width", type=int, default=4)
    graph.add_argument("--depth", type=int, default=4)
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
        message = " ".join(str(exc).split()) or type(exc).__name__
        print(f"semgrad: error: {message}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
