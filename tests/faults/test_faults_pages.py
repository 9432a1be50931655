"""Fault injection, pages (issue 32, point 8): every page semgrad writes has one Content-Security-Policy, and user
text with a bidirectional override cannot reorder the page around it.

What it tries, and what must hold:

* the run report, the compare page and ``sweep.html`` each carry the one policy of `semgrad.report._style.CSP` (the
  sweep page had none);
* U+202E (RIGHT-TO-LEFT OVERRIDE) in every kind of user text each page shows -- a task name, a parameter's name and
  text, a gradient, an output, a stage note, an error, a backend, an optimizer, a sweep's and a run's name, a variant
  in the chart -- ends up isolated wherever it lands: inside a ``<bdi>`` element in HTML content, or, where no
  element can hold it (an attribute, an SVG label, a ``<title>``), between U+2068 FIRST STRONG ISOLATE and
  U+2069 POP DIRECTORY ISOLATE; an isolate character in the text itself cannot close that isolate early.
"""

from __future__ import annotations

import html.parser
from typing import Any

import pytest

from semgrad.report import render_report
from semgrad.report._compare import render_compare
from semgrad.report._format import esc, isolate
from semgrad.report._style import CSP
from semgrad.sweeps import render_sweep
from tests.report.conftest import VOID, hostile_version, make_results, make_task

RLO, FSI, PDI = "\u202e", "\u2068", "\u2069"
#: Reads "evil (reversed)" right to left: the text an override would turn around the page's own words.
EVIL = f"evil{RLO}(desrever) 99.9 %"


class _Isolation(html.parser.HTMLParser):
    """Each place a U+202E lands on a page, and whether it is isolated there."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.landed: list[tuple[str, bool]] = []
        self.csp: list[str | None] = []

    def _attributes(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "meta" and dict(attrs).get("http-equiv") == "Content-Security-Policy":
            self.csp.append(dict(attrs).get("content"))
        for name, value in attrs:
            if value and RLO in value:
                self.landed.append((f"<{tag} {name}=...>", _plain_isolated(value)))

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._attributes(tag, attrs)
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._attributes(tag, attrs)

    def handle_endtag(self, tag: str) -> None:
        if self.stack and self.stack[-1] == tag:
            self.stack.pop()

    def handle_data(self, data: str) -> None:
        if RLO in data:
            where = "/".join(self.stack[-3:])
            no_element = "svg" in self.stack or "title" in self.stack  # no HTML element can hold it there
            isolated = "bdi" in self.stack or (no_element and _plain_isolated(data))
            self.landed.append((f"{where}: {data[:60]!r}", isolated))


def _plain_isolated(text: str) -> bool:
    """Whether every U+202E in `text` lies between an FSI and the PDI that closes it."""
    depth = 0
    for char in text:
        if char == FSI:
            depth += 1
        elif char == PDI:
            depth -= 1
        elif char == RLO and depth <= 0:
            return False
    return True


def _check(page: str, fields: int) -> None:
    parsed = _Isolation()
    parsed.feed(page)
    assert parsed.csp == [CSP], parsed.csp
    assert len(parsed.landed) >= fields, parsed.landed
    loose = [where for where, isolated in parsed.landed if not isolated]
    assert not loose, loose


def test_the_run_report_isolates_an_override_in_every_field():
    """A U+202E in every string field of results.json (task, params, gradients, outputs, errors, graph) is
    isolated on the run report, which carries the one CSP."""
    results = make_results([make_task("bbh:navigate", "algorithmic", 0.5)], task="bbh:navigate")
    page = render_report(hostile_version(results, EVIL), {"task": EVIL})
    _check(page, fields=20)


def test_the_compare_page_isolates_an_override_in_every_field():
    """A U+202E in the task, the backend, an optimizer's name, its stop reason and the token note is isolated on
    the compare page, which carries the one CSP."""
    method = {"optimizer": EVIL, "scores": [0.5, 0.6], "test": 0.6, "stopped": EVIL, "calls": 3}
    summary = {"task": EVIL, "backend": EVIL, "token_note": EVIL, "methods": [method], "seed": 0}
    _check(render_compare(summary), fields=5)


def test_sweep_html_has_the_csp_and_isolates_an_override_in_every_field():
    """sweep.html carries the one CSP (it had none), and a U+202E in the sweep's name, a run's name, task,
    optimizer, models and error, a variant and a task of the chart is isolated."""
    run = {"name": EVIL, "task": EVIL, "seed": 0, "optimizer": EVIL, "models": EVIL, "error": EVIL}
    summary = {
        "sweep": {"name": EVIL, "settings": {"note": EVIL}},
        "backend": EVIL,
        "runs": [run, {**run, "error": None, "stopped": EVIL}],
        "by_task": {EVIL: {EVIL: 0.5, "tgd": None}},
        "averages": {EVIL: {"overall": 0.5}},
    }
    _check(render_sweep(summary, {EVIL: "x/report.html"}), fields=12)


@pytest.mark.parametrize("text", [EVIL, f"{PDI}{EVIL}", f"{PDI}{PDI}{RLO}x", f"\u202b{EVIL}\u202c"])
def test_text_cannot_close_the_isolate_it_is_put_in(text):
    """A stray PDI (or several) before the override is neutralised: the override stays inside the isolate esc
    opens, in an attribute or a label, and inside the <bdi> of isolate."""
    assert _plain_isolated(esc(text))
    assert isolate(text).startswith("<bdi>") and isolate(text).endswith("</bdi>")


def _sample_pages() -> dict[str, Any]:
    results = make_results([make_task("gsm8k", None, 0.9)], task="gsm8k")
    return {
        "report": render_report(results),
        "compare": render_compare({"task": "gsm8k", "methods": [{"optimizer": "tgd", "scores": [0.5]}]}),
        "sweep": render_sweep({"sweep": {"name": "s"}, "runs": [{"name": "r", "task": "gsm8k"}]}),
    }


@pytest.mark.parametrize("name", ["report", "compare", "sweep"])
def test_every_page_carries_the_one_policy(name):
    """Each page has exactly one CSP meta tag, and it is semgrad.report._style.CSP: nothing loads, nothing runs."""
    parsed = _Isolation()
    parsed.feed(_sample_pages()[name])
    assert parsed.csp == [CSP]
    assert "default-src 'none'" in CSP and "script" not in CSP
