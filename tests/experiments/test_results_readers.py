"""The readers of a run's and a comparison's results read their typed fields, not keys of a dictionary."""

from __future__ import annotations

import argparse
import json
import re

import pytest

from semgrad.cli import EXIT_BUDGET
from semgrad.cli._compare import _finish
from semgrad.cli._run_summary import exit_code, print_summary
from semgrad.experiments import CompareResult, RunSummary
from semgrad.experiments._results import _View
from semgrad.report._compare import compare_table, render_compare
from semgrad.sweeps import RunOutcome, SweepResult

TASK = {
    "task": "bbh:navigate",
    "category": "algorithmic",
    "accuracy": {"train": 0.5, "validation": None, "test": 0.25, "initial_test": 0.125},
    "errors": 3,
    "errors_by_kind": {"timeout": 1, "malformed": 2},
    "carried_over": ["initial_test"],
    "predictions": [{"output": None}, {"output": "yes"}, {"output": None}, {"output": "no"}],
}
RUN = {
    "task": "bbh",
    "tasks": [TASK, {"task": "bbh:snarks", "accuracy": {"test": 0.75}}],
    "averages": {"overall": 0.5, "algorithmic": 0.25},
    "averages_unweighted": {"overall": 0.5},
    "unscored_tasks": ["bbh:dyck"],
    "stopped": "budget",
    "stopped_detail": "the budget is spent (20 calls)",
}
METHODS = [
    {"optimizer": "tgd", "scores": [0.5, 0.75], "test": 0.5, "initial_test": 0.25, "calls": 9, "stopped": "budget",
     "stopped_detail": "the budget is spent", "refused": 2, "calls_by_purpose": {"forward": 6, "rewrite": 3},
     "tokens_by_purpose": {"forward": 60, "rewrite": 30}, "input_tokens": 70, "output_tokens": 20, "wall_s": 1.5},
    {"optimizer": "textgrad", "scores": [0.5], "test": 0.25, "calls": 4, "failed_calls": 1,
     "calls_by_purpose": {"backward": 4}, "cost_usd": 0.01, "wall_s": 0.25},
]  # fmt: skip
SIZES = {"train": 4, "validation": 0, "test": 3}
COMPARISON = {"task": "gsm8k", "backend": "simulated", "simulated": True, "seed": 0, "iterations": 2,
              "protocol": "official", "sizes": SIZES, "methods": METHODS}  # fmt: skip


@pytest.fixture
def no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """Reading a RunSummary, TaskResult, CompareResult or MethodResult by a key fails: only fields may be read."""

    def refused(self, *args):  # type: ignore[no-untyped-def]
        raise AssertionError(f"{type(self).__name__} read by a key {args[:1]}, not by its fields")

    for name in ("__getitem__", "get", "keys"):
        monkeypatch.setattr(_View, name, refused)


def test_the_run_s_lines_read_the_summary_s_fields(no_keys, tmp_path, capsys):
    """`semgrad run`'s closing lines (scores, errors, unanswered samples, carried scores, averages) come from
    the RunSummary's fields."""
    print_summary(RunSummary.from_json(RUN), tmp_path)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("bbh:navigate: train 0.500, validation -, test 0.250 (initial test 0.125)")
    assert "; 3 calls without a reply (malformed 2, timeout 1)" in lines[0]
    assert "; 2 of 4 test samples have no answer" in lines[0]
    assert lines[0].endswith("; initial test scored by an earlier process of this run")
    assert lines[1] == "bbh:snarks: train -, validation -, test 0.750 (initial test -)"
    assert lines[2] == (
        "averages over tasks (item-weighted): overall 0.500 (over 2 tasks), algorithmic 0.250 (over 1 task)"
    )
    assert lines[3] == "averages over tasks (unweighted): overall 0.500 (over 2 tasks)"
    assert lines[4].startswith("no average for a group with a task that has no test score: 1 such (bbh:dyck)")
    assert lines[5] == f"Wrote {tmp_path / 'results.json'}"


def test_a_budget_stop_s_exit_code_reads_the_summary_s_fields(no_keys, tmp_path, capsys):
    """A run stopped on its budget exits with EXIT_BUDGET and says the stop's detail; a finished one exits 0."""
    assert exit_code(RunSummary.from_json(RUN), tmp_path) == EXIT_BUDGET
    assert "semgrad: stopped: the budget is spent (20 calls);" in capsys.readouterr().err
    assert exit_code(RunSummary.from_json({**RUN, "stopped": None}), tmp_path) == 0


