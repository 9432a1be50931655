"""The paper's figures stand only beside the same quantity: never a category average beside one BBH task, never
beside an average over part of a category, and once beside the average over all of a category's tasks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from semgrad.cli._run_summary import print_summary
from semgrad.experiments import RunConfig, RunSummary, run_experiment
from semgrad.experiments._averages import average_coverage, comparable_figures, task_averages
from semgrad.report import PUBLISHED, render_report
from semgrad.tasks import BBH_ALGORITHMIC, BBH_NLP

CATEGORY_FIGURES = ("82.5 %", "85.6 %")


def _navigate_data(root: Path) -> Path:
    """A data folder of our own with one small BBH task file (bbh/navigate.json)."""
    examples = [{"input": f"Step {i} forward, then {i} back. Start again?", "target": "Yes"} for i in range(8)]
    (root / "bbh").mkdir(parents=True)
    (root / "bbh" / "navigate.json").write_text(json.dumps({"canary": "ours", "examples": examples}), "utf-8")
    return root


def _task(name: str, category: str | None, test: float, **extra: Any) -> dict[str, Any]:
    return {"task": name, "category": category, "sizes": {"test": 10}, "accuracy": {"test": test}, **extra}


def _run_of(tasks: list[dict[str, Any]], task: str) -> dict[str, Any]:
    """A results.json of `tasks` with the averages, coverage and published figures a run writes."""
    weighted, plain = task_averages(tasks)
    return {
        "task": task,
        "tasks": tasks,
        "averages": weighted,
        "averages_unweighted": plain,
        "average_tasks": average_coverage(tasks),
        "published": {key: PUBLISHED[key] for key in comparable_figures(tasks)},
    }


def _summary(page: str) -> str:
    return page.split('id="summary"')[1].split("</table>")[0]


def test_a_single_bbh_task_run_shows_no_category_figure(tmp_path, capsys):
    """One BBH task's results.json, report and closing lines carry no category average of the paper's."""
    config = RunConfig(
        "bbh:navigate", data_dir=str(_navigate_data(tmp_path / "data")), train=2, validation=0, test=4, iterations=1
    )
    run_experiment(config, tmp_path / "run")
    results = json.loads((tmp_path / "run" / "results.json").read_text("utf-8"))
    assert results["tasks"][0]["published"] is None
    assert results["published"] == {}
    assert results["average_tasks"]["algorithmic"] == {"tasks": 1, "of": len(BBH_ALGORITHMIC)}
    page = (tmp_path / "run" / "report.html").read_text("utf-8")
    assert not any(figure in page for figure in CATEGORY_FIGURES) and "Paper (BBH" not in page
    print_summary(results, tmp_path / "run")
    printed = capsys.readouterr().out
    assert "0.825" not in printed and "0.856" not in printed and "paper" not in printed.lower()


def test_an_older_single_bbh_result_renders_without_its_category_figure():
    """A results.json written before this rule (the category average as the task's own figure, every figure in
    the run's ``published``) still renders, without the category figure beside the task."""
    old_entry = {"label": "Paper (BBH algorithmic average)", "value": 0.856}
    results = {"task": "bbh:navigate", "tasks": [_task("bbh:navigate", "algorithmic", 0.5, published=old_entry)]}
    page = render_report({**results, "published": dict(PUBLISHED)})
    assert "50.0 %" in _summary(page)
    assert not any(figure in page for figure in CATEGORY_FIGURES)


def test_gsm8k_keeps_its_own_figures():
    """GSM8K's accuracy still sits beside the paper's GSM8K figure and TextGrad's, from new and older files."""
    new = {"label": "Paper (GSM8K)", "value": 0.932, "scope": "task"}
    old = {"label": "Paper (GSM8K)", "value": 0.932}
    for entry in (new, old, None):
        page = render_report(_run_of([_task("gsm8k", None, 0.9, published=entry)], "gsm8k"))
        assert "Paper (GSM8K): 93.2 %" in _summary(page) and "TextGrad (GSM8K): 78.2 %" in _summary(page)


def test_an_average_over_part_of_a_category_says_so_and_has_no_figure(capsys, tmp_path):
    """An average over some of a category's tasks says how many of how many it covers, is marked not
    comparable, and has no published figure beside it, in the report and in the closing lines."""
    results = _run_of([_task("bbh:navigate", "algorithmic", 0.5), _task("bbh:snarks", "nlp", 0.75)], "bbh")
    assert results["published"] == {}
    summary = _summary(render_report(results))
    assert f"BBH algorithmic average (test, item-weighted) over 1 of {len(BBH_ALGORITHMIC)} tasks" in summary
    assert f"BBH NLP average (test, item-weighted) over 1 of {len(BBH_NLP)} tasks" in summary
    assert summary.count("not comparable") == 2 and not any(figure in summary for figure in CATEGORY_FIGURES)
    print_summary(RunSummary.from_json(results), tmp_path)
    printed = capsys.readouterr().out
    assert f"algorithmic 0.500 (over 1 of {len(BBH_ALGORITHMIC)} tasks)" in printed
    assert "overall 0.625 (over 2 tasks)" in printed


def _all_bbh() -> list[dict[str, Any]]:
    algorithmic = [_task(f"bbh:{name}", "algorithmic", 0.5) for name in BBH_ALGORITHMIC]
    return algorithmic + [_task(f"bbh:{name}", "nlp", 0.75) for name in BBH_NLP]


def test_a_bbh_all_run_shows_each_category_figure_once_beside_its_average():
    """With every BBH task, each category's published figure appears once on the page, beside the category's
    average over all its tasks, not on each task's row."""
    results = _run_of(_all_bbh(), "bbh:all")
    assert results["published"] == {"bbh_nlp": 0.825, "bbh_algorithmic": 0.856}
    page = render_report(results)
    assert page.count("82.5 %") == 1 and page.count("85.6 %") == 1
    rows = _summary(page).split("<tr>")
    [algorithmic] = [row for row in rows if "85.6 %" in row]
    assert f"BBH algorithmic average (test, item-weighted) over {len(BBH_ALGORITHMIC)} of" in algorithmic
    assert "50.0 %" in algorithmic
    [nlp] = [row for row in rows if "82.5 %" in row]
    assert "BBH NLP average" in nlp and "75.0 %" in nlp


def test_an_older_bbh_all_result_shows_each_category_figure_once():
    """A bbh:all results.json from before ``average_tasks`` (category figures on every task) shows each category
    figure once, beside its average."""
    tasks = [
        {**t, "published": {"label": "Paper (BBH average)", "value": PUBLISHED[f"bbh_{t['category']}"]}}
        for t in _all_bbh()
    ]
    weighted, plain = task_averages(tasks)
    page = render_report(
        {"task": "bbh:all", "tasks": tasks, "averages": weighted, "averages_unweighted": plain, "published": PUBLISHED}
    )
    assert page.count("82.5 %") == 1 and page.count("85.6 %") == 1


def test_the_coverage_reads_back_from_results_json():
    """``average_tasks`` survives RunSummary's round trip, and a malformed one is refused with its field named."""
    results = _run_of([_task("bbh:navigate", "algorithmic", 0.5)], "bbh:navigate")
    summary = RunSummary.from_json(results)
    assert summary.coverage("algorithmic") == (1, len(BBH_ALGORITHMIC)) and summary.coverage("overall") == (1, None)
    assert summary.to_json()["average_tasks"] == results["average_tasks"]
    try:
        RunSummary.from_json({**results, "average_tasks": {"nlp": {"tasks": -1}}})
    except ValueError as error:
        assert "average_tasks.nlp.tasks" in str(error)
    else:
        raise AssertionError("a negative count was read")
