"""The pages' shared style and links, without a browser: one style sheet for every page, each compare row linked
to its method's report, and a bbh:all report that stays light."""

from __future__ import annotations

import re

from semgrad.report import render_report
from semgrad.report._compare import render_compare
from semgrad.report._style import CSS
from semgrad.sweeps import render_sweep


def _styles(page: str) -> list[str]:
    return re.findall(r"<style>(.*?)</style>", page, re.S)


def test_every_page_has_the_report_s_one_style_sheet():
    """The run report, compare.html and sweep.html each carry exactly one style sheet, the report's own CSS."""
    pages = (
        render_report({"task": "gsm8k", "tasks": [{"task": "gsm8k"}]}),
        render_compare({"task": "gsm8k", "methods": [{"optimizer": "tgd", "scores": [0.5]}]}),
        render_sweep({"sweep": {"name": "s"}, "runs": [{"name": "r", "task": "gsm8k"}]}),
    )
    for page in pages:
        assert _styles(page) == [CSS]
        assert "<main>" in page and "</main></body>" in page


def test_task_names_never_break_inside_a_word_by_the_style_sheet():
    """Table cells and the page break long words only where they would overflow, never to shrink a column:
    overflow-wrap: anywhere is kept for free text (errors, outputs), not for cells holding names."""
    rules = {sel.strip(): body for sel, body in re.findall(r"([^{}]+)\{([^}]*)\}", CSS)}
    assert "overflow-wrap: break-word" in rules["th, td"] and "overflow-wrap: break-word" in rules["main"]
    assert "nowrap" in rules["td.num, .num"] and "tabular-nums" in rules["td.num, .num"]


def test_each_compare_row_links_its_method_s_report_and_only_a_plain_folder():
    """A method's name links to <run_dir>/report.html; a run_dir that is not one plain folder name gets no link."""
    methods = [
        {"optimizer": "tgd", "run_dir": "tgd", "scores": [0.5]},
        {"optimizer": "x", "run_dir": "../../etc", "scores": [0.5]},
        {"optimizer": "y", "run_dir": "javascript:alert(1)", "scores": [0.5]},
        {"optimizer": "z", "scores": [0.5]},
    ]
    page = render_compare({"task": "gsm8k", "methods": methods})
    assert set(re.findall(r'href="([^"]*)"', page)) == {"tgd/report.html"}


def test_a_dry_comparison_links_no_report():
    """A dry run wrote no run folder: no method's name is a link."""
    page = render_compare({"dry_run": True, "methods": [{"optimizer": "tgd", "calls": 9, "run_dir": "tgd"}]})
    assert "href=" not in page
