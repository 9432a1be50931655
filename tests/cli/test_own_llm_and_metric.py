"""`--llm FILE.py:make` and `--metric FILE.py:fn`: your own LLM and metric, loaded only because you typed them."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from semgrad.core import Score
from semgrad.experiments import RunConfig, RunSummary
from semgrad.experiments._errors import SetupError
from semgrad.experiments._resume import resumed_config
from semgrad.experiments._user_code import as_score, is_code_spec

from .conftest import semgrad

FAKE_LLM = """
from pathlib import Path

from semgrad.backends import fake

Path(__file__).with_name("llm_loaded.txt").write_text("loaded")


def answer(request):
    if request.purpose == "forward":
        return fake.reply_forward(request, "7")
    if request.purpose == "backward":
        return fake.reply_backward(request, {t: "Show the sum." for t in request.targets})
    if request.purpose == "rewrite":
        return fake.reply_rewrite(request, "Answer with the number only.")
    return fake.reply_summary(request, "Show the sum.")


def make():
    return fake.FunctionLLM(answer)
"""

HALF_METRIC = """
def half(output, target):
    return 0.5, f"expected {target}, got {output}"
"""


@pytest.fixture
def own_code(tmp_path, system_file, items_file):
    """The user's LLM factory and metric beside their system and items."""
    (tmp_path / "my_llm.py").write_text(FAKE_LLM)
    (tmp_path / "my_metric.py").write_text(HALF_METRIC)
    return tmp_path


def _run(folder, *extra):
    return semgrad(
        "run", "my_system.py:build", "--data", "items.jsonl", "--iterations", "1", "--out", "run", *extra, cwd=folder
    )


def test_your_llm_answers_and_your_metric_scores_the_run(own_code):
    """Every split of a run with --llm and --metric scores what the user's metric says (0.5), on the custom backend."""
    result = _run(own_code, "--llm", "my_llm.py:make", "--metric", "my_metric.py:half")
    assert result.returncode == 0, result.stderr
    saved = json.loads((own_code / "run" / "results.json").read_text())
    assert saved["backend"] == "custom" and saved["simulated"] is False
    scores = saved["tasks"][0]["accuracy"]
    assert {scores[split] for split in ("train", "test", "initial_test")} == {0.5}
    config = json.loads((own_code / "run" / "config.json").read_text())
    assert config["llm"] == f"{own_code / 'my_llm.py'}:make"
    assert config["metric"] == f"{own_code / 'my_metric.py'}:half"


def test_results_and_the_report_name_your_metric(own_code):
    """results.json, its RunSummary and the report say that the user's metric (my_metric.py:half) scored the run,
    not the built-in metric the task falls back to."""
    assert _run(own_code, "--llm", "my_llm.py:make", "--metric", "my_metric.py:half").returncode == 0
    saved = json.loads((own_code / "run" / "results.json").read_text())
    assert saved["tasks"][0]["metric"] == "my_metric.py:half"
    assert RunSummary.from_json(saved).tasks[0].metric == "my_metric.py:half"
    assert '<span class="metric">my_metric.py:half</span>' in (own_code / "run" / "report.html").read_text()


@pytest.mark.parametrize(
    ("typed", "named"),
    [("/home/me/m.py:score", "m.py:score"), ("pkg.metrics:score", "pkg.metrics:score"), ("judge", "judge")],
)
def test_the_metric_name_is_what_scored_your_run(typed, named):
    """metric_name gives a code metric by its file's name and function, the judge as "judge" (your own data), and a
    paper task's metric as the task's."""
    from semgrad.experiments._run_tasks import metric_name

    class _Task:
        metric = "normalized"

    own = RunConfig("/s.py:build", data="/i.jsonl", metric=typed)
    assert metric_name(own, _Task()) == named  # type: ignore[arg-type]
    assert metric_name(RunConfig("gsm8k"), _Task()) == "normalized"  # type: ignore[arg-type]


def test_resuming_needs_your_llm_and_metric_typed_again(own_code):
    """A resumed run never loads the LLM or metric its config.json names: without them typed, one line says so."""
    assert _run(own_code, "--llm", "my_llm.py", "--metric", "my_metric.py:half").returncode == 0
    (own_code / "llm_loaded.txt").unlink()
    resumed = semgrad("run", "my_system.py:build", "--resume", "--out", "run", "--iterations", "2", cwd=own_code)
    assert resumed.returncode == 1
    assert "--llm" in resumed.stderr and "--metric" in resumed.stderr and "type" in resumed.stderr
    assert not (own_code / "llm_loaded.txt").exists()
    again = semgrad(
        "run", "my_system.py:build", "--resume", "--out", "run", "--iterations", "2",
        "--llm", "my_llm.py:make", "--metric", "my_metric.py:half", cwd=own_code,
    )  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert (own_code / "llm_loaded.txt").exists()


def test_a_saved_llm_is_refused_on_resume_unless_typed():
    """resumed_config refuses a saved --llm or code --metric that was not typed, and takes them when typed equal."""
    saved = RunConfig("/s.py:build", data="/i.jsonl", backend="custom", llm="/l.py:make", metric="/m.py:fn")
    with pytest.raises(SetupError, match="--llm /l.py:make, --metric /m.py:fn"):
        resumed_config(saved, {"task": "/s.py:build"}, "DIR")
    typed = {"task": "/s.py:build", "llm": "/l.py", "metric": "/m.py:fn"}
    assert resumed_config(saved, typed, "DIR") == saved


@given(st.floats(0, 1), st.text(min_size=1, max_size=20))
def test_a_metric_may_return_a_number_a_pair_or_a_score(value, feedback):
    """A number, a (number, feedback) pair and a Score all become the same Score value."""
    assert as_score(value, "a", "b").value == value
    assert as_score((value, feedback), "a", "b") == Score(value, feedback, "a")
    assert as_score(Score(value, feedback), "a", "b") == Score(value, feedback)


@pytest.mark.parametrize("bad", ["1", None, True, 1.5, -0.1, float("nan"), (1, 2, 3), Score(2.0, "too good")])
def test_a_metric_that_returns_something_else_is_a_clear_error(bad):
    """A metric returning text, None, a bool, a number (or Score) outside 0..1 or a triple is refused, naming what
    it returned."""
    with pytest.raises(SetupError, match="the metric returned"):
        as_score(bad, "a", "b")


def test_metric_names_are_words_and_code_is_a_spec():
    """exact/numeric/judge are names; FILE.py, FILE.py:fn and module:fn are code; a config refuses anything else."""
    assert not any(is_code_spec(name) for name in ("exact", "normalized", "numeric", "judge"))
    assert all(is_code_spec(spec) for spec in ("m.py", "m.py:fn", "pkg.m:fn"))
    with pytest.raises(ValueError, match="unknown metric 'bleu'"):
        RunConfig("gsm8k", metric="bleu")
    with pytest.raises(ValueError, match="give --llm, not --backend custom"):
        RunConfig("gsm8k", backend="custom")
