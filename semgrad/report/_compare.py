"""The side-by-side page of ``semgrad compare``: one table and one chart for several optimizers.

Self-contained like the run report: inline CSS and SVG, no script, nothing fetched,
every string escaped. `compare_chart` draws the training score per iteration, one
line per optimizer; `compare_table` is the table in Markdown (README, terminal).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Protocol
from urllib.parse import quote

from ._chart import percent_grid
from ._format import as_text, esc, isolate, percent
from ._style import page_head
from ._tokens import SIMULATED_TOKENS

__all__ = ["compare_chart", "compare_table", "render_compare"]

#: Colour-blind-safe colours (Okabe-Ito), one per optimizer.
_PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#000000")
_WIDTH, _HEIGHT = 640, 300
_LEFT, _RIGHT, _TOP, _BOTTOM = 56, 16, 40, 44
_PLOT_W, _PLOT_H = _WIDTH - _LEFT - _RIGHT, _HEIGHT - _TOP - _BOTTOM
_SIMULATED = "The LLM was SIMULATED (offline, deterministic): these figures say nothing about real models."


def _y(score: float) -> float:
    return _TOP + _PLOT_H * (1 - min(max(score, 0.0), 1.0))


def compare_chart(series: Mapping[str, Sequence[float | None]], iterations: int | None = None) -> str:
    """An SVG line chart: the score per iteration (x) for each optimizer (one line each).

    The iterations are numbered from 1, as a run's report and the CLI number them; with `iterations` given,
    a point after the last iteration (the final params' score) is labelled ``final``.

    Examples:
        >>> svg = compare_chart({"neighbor-sgd": [0.5, 0.75], "textgrad": [0.5, None]}, iterations=1)
        >>> svg.startswith("<svg") and svg.count("<polyline") == 2 and "75.0 %" in svg
        True
        >>> "neighbor-sgd, iteration 1: 50.0 %" in svg and "neighbor-sgd, final: 75.0 %" in svg
        True
    """
    n = max((len(s) for s in series.values()), default=0)
    # The legend: one entry per optimizer, in rows as wide as the chart; the plot moves down by its extra rows.
    legend, x_legend, row = [], float(_LEFT), 0
    for k, name in enumerate(series):
        wide = 28 + 7 * len(str(name))
        if x_legend > _LEFT and x_legend + wide > _WIDTH - _RIGHT:
            x_legend, row = float(_LEFT), row + 1
        y = 12 + 18 * row
        legend.append(f'<rect x="{x_legend:.1f}" y="{y}" width="12" height="12" fill="{_PALETTE[k % len(_PALETTE)]}"/>')
        legend.append(f'<text class="legend" x="{x_legend + 16:.1f}" y="{y + 10}">{esc(name)}</text>')
        x_legend += wide
    extra = 18 * row
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="{_WIDTH}" height="{_HEIGHT + extra}" '
        f'viewBox="0 0 {_WIDTH} {_HEIGHT + extra}" role="img" aria-label="score per iteration and optimizer">',
        *legend,
        f'<g transform="translate(0 {extra})">',
    ]
    parts += percent_grid(_LEFT, _WIDTH - _RIGHT, _y)
    bottom = _TOP + _PLOT_H
    parts.append(f'<line class="axis" x1="{_LEFT}" y1="{bottom}" x2="{_WIDTH - _RIGHT}" y2="{bottom}"/>')
    for i in range(n):
        x = _LEFT + _PLOT_W * (i + 0.5) / max(n, 1)
        parts.append(
            f'<text class="tick" x="{x:.1f}" y="{bottom + 16}" text-anchor="middle">{_at(i, iterations)}</text>'
        )
    parts.append(
        f'<text class="axis-label" x="{_LEFT + _PLOT_W / 2:.1f}" y="{_HEIGHT - 8}" text-anchor="middle">'
        "iteration (training score at its start)</text>"
    )
    for k, (name, scores) in enumerate(series.items()):
        colour = _PALETTE[k % len(_PALETTE)]
        points = []
        for i, score in enumerate(scores):
            if score is None:
                continue
            x, y = _LEFT + _PLOT_W * (i + 0.5) / max(n, 1), _y(score)
            points.append(f"{x:.1f},{y:.1f}")
            parts.append(
                f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3.5" fill="{colour}">'
                f"<title>{esc(name)}, {_at(i, iterations, 'iteration ')}: {percent(score)}</title></circle>"
            )
        parts.append(f'<polyline fill="none" stroke="{colour}" stroke-width="2" points="{" ".join(points)}"/>')
    parts.append("</g>")
    parts.append("</svg>")
    return "\n".join(parts)


def _at(index: int, iterations: int | None, word: str = "") -> str:
    """The label of the chart's `index`-th point: its iteration's number (from 1), or ``final`` past the last."""
    return "final" if iterations is not None and index >= iterations else f"{word}{index + 1}"


def _num(value: Any) -> str:
    return "\u2014" if value is None else f"{value:,}" if isinstance(value, int) else f"{value:,.2f}"


def _money(value: Any) -> str:
    return "\u2014" if value is None else f"${value:,.4f}"


class ComparedMethod(Protocol):
    """What the page reads of one optimizer's row: the fields of `semgrad.experiments.MethodResult`."""

    @property
    def optimizer(self) -> str: ...
    @property
    def scores(self) -> Sequence[float | None]: ...
    @property
    def test(self) -> float | None: ...
    @property
    def initial_test(self) -> float | None: ...
    @property
    def calls(self) -> int: ...
    @property
    def calls_by_purpose(self) -> Mapping[str, int]: ...
    @property
    def tokens_by_purpose(self) -> Mapping[str, int]: ...
    @property
    def input_tokens(self) -> int: ...
    @property
    def output_tokens(self) -> int: ...
    @property
    def cost_usd(self) -> float | None: ...
    @property
    def wall_s(self) -> float | None: ...
    @property
    def stopped(self) -> str | None: ...
    @property
    def refused(self) -> int: ...
    @property
    def failed_calls(self) -> int: ...
    @property
    def run_dir(self) -> str | None: ...


class Comparison(Protocol):
    """What the page reads of a comparison: the fields of `semgrad.experiments.CompareResult` (the report sits
    below experiments, so it names the fields it reads rather than the class)."""

    @property
    def task(self) -> str: ...
    @property
    def backend(self) -> str | None: ...
    @property
    def simulated(self) -> bool: ...
    @property
    def seed(self) -> int | None: ...
    @property
    def iterations(self) -> int | None: ...
    @property
    def protocol(self) -> str | None: ...
    @property
    def sizes(self) -> Mapping[str, int]: ...
    @property
    def dry_run(self) -> bool: ...
    @property
    def token_note(self) -> str: ...
    @property
    def methods(self) -> Sequence[ComparedMethod]: ...


class _Keys:
    """A comparison (or a method's row) given as a mapping, in ``compare.json``'s form: each key read as the
    field of that name, a missing one as None (the page reads every field leniently)."""

    def __init__(self, data: Mapping[str, Any]) -> None:
        self._data = data

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):  # no field's name: copy, pickle and the like find nothing here
            raise AttributeError(name)
        value = self._data.get(name)
        if name == "methods":
            return tuple(_Keys(m) for m in value or () if isinstance(m, Mapping))
        return value


