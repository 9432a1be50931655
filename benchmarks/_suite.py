"""Run the selected workloads, print a table, write the JSON report."""

from __future__ import annotations

import argparse
import datetime as _dt
import importlib.metadata
import json
import os
import platform
import sys
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from . import _workloads as w
from ._tables import FLOORS, format_comparison, format_markdown, format_table
from ._workloads import Settings

__all__ = [
    "FAMILIES",
    "format_comparison",
    "format_markdown",
    "format_table",
    "machine_info",
    "main",
    "run_suite",
    "textgrad_available",
]

FAMILIES = ("W1", "W2", "W3", "W4", "W5", "W6", "W7")
DEFAULT_OUTPUT = Path(__file__).parent / "results" / "latest.json"


def _version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def machine_info() -> dict[str, Any]:
    """Platform, CPUs, Python, library versions and the load when the run began."""
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        usable = os.cpu_count()
    try:
        load = [round(x, 2) for x in os.getloadavg()]
    except OSError:  # pragma: no cover
        load = None
    return {
        "platform": platform.platform(),
        "machine": platform.machine(),
        "processor": platform.processor() or None,
        "cpu_count": os.cpu_count(),
        "usable_cpus": usable,
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "semgrad": _version("semgrad"),
        "anyio": _version("anyio"),
        "uvloop": _version("uvloop"),
        "textgrad": _version("textgrad") if textgrad_available() else None,
        "load_average_at_start": load,
    }


def textgrad_available() -> bool:
    """True when `textgrad` can be imported here (never a runtime dependency; the test extra has it)."""
    import importlib.util

    return importlib.util.find_spec("textgrad") is not None


def _key(family: str, latency: float | None = None, base: str | None = None) -> str:
    name = f"{family}-{base}" if base else family
    return name if latency is None else f"{name}@{latency:g}"


def _warm_up() -> None:
    """Import-time and first-call costs (anyio backend, attrs validators) off the clock."""
    s = Settings.tiny()
    w.w1_forward(s, 0.0005)
    w.w4_deep(s, 0.0005)


