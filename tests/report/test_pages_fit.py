"""The pages' shared style and links, without a browser: one style sheet for every page, each compare row linked
to its method's report, and a bbh:all report that stays light."""

from __future__ import annotations

import json
import re

from semgrad.report import render_report
from semgrad.report._compare import render_compare
from semgrad.report._predictions import predictions_table
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


def test_a_bbh_all_report_is_light():
    """A 27-task bbh:all report with 210 predictions per task weighs under 1 MB (it was 5.5 MB: every prediction
    of every task inlined), while its results.json holds all 5,670 predictions."""
    from .test_pages_fit_browser import bbh_all_results

    results = bbh_all_results()
    page = render_report(results)
    assert len(json.dumps(results)) > 4_000_000
    assert len(page.encode("utf-8")) < 1_000_000, len(page.encode("utf-8"))
    assert page.count("Showing 20 of 210 predictions: the first 20 wrong ones") == 27
    assert "105 of 210 correct on the test split" in page


def test_a_capped_table_shows_the_wrong_ones_first_numbered_as_in_the_split():
    """Over its limit, a task's table shows the wrong predictions first (then others), each under its number in
    the split, and says how many it left out; the summary still counts them all."""
    entries = [{"inputs": {"q": f"q{i}"}, "output": "o", "target": "t", "correct": i not in (3, 7)} for i in range(30)]
    html = predictions_table({"predictions": entries}, "task-0", limit=5)
    numbers = re.findall(r'<td class="num">(\d+)</td>', html)
    assert numbers == ["1", "2", "3", "4", "8"]
    assert "28 of 30 correct" in html and "Showing 5 of 30 predictions: all 2 wrong ones and the first 3 others" in html
    everything = predictions_table({"predictions": entries}, "task-0", limit=30)
    assert "Showing" not in everything and len(re.findall(r'<td class="num">\d+</td>', everything)) == 30


def test_a_single_task_report_shows_up_to_200_predictions_and_a_long_text_is_clipped():
    """A one-task report shows 200 predictions of 300, and a 5,000-character output as its first 1,500 and a count."""
    entries = [{"inputs": {"q": "q"}, "output": "y" * 5000, "target": "t", "correct": True} for _ in range(300)]
    page = render_report({"task": "gsm8k", "tasks": [{"task": "gsm8k", "predictions": entries}]})
    assert "Showing 200 of 300 predictions: the first 200," in page
    assert page.count("y" * 1500 + "\u2026 (3,500 more characters in results.json)") == 200
    assert "y" * 1501 not in page