def test_a_summary_given_as_results_json_prints_the_same_lines(tmp_path, capsys):
    """print_summary of results.json's dictionary prints what it prints of the RunSummary read from it."""
    print_summary(RunSummary.from_json(RUN), tmp_path)
    typed = capsys.readouterr().out
    print_summary(json.loads(json.dumps(RUN)), tmp_path)
    assert capsys.readouterr().out == typed


def test_the_compare_table_and_page_read_the_result_s_fields(no_keys):
    """compare.md's table and compare.html's rows and chart come from the CompareResult's fields: each method's
    scores, calls by purpose, tokens, cost, time and notes."""
    result = CompareResult.from_json(COMPARISON)
    table = compare_table(result)
    rows = [line for line in table.splitlines() if line.startswith("| ")]
    assert rows[0] == (
        "| optimizer | score per iteration | test | initial test | forward calls | backward calls | rewrite calls "
        "| calls | forward tokens | rewrite tokens | tokens in | tokens out | cost | wall time |"
    )
    assert rows[1].startswith("| tgd (stopped early: budget; partial; 2 of its calls refused, never sent) |")
    assert "| 6 | 0 | 3 | 9 | 60 | 30 | 70 | 20 | \u2014 | 1.50 s |" in rows[1]
    assert rows[2].startswith("| textgrad (1 calls without a reply) |") and "| $0.0100 | 0.25 s |" in rows[2]
    assert table.startswith("Task gsm8k, official protocol, 4 training / 0 validation / 3 test items, seed 0")
    page = render_compare(result)
    text = re.sub(r"<[^>]+>", "", page)  # the name cell links the method's report: read its text
    assert "tgd (stopped early: budget; partial; 2 of its calls refused, never sent)" in text
    assert page.count("<polyline") == 2 and "SIMULATED" in page and "Backend simulated." in page


def test_the_page_of_compare_json_s_dictionary_is_the_page_of_its_result():
    """compare_table and render_compare give the same text for compare.json's dictionary as for its
    CompareResult, and read a dictionary missing fields leniently."""
    result = CompareResult.from_json(COMPARISON)
    written = json.loads(json.dumps(result.to_json()))  # compare.json as compare writes it
    assert compare_table(written) == compare_table(result)
    assert render_compare(written) == render_compare(result)
    sparse = compare_table({"methods": [{"optimizer": "tgd", "refused": "x", "stopped": "budget"}, "junk"]})
    assert sparse.splitlines()[2].startswith("| tgd (stopped early: budget; partial) |")


def test_the_cli_s_compare_ending_reads_the_result_s_fields(no_keys, tmp_path, capsys):
    """`semgrad compare` names each method that stopped early (with its detail) and exits EXIT_BUDGET on a
    budget stop, from the CompareResult's fields."""
    args = argparse.Namespace(dry_run=False)
    assert _finish(args, None, CompareResult.from_json(COMPARISON), tmp_path) == EXIT_BUDGET
    err = capsys.readouterr().err.splitlines()
    assert err == ["semgrad: tgd stopped early: the budget is spent; its row is partial"]
    finished = CompareResult.from_json({**COMPARISON, "methods": METHODS[1:]})
    assert _finish(args, None, finished, tmp_path) == 0


def test_a_sweep_result_gives_each_run_s_summary_checked(tmp_path_factory):
    """SweepResult.summary(run) is the run's RunSummary read from its results.json; a run whose file is missing or
    fails the checks has none."""
    sweep = tmp_path_factory.mktemp("sweep")
    for name, data in (("good", RunSummary.from_json(RUN).to_json()), ("bad", {**RUN, "cost_usd": -1})):
        (sweep / name).mkdir()
        (sweep / name / "results.json").write_text(json.dumps(data))
    outcomes = tuple(RunOutcome(name, "started") for name in ("good", "bad", "missing"))
    result = SweepResult(sweep, outcomes)
    assert result.summary("good") == RunSummary.from_json(RUN)
    assert result.summaries() == (RunSummary.from_json(RUN), None, None)