def _read(summary: Comparison | Mapping[str, Any]) -> Comparison:
    """`summary` as fields: a `CompareResult` as it is, a mapping (``compare.json``'s form) read by its keys."""
    return _Keys(summary) if isinstance(summary, Mapping) else summary


def _purposes(methods: Sequence[ComparedMethod], field: str) -> list[str]:
    order = ("forward", "backward", "rewrite", "critique", "evaluate", "summarize")
    seen = {p for m in methods for p in (getattr(m, field) or {})}
    return [p for p in order if p in seen] + sorted(seen - set(order))


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _notes(method: ComparedMethod) -> str:
    """What the method's row must say beside its name: a stop (its figures are partial), and calls without a reply.

    Examples:
        >>> _notes(_Keys({"stopped": "budget", "refused": 3, "failed_calls": 2}))
        ' (stopped early: budget; partial; 3 of its calls refused, never sent; 2 calls without a reply)'
        >>> _notes(_Keys({}))
        ''
    """
    notes = []
    if method.stopped:  # its scores and counts are those of a partial run: the row says so
        refused = _count(method.refused)
        unsent = f"; {refused:,} of its calls refused, never sent" if refused else ""
        notes.append(f"stopped early: {method.stopped}; partial{unsent}")
    failed = _count(method.failed_calls)
    if failed:  # the scores count them as wrong answers
        notes.append(f"{failed:,} calls without a reply")
    return f" ({'; '.join(notes)})" if notes else ""


