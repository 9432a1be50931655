"""compare, graph and sweep accept your own system (and your items, metric and LLM), as run does."""

from __future__ import annotations

import json

import pytest

from semgrad.sweeps import SweepError, load_spec, parse_spec

from .conftest import semgrad
from .test_own_llm_and_metric import FAKE_LLM, HALF_METRIC


def test_compare_runs_your_system_on_your_items(tmp_path, system_file, items_file):
    """`semgrad compare my_system.py:build --data items.jsonl` says the split, then runs each optimizer on the
    user's system."""
    result = semgrad(
        "compare", "my_system.py:build", "--data", "items.jsonl", "--optimizers", "neighbor-sgd,tgd",
        "--iterations", "1", "--out", "cmp", cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("Split: train 4, validation 0, test 8 (official protocol")
    saved = json.loads((tmp_path / "cmp" / "compare.json").read_text())
    assert saved["task"] == f"{system_file}:build"
    assert [m["optimizer"] for m in saved["methods"]] == ["neighbor-sgd", "tgd"]
    graph = json.loads((tmp_path / "cmp" / "tgd" / "results.json").read_text())["tasks"][0]["graph"]
    assert "respond" in json.dumps(graph)


def test_compare_without_data_says_to_pass_it(tmp_path, system_file):
    """A system spec without --data is one line asking for --data, not a paper-task error."""
    result = semgrad("compare", "my_system.py:build", "--dry-run", cwd=tmp_path)
    assert result.returncode == 1
    assert "looks like your own system: pass --data" in result.stderr


def test_graph_draws_your_system(tmp_path, system_file):
    """`semgrad graph my_system.py:build` prints the user's graph, with its nodes and edges."""
    result = semgrad("graph", "my_system.py:build", "--format", "mermaid", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "plan" in result.stdout and "check" in result.stdout and "respond" in result.stdout
    assert result.stdout.count("-->") == 5


def test_a_sweep_spec_names_your_system_items_metric_and_llm(tmp_path, system_file, items_file):
    """system, data, metric and llm in a spec become each run's config, paths relative to the spec's folder."""
    (tmp_path / "my_llm.py").write_text(FAKE_LLM)
    (tmp_path / "my_metric.py").write_text(HALF_METRIC)
    spec_file = tmp_path / "own.toml"
    spec_file.write_text(
        'system = "my_system.py:build"\ndata = "items.jsonl"\nmetric = "my_metric.py:half"\nllm = "my_llm.py"\n'
        'seeds = [0]\noptimizers = ["neighbor-sgd"]\n[settings]\niterations = 1\n'
    )
    spec = load_spec(spec_file)
    (run,) = spec.runs()
    assert run.name == "my_system-build__seed0__neighbor-sgd"
    assert run.config.task == f"{system_file}:build" and run.config.data == str(items_file)
    assert run.config.llm == f"{tmp_path / 'my_llm.py'}:make" and run.config.backend == "custom"
    assert run.config.metric == f"{tmp_path / 'my_metric.py'}:half"
    result = semgrad("sweep", "own.toml", "--local", "--out", "sw", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    saved = json.loads((tmp_path / "sw" / run.name / "results.json").read_text())
    assert saved["backend"] == "custom" and saved["tasks"][0]["accuracy"]["test"] == 0.5


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"system": "s.py:build"}, "gives both system"),
        ({"data": "items.jsonl"}, "gives both system"),
        ({"system": "s.py", "data": "i.jsonl", "tasks": ["gsm8k"]}, "names no tasks"),
        ({"system": "s.py", "data": "i.jsonl", "metric": "bleu"}, "unknown metric 'bleu'"),
        ({"system": "s.py", "data": "i.jsonl", "llm": "l.py", "settings": {"backend": "anthropic"}}, "replaces"),
    ],
)
def test_a_spec_of_your_own_system_that_does_not_fit_is_one_line(data, message):
    """A system without data (or data without one), with tasks too, an unknown metric, or llm with a backend."""
    with pytest.raises(SweepError, match=message):
        parse_spec({"seeds": [0], "optimizers": ["tgd"], **data}, base_dir="/tmp")
