"""The report in a real browser: headless Chromium renders it, runs no script, keeps hostile text as text."""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest

from semgrad.report import write_report

from .conftest import HOSTILE, Page, hostile_version, make_results, make_task, parse

pytestmark = pytest.mark.slow

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-dev-shm-usage",
    "--hide-scrollbars",
)


def find_chromium() -> str:
    """The Chromium executable; fails under CI (which installs it) and skips elsewhere when it is absent."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found:
        return found
    if os.environ.get("CI"):
        pytest.fail("chromium is not installed, but CI must run the browser test (.ci/run installs Debian's chromium)")
    pytest.skip("chromium is not installed (apt-get install chromium); CI runs this test")


def run_chromium(browser: str, work: Path, *arguments: str) -> str:
    """Run headless Chromium with a fresh profile under `work`; its standard output."""
    profile = Path(work) / f"profile-{len(list(work.glob('profile-*')))}"
    result = subprocess.run(
        [browser, *FLAGS, f"--user-data-dir={profile}", *arguments],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "HOME": str(work)},
    )
    assert result.returncode == 0, f"chromium exited with {result.returncode}: {result.stderr[-2000:]}"
    return result.stdout


def png_facts(data: bytes) -> tuple[int, int, int]:
    """A PNG's width, height and how many distinct byte values its (filtered) pixel data holds."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG file"
    width, height = struct.unpack(">II", data[16:24])
    chunks, offset = [], 8
    while offset < len(data):
        (length,), kind = struct.unpack(">I", data[offset : offset + 4]), data[offset + 4 : offset + 8]
        if kind == b"IDAT":
            chunks.append(data[offset + 8 : offset + 8 + length])
        offset += 12 + length
    return width, height, len(set(zlib.decompress(b"".join(chunks))))


@pytest.fixture(scope="module")
def browser_view(tmp_path_factory: pytest.TempPathFactory) -> tuple[bytes, Page]:
    """A hostile two-task report, screenshot and dumped DOM as Chromium renders them."""
    browser = find_chromium()
    work = tmp_path_factory.mktemp("browser")
    run = work / "run"
    run.mkdir()
    tasks = [make_task("bbh:navigate", "algorithmic", 0.55), make_task("bbh:snarks", "nlp", 0.7)]
    results = hostile_version(make_results(tasks, task="bbh:all"), " ".join(HOSTILE))
    (run / "results.json").write_text(json.dumps(results), "utf-8")
    (run / "config.json").write_text(json.dumps({"note": " ".join(HOSTILE)}), "utf-8")
    url = write_report(run).as_uri()
    screenshot = work / "report.png"
    run_chromium(browser, work, f"--screenshot={screenshot}", "--window-size=1280,2000", url)
    dom = run_chromium(browser, work, "--dump-dom", url)
    return screenshot.read_bytes(), parse(dom)


def test_screenshot_is_a_rendered_page(browser_view):
    """Chromium's screenshot of the report is a 1280x2000 PNG with real content, not a blank page."""
    png, _ = browser_view
    width, height, distinct = png_facts(png)
    assert (width, height) == (1280, 2000)
    assert len(png) > 20_000 and distinct > 100, (len(png), distinct)


def test_dom_has_the_chart_and_the_graph_picture(browser_view):
    """The rendered DOM holds the score chart and the graph picture as svg elements with their marks."""
    _, page = browser_view
    assert page.element("score-chart")[0] == "svg" and page.element("graph-picture")[0] == "svg"
    names = [tag for tag, _ in page.tags]
    assert names.count("polyline") >= 2 and names.count("path") >= 5 and "circle" in names


def test_dom_has_no_script_and_no_injected_elements(browser_view):
    """Hostile strings created no script, image or javascript: link in the browser's DOM."""
    _, page = browser_view
    names = [tag for tag, _ in page.tags]
    assert "script" not in names and "img" not in names
    for tag, attributes in page.tags:
        assert not [a for a in attributes if a.startswith("on")], (tag, attributes)
        assert (attributes.get("href") or "#").startswith("#"), (tag, attributes)


def test_hostile_text_is_shown_and_the_structure_is_intact(browser_view):
    """The hostile text is page text, and the elements after it are still where they belong."""
    _, page = browser_view
    text = page.all_text()
    for hostile in HOSTILE:
        assert hostile in text
    main = ("html", "body", "main")
    for wanted in ("summary-section", "graph-section", "per-task-section", "task-0", "task-1", "config-section"):
        assert page.element(wanted) == ("section", main), wanted
    assert page.element("task-1-param-1") == ("div", (*main, "section", "details"))
    assert page.tags[-1][0] == "footer" and page.parents[-1] == main


def test_a_real_simulated_runs_report_renders_with_its_chart_and_graph(tmp_path):
    """`semgrad run bbh:navigate --backend simulated` writes a report.html that headless Chromium renders,
    with the score chart and the graph picture in the DOM and a non-blank screenshot."""
    import sys

    from .._data import data_dir

    data = data_dir()
    browser = find_chromium()
    out = tmp_path / "run"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "semgrad",
            "run",
            "bbh:navigate",
            "--backend",
            "simulated",
            "--data-dir",
            str(data),
            "--iterations",
            "2",
            "--out",
            str(out),
            "--quiet",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    url = (out / "report.html").as_uri()
    screenshot = tmp_path / "run.png"
    run_chromium(browser, tmp_path, f"--screenshot={screenshot}", "--window-size=1280,2000", url)
    width, height, distinct = png_facts(screenshot.read_bytes())
    assert (width, height) == (1280, 2000) and distinct > 100
    page = parse(run_chromium(browser, tmp_path, "--dump-dom", url))
    assert page.element("score-chart")[0] == "svg" and page.element("graph-picture")[0] == "svg"
    assert "script" not in [tag for tag, _ in page.tags]
    assert "Simulated" in page.all_text() or "simulated" in page.all_text()
