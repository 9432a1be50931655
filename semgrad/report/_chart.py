"""The score-per-iteration chart: an inline SVG line chart, no script.

Training scores are a solid line with square markers; the gate's scores of the
candidates (validation scores under the heldout protocol, scores on the training
items under the official one: the caller names them) a dashed line with round
markers coloured by the gate's verdict (accepted, rejected, no gate). The
initial gate score, when known, is a dotted horizontal line.
Scores are drawn on a fixed 0-100 % axis; values outside it are clamped.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import attrs

from ._format import esc, percent

__all__ = ["ChartPoint", "percent_grid", "score_chart"]

_WIDTH, _HEIGHT = 640, 300
_LEFT, _RIGHT, _TOP, _BOTTOM = 56, 16, 36, 44
_PLOT_W, _PLOT_H = _WIDTH - _LEFT - _RIGHT, _HEIGHT - _TOP - _BOTTOM

_VERDICT = {True: ("accepted", "val-accepted"), False: ("rejected", "val-rejected"), None: ("no gate", "val-none")}


@attrs.frozen
class ChartPoint:
    """The scores of one iteration (None: not measured): training, and the gate's (`validation`)."""

    iteration: int
    train: float | None = None
    validation: float | None = None
    accepted: bool | None = None
    #: For a mean over tasks: (accepted, gated) -- how many of the tasks' gates accepted, of those that ran one.
    verdicts: tuple[int, int] | None = None


def _x(index: int, n: int) -> float:
    return _LEFT + _PLOT_W * (index + 0.5) / max(n, 1)


def _y(score: float) -> float:
    return _TOP + _PLOT_H * (1 - min(max(score, 0.0), 1.0))


def percent_grid(left: float, right: float, y: Callable[[float], float]) -> list[str]:
    """The horizontal lines of a 0-100 % score axis, from x `left` to `right` at height `y(score)`,
    each labelled left of `left` (the run report's, the compare page's and the sweep page's charts).

    Examples:
        >>> percent_grid(50, 300, lambda score: 100 * (1 - score))[-1]
        '<text class="tick" x="44" y="4.0" text-anchor="end">100 %</text>'
    """
    parts = []
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        at = y(tick)
        parts.append(f'<line class="grid" x1="{left}" y1="{at:.1f}" x2="{right:.1f}" y2="{at:.1f}"/>')
        parts.append(f'<text class="tick" x="{left - 6}" y="{at + 4:.1f}" text-anchor="end">{tick * 100:.0f} %</text>')
    return parts


def _grid() -> list[str]:
    parts = percent_grid(_LEFT, _WIDTH - _RIGHT, _y)
    bottom = _TOP + _PLOT_H
    parts.append(f'<line class="axis" x1="{_LEFT}" y1="{_TOP}" x2="{_LEFT}" y2="{bottom}"/>')
    parts.append(f'<line class="axis" x1="{_LEFT}" y1="{bottom}" x2="{_WIDTH - _RIGHT}" y2="{bottom}"/>')
    parts.append(
        f'<text class="axis-label" x="{_LEFT + _PLOT_W / 2:.1f}" y="{_HEIGHT - 8}" '
        'text-anchor="middle">iteration</text>'
    )
    parts.append(
        f'<text class="axis-label" x="14" y="{_TOP + _PLOT_H / 2:.1f}" text-anchor="middle" '
        f'transform="rotate(-90 14 {_TOP + _PLOT_H / 2:.1f})">score</text>'
    )
    return parts


def _x_ticks(points: Sequence[ChartPoint]) -> list[str]:
    y = _TOP + _PLOT_H + 16
    return [
        f'<text class="tick" x="{_x(i, len(points)):.1f}" y="{y}" text-anchor="middle">{p.iteration}</text>'
        for i, p in enumerate(points)
    ]


def _line(points: Sequence[ChartPoint], field: str, css: str) -> list[str]:
    coords = [
        (_x(i, len(points)), _y(getattr(p, field))) for i, p in enumerate(points) if getattr(p, field) is not None
    ]
    if len(coords) < 2:
        return []
    joined = " ".join(f"{x:.1f},{y:.1f}" for x, y in coords)
    return [f'<polyline class="{css}" points="{joined}"/>']