def run_suite(
    settings: Settings,
    only: Sequence[str] = FAMILIES,
    *,
    output: Path | None = DEFAULT_OUTPUT,
    textgrad: bool | None = None,
    echo: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Run the workloads in `only`; return the report and write it to `output` (None: don't).

    `textgrad=None` compares with TextGrad when it is importable. Each workload's
    rows are ``report["workloads"][key][system]``: ``"semgrad"``; for W1, W4 and W5
    also ``"anyio_floor"`` and ``"anyio_floor_parked"`` (`benchmarks._floor`: ``wall_s``, ``limit_s``,
    ``wall_over_limit``, ``walls_s``, ...), and on uvloop (`Settings.loops`) ``"semgrad_uvloop"``,
    ``"anyio_floor_uvloop"``, ``"anyio_floor_parked_uvloop"``; ``"textgrad"``, ``"textgrad_threads"``.
    """
    unknown = [f for f in only if f not in FAMILIES]
    if unknown:
        raise ValueError(f"unknown workload(s) {unknown}; choose from {', '.join(FAMILIES)}")
    use_textgrad = textgrad_available() if textgrad is None else textgrad
    report: dict[str, Any] = {
        "date": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "machine": machine_info(),
        "settings": _settings_dict(settings),
        "workloads": {},
        "notes": [],
    }
    workloads: dict[str, Any] = report["workloads"]
    started = time.perf_counter()
    _warm_up()

    def step(key: str, fn: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        t0 = time.perf_counter()
        row = fn()
        floors = {name: row.pop(name) for name in FLOORS if name in row}  # W1, W4, W5 (`benchmarks._floor`)
        workloads.setdefault(key, {})["semgrad"] = row
        workloads[key].update(floors)
        echo(f"  {key:<18} done in {time.perf_counter() - t0:6.1f} s")
        return row

    for latency in settings.latencies:
        if "W1" in only:
            step(_key("W1", latency), partial(w.w1_forward, settings, latency))
        if "W2" in only:
            row = step(_key("W2", latency), partial(w.w2_iteration, settings, latency))
            if "skipped" in row:
                echo(f"  note: W2 skipped: {row['skipped']}")
                note = f"W2 skipped: {row['skipped']}"
                if note not in report["notes"]:
                    report["notes"].append(note)
        if "W4" in only:
            step(_key("W4", latency), partial(w.w4_deep, settings, latency))
        if "W5" in only:
            for base in ("W1", "W4"):
                step(_key("W5", latency, base), partial(w.w5_jitter, settings, latency, base))
        # The other ways of waiting (`Settings.wakes`), at short latencies only: at 1 s a
        # millisecond of rounding per call is a tenth of a percent.
        for wake in settings.wakes[1:] if latency < settings.long_latency else ():
            if "W1" in only:
                step(f"{_key('W1', latency)} {wake}", partial(w.w1_forward, settings, latency, wake))
            if "W4" in only:
                step(f"{_key('W4', latency)} {wake}", partial(w.w4_deep, settings, latency, wake))
            if "W5" in only:
                for base in ("W1", "W4"):
                    step(f"{_key('W5', latency, base)} {wake}", partial(w.w5_jitter, settings, latency, base, wake))
    if "W3" in only:
        step("W3", lambda: w.w3_overhead(settings))
    if "W6" in only:
        row = step("W6", lambda: w.w6_scale_fresh(settings))
        if row.get("note"):
            report["notes"].append(f"W6: {row['note']}")
    if "W7" in only:
        step("W7", lambda: w.w7_throughput(settings))

    if use_textgrad:
        from . import textgrad_compare

        textgrad_compare.add_rows(report, settings, only, echo=echo)
    elif any(f in only for f in ("W1", "W3", "W4")):
        report["notes"].append("TextGrad is not importable here: no comparison rows (see benchmarks/README.md).")

    report["elapsed_s"] = round(time.perf_counter() - started, 1)
    if output is not None:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(json.dumps(report, indent=2, sort_keys=False) + "\n", encoding="utf-8")
    return report


def _settings_dict(settings: Settings) -> dict[str, Any]:
    out = {}
    for name in Settings.__dataclass_fields__:
        value = getattr(settings, name)
        if name == "extra" and not value:
            continue
        out[name] = list(value) if isinstance(value, tuple) else value
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks", description="semgrad's benchmark suite (fake LLMs, no network)."
    )
    parser.add_argument("--quick", action="store_true", help="small sizes, 20 ms only: well under a minute")
    parser.add_argument(
        "--only", default=",".join(FAMILIES), help="comma-separated workloads, e.g. W1,W3 (default: all)"
    )
    parser.add_argument("--repeats", type=int, default=None, help="runs per short-latency workload (median reported)")
    parser.add_argument(
        "--w6-samples", type=int, default=None, help="samples for W6 (default 100, reduced to fit the time budget)"
    )
    parser.add_argument("--w6-budget", type=float, default=None, help="seconds W6's timing runs may take")
    parser.add_argument(
        "--loops",
        default=None,
        help="event loops for W1, W4 and W5, comma-separated (default: asyncio, and uvloop where installed)",
    )
    parser.add_argument(
        "--wakes",
        default=None,
        help="how fake calls wait out their latency, comma-separated, the first for every row: fd (a Linux "
        "timerfd, as precise as a socket's reply) and/or timer (the event loop's timers, rounded up to the "
        "millisecond); default: fd,timer where Linux has timerfd, else timer",
    )
    parser.add_argument(
        "--no-textgrad", action="store_true", help="skip the TextGrad comparison even if it is importable"
    )
    parser.add_argument("--output", default=str(DEFAULT_OUTPUT), help="where to write the JSON report ('-': nowhere)")
    parser.add_argument(
        "--markdown", metavar="REPORT", default=None, help="print REPORT's table as Markdown and exit (no run)"
    )
    parser.add_argument(
        "--cost",
        action="store_true",
        help="print the cost row (the official code's bill against semgrad's, needs the official code) and exit",
    )
    args = parser.parse_args(argv)
    if args.cost:
        from .cost import main as cost_main

        return cost_main()
    if args.markdown:
        saved = json.loads(Path(args.markdown).read_text(encoding="utf-8"))
        print(format_markdown(saved))
        comparison = format_comparison(saved)
        if comparison:
            print("\n" + comparison)
        return 0
    settings = Settings.quick() if args.quick else Settings.default()
    changes: dict[str, Any] = {}
    if args.repeats is not None:
        # W3 keeps its fastest run, so more repeats only sharpen it: never fewer than its default.
        changes.update(repeats=max(1, args.repeats), w3_repeats=max(settings.w3_repeats, args.repeats))
    if args.w6_samples is not None:
        changes["w6_samples"] = max(1, args.w6_samples)
    if args.w6_budget is not None:
        changes["w6_budget_s"] = args.w6_budget
    if args.loops is not None:
        loops = tuple(loop.strip().lower() for loop in args.loops.split(",") if loop.strip())
        if not loops or set(loops) - {"asyncio", "uvloop"}:
            parser.error(f"--loops takes asyncio and/or uvloop, not {args.loops!r}")
        changes["loops"] = loops
    if args.wakes is not None:
        wakes = tuple(dict.fromkeys(wake.strip().lower() for wake in args.wakes.split(",") if wake.strip()))
        if not wakes or set(wakes) - {"fd", "timer"}:
            parser.error(f"--wakes takes fd and/or timer, not {args.wakes!r}")
        if "fd" in wakes and w.precise_sleep() is None:
            parser.error("--wakes fd needs Linux's timerfd_create; use --wakes timer")
        changes["wakes"] = wakes
    if changes:
        import dataclasses

        settings = dataclasses.replace(settings, **changes)
    only = tuple(f.strip().upper() for f in args.only.split(",") if f.strip())
    output = None if args.output == "-" else Path(args.output)
    print(f"semgrad benchmarks ({'quick' if args.quick else 'default'}): {', '.join(only)}", flush=True)
    try:
        report = run_suite(
            settings,
            only,
            output=output,
            textgrad=False if args.no_textgrad else None,
            echo=lambda s: print(s, flush=True),
        )
    except ValueError as exc:
        parser.error(str(exc))
    print()
    print(format_table(report))
    comparison = format_comparison(report)
    if comparison:
        print("\n" + comparison)
    for note in report["notes"]:
        print(f"note: {note}")
    m = report["machine"]
    print(
        f"\n{report['date']}  {m['platform']}  {m['usable_cpus']} CPUs  Python {m['python']}"
        f"  load at start {m['load_average_at_start']}"
    )
    print(f"total {report['elapsed_s']} s" + (f"; written to {output}" if output else ""))
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
