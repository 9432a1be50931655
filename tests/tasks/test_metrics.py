"""The metrics a task is scored by: the official protocol's (issue 31, point 4) and ours."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from semgrad.core import Example, NodeRun, Trace
from semgrad.tasks import METRICS, default_metric, metric_loss, sample_task, yes_prefix_match


def _score(loss, output, target):
    trace = Trace(0, "g", "out", {"out": NodeRun("out", "llm", value=output)})
    return loss(Example({}, target), trace).value.value


def test_official_metrics_are_the_papers():
    """Under the official protocol BBH and GSM8K are scored by exact string match and LIAR by the YES prefix."""
    assert [default_metric(d, "official") for d in ("bbh", "gsm8k", "liar")] == ["exact", "exact", "yes-prefix"]
    assert [default_metric(d, "heldout") for d in ("bbh", "gsm8k", "liar")] == ["normalized", "numeric", "normalized"]


def test_a_task_names_its_protocols_metric_and_can_take_another():
    """A Task's metric follows its protocol unless given, and an unknown metric is refused."""
    assert sample_task("gsm8k", protocol="official").metric == "exact"
    assert sample_task("gsm8k", protocol="heldout").metric == "numeric"
    assert sample_task("bbh:navigate", protocol="official").metric == "exact"
    assert sample_task("bbh:navigate", protocol="heldout").metric == "normalized"
    import attrs

    task = sample_task("gsm8k", protocol="official")
    assert attrs.evolve(task, metric="numeric").metric == "numeric"
    with pytest.raises(ValueError, match="unknown metric"):
        attrs.evolve(task, metric="fuzzy")


def test_exact_metric_keeps_a_label_with_a_thousands_comma_as_written():
    """Official GSM8K scoring: '65,960' is right only answered '65,960'; numeric matching accepts 65960."""
    exact, numeric = metric_loss("exact"), metric_loss("numeric")
    assert _score(exact, "65,960", "65,960") == 1.0
    assert _score(exact, "65960", "65,960") == 0.0
    assert _score(numeric, "65960", "65,960") == 1.0
    assert _score(metric_loss("normalized"), "(b)", "(B)") == 1.0
    assert _score(exact, "(b)", "(B)") == 0.0


@given(st.text(max_size=12), st.sampled_from(["Yes", "No"]))
def test_yes_prefix_is_right_exactly_when_the_answer_starts_with_yes_as_the_target_does(answer, target):
    """The LIAR metric counts an answer as Yes iff its stripped upper-cased text starts with YES (official)."""
    said_yes = answer.strip().upper().startswith("YES")
    assert _score(yes_prefix_match(), answer, target) == float(said_yes == (target == "Yes"))


def test_yes_prefix_reads_only_the_start():
    """'yes.' and 'YESTERDAY' count as Yes and 'No, yes' as No, as `startswith('YES')` decides."""
    loss = yes_prefix_match()
    assert _score(loss, " yes.", "Yes") == 1.0
    assert _score(loss, "No, yes", "Yes") == 0.0
    assert _score(loss, "Maybe", "No") == 1.0
    assert set(METRICS) == {"exact", "normalized", "numeric", "yes-prefix"}


def test_a_run_scores_by_its_tasks_metric():
    """`loss_for` scores an official GSM8K task by exact string match and a held-out one by numbers."""
    from semgrad.experiments import loss_for

    assert _score(loss_for(sample_task("gsm8k", protocol="official")), "65960", "65,960") == 0.0
    assert _score(loss_for(sample_task("gsm8k", protocol="heldout")), "65960", "65,960") == 1.0


def test_results_json_and_the_report_name_the_metric(tmp_path):
    """A run's results.json names each task's metric and report.html shows it."""
    import json

    from semgrad.experiments import RunConfig, run_experiment
    from tests.experiments.test_cli_run import DATA

    config = RunConfig("gsm8k", data_dir=str(DATA), iterations=1, train=3, test=3)
    run_experiment(config, tmp_path / "run")
    (task,) = json.loads((tmp_path / "run" / "results.json").read_text())["tasks"]
    assert (task["protocol"], task["metric"]) == ("official", "exact")
    assert '<span class="metric">exact</span>' in (tmp_path / "run" / "report.html").read_text("utf-8")


@pytest.mark.parametrize(("flags", "metric"), [([], "exact"), (["--metric", "normalized"], "normalized")])
def test_the_metric_flag_replaces_a_paper_tasks_metric(flags, metric):
    """`semgrad run gsm8k` scores by the official exact match unless --metric normalized / numeric replaces it."""
    from semgrad.cli import _config, build_parser
    from semgrad.experiments._run import load_run_tasks
    from tests.experiments.test_cli_run import DATA

    config = _config(build_parser().parse_args(["run", "gsm8k", "--data-dir", str(DATA), *flags]))
    (task,) = load_run_tasks(config)
    assert task.metric == metric
    numeric = _config(build_parser().parse_args(["run", "gsm8k", "--data-dir", str(DATA), "--metric", "numeric"]))
    assert load_run_tasks(numeric)[0].metric == "numeric"
