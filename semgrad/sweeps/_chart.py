"""The sweep chart: each task's mean score, one bar per optimizer, as inline SVG.

No script and nothing loaded from the network; every label is escaped, and a bidirectional
override in a task or variant name ends where the name ends (`semgrad.report._format.esc`). Bars
are grouped by task, coloured by variant (the legend says which), and each has
a ``<title>`` tooltip with its value. Scores sit on a fixed 0-100 % axis; a score
of 0 is a thin bar on the axis, and a variant with no score there (its runs
failed or stopped) a dash, so that the two never look alike.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..report._chart import percent_grid
from ..report._format import esc, percent

__all__ = ["PALETTE", "optimizer_chart"]

#: Colour-blind-safe colours (Okabe-Ito), one per variant, repeating after eight.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")

_LEFT, _RIGHT, _TOP, _PLOT_H, _LABELS = 56, 16, 40, 220, 120
#: The width of one character of a tick label, generously (11 px system-ui).
_CHAR = 7.0


def _y(score: float) -> float:
    return _TOP + _PLOT_H * (1 - min(max(score, 0.0), 1.0))


def _axes(width: float) -> list[str]:
    parts = percent_grid(_LEFT, width - _RIGHT, _y)
    parts.append(
        f'<text class="tick" x="14" y="{_TOP + _PLOT_H / 2:.1f}" text-anchor="middle" '
        f'transform="rotate(-90 14 {_TOP + _PLOT_H / 2:.1f})">mean accuracy</text>'
    )
    return parts


def _legend(variants: list[str]) -> list[str]:
    parts, x = [], float(_LEFT)
    for i, variant in enumerate(variants):
        colour = PALETTE[i % len(PALETTE)]
        parts.append(f'<rect x="{x:.1f}" y="10" width="12" height="12" fill="{colour}"/>')
        parts.append(f'<text class="legend" x="{x + 16:.1f}" y="20">{esc(variant)}</text>')
        x += 28 + 7 * len(variant)
    return parts


def optimizer_chart(
    by_task: Mapping[str, Mapping[str, float | None]], scored_on: Mapping[str, str] | None = None
) -> str:
    """An SVG bar chart of mean accuracy: groups are tasks, bars are variants.

    A task whose `scored_on` is ``"train"`` (LIAR under the paper's protocol) is labelled
    so; the others show test accuracy.

    Examples:
        >>> svg = optimizer_chart({"gsm8k": {"tgd": 0.5, "neighbor-sgd": 0.75}})
        >>> svg.startswith("<svg") and svg.count("<rect") == 4 and "75.0 %" in svg
        True
    """
    scored_on = scored_on or {}
    variants = list(dict.fromkeys(v for scores in by_task.values() for v in scores))
    group = max(36.0, 12.0 * len(variants) + 16)
    legend = _LEFT + _RIGHT + sum(28 + 7 * len(v) for v in variants)
    width = max(_LEFT + _RIGHT + group * max(len(by_task), 1), legend, 320)
    # The task labels, turned 40 degrees, reach down and to the left of their bar: room for the longest one
    # below the axis, and for the first one left of the plot (they were cut off at the picture's edges).
    lengths = [len(str(task)) + (8 if scored_on.get(task) == "train" else 0) for task in by_task]
    below = max(_LABELS, 24 + 0.643 * _CHAR * max(lengths, default=0))
    shift = max(0.0, 0.766 * _CHAR * (lengths[0] if lengths else 0) - _LEFT - group / 2) + 4
    height = round(_TOP + _PLOT_H + below)
    bar = (group - 12) / max(len(variants), 1)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="{width + shift:.0f}" height="{height}" '
        f'viewBox="0 0 {width + shift:.0f} {height}" role="img" aria-label="mean accuracy per task and optimizer">',
        f'<g transform="translate({shift:.1f} 0)">',
    ]
    parts += _axes(width) + _legend(variants)
    for t, (task, scores) in enumerate(by_task.items()):
        left = _LEFT + group * t + 6
        part = "train" if scored_on.get(task) == "train" else "test"
        for v, variant in enumerate(variants):
            x = left + bar * v
            if variant in scores and scores[variant] is None:  # ran, with no score: not a zero
                tip = f"{esc(task)} \u00b7 {esc(variant)}: no score (its runs failed or stopped)"
                parts.append(
                    f'<text class="tick" x="{x + bar / 2:.1f}" y="{_TOP + _PLOT_H - 3:.1f}" '
                    f'text-anchor="middle"><title>{tip}</title>\u2013</text>'
                )
                continue
            score = scores.get(variant)
            if score is None:
                continue
            # A score of 0 keeps a bar of 1.5 px, on the axis: visible, unlike a missing score.
            y = min(_y(score), _TOP + _PLOT_H - 1.5)
            tip = f"{esc(task)} \u00b7 {esc(variant)}: {percent(score)} ({part} accuracy)"
            parts.append(
                f'<rect x="{x:.1f}" y="{y:.1f}" width="{bar - 1:.1f}" height="{_TOP + _PLOT_H - y:.1f}" '
                f'fill="{PALETTE[v % len(PALETTE)]}"><title>{tip}</title></rect>'
            )
        cx, cy = left + (group - 12) / 2, _TOP + _PLOT_H + 12
        label = f"{esc(task)} (train)" if part == "train" else esc(task)
        parts.append(
            f'<text class="tick" x="{cx:.1f}" y="{cy}" text-anchor="end" '
            f'transform="rotate(-40 {cx:.1f} {cy})">{label}</text>'
        )
    parts.append(
        f'<line class="axis" x1="{_LEFT}" y1="{_TOP + _PLOT_H}" x2="{width - _RIGHT:.1f}" y2="{_TOP + _PLOT_H}"/>'
    )
    parts.append("</g></svg>")
    return "\n".join(parts)
