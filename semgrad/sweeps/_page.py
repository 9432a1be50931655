"""``sweep.html``: the combined report of a sweep, one self-contained page.

Inline CSS and SVG, no script, nothing from the network (the report's
Content-Security-Policy, `semgrad.report._style.CSP`, says so to the browser), and
every value from ``sweep.json`` escaped and isolated (task names, run names and
errors are untrusted text: `semgrad.report._format.isolate` keeps a bidirectional
override inside its ``<bdi>``). It shows a
notice when the LLM was simulated, the averages beside the paper's published
figures, the chart comparing optimizers across tasks, and one row per run, whose
name links to the run's ``report.html`` when that file is inside the run's folder.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote

from .._files import write_text_atomically
from ..report import PUBLISHED
from ..report._format import as_text, count, esc, isolate, money, percent
from ..report._style import CSS, page_head
from ..report._tokens import SIMULATED_TOKENS
from ._chart import optimizer_chart
from ._summary import average_tasks
from ._sweep_json import SweepRow, SweepSummary

__all__ = ["render_sweep", "report_links", "write_sweep_report"]

#: A run folder name that links may use: one path component, no leading dot (run_name's names fit).
_LINKABLE = re.compile(r"[\w+@=-][\w.+@=-]*", re.ASCII)
_REPORT = "report.html"

#: Published figures shown under the averages: (label, {average key: PUBLISHED key}).
_PAPER_ROWS = (
    ("Paper: semantic backpropagation", {"bbh_nlp": "bbh_nlp", "bbh_algorithmic": "bbh_algorithmic", "gsm8k": "gsm8k"}),
    ("Paper: TextGrad", {"gsm8k": "textgrad_gsm8k"}),
)
_SIMULATED = "The LLM is SIMULATED (offline, deterministic): these scores say nothing about real models."
_AVERAGE_COLUMNS = (
    ("bbh_nlp", "BBH NLP"),
    ("bbh_algorithmic", "BBH algorithmic"),
    ("gsm8k", "GSM8K"),
    ("overall", "All tasks"),
)


def _scored_on(summary: SweepSummary) -> dict[str, str]:
    """``sweep.json``'s ``scored_on`` (absent in older ones), with only the values it may hold."""
    return {task: "train" if part == "train" else "test" for task, part in summary.scored_on.items()}


def _covers(entry: Mapping[str, Any]) -> str:
    """How many tasks an average covers, as its column head says it: "1 of 15 tasks", "3 tasks"."""
    tasks, of = entry["tasks"], entry["of"]
    noun = "task" if (tasks if of is None else of) == 1 else "tasks"
    return f"{tasks} {noun}" if of is None else f"{tasks} of {of} {noun}"


def _paper_cell(entry: Mapping[str, Any], figure: Any) -> str:
    """A published figure under an average: only when the average covers every task the figure averages; an
    average over part of them is marked not comparable, with no number to compare it with."""
    if entry["of"] is not None and entry["tasks"] == entry["of"]:
        return esc(percent(figure))
    return f"not comparable (the paper\u2019s: all {entry['of']} tasks)"


def _averages(summary: SweepSummary) -> str:
    coverage = average_tasks([{"task": run.task, "category": run.category} for run in summary.runs])
    # a group the sweep holds no task of has no average, and no figure to show under one
    columns = [(key, label) for key, label in _AVERAGE_COLUMNS if coverage[key]["tasks"] or key == "overall"]
    head = "".join(f"<th>{esc(label)}<br><small>{esc(_covers(coverage[key]))}</small></th>" for key, label in columns)
    rows = [f"<tr><th>Variant</th>{head}</tr>"]
    for kind, suffix in (("averages", " (item-weighted)"), ("averages_unweighted", " (unweighted)")):
        for variant, values in getattr(summary, kind).items():
            cells = "".join(f"<td>{esc(percent(values.get(key)))}</td>" for key, _ in columns)
            rows.append(f'<tr><td class="text">{isolate(variant)}{esc(suffix)}</td>{cells}</tr>')
    published = summary.published
    for label, keys in _PAPER_ROWS:
        found = [
            _paper_cell(coverage[key], published.get(keys[key], PUBLISHED[keys[key]])) if key in keys else ""
            for key, _ in columns
        ]
        if any(found):
            cells = "".join(f"<td>{cell}</td>" for cell in found)
            rows.append(f'<tr class="paper"><td class="text">{esc(label)}</td>{cells}</tr>')
    return "<table>\n" + "\n".join(rows) + "\n</table>"


