"""`RunSummary` / `TaskResult`: results.json as typed values, round-tripped and checked once in from_json."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from semgrad.experiments import RunConfig, RunSummary, TaskResult, run_experiment
from tests.experiments.test_plan import _data

texts = st.text(max_size=8)
scores = st.none() | st.floats(0, 1)
counts = st.integers(0, 2**53)
names = st.sampled_from(["forward", "backward", "rewrite", "timeout"])
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | texts,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=8,
)


@st.composite
def task_json(draw: st.DrawFn) -> dict:
    """A task entry as a run writes it."""
    return {
        "task": draw(texts),
        "category": draw(st.none() | texts),
        "sizes": draw(st.dictionaries(st.sampled_from(["train", "validation", "test"]), counts)),
        "protocol": draw(st.none() | texts),
        "scored_on": draw(st.none() | st.sampled_from(["train", "test"])),
        "metric": draw(st.none() | st.sampled_from(["exact", "normalized", "numeric", "judge"])),
        "initial_score": draw(scores),
        "best_score": draw(scores),
        "stopped": draw(st.none() | st.sampled_from(["budget", "halted"])),
        "iterations": draw(st.lists(st.dictionaries(texts, json_values, max_size=3), max_size=3)),
        "accuracy": draw(st.dictionaries(st.sampled_from(["train", "validation", "test", "initial_test"]), scores)),
        "carried_over": draw(st.lists(texts, max_size=2)),
        "errors": draw(counts),
        "errors_by_kind": draw(st.dictionaries(names, counts, max_size=2)),
        "params": draw(st.dictionaries(texts, st.dictionaries(texts, texts, max_size=2), max_size=2)),
        "graph": draw(st.dictionaries(texts, json_values, max_size=3)),
        "published": draw(st.none() | st.fixed_dictionaries({"label": texts, "value": st.floats(0, 1)})),
        "predictions": draw(st.lists(st.dictionaries(texts, json_values, max_size=2), max_size=2)),
        "predictions_split": "test",
    }


@st.composite
def summary_json(draw: st.DrawFn) -> dict:
    """A results.json as a run writes it."""
    return {
        "semgrad_version": draw(texts),
        "task": draw(texts),
        "backend": draw(texts),
        "optimizer": draw(texts),
        "seed": draw(st.integers(0, 2**31)),
        "simulated": draw(st.booleans()),
        "tasks": draw(st.lists(task_json(), max_size=3)),
        "averages": draw(st.dictionaries(texts, scores, max_size=3)),
        "averages_unweighted": draw(st.dictionaries(texts, scores, max_size=3)),
        "unscored_tasks": draw(st.lists(texts, max_size=2)),
        "average_tasks": draw(
            st.dictionaries(texts, st.fixed_dictionaries({"tasks": counts, "of": st.none() | counts}), max_size=3)
        ),
        "published": draw(st.dictionaries(texts, st.floats(0, 1), max_size=2)),
        "calls": {"by_purpose": draw(st.dictionaries(names, counts)), "by_role": draw(st.dictionaries(texts, counts))},
        "tokens": {"input": draw(counts), "output": draw(counts), "by_role": {}},
        "cost_usd": draw(st.none() | st.floats(0, 1e6)),
        "errors": draw(counts),
        "errors_by_kind": draw(st.dictionaries(names, counts, max_size=2)),
        "counters": draw(st.dictionaries(texts, json_values, max_size=3)),
        "stopped": draw(st.none() | st.just("budget")),
        "stopped_detail": draw(st.none() | texts),
        "failed": draw(st.none() | texts),
    }


@given(summary_json())
def test_a_results_json_reads_back_unchanged(data):
    """to_json(from_json(x)) == x, in the same key order, and from_json(to_json(v)) == v."""
    summary = RunSummary.from_json(data)
    assert summary.to_json() == data
    assert list(summary.to_json()) == list(data)
    assert [list(task) for task in summary.to_json()["tasks"]] == [list(task) for task in data["tasks"]]
    assert RunSummary.from_json(summary.to_json()) == summary
    assert all(isinstance(task, TaskResult) for task in summary.tasks)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d["tasks"][0]["accuracy"].update(test=float("nan")), "tasks[0].accuracy.test must be a score"),
        (lambda d: d["tasks"][0].update(best_score=1.5), "tasks[0].best_score must be a score"),
        (lambda d: d["tasks"][0]["sizes"].update(test=-1), "tasks[0].sizes.test must be a count"),
        (lambda d: d["calls"]["by_purpose"].update(forward="9"), "calls.by_purpose.forward must be a count"),
        (lambda d: d["tokens"].update(input=2**60), "tokens.input must be a count"),
        (lambda d: d.update(cost_usd=-1), "cost_usd must be a finite amount"),
        (lambda d: d.update(stopped=["budget"]), "stopped must be a string"),
        (lambda d: d["tasks"][0].update(iterations={}), "tasks[0].iterations must be an array"),
        (lambda d: d.update(tasks={}), "tasks must be an array"),
        (lambda d: d.update(seed=True), "seed must be an integer"),
    ],
)
def test_from_json_refuses_a_hostile_field_naming_it(tmp_path, change, message):
    """A results.json changed by hand fails from_json with one line naming the field."""
    config = _data(tmp_path / "in", 12)
    data = run_experiment(config, tmp_path / "run").to_json()
    change(data)
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")) as error:
        RunSummary.from_json(data)
    assert "\n" not in str(error.value)


def test_a_run_returns_the_summary_it_writes(tmp_path):
    """run_experiment returns a RunSummary whose to_json is results.json, read back equal."""
    config = _data(tmp_path / "in", 12)
    summary = run_experiment(config, tmp_path / "run")
    assert isinstance(summary, RunSummary) and isinstance(config, RunConfig)
    written = json.loads((tmp_path / "run" / "results.json").read_text("utf-8"))
    assert summary.to_json() == written and RunSummary.from_json(written) == summary
    assert summary["tasks"][0]["accuracy"] == written["tasks"][0]["accuracy"]
    assert summary.tasks[0].score("test") == written["tasks"][0]["accuracy"]["test"]


def test_the_report_renders_a_run_summary_as_its_results_json(tmp_path):
    """render_report(summary) is the page of summary.to_json(), the file the run wrote."""
    from semgrad.report import render_report

    config = _data(tmp_path / "in", 12)
    summary = run_experiment(config, tmp_path / "run")
    assert render_report(summary) == render_report(json.loads((tmp_path / "run" / "results.json").read_text()))
