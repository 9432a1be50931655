"""The report's new sections in headless Chromium: predictions, proposal diffs, error counts, sweep links."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from semgrad.report import write_report
from semgrad.sweeps import write_sweep_report

from .conftest import HOSTILE, Page, make_results, make_task, parse
from .test_report_browser import find_chromium, png_facts, run_chromium

pytestmark = pytest.mark.slow

#: Tall enough for the whole single-task page, so the screenshot shows every new section.
WIDTH, HEIGHT = 1280, 4200


@pytest.fixture(scope="module")
def sections_view(tmp_path_factory: pytest.TempPathFactory) -> tuple[bytes, Page, Path]:
    """A single-task report with predictions (one of them hostile), proposal diffs and error counts; its
    full-page screenshot and DOM as Chromium renders them."""
    browser = find_chromium()
    work = tmp_path_factory.mktemp("sections")
    run = work / "run"
    run.mkdir()
    task = make_task("gsm8k", None, 0.9)
    task["predictions"].append(
        {"inputs": {"question": " ".join(HOSTILE)}, "output": HOSTILE[0], "target": HOSTILE[2], "correct": False}
    )
    (run / "results.json").write_text(json.dumps(make_results([task], task="gsm8k", simulated=False)), "utf-8")
    url = write_report(run).as_uri()
    screenshot = work / "sections.png"
    run_chromium(browser, work, f"--screenshot={screenshot}", f"--window-size={WIDTH},{HEIGHT}", url)
    dom = run_chromium(browser, work, "--dump-dom", url)
    return screenshot.read_bytes(), parse(dom), screenshot


def test_sections_screenshot_is_a_rendered_page(sections_view):
    """The screenshot is a non-blank PNG of the window's size."""
    png, _, _ = sections_view
    width, height, distinct = png_facts(png)
    assert (width, height) == (WIDTH, HEIGHT) and distinct > 100


def test_the_browser_dom_has_the_predictions_diffs_and_errors(sections_view):
    """Chromium's DOM holds the predictions table with a row per sample, the proposal diffs with their
    insertions and deletions, and the failed-call counts; hostile text stayed text."""
    _, page, _ = sections_view
    main = ("html", "body", "main")
    assert page.element("task-0-predictions")[0] == "table"
    assert page.element("task-0-errors") == ("p", (*main, "section"))
    assert page.element("errors-summary") == ("p", (*main, "section"))
    rows = [a.get("class") for tag, a in page.tags if tag == "tr" and a.get("class") in ("correct", "wrong")]
    assert rows == ["correct", "wrong", "correct", "wrong"]
    classes = [a.get("class") for tag, a in page.tags if tag == "pre"]
    assert classes.count("diff proposal-diff") == 3
    names = [tag for tag, _ in page.tags]
    assert "ins" in names and "del" in names and "script" not in names and "img" not in names
    text = page.all_text()
    assert "Failed calls: 3 (timeout 2, rate_limit 1)" in text and "2 of 4 correct on the test split" in text
    for hostile in HOSTILE:
        assert hostile in text


def test_sweep_page_links_open_the_run_reports(tmp_path):
    """In Chromium, sweep.html's run link is a relative link to that run's report, which exists and renders."""
    browser = find_chromium()
    run = tmp_path / "sweep" / "gsm8k__seed0__tgd"
    run.mkdir(parents=True)
    (run / "results.json").write_text(json.dumps(make_results([make_task("gsm8k", None, 0.9)], task="gsm8k")))
    write_report(run)
    row = {"name": run.name, "task": "gsm8k", "seed": 0, "optimizer": "tgd", "accuracy": {"test": 0.9}}
    _, page_path = write_sweep_report(tmp_path / "sweep", {"sweep": {"name": "s"}, "runs": [row]})
    page = parse(run_chromium(browser, tmp_path, "--dump-dom", page_path.as_uri()))
    links = [a["href"] for tag, a in page.tags if tag == "a" and a.get("href")]
    assert links == ["gsm8k__seed0__tgd/report.html"]
    report = parse(run_chromium(browser, tmp_path, "--dump-dom", (page_path.parent / links[0]).as_uri()))
    assert report.element("task-0-predictions")[0] == "table"