def report_links(sweep_dir: str | os.PathLike[str], summary: SweepSummary | Mapping[str, Any]) -> dict[str, str]:
    """The relative link to each run's report that exists inside the sweep folder, by run name.

    Run names come from ``sweep.json`` and are not trusted: a name that is not one plain
    path component, or whose report resolves (through a symlink) anywhere but
    ``<sweep_dir>/<name>/report.html``, gets no link.

    Examples:
        >>> import pathlib, tempfile
        >>> root = pathlib.Path(tempfile.mkdtemp())
        >>> (root / "gsm8k__seed0__tgd").mkdir(); _ = (root / "gsm8k__seed0__tgd" / "report.html").write_text("")
        >>> runs = [{"name": "gsm8k__seed0__tgd"}, {"name": "../etc"}, {"name": "missing"}, {"name": 3}]
        >>> report_links(root, {"runs": runs})
        {'gsm8k__seed0__tgd': 'gsm8k__seed0__tgd/report.html'}
        >>> import shutil; shutil.rmtree(root)
    """
    root = Path(sweep_dir).resolve()
    links = {}
    if isinstance(summary, SweepSummary):
        names: list[Any] = [run.name for run in summary.runs]
    else:  # a summary as plain JSON, read leniently
        names = [run.get("name") if isinstance(run, Mapping) else None for run in summary.get("runs") or ()]
    for name in names:
        if not isinstance(name, str) or not _LINKABLE.fullmatch(name):
            continue
        expected = root / name / _REPORT
        try:
            real = expected.resolve(strict=True)
        except (OSError, RuntimeError):
            continue
        if real == expected and real.is_file():
            links[name] = f"{quote(name)}/{_REPORT}"
    return links


def _breakable(name: Any) -> str:
    """A task's or a run's name, isolated, that a narrow column may break after a ``_``, ``:`` or ``-`` (between
    the words of the name: ``bbh:web_of_lies``, ``bbh-web_of_lies__seed0__tgd``), never inside a word.

    Examples:
        >>> _breakable("bbh-web_of_lies__seed0__tgd")
        'bbh-<wbr>web_<wbr>of_<wbr>lies__<wbr>seed0__<wbr>tgd'
        >>> _breakable("bbh:navigate"), _breakable("<b>_x")
        ('bbh:<wbr>navigate', '&lt;b&gt;_x')
    """
    text = isolate(name)
    if text != esc(name) or "&" in text:  # an isolated or escaped name stays as it is
        return text
    return re.sub(r"([_:-]+)(?=[^_:-])", r"\1<wbr>", text)


def _run_name(name: Any, reports: Mapping[str, str]) -> str:
    href = reports.get(name) if isinstance(name, str) else None
    return f'<a href="{esc(href)}">{_breakable(name)}</a>' if href else _breakable(name)


#: Error kinds of calls a run's own budget or stop refused: never sent, and in no score.
_REFUSED = ("budget", "halted")


def _notes(run: SweepRow) -> str:
    """What a run's row must say when it has no error: a stop (its figures are partial; a budget-stopped run
    is no failure, nor finished), and the calls that got no reply (its scores count them as wrong answers).

    Examples:
        >>> _notes(SweepRow.from_json({"stopped": "budget", "errors_by_kind": {"budget": 4, "timeout": 2}}))
        'stopped early (budget): partial; 2 calls without a reply (timeout 2)'
        >>> _notes(SweepRow.from_json({"errors_by_kind": {"budget": 4}})), _notes(SweepRow())
        ('', '')
    """
    notes = [f"stopped early ({run.stopped}): partial"] if run.stopped else []
    kinds = run.errors_by_kind or {}
    failed = {kind: n for kind, n in kinds.items() if kind not in _REFUSED and n > 0}
    if failed:
        listed = ", ".join(f"{kind} {n:,}" for kind, n in failed.items())
        notes.append(f"{sum(failed.values()):,} calls without a reply ({listed})")
    return "; ".join(notes)