def _head(methods: Sequence[ComparedMethod], dry: bool) -> tuple[list[str], list[str], list[str]]:
    """The table's header, and the purposes it has a calls column and a tokens column for."""
    calls = _purposes(methods, "calls_by_purpose")
    tokens = _purposes(methods, "tokens_by_purpose")
    head = ["optimizer"]
    if not dry:
        head += ["score per iteration", "test", "initial test"]
    head += [f"{p} calls" for p in calls] + ["calls"]
    if _with_hits(methods, dry):  # calls made; requests answered without one apart
        head.append("answered without a call")
    head += [f"{p} tokens" for p in tokens] + ["tokens in", "tokens out", "cost"]
    if not dry:
        head.append("wall time")
    return head, calls, tokens


def _with_hits(methods: Sequence[ComparedMethod], dry: bool) -> bool:
    """Whether the table has a column for the requests answered without a call (a run had some)."""
    return not dry and any(_count(getattr(m, "hits", 0)) for m in methods)


def _row(
    m: ComparedMethod, calls: Sequence[str], tokens: Sequence[str], dry: bool, with_hits: bool = False
) -> list[str]:
    row = [str(m.optimizer) + _notes(m)]
    if not dry:
        scores = " \u2192 ".join(percent(s) for s in (m.scores or ()))
        row += [scores or "\u2014", percent(m.test), percent(m.initial_test)]
    row += [_num((m.calls_by_purpose or {}).get(p, 0)) for p in calls] + [_num(m.calls)]
    if with_hits:
        row.append(_num(_count(getattr(m, "hits", 0))))
    row += [_num((m.tokens_by_purpose or {}).get(p, 0)) for p in tokens]
    row += [_num(m.input_tokens), _num(m.output_tokens), _money(m.cost_usd)]
    if not dry:
        row.append(f"{m.wall_s or 0.0:.2f} s")
    return row


def _rows(summary: Comparison) -> tuple[list[str], list[list[str]]]:
    methods = list(summary.methods or ())
    dry = bool(summary.dry_run)
    head, calls, tokens = _head(methods, dry)
    with_hits = _with_hits(methods, dry)
    rows = [_row(m, calls, tokens, dry, with_hits) for m in methods]
    counted = any(m.input_tokens or m.output_tokens for m in methods)
    return _tokens_as_none(head, rows) if summary.simulated is True and not dry and not counted else (head, rows)


def _tokens_as_none(head: list[str], rows: list[list[str]]) -> tuple[list[str], list[list[str]]]:
    """The table of a comparison on the simulated LLM, which counted no tokens: one tokens column saying none
    (`SIMULATED_TOKENS`), as a run's report says, in place of the counts of 0 (none is estimated either)."""
    keep = [i for i, name in enumerate(head) if not (name.endswith(" tokens") or name in ("tokens in", "tokens out"))]
    at = head.index("cost") if "cost" in head else len(head)
    at = sum(1 for i in keep if i < at)
    new_head = [head[i] for i in keep]
    new_head.insert(at, "tokens")
    new_rows = []
    for row in rows:
        kept = [row[i] for i in keep]
        kept.insert(at, SIMULATED_TOKENS)
        new_rows.append(kept)
    return new_head, new_rows