def _markers(points: Sequence[ChartPoint], gate: str) -> list[str]:
    parts = []
    for i, p in enumerate(points):
        x = _x(i, len(points))
        if p.train is not None:
            tip = f"iteration {p.iteration}: train {percent(p.train)}"
            parts.append(
                f'<rect class="train-point" x="{x - 4:.1f}" y="{_y(p.train) - 4:.1f}" width="8" height="8">'
                f"<title>{esc(tip)}</title></rect>"
            )
        if p.validation is not None:
            verdict, css = _VERDICT[p.accepted]
            if p.verdicts is not None and p.verdicts[1]:  # a mean over tasks: how many of their gates accepted
                verdict = f"{p.verdicts[0]} of {p.verdicts[1]} gates accepted"
                css = (
                    _VERDICT[True][1]
                    if p.verdicts[0] == p.verdicts[1]
                    else _VERDICT[False][1]
                    if not p.verdicts[0]
                    else css
                )
            tip = f"iteration {p.iteration}: {gate} {percent(p.validation)} ({verdict})"
            parts.append(
                f'<circle class="{css}" cx="{x:.1f}" cy="{_y(p.validation):.1f}" r="5">'
                f"<title>{esc(tip)}</title></circle>"
            )
    return parts


def _initial(initial: float | None, gate: str) -> list[str]:
    if initial is None:
        return []
    y = _y(initial)
    return [
        f'<line class="initial" x1="{_LEFT}" y1="{y:.1f}" x2="{_WIDTH - _RIGHT}" y2="{y:.1f}">'
        f"<title>initial {esc(gate)} {esc(percent(initial))}</title></line>"
    ]


def _legend(gate: str) -> list[str]:
    items = [("train-line", "train"), ("val-line", gate), ("initial", f"initial {gate}")]
    parts, x = [], _LEFT
    for css, label in items:
        parts.append(f'<line class="{css}" x1="{x}" y1="16" x2="{x + 22}" y2="16"/>')
        parts.append(f'<text class="legend" x="{x + 27}" y="20">{esc(label)}</text>')
        x += 40 + 8 * len(label)
    for verdict, css in (_VERDICT[True], _VERDICT[False]):
        parts.append(
            f'<circle class="{css}" cx="{x + 5}" cy="16" r="5"/>'
            f'<text class="legend" x="{x + 14}" y="20">{verdict}</text>'
        )
        x += 30 + 8 * len(verdict)
    return parts


def score_chart(
    points: Sequence[ChartPoint],
    *,
    element_id: str,
    caption: str,
    initial: float | None = None,
    gate: str = "validation",
) -> str:
    """An ``<svg>`` chart of the training score and the gate's score per iteration.

    Args:
        points: One entry per iteration, in order.
        element_id: The svg element's id (the caller's own identifier, never data).
        caption: What the chart shows (escaped; becomes the svg's title).
        initial: The gate's initial score, drawn as a horizontal line.
        gate: What the gate's scores are called (legend and tooltips), e.g. "validation".

    Examples:
        >>> svg = score_chart([ChartPoint(1, 0.4, 0.6, True), ChartPoint(2, 0.5, 0.5, False)],
        ...                   element_id="score-chart", caption="<scores>")
        >>> svg.startswith('<svg id="score-chart"'), "&lt;scores&gt;" in svg, svg.count("<polyline")
        (True, True, 2)
    """
    body = [f'<title id="{element_id}-title">{esc(caption)}</title>', *_grid(), *_legend(gate)]
    if points:
        body += [
            *_initial(initial, gate),
            *_x_ticks(points),
            *_line(points, "train", "train-line"),
            *_line(points, "validation", "val-line"),
            *_markers(points, gate),
        ]
    else:
        body.append(
            f'<text class="empty" x="{_WIDTH / 2}" y="{_HEIGHT / 2}" text-anchor="middle">no iterations recorded</text>'
        )
    return (
        f'<svg id="{element_id}" class="chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {_WIDTH} {_HEIGHT}" '
        f'width="{_WIDTH}" height="{_HEIGHT}" role="img" aria-labelledby="{element_id}-title">'
        + "".join(body)
        + "</svg>"
    )
