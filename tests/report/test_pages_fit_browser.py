"""Every page semgrad writes fits a 1,300 px window in headless Chromium: the run report (a 27-task ``bbh:all``),
the compare page and ``sweep.html``. Chromium measures each page's DOM: nothing wider than the window, no
table cell whose content overflows its box, no number wrapped over two lines, no word of a
table cell or heading (a task name) broken over two lines, no label of a chart cut off at its edge."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from semgrad.report import write_report
from semgrad.report._compare import render_compare
from semgrad.sweeps import write_sweep_report
from semgrad.tasks import BBH_ALGORITHMIC, BBH_NLP

from .conftest import make_results, make_task, parse
from .test_report_browser import find_chromium, png_facts, run_chromium

pytestmark = pytest.mark.slow

WIDTH = 1300

#: The 27 BBH tasks of the paper, by category (long names are the ones a narrow column breaks).
BBH_TASKS = (*((name, "nlp") for name in BBH_NLP), *((name, "algorithmic") for name in BBH_ALGORITHMIC))

#: What Chromium runs in the page (its CSP removed for the measurement only): the facts the tests check,
#: written as JSON into a <pre id="fit-facts"> that --dump-dom prints.
MEASURE = """
<script>
(function () {
  const lines = (node) => {
    const range = document.createRange();
    range.selectNodeContents(node);
    const tops = new Set();
    for (const r of range.getClientRects()) { if (r.width > 0 && r.height > 0) tops.add(Math.round(r.top)); }
    return tops.size;
  };
  const where = (el) => (el.closest('[id]') || {}).id + ' ' + el.tagName + ': ' + el.textContent.slice(0, 60);
  const overflowing = [];
  for (const cell of document.querySelectorAll('td, th')) {
    if (cell.closest('details:not([open])')) continue;
    if (cell.scrollWidth > cell.clientWidth + 1) overflowing.push(where(cell));
  }
  const wrapped = [];
  const figure = /^\\s*[-+\\u2212]?\\$?[\\d,.]+\\s*(%|s|pp)?\\s*$/;
  for (const cell of document.querySelectorAll('td, th, .num')) {
    if (cell.closest('details:not([open])')) continue;
    if (!cell.matches('.num') && !figure.test(cell.textContent)) continue;
    if (lines(cell) > 1) wrapped.push(where(cell));
  }
  const broken = [];
  for (const el of document.querySelectorAll('td, th, h1, h2, h3, h4')) {
    const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      if (node.parentElement.closest('pre, .cell-text, td.error, details:not([open])')) continue;
      const re = /[^\\s_:-]+/g;
      let m;
      while ((m = re.exec(node.data)) !== null) {
        const range = document.createRange();
        range.setStart(node, m.index);
        range.setEnd(node, m.index + m[0].length);
        const tops = new Set([...range.getClientRects()].map((r) => Math.round(r.top)));
        if (tops.size > 1) broken.push(m[0]);
      }
    }
  }
  const clipped = [];
  for (const text of document.querySelectorAll('svg.chart text')) {
    const box = text.getBoundingClientRect(), frame = text.closest('svg').getBoundingClientRect();
    if (box.left < frame.left - 1 || box.right > frame.right + 1 || box.bottom > frame.bottom + 1)
      clipped.push(text.textContent.slice(0, 60));
  }
  const facts = {
    scrollWidth: document.documentElement.scrollWidth,
    innerWidth: window.innerWidth,
    cells: document.querySelectorAll('td, th').length,
    numbers: [...document.querySelectorAll('td, th, .num')].filter((c) => figure.test(c.textContent)).length,
    overflowing: overflowing, wrapped: wrapped, broken: broken, clipped: clipped,
  };
  const out = document.createElement('pre');
  out.id = 'fit-facts';
  out.textContent = JSON.stringify(facts);
  document.body.appendChild(out);
})();
</script>
"""


def measured(page: Path, work: Path) -> dict[str, Any]:
    """Chromium's facts about `page` in a 1,300 px wide window (a copy of it, with the measuring script)."""
    browser = find_chromium()
    text = page.read_text("utf-8")
    start = text.index('<meta http-equiv="Content-Security-Policy"')
    text = text[:start] + text[text.index(">", start) + 1 :]
    probe = page.with_name(f"measure-{page.name}")
    probe.write_text(text.replace("</body>", MEASURE + "</body>"), "utf-8")
    dom = run_chromium(browser, work, f"--window-size={WIDTH},900", "--dump-dom", probe.as_uri())
    found = dom[dom.index('<pre id="fit-facts">') + len('<pre id="fit-facts">') :]
    return json.loads(found[: found.index("</pre>")].replace("&quot;", '"').replace("&amp;", "&"))