def compare_caption(summary: Comparison | Mapping[str, Any]) -> str:
    """What the comparison's scores are: the task, protocol, split sizes, seed and iterations (plain text).

    Examples:
        >>> caption = compare_caption({"task": "bbh:navigate", "protocol": "official", "seed": 0, "iterations": 4,
        ...     "sizes": {"train": 20, "validation": 0, "test": 230}})
        >>> caption.split(";")[0]
        'Task bbh:navigate, official protocol, 20 training / 0 validation / 230 test items, seed 0, 4 iterations'
    """
    summary = _read(summary)
    return f"Task {summary.task}, {_caption_rest(summary)}"


def _caption_rest(summary: Comparison) -> str:
    """`compare_caption` after the task's name (so that a page can isolate the name)."""
    sizes = summary.sizes if isinstance(summary.sizes, Mapping) else {}
    counts = " / ".join(
        f"{sizes.get(part, '?')} {label}"
        for part, label in (("train", "training"), ("validation", "validation"), ("test", "test"))
    )
    return (
        f"{summary.protocol or '?'} protocol, {counts} items, "
        f"seed {summary.seed}, {summary.iterations} iterations; every optimizer ran on the same "
        "splits and seed. Score per iteration: the training items' score at the iteration's start, then the "
        "final params' (in %); test and initial test: the test split's, with the final and the starting params."
    )


def compare_table(summary: Comparison | Mapping[str, Any]) -> str:
    """The comparison as a Markdown table (one row per optimizer), under its caption when it has a task.

    Examples:
        >>> print(compare_table({"dry_run": True, "methods": [{"optimizer": "textgrad", "calls": 9,
        ...     "calls_by_purpose": {"backward": 6, "rewrite": 3}}]}).splitlines()[2])
        | textgrad | 6 | 3 | 9 | — | — | — |
    """
    summary = _read(summary)
    head, rows = _rows(summary)
    lines = [compare_caption(summary), ""] if summary.task is not None else []
    lines += ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


#: A method's run folder that the page may link: one plain path component, no leading dot (the
#: optimizer's name, as `compare` writes it); ``compare.json`` is read as untrusted, so any other gets no link.
_LINKABLE = re.compile(r"[\w+@=-][\w.+@=-]*", re.ASCII)


def report_link(method: ComparedMethod) -> str | None:
    """The relative link to `method`'s ``report.html`` (in its run folder under the comparison's), or None
    when it has no run folder (a dry run) or one that is not a plain folder name.

    Examples:
        >>> report_link(_Keys({"run_dir": "neighbor-sgd"})), report_link(_Keys({"run_dir": "../etc"}))
        ('neighbor-sgd/report.html', None)
    """
    run_dir = method.run_dir if isinstance(getattr(method, "run_dir", None), str) else None
    return f"{quote(run_dir)}/report.html" if run_dir and _LINKABLE.fullmatch(run_dir) else None


def _name_cell(method: ComparedMethod, dry: bool) -> str:
    """The method's name, linked to its report (a dry run has none), and what its row must say beside it."""
    name, href = isolate(method.optimizer), None if dry else report_link(method)
    linked = f'<a href="{esc(href)}">{name}</a>' if href else name
    notes = _notes(method)
    return f'<th scope="row" class="method">{linked}{isolate(notes) if notes else ""}</th>'


def _figures(scores: Sequence[float | None] | None) -> str:
    """The scores per iteration: each figure whole on its line, the line breaking only between figures."""
    shown = [f'<span class="num">{esc(percent(s))}</span>' for s in scores or ()]
    return " \u2192 ".join(shown) or "\u2014"


