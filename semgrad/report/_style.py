"""The report's inline style sheet (system fonts only: nothing is fetched), the Content-Security-Policy of
every page semgrad writes, and the head those pages share."""

from __future__ import annotations

from ._format import esc

__all__ = ["CSP", "CSS", "page_head"]

#: The Content-Security-Policy of every page semgrad writes (the run report, the compare page, ``sweep.html``):
#: nothing is loaded or run -- no script, frame, font or remote image; only the page's own inline style and
#: ``data:`` images. Each page carries it in a ``<meta http-equiv>`` tag (`page_head`).
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"

CSS = """
:root { color-scheme: light; --ink: #1d2330; --muted: #5b6475; --line: #d7dce4; --accent: #3366aa; }
* { box-sizing: border-box; }
body { margin: 0; background: #f6f7f9; color: var(--ink);
  font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
main { max-width: 1180px; margin: 0 auto; padding: 24px 28px 48px; background: #fff; overflow-wrap: break-word; }
h1 { font-size: 1.6rem; margin: 0 0 8px; }
h2 { font-size: 1.3rem; margin: 32px 0 10px; padding-bottom: 4px; border-bottom: 2px solid var(--line); }
h3 { font-size: 1.1rem; margin: 22px 0 8px; }
h4 { font-size: 1rem; margin: 14px 0 6px; }
h5 { font-size: .85rem; margin: 8px 0 4px; color: var(--muted); text-transform: uppercase; letter-spacing: .04em; }
h5 code { text-transform: none; letter-spacing: normal; font-size: .95rem; color: var(--ink); }
a { color: var(--accent); }
code, pre { font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, "DejaVu Sans Mono", monospace;
  font-size: .88rem; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; background: #f3f5f8; border: 1px solid var(--line);
  border-radius: 4px; padding: 8px 10px; margin: 0 0 8px; max-height: 32em; overflow: auto; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 2px 14px; margin: 8px 0 12px; }
dl.facts dt { color: var(--muted); }
dl.facts dd { margin: 0; overflow-wrap: anywhere; }
.notice { background: #fff4cc; border: 2px solid #d4a800; border-radius: 6px; padding: 10px 14px; font-size: 1.05rem; }
.notice.warn { background: #ffe3e0; border-color: #c0392b; }
nav ul { list-style: none; display: flex; flex-wrap: wrap; gap: 6px 18px; padding: 0; margin: 12px 0; }
table { border-collapse: collapse; margin: 6px 0 12px; }
th, td { border: 1px solid var(--line); padding: 4px 10px; text-align: left; vertical-align: top;
  overflow-wrap: break-word; }
thead th { background: #eef1f5; white-space: nowrap; }
td.published-cell { min-width: 16em; }
td.num, .num { white-space: nowrap; overflow-wrap: normal; font-variant-numeric: tabular-nums; }
table.figures thead th { white-space: normal; overflow-wrap: normal; vertical-align: bottom; }
table.figures thead th:not(:first-child), table.figures td.num { text-align: right; }
table.figures thead th.text { text-align: left; }
table.figures th.method { font-weight: normal; background: #fafbfc; }
td.scores { min-width: 9em; }
table.summary th[scope=row] { font-weight: 600; background: #fafbfc; white-space: nowrap; }
tr.average th, tr.average td { background: #f6f8fb; }
tr.rejected td { color: var(--muted); }
tr.paper td { color: var(--muted); font-style: italic; }
td.error { color: #a00; min-width: 8em; overflow-wrap: anywhere; }
table.runs { font-size: .85rem; }
.published { color: #6a3d9a; }
.not-comparable { color: #555; font-style: italic; }
.caption, .used-by, .task-facts, p.empty { color: var(--muted); font-size: .9rem; }
.label { margin: 8px 0 2px; font-weight: 600; font-size: .9rem; }
svg.chart, svg.graph { display: block; max-width: 100%; height: auto; background: #fff; border: 1px solid var(--line);
  border-radius: 4px; margin: 6px 0; }
svg text { font-family: system-ui, sans-serif; fill: var(--ink); }
svg .tick, svg .legend { font-size: 12px; fill: var(--muted); }
svg .axis-label { font-size: 13px; fill: var(--muted); }
svg .empty { font-size: 14px; fill: var(--muted); }
svg .grid { stroke: #e6e9ee; stroke-width: 1; }
svg .axis { stroke: #8a93a3; stroke-width: 1.2; }
svg .train-line { fill: none; stroke: #3366aa; stroke-width: 2.5; }
svg .val-line { fill: none; stroke: #e07b00; stroke-width: 2.5; stroke-dasharray: 7 4; }
svg .initial { stroke: #888; stroke-width: 1.5; stroke-dasharray: 2 3; }
svg .train-point { fill: #3366aa; }
svg .val-accepted { fill: #2e9e44; stroke: #1d6b2d; stroke-width: 1.5; }
svg .val-rejected { fill: #fff; stroke: #c0392b; stroke-width: 2.5; }
svg .val-none { fill: #e07b00; }
svg .node-label { font-size: 13px; font-family: ui-monospace, Menlo, Consolas, monospace; }
svg .node-input { fill: #eeeeee; stroke: #555555; stroke-width: 1.5; }
svg .node-param { fill: #fff4cc; stroke: #aa8800; stroke-width: 1.5; stroke-dasharray: 4 3; }
svg .node-llm { fill: #dbe9ff; stroke: #3366aa; stroke-width: 1.5; }
svg .node-function { fill: #e2f5e2; stroke: #338833; stroke-width: 1.5; }
svg .node-other { fill: #ffffff; stroke: #999999; stroke-width: 1.5; }
svg .output-ring { fill: none; stroke: #1d2330; stroke-width: 2; }
svg .edge { fill: none; stroke: #6b7385; stroke-width: 1.5; }
svg .arrow { fill: #6b7385; }
.texts { display: grid; grid-template-columns: 1fr 1fr; gap: 12px; }
.param, .update { border: 1px solid var(--line); border-radius: 6px; padding: 6px 14px 8px; margin: 10px 0; }
.tag { font-size: .75rem; font-weight: 600; padding: 1px 7px; border-radius: 9px; background: #eef1f5;
  color: var(--muted); }
.tag.changed { background: #e0f2e5; color: #1d6b2d; }
pre.diff ins { background: #d4f4dc; color: #0b5d1e; text-decoration: none; }
pre.diff del { background: #fbd9d6; color: #8e1b10; }
pre.diff .diff-note { color: var(--muted); font-style: italic; }
pre.gradient { background: #fbf7ee; }
ol.stages { margin: 4px 0 6px; padding-left: 22px; font-size: .92rem; }
details { margin: 6px 0; }
summary { cursor: pointer; color: var(--accent); }
section.task { border-top: 1px solid var(--line); margin-top: 26px; }
table.predictions { width: 100%; table-layout: fixed; font-size: .9rem; }
table.predictions th:first-child { width: 3.5em; } table.predictions th:last-child { width: 6em; }
table.predictions .cell-text { white-space: pre-wrap; max-height: 9em; overflow: auto; }
table.predictions .node-output + .node-output { margin-top: 6px; }
table.predictions .node-name { font-size: .8rem; color: var(--muted); font-family: ui-monospace, Menlo, monospace; }
tr.correct td.verdict { color: #1d6b2d; font-weight: 600; background: #e0f2e5; }
tr.wrong td.verdict { color: #8e1b10; font-weight: 600; background: #fbd9d6; }
p.errors { margin: 6px 0; padding: 4px 10px; border-left: 4px solid #c0392b; background: #fff5f4; }
p.errors.none { border-left-color: #2e9e44; background: #f3fbf5; }
footer { margin-top: 40px; color: var(--muted); font-size: .85rem; }
"""


def page_head(title: str, css: str = CSS) -> str:
    """The start of a self-contained page (run report, comparison, sweep), up to its ``<body>``: the strict
    `CSP`, no referrer, the viewport, the escaped `title` and the inline `css`.

    Examples:
        >>> page_head("a <b>", css="p {}").endswith("<title>a &lt;b&gt;</title><style>p {}</style></head>")
        True
    """
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        '<meta name="referrer" content="no-referrer">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)}</title><style>{css}</style></head>"
    )
