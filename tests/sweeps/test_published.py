"""A sweep's averages say how many tasks they cover, and the paper's figures stand only under an average over
the same tasks the paper averaged."""

from __future__ import annotations

from typing import Any

from semgrad.experiments import PUBLISHED
from semgrad.sweeps._page import render_sweep
from semgrad.sweeps._summary import average_tasks, averages, comparable_figures
from semgrad.tasks import BBH_ALGORITHMIC


def _rows(names: list[str], category: str | None) -> list[dict[str, Any]]:
    return [
        {
            "task": name,
            "category": category,
            "optimizer": "tgd",
            "seed": seed,
            "accuracy": {"test": 0.5},
            "test_items": 4,
        }
        for name in names
        for seed in (0, 1)
    ]


def _summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """sweep.json's averages part, as `summarize` writes it."""
    return {
        "sweep": {"name": "s"},
        "runs": rows,
        "averages": averages(rows),
        "averages_unweighted": averages(rows, weighted=False),
        "average_tasks": average_tasks(rows),
        "published": {key: PUBLISHED[key] for key in comparable_figures(rows)},
    }


def _averages_table(page: str) -> str:
    return page.split("<h2>Averages of test accuracy</h2>")[1].split("<table>")[1].split("</table>")[0]


def test_a_sweep_of_one_bbh_task_says_its_average_covers_one_task_and_has_no_figure():
    """The "BBH algorithmic" average of a one-task sweep says it covers 1 of the category's tasks, is marked not
    comparable, and no published figure stands under it (nor in sweep.json)."""
    summary = _summary(_rows(["bbh:navigate"], "algorithmic"))
    assert summary["average_tasks"]["bbh_algorithmic"] == {"tasks": 1, "of": len(BBH_ALGORITHMIC)}
    assert summary["published"] == {}
    table = _averages_table(render_sweep(summary))
    assert f"1 of {len(BBH_ALGORITHMIC)} tasks" in table and "not comparable" in table
    assert "85.6 %" not in table and "82.5 %" not in table and "93.2 %" not in table
    assert "BBH NLP" not in table and "GSM8K" not in table  # no column for a group the sweep has no task of


def test_an_older_sweep_json_of_one_bbh_task_renders_without_the_category_figure():
    """A sweep.json written before ``average_tasks`` (every figure in its ``published``) renders, with the
    coverage counted from its runs and no category figure under a one-task average."""
    summary = {**_summary(_rows(["bbh:navigate"], "algorithmic")), "published": dict(PUBLISHED)}
    del summary["average_tasks"]
    page = render_sweep(summary)
    assert "1 of 15 tasks" in page and "85.6 %" not in page


def test_a_sweep_of_a_whole_category_shows_its_figure_once_under_its_average():
    """A sweep over every BBH algorithmic task shows the paper's algorithmic figure once, under that average."""
    rows = _rows([f"bbh:{name}" for name in BBH_ALGORITHMIC], "algorithmic") + _rows(["gsm8k"], None)
    summary = _summary(rows)
    assert summary["published"] == {"bbh_algorithmic": 0.856, "gsm8k": 0.932, "textgrad_gsm8k": 0.782}
    page = render_sweep(summary)
    table = _averages_table(page)
    assert page.count("85.6 %") == 1 and "85.6 %" in table and "not comparable" not in table
    assert f"{len(BBH_ALGORITHMIC)} of {len(BBH_ALGORITHMIC)} tasks" in table and "1 of 1 task<" in table
    assert "93.2 %" in table