def _html_table(element_id: str, head: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A table of figures: a header row, and per method its name cell then cells of figures (each on one line)."""
    header = "".join(f'<th scope="col">{esc(h)}</th>' for h in head)
    body = "".join(
        "<tr>" + row[0] + "".join(c if c.startswith("<td") else f'<td class="num">{c}</td>' for c in row[1:]) + "</tr>"
        for row in rows
    )
    return f'<table class="figures" id="{element_id}"><thead><tr>{header}</tr></thead><tbody>{body}</tbody></table>'


def _tables(summary: Comparison) -> str:
    """The page's tables: the scores and totals side by side; the calls, then the tokens, by purpose.

    Three narrow tables rather than one of twenty columns: every figure fits its cell on one line.
    """
    methods, dry = list(summary.methods or ()), bool(summary.dry_run)
    # the simulated LLM counts no tokens: one column says so (`SIMULATED_TOKENS`), as a run's report does
    uncounted = summary.simulated is True and not dry and not any(m.input_tokens or m.output_tokens for m in methods)
    head = ["optimizer"] + ([] if dry else ["score per iteration", "test", "initial test"])
    head += ["calls", *(["tokens"] if uncounted else ["tokens in", "tokens out"]), "cost"]
    head += [] if dry else ["wall time"]
    rows = []
    for m in methods:
        row = [_name_cell(m, dry)]
        if not dry:
            row += [f'<td class="scores">{_figures(m.scores)}</td>', esc(percent(m.test))]
            row.append(esc(percent(m.initial_test)))
        tokens = [esc(SIMULATED_TOKENS)] if uncounted else [esc(_num(m.input_tokens)), esc(_num(m.output_tokens))]
        row += [esc(_num(m.calls)), *tokens, esc(_money(m.cost_usd))]
        row += [] if dry else [esc(f"{m.wall_s or 0.0:,.2f} s")]
        rows.append(row)
    parts = ["<h2>Side by side</h2>", _html_table("compare-scores", head, rows)]
    by_purpose_tables = [("calls_by_purpose", "Calls by purpose", "calls")]
    if not uncounted:
        by_purpose_tables.append(("tokens_by_purpose", "Tokens by purpose (in and out)", None))
    for field, title, total in by_purpose_tables:
        purposes = _purposes(methods, field)
        if not purposes:
            continue
        by_purpose = [
            [_name_cell(m, dry)]
            + [esc(_num((getattr(m, field) or {}).get(p, 0))) for p in purposes]
            + [esc(_num(m.calls if total else _count(m.input_tokens) + _count(m.output_tokens)))]
            for m in methods
        ]
        element_id = "compare-" + field.split("_")[0]
        parts += [f"<h2>{title}</h2>", _html_table(element_id, ["optimizer", *purposes, "all"], by_purpose)]
    return "\n".join(parts)


def render_compare(summary: Comparison | Mapping[str, Any]) -> str:
    """The comparison page: settings, the tables (each method's name links to its run's report) and the chart.

    Examples:
        >>> page = render_compare({"task": "<b>t</b>", "simulated": True, "methods": []})
        >>> "&lt;b&gt;t&lt;/b&gt;" in page and "SIMULATED" in page and "<script" not in page
        True
    """
    summary = _read(summary)
    series = {str(m.optimizer): list(m.scores or ()) for m in summary.methods or ()}
    facts = f"Backend {isolate(summary.backend)}. Task {isolate(summary.task)}, {esc(_caption_rest(summary))}"
    notes = isolate(summary.token_note) if summary.token_note else ""
    links = "" if summary.dry_run else " Each optimizer's name opens the report of its run."
    return "\n".join(
        [
            page_head(f"Optimizers compared on {as_text(summary.task)}"),
            "<body><main>",
            f"<h1>Optimizers compared on {isolate(summary.task)}</h1>",
            f'<p class="notice">{_SIMULATED}</p>' if summary.simulated else "",
            f"<p>{facts}{links}</p>",
            _tables(summary),
            f'<p class="caption">{notes}</p>' if notes else "",
            "" if summary.dry_run else "<h2>Training score per iteration</h2>",
            ""
            if summary.dry_run
            else compare_chart(series, summary.iterations if isinstance(summary.iterations, int) else None),
            "</main></body></html>",
            "",
        ]
    )