def screenshot(page: Path, work: Path) -> bytes:
    """A 1,300 px wide screenshot of `page` itself (with its CSP), as Chromium renders it."""
    shot = work / f"{page.stem}.png"
    run_chromium(find_chromium(), work, f"--screenshot={shot}", f"--window-size={WIDTH},1600", page.as_uri())
    return shot.read_bytes()


def check_fits(page: Path, work: Path) -> dict[str, Any]:
    """Assert that `page` fits 1,300 px: width, cells, numbers and task names; its screenshot is not blank."""
    facts = measured(page, work)
    assert facts["innerWidth"] == WIDTH, facts
    assert facts["scrollWidth"] <= WIDTH, facts
    assert facts["cells"] > 0 and facts["numbers"] > 0, facts
    assert not facts["overflowing"], facts["overflowing"]
    assert not facts["wrapped"], facts["wrapped"]
    assert not facts["broken"], facts["broken"]
    assert not facts["clipped"], facts["clipped"]
    width, _, distinct = png_facts(screenshot(page, work))
    assert width == WIDTH and distinct > 50
    return facts


def bbh_all_results(predictions: int = 210) -> dict[str, Any]:
    """A ``bbh:all`` results.json of 27 tasks, each with `predictions` test predictions of BBH-like size
    (an input of about 400 characters, a reasoned output of about 300)."""
    tasks = []
    for k, (name, category) in enumerate(BBH_TASKS):
        task = make_task(f"bbh:{name}", category, 0.4 + k / 100)
        question = f"Question {{i}} of {name}: " + "Alice, Bob and Claire are playing a game; who holds the ball? " * 6
        task["predictions"] = [
            {
                "sample": i,
                "inputs": {"question": question.format(i=i)},
                "output": "Let us think step by step. " * 11 + f"So the answer is ({'AB'[i % 2]}).",
                "target": "(A)",
                "correct": i % 2 == 0,
            }
            for i in range(predictions)
        ]
        tasks.append(task)
    return make_results(tasks, task="bbh:all")


#: Every purpose a comparison counts, so the compare page has all its columns.
PURPOSES = ("forward", "backward", "rewrite", "critique", "evaluate", "summarize")
#: Every optimizer `semgrad compare` knows (its legend takes three rows).
OPTIMIZERS = (
    "neighbor-sgd",
    "no-neighbours-as-run",
    "tgd",
    "via-feedback",
    "no-gradients",
    "no-neighbors",
    "one-parameter",
    "no-gate",
    "textgrad",
    "optoprime",
    "copro",
)


def big_comparison() -> dict[str, Any]:
    """A comparison of eleven optimizers over six iterations, with every purpose and figures in the millions."""
    methods = [
        {
            "optimizer": name,
            "scores": [0.4 + k / 50 + i / 40 for i in range(7)],
            "test": 0.61 + k / 100,
            "initial_test": 0.41,
            "calls": 1_234_567 + k,
            "calls_by_purpose": {p: 123_456 * (j + 1) for j, p in enumerate(PURPOSES)},
            "tokens_by_purpose": {p: 12_345_678 * (j + 1) for j, p in enumerate(PURPOSES)},
            "input_tokens": 123_456_789,
            "output_tokens": 12_345_678,
            "cost_usd": 1234.5678,
            "wall_s": 12_345.67,
            "run_dir": name,
            "stopped": "budget" if k == 1 else None,
            "refused": 3 if k == 1 else 0,
            "failed_calls": 2 if k == 1 else 0,
        }
        for k, name in enumerate(OPTIMIZERS)
    ]
    return {
        "task": "bbh:tracking_shuffled_objects_seven_objects",
        "backend": "simulated",
        "simulated": True,
        "seed": 0,
        "iterations": 6,
        "protocol": "heldout",
        "sizes": {"train": 20, "validation": 20, "test": 210},
        "token_note": "Tokens the backend did not report are estimated at four characters per token.",
        "methods": methods,
    }


