"""sweep.html links each run's report, and only reports inside the run's own folder."""

from __future__ import annotations

import os
import re

from hypothesis import given
from hypothesis import strategies as st

from semgrad.sweeps import render_sweep, write_sweep_report
from semgrad.sweeps._page import report_links

HOSTILE_NAMES = (
    "../outside",
    "..",
    ".",
    "/etc",
    "a/b",
    "a\\\\b",
    ".hidden",
    "javascript:alert(1)",
    '"><script>alert(1)</script>',
    "",
)


def _row(name: object) -> dict[str, object]:
    return {"name": name, "task": "gsm8k", "seed": 0, "optimizer": "tgd", "accuracy": {}, "tokens": {}}


def _hrefs(page: str) -> list[str]:
    return re.findall(r'href="([^"]*)"', page)


def test_only_reports_inside_their_run_folder_are_linked(tmp_path):
    """A plain run with a report gets a link; hostile names, missing reports and symlinks leading out get none."""
    sweep, outside = tmp_path / "sweep", tmp_path / "outside"
    for folder in (sweep / "gsm8k__seed0__tgd", outside, sweep / "no-report", sweep / "linked-file"):
        folder.mkdir(parents=True)
    (sweep / "gsm8k__seed0__tgd" / "report.html").write_text("ok")
    (outside / "report.html").write_text("secret")
    os.symlink(outside, sweep / "linked-dir")
    os.symlink(outside / "report.html", sweep / "linked-file" / "report.html")
    names = ["gsm8k__seed0__tgd", "no-report", "linked-dir", "linked-file", *HOSTILE_NAMES, 7, None]
    summary = {"sweep": {"name": "s"}, "runs": [_row(n) for n in names]}
    _, page_path = write_sweep_report(sweep, summary)
    assert report_links(sweep, summary) == {"gsm8k__seed0__tgd": "gsm8k__seed0__tgd/report.html"}
    page = page_path.read_text("utf-8")
    assert _hrefs(page) == ["gsm8k__seed0__tgd/report.html"]
    assert "<script>" not in page and "&lt;script&gt;" in page


@given(st.text(min_size=1, max_size=30))
def test_every_link_resolves_to_a_report_inside_the_sweep(tmp_path_factory, name):
    """Whatever a run's name, each link on the page resolves to an existing report.html inside the sweep folder."""
    sweep = tmp_path_factory.mktemp("sweep")
    try:
        (sweep / name).mkdir(parents=True, exist_ok=True)
        (sweep / name / "report.html").write_text("x")
    except (OSError, ValueError):
        pass  # names the file system refuses simply have no report
    page = render_sweep({"runs": [_row(name)]}, report_links(sweep, {"runs": [_row(name)]}))
    for href in _hrefs(page):
        from urllib.parse import unquote

        target = (sweep / unquote(href)).resolve()
        assert target.is_file() and target.name == "report.html" and target.parent.parent == sweep.resolve()


def test_without_links_the_page_has_no_href():
    """render_sweep without report links (e.g. a summary alone) shows run names as plain text."""
    page = render_sweep({"runs": [_row("gsm8k__seed0__tgd")]})
    assert _hrefs(page) == [] and "gsm8k__<wbr>seed0__<wbr>tgd" in page  # breakable between its words