def _runs(summary: SweepSummary, reports: Mapping[str, str]) -> str:
    columns = ("Run", "Task", "Seed", "Optimizer", "Train", "Validation", "Test", "Calls", "Tokens", "Cost", "Error")
    text = ("Run", "Task", "Optimizer", "Error")
    head = "".join(f'<th scope="col"{" class=text" if c in text else ""}>{c}</th>' for c in columns)
    rows = [f"<thead><tr>{head}</tr></thead><tbody>"]
    simulated = summary.simulated  # its runs count no tokens: none is said, as in their reports
    for run in summary.runs:
        total = run.total_tokens
        optimizer = isolate(run.optimizer) + (f" / {isolate(run.models)}" if run.models else "")
        cells = [
            f'<td class="text">{_run_name(run.name, reports)}</td>',
            f'<td class="text">{_breakable(run.task)}</td>',
            f'<td class="num">{isolate(run.seed)}</td>',
            f'<td class="text">{optimizer}</td>',
            *(f'<td class="num">{esc(percent(run.score(part)))}</td>' for part in ("train", "validation", "test")),
            f'<td class="num">{esc(count(run.calls))}</td>',
            f'<td class="num">{esc(count(total) if total is not None or not simulated else SIMULATED_TOKENS)}</td>',
            f'<td class="num">{esc(money(run.cost_usd))}</td>',
            f'<td class="error">{isolate(run.error or _notes(run))}</td>',
        ]
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return '<table class="figures runs">\n' + "\n".join(rows) + "\n</tbody></table>"


def render_sweep(summary: SweepSummary | Mapping[str, Any], reports: Mapping[str, str] | None = None) -> str:
    """The page for a sweep's summary (the content of ``sweep.json``).

    Args:
        summary: The sweep's summary: a `SweepSummary`, or ``sweep.json``'s content (read with
            `SweepSummary.from_json`: a field of the wrong kind is a `ValueError` naming it).
        reports: The link to each run's report, by run name (see `report_links`); a run
            without one is shown without a link.

    Examples:
        >>> summary = {"sweep": {"name": "<b>x</b>"}, "runs": [{"task": "gsm8k"}], "published": {"gsm8k": 0.932}}
        >>> page = render_sweep(summary)
        >>> "&lt;b&gt;x&lt;/b&gt;" in page and "<b>x</b>" not in page and "93.2 %" in page
        True
    """
    if not isinstance(summary, SweepSummary):
        summary = SweepSummary.from_json(summary)
    totals = summary.totals
    notice = f'<p class="notice">{_SIMULATED}</p>' if summary.simulated else ""
    settings = json.dumps(summary.settings, ensure_ascii=False, sort_keys=True)
    runs = totals.runs if totals.runs is not None else len(summary.runs)
    facts = (
        f"{esc(runs)} runs on backend {isolate(summary.backend)}; {esc(totals.failed)} failed; "
        f"{esc(count(totals.calls))} calls; cost {esc(money(totals.cost_usd))}."
    )
    return "\n".join(
        [
            page_head(f"Sweep {as_text(summary.name)}", css=CSS) + "<body><main>",
            f"<h1>Sweep {isolate(summary.name)}</h1>",
            notice,
            f"<p>{facts}</p>",
            f"<p>Settings: <code>{isolate(settings)}</code></p>",
            "<h2>Averages of test accuracy</h2>",
            "<p>Each task's mean over seeds, averaged over tasks: weighted by each task's test items, as the paper "
            "reports BBH, and unweighted. Each column says how many tasks its average covers; the paper's figure "
            "stands under an average only when that covers every task the paper averaged (under one over part "
            "of a BBH category: \u2018not comparable\u2019). A variant with no test score for one of a group's "
            "tasks (its runs failed or stopped) has a dash there.</p>",
            _averages(summary),
            "<h2>Optimizers across tasks</h2>",
            "<p>Each task's mean score over seeds: its test accuracy, or its train accuracy where the task is "
            "scored on the items it was optimised on, as the paper scores LIAR (such a task is marked "
            "\u2018(train)\u2019). A dash on the axis: no score (the runs failed or stopped).</p>",
            optimizer_chart(summary.by_task, _scored_on(summary)),
            "<h2>Runs</h2>",
            _runs(summary, reports or {}),
            "</main></body></html>",
            "",
        ]
    )


def write_sweep_report(
    sweep_dir: str | os.PathLike[str], summary: SweepSummary | Mapping[str, Any]
) -> tuple[Path, Path]:
    """Write ``sweep.json`` (`SweepSummary.to_json`) and ``sweep.html`` (atomically) into `sweep_dir`; return
    their paths.

    Raises:
        ValueError: `summary` is plain JSON with a field of the wrong kind (a NaN score, a negative count):
            one line names it, and nothing is written.
    """
    if not isinstance(summary, SweepSummary):
        summary = SweepSummary.from_json(summary)
    out = Path(sweep_dir)
    out.mkdir(parents=True, exist_ok=True)
    text = json.dumps(summary.to_json(), indent=1, ensure_ascii=False, allow_nan=False)
    write_text_atomically(out / "sweep.json", text + "\n")
    write_text_atomically(out / "sweep.html", render_sweep(summary, report_links(out, summary)))
    return out / "sweep.json", out / "sweep.html"
