"""`--optimizer gepa|pareto-sgd`, `--minibatch`, `--max-metric-calls`: run, compare and sweeps, and the report."""

from __future__ import annotations

import json

import pytest

from semgrad.experiments import OPTIMIZERS, RunConfig, make_optimizer
from semgrad.sweeps import parse_spec

from .conftest import one_line_error, semgrad


@pytest.mark.parametrize("optimizer", ["gepa", "pareto-sgd"])
def test_a_run_keeps_the_search_settings_and_its_report_shows_the_lineage_and_the_front(
    optimizer, tmp_path, system_file, items_file
):
    """config.json keeps --minibatch and --max-metric-calls; results.json holds each proposal's lineage note and
    report.html shows the lineage table and the front; only pareto-sgd makes backward calls."""
    out = tmp_path / "run"
    flags = ["--optimizer", optimizer, "--minibatch", "2", "--max-metric-calls", "60", "--iterations", "3"]
    result = semgrad("run", str(system_file), "--data", str(items_file), *flags, "--out", str(out), "-q")
    assert result.returncode == 0, result.stderr
    config = json.loads((out / "config.json").read_text())
    assert (config["optimizer"], config["minibatch"], config["max_metric_calls"]) == (optimizer, 2, 60)
    (task,) = json.loads((out / "results.json").read_text())["tasks"]
    notes = [
        n[len("lineage: ") :]
        for r in task["iterations"]
        for _, ns in r["report"]
        for n in ns
        if n.startswith("lineage: ")
    ]
    proposals = [json.loads(n) for n in notes if '"front"' not in n]
    assert len(proposals) == 3 and proposals[0]["parents"] == [0]
    assert all(isinstance(p["accepted"], bool) and p["kind"] in ("reflective", "perfect", "none") for p in proposals)
    page = (out / "report.html").read_text()
    assert "Candidates: lineage" in page and "Pareto front" in page
    backward = json.loads((out / "results.json").read_text())["calls"]["by_purpose"].get("backward", 0)
    assert (backward > 0) == (optimizer == "pareto-sgd")


def test_a_minibatch_of_no_items_is_refused_in_one_line(system_file, items_file):
    """--minibatch 0 is no config: refused before anything runs."""
    result = semgrad("run", str(system_file), "--data", str(items_file), "--optimizer", "gepa", "--minibatch", "0")
    one_line_error(result, "--minibatch must be at least 1, got 0")


def test_make_optimizer_builds_each_search_with_the_configs_settings():
    """gepa and pareto-sgd are optimizers of the run; the config's minibatch and budget reach the transform."""
    assert {"gepa", "pareto-sgd"} <= set(OPTIMIZERS)
    gepa = make_optimizer(RunConfig("gsm8k", optimizer="gepa", minibatch=4, max_metric_calls=50))
    ours = make_optimizer(RunConfig("gsm8k", optimizer="pareto-sgd", minibatch=4, max_metric_calls=50))
    assert (gepa.name, ours.name) == ("gepa", "pareto_sgd")
    other = make_optimizer(RunConfig("gsm8k", optimizer="pareto-sgd", minibatch=5, max_metric_calls=50))
    from semgrad.effects._fingerprint import describe

    assert describe(ours) != describe(other), "the minibatch is part of the optimizer (and of its fingerprint)"


def test_a_sweep_spec_sets_the_search_settings_for_its_runs():
    """A spec's [settings] may give minibatch and max_metric_calls; every run of gepa and pareto-sgd gets them."""
    spec = parse_spec(
        {
            "tasks": ["bbh:navigate"],
            "seeds": [0],
            "optimizers": ["gepa", "pareto-sgd"],
            "settings": {"minibatch": 2, "max_metric_calls": 30},
        }
    )
    runs = spec.runs()
    assert [r.config.optimizer for r in runs] == ["gepa", "pareto-sgd"]
    assert all((r.config.minibatch, r.config.max_metric_calls) == (2, 30) for r in runs)


def test_compare_takes_the_new_methods_and_counts_them_before_calling(tmp_path, system_file, items_file):
    """`semgrad compare --optimizers neighbor-sgd,gepa,pareto-sgd --dry-run` plans each method's calls."""
    result = semgrad(
        "compare",
        str(system_file),
        "--data",
        str(items_file),
        "--optimizers",
        "neighbor-sgd,gepa,pareto-sgd",
        "--minibatch",
        "2",
        "--iterations",
        "2",
        "--dry-run",
        "--out",
        str(tmp_path / "cmp"),
    )
    assert result.returncode == 0, result.stderr
    for name in ("neighbor-sgd", "gepa", "pareto-sgd"):
        assert name in result.stdout
