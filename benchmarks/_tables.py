"""The suite's report as text: an aligned table, the TextGrad comparison and a Markdown table.

Its own module so that `benchmarks._suite` (which runs the workloads) and
`benchmarks.textgrad_compare` (whose rows the suite adds) both print with it
without importing each other.
"""

from __future__ import annotations

from typing import Any

__all__ = ["FLOORS", "SYSTEM_LABELS", "format_comparison", "format_markdown", "format_table"]


def _fmt(x: Any, spec: str = ".3f") -> str:
    if x is None:
        return "-"
    if isinstance(x, float):
        return format(x, spec)
    return str(x)


def _calls(calls: dict[str, int] | None) -> str:
    if not calls:
        return "-"
    return " ".join(f"{k[:3]}={v}" for k, v in calls.items())


#: how a system's key in the report is printed (others as they are).
SYSTEM_LABELS = {
    "anyio_floor": "anyio floor",
    "anyio_floor_parked": "anyio parked",
    "semgrad_uvloop": "semgrad uvloop",
    "anyio_floor_uvloop": "anyio floor uvloop",
    "anyio_floor_parked_uvloop": "anyio parked uvloop",
}
#: the rows a latency workload returns inside its semgrad row: the floors, and every system on uvloop.
FLOORS = ("anyio_floor", "anyio_floor_parked", "semgrad_uvloop", "anyio_floor_uvloop", "anyio_floor_parked_uvloop")


def format_table(report: dict[str, Any]) -> str:
    """The report as an aligned text table (one line per workload and system)."""
    head = ("workload", "system", "wall s", "limit s", "ratio", "calls", "peak", "us/call", "target", "ok")
    lines: list[tuple[str, ...]] = []
    for key, systems in report["workloads"].items():
        for system, row in systems.items():
            system = SYSTEM_LABELS.get(system, system)
            if "skipped" in row:
                lines.append((key, system, "-", "-", "-", "-", "-", "-", "-", "skipped"))
                continue
            ok = "-" if "met" not in row else ("yes" if row["met"] else "MISS")
            if key == "W3":
                target = f"<= {row['target']['us_per_call_max']:g} us" if "target" in row else "-"
                sync, asynchronous = _fmt(row.get("us_per_call_sync"), ".1f"), _fmt(row.get("us_per_call_async"), ".1f")
                us = f"{sync} sync / {asynchronous} async"
                if "us_per_call_sync" not in row:
                    us = _fmt(row.get("us_per_call"), ".1f")
                lines.append((key, system, "-", "-", "-", _calls(row.get("calls")), "-", us, target, ok))
            elif key == "W6":
                sizes = row["sizes"]
                for n, size in sizes.items():
                    lines.append(
                        (
                            f"W6 n={n}",
                            system,
                            _fmt(size["seconds"]),
                            "-",
                            "-",
                            _calls(size["calls"]),
                            "-",
                            _fmt(size["us_per_call"], ".1f"),
                            f"{size['peak_mb']:.1f} MB",
                            f"gc {size['gc_seconds']:.1f} s" if "gc_seconds" in size else "",
                        )
                    )
                lines.append(
                    (
                        "W6 growth",
                        system,
                        f"x{row['time_ratio']:.2f}",
                        f"x{row['time_ratio_excluding_gc']:.2f} w/o gc" if "time_ratio_excluding_gc" in row else "-",
                        f"nodes x{row['node_ratio']:g}",
                        f"mem x{row['memory_ratio']:.2f}",
                        "-",
                        "-",
                        f"<= x{row['node_ratio'] * row['target']['ratio_over_node_ratio_max']:g}",
                        # Each W6 row has its own verdict: growth (time and memory) and time at 100 samples.
                        "yes" if row.get("linear", row.get("met")) else "MISS",
                    )
                )
                lines.append(
                    (
                        f"W6 x{row['spec_samples']}",
                        system,
                        _fmt(row["seconds_at_spec_samples"], ".1f"),
                        "-",
                        "-",
                        f"{row['samples']} samples run",
                        "-",
                        "-",
                        f"<= {row['target']['seconds_at_spec_samples_max']:g} s",
                        "yes"
                        if row["seconds_at_spec_samples"] <= row["target"]["seconds_at_spec_samples_max"]
                        else "MISS",
                    )
                )
            elif key == "W7":
                lines.append(
                    (
                        key,
                        system,
                        _fmt(row["wall_s"]),
                        _fmt(row["limit_s"]),
                        f"{row['throughput_over_bound']:.3f} of C/L",
                        _calls(row["calls"]),
                        str(row["peak_in_flight"]),
                        _fmt(row.get("us_per_call"), ".1f"),
                        f">= {row['target']['throughput_over_bound_min']:g}",
                        ok,
                    )
                )
            else:
                target = f"<= {row['target']['wall_over_limit_max']:g}" if "target" in row else "-"
                lines.append(
                    (
                        key,
                        system,
                        _fmt(row["wall_s"]),
                        _fmt(row["limit_s"]),
                        _fmt(row["wall_over_limit"], ".2f"),
                        _calls(row.get("calls")),
                        _fmt(row.get("peak_in_flight")),
                        _fmt(row.get("us_per_call"), ".1f"),
                        target,
                        ok,
                    )
                )
    widths = [max(len(str(r[i])) for r in [head, *lines]) for i in range(len(head))]
    render = lambda r: "  ".join(str(c).ljust(widths[i]) for i, c in enumerate(r)).rstrip()  # noqa: E731
    return "\n".join([render(head), render(tuple("-" * n for n in widths)), *map(render, lines)])


def format_comparison(report: dict[str, Any]) -> str:
    """TextGrad's figures over semgrad's, from the same run ("" when there are no TextGrad rows).

    Wall time for the latency workloads (sequential as TextGrad runs, and with a
    thread per sample), CPU per call for W3.
    """
    lines = []
    for key, systems in report["workloads"].items():
        mine = systems.get("textgrad", {}).get("vs_semgrad")
        if mine is None:
            continue
        if key == "W3":
            lines.append(f"  {key:<10} CPU per call x{mine:g}")
            continue
        threads = systems.get("textgrad_threads", {}).get("vs_semgrad")
        extra = f", x{threads:g} with a thread per sample" if threads is not None else ""
        lines.append(f"  {key:<10} wall time x{mine:g} sequential{extra}")
    if not lines:
        return ""
    return "\n".join(["TextGrad / semgrad, same run, same fake latency:", *lines])


def format_markdown(report: dict[str, Any]) -> str:
    """The text table as a Markdown table (for README.md)."""
    lines = format_table(report).splitlines()
    head, rows = lines[0], lines[2:]
    widths = [len(c) for c in lines[1].split("  ")]

    def cut(line: str) -> list[str]:
        return [line[sum(widths[:i]) + 2 * i : sum(widths[: i + 1]) + 2 * i].strip() for i in range(len(widths))]

    out = ["| " + " | ".join(cut(head)) + " |", "|" + "---|" * len(widths)]
    out += ["| " + " | ".join(cut(row.ljust(sum(widths) + 2 * len(widths)))) + " |" for row in rows]
    return "\n".join(out)
