"""The self-contained HTML report of an optimization run.

``semgrad run TASK --out DIR`` writes ``DIR/results.json``; `write_report` turns it
into ``DIR/report.html``: one file with inline CSS and SVG and no script, which
loads nothing from the network. It shows the run's settings (and a notice when
the LLM was the simulated one), a summary table beside the paper's published
figures, the score per iteration as a chart, the graph as a picture (with its
DOT and Mermaid text), each parameter's initial and final text with a diff, and
the gradients and stage reports behind every update. `render_report` is the
pure part: results in, HTML text out. `write_html` writes the same page for
any `semgrad.effects.fit` result, from Python.

Examples:
    >>> from semgrad.report import render_report
    >>> page = render_report({"task": "gsm8k", "tasks": [{"task": "gsm8k", "accuracy": {"test": 0.9}}]})
    >>> "93.2 %" in page  # the paper's GSM8K figure, beside our test accuracy (the same quantity)
    True
    >>> one = render_report({"task": "bbh:navigate", "tasks": [{"task": "bbh:navigate", "category": "algorithmic"}]})
    >>> "85.6 %" in one  # a category average is no figure for one task
    False

.. versionadded:: 0.1.0
"""

from ._fit import graph_json as graph_json
from ._fit import iteration_json as iteration_json
from ._fit import write_html as write_html
from ._format import money as money
from ._html import render_report as render_report
from ._io import REPORT_NAME as REPORT_NAME
from ._io import write_report as write_report
from ._summary import PUBLISHED as PUBLISHED

__all__ = [
    "PUBLISHED",
    "REPORT_NAME",
    "graph_json",
    "iteration_json",
    "money",
    "render_report",
    "write_html",
    "write_report",
]