def big_sweep() -> dict[str, Any]:
    """A sweep's summary: the 27 BBH tasks and GSM8K, two seeds, three optimizers (one with its models)."""
    variants = ("neighbor-sgd", "textgrad", "no-neighbours-as-run")
    tasks = [f"bbh:{name}" for name, _ in BBH_TASKS] + ["gsm8k"]
    runs = [
        {
            "name": f"{task.replace(':', '-')}__seed{seed}__{variant}",
            "task": task,
            "seed": seed,
            "optimizer": variant,
            "models": "gpt-4o-mini+gpt-4o" if variant == "textgrad" else None,
            "accuracy": {"train": 0.55, "validation": 0.6, "test": 0.612},
            "calls": 1_234_567,
            "tokens": {"input": 123_456_789, "output": 12_345_678},
            "cost_usd": 1234.56,
            "error": "TimeoutError: the backend did not answer within 120 s" if seed and task == "gsm8k" else None,
        }
        for task in tasks
        for seed in (0, 1)
        for variant in variants
    ]
    means = {v: {"bbh_nlp": 0.7, "bbh_algorithmic": 0.61, "gsm8k": 0.9, "overall": 0.66} for v in variants}
    return {
        "sweep": {"name": "paper-bbh-and-gsm8k", "settings": {"iterations": 6, "seeds": [0, 1]}},
        "backend": "simulated",
        "simulated": True,
        "runs": runs,
        "by_task": {task: {v: 0.5 + k / 100 for v in variants} for k, task in enumerate(tasks)},
        "averages": means,
        "averages_unweighted": means,
        "published": {"gsm8k": 0.932, "bbh_nlp": 0.825, "bbh_algorithmic": 0.856, "textgrad_gsm8k": 0.782},
        "totals": {"runs": len(runs), "failed": 3, "calls": 123_456_789, "cost_usd": 123_456.78},
    }


def test_the_bbh_all_report_fits_1300_px(tmp_path):
    """A 27-task bbh:all report fits a 1,300 px window: no cell overflows, no number wraps, no task name breaks."""
    run = tmp_path / "run"
    run.mkdir()
    (run / "results.json").write_text(json.dumps(bbh_all_results()), "utf-8")
    check_fits(write_report(run), tmp_path)


def test_the_compare_page_fits_1300_px_and_links_each_method_s_report(tmp_path):
    """compare.html of eleven optimizers with every purpose fits 1,300 px, and each method's row links to the
    report.html of its run folder, which Chromium opens."""
    summary = big_comparison()
    for name in OPTIMIZERS:
        run = tmp_path / name
        run.mkdir()
        (run / "results.json").write_text(json.dumps(make_results([make_task("gsm8k", None, 0.9)], task="gsm8k")))
        write_report(run)
    page = tmp_path / "compare.html"
    page.write_text(render_compare(summary), "utf-8")
    check_fits(page, tmp_path)
    dom = parse(run_chromium(find_chromium(), tmp_path, "--dump-dom", page.as_uri()))
    links = [a["href"] for tag, a in dom.tags if tag == "a" and a.get("href")]
    assert list(dict.fromkeys(links)) == [f"{name}/report.html" for name in OPTIMIZERS]
    assert all((tmp_path / link).is_file() for link in links)


def test_the_sweep_page_fits_1300_px(tmp_path):
    """sweep.html of 168 runs over 28 tasks fits 1,300 px: no cell overflows, no number wraps, no name breaks."""
    _, page = write_sweep_report(tmp_path / "sweep", big_sweep())
    check_fits(page, tmp_path)
