"""`semgrad run` records each test sample's prediction, and its report shows them."""

from __future__ import annotations

import json

import pytest

from semgrad.experiments import RunConfig, run_experiment
from semgrad.experiments._run import load_run_tasks

from .test_cli_run import DATA


def test_results_hold_one_prediction_per_test_item_agreeing_with_the_test_accuracy(tmp_path):
    """results.json has one prediction per test item (its inputs and target, in order) whose correct flags
    average to the test accuracy; report.html shows them in the predictions table."""
    config = RunConfig("gsm8k", data_dir=str(DATA), iterations=1, train=4, validation=4, test=6)
    summary = run_experiment(config, tmp_path / "run")
    (task,) = summary["tasks"]
    (loaded,) = load_run_tasks(config)
    predictions = task["predictions"]
    assert [p["inputs"] for p in predictions] == [dict(e.inputs) for e in loaded.split.test]
    assert [p["target"] for p in predictions] == [e.target for e in loaded.split.test]
    assert all(isinstance(p["output"], str) and isinstance(p["correct"], bool) for p in predictions)
    assert sum(p["correct"] for p in predictions) / 6 == pytest.approx(task["accuracy"]["test"])
    assert json.loads((tmp_path / "run" / "results.json").read_text())["tasks"][0]["predictions"] == predictions
    page = (tmp_path / "run" / "report.html").read_text("utf-8")
    assert 'id="task-0-predictions"' in page
    assert page.count('<tr class="correct">') + page.count('<tr class="wrong">') == 6
