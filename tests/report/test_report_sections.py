"""The report's per-sample predictions, per-iteration proposal diffs and failed-call counts."""

from __future__ import annotations

import html
import re
from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st

from semgrad.core import FrozenMap
from semgrad.effects import RunStatistics
from semgrad.report import render_report
from semgrad.report._predictions import errors_json

from .conftest import make_results, make_task, parse


def _old_and_new(diff: str) -> tuple[str, str]:
    """The two texts a ``<del>``/``<ins>`` diff compares, recovered from its HTML (``<bdi>`` only isolates
    right-to-left text: it is markup, not text)."""
    diff = diff.replace("<bdi>", "").replace("</bdi>", "")
    old = re.sub(r"<ins>.*?</ins>", "", diff, flags=re.DOTALL).replace("<del>", "").replace("</del>", "")
    new = re.sub(r"<del>.*?</del>", "", diff, flags=re.DOTALL).replace("<ins>", "").replace("</ins>", "")
    return html.unescape(old), html.unescape(new)


def _proposal_diffs(document: str) -> list[str]:
    return re.findall(r'<pre class="diff proposal-diff">(.*?)</pre>', document, re.DOTALL)


def _single(task: dict[str, Any]) -> str:
    return render_report(make_results([task], task=task["task"]))


def test_predictions_table_has_a_row_per_sample_with_input_output_target_and_verdict():
    """Each prediction is one row: its input (or input fields), output, target and whether it was correct."""
    page = parse(_single(make_task("gsm8k", None, 0.9)))
    assert page.element("task-0-predictions")[0] == "table"
    text = page.all_text()
    assert "2 of 3 correct on the test split" in text
    for shown in ("What is 2 + 2?", "question: Go north, then south.", "options: (A) yes (B) no"):
        assert shown in text
    rows = [a.get("class") for tag, a in page.tags if tag == "tr" and a.get("class") in ("correct", "wrong")]
    assert rows == ["correct", "wrong", "correct"]


def test_a_task_without_predictions_has_no_table():
    """Results without predictions (older runs, a fit without test data) show no predictions table."""
    task = make_task("gsm8k", None, 0.9)
    del task["predictions"]
    assert "task-0-predictions" not in _single(task)


def test_each_proposal_is_diffed_against_the_value_its_iteration_started_from():
    """Iteration 2 (rejected) and 3 are both diffed against iteration 1's applied value, not the initial one."""
    diffs = [_old_and_new(d) for d in _proposal_diffs(_single(make_task("gsm8k", None, 0.9)))]
    initial = "Solve the problem."
    assert diffs == [
        (initial, "Solve the problem step by step, version 1."),
        ("Solve the problem step by step, version 1.", "Solve the problem step by step, version 3."),
        ("Solve the problem step by step, version 1.", "Solve the problem step by step, version 2."),
    ]


@given(
    st.lists(st.tuples(st.text(max_size=12), st.booleans()), min_size=1, max_size=5),
    st.text(max_size=12),
)
@example([("\U00010808", True)], "")  # right-to-left text: the diff is isolated in a <bdi>
def test_proposal_diffs_compare_with_the_last_applied_value(proposals, initial):
    """For any proposals, applied or not, each diff's old text is the last applied value and its new text the
    proposal (applied blocks are listed first, then the others)."""
    iterations, current, expected_kept, expected_other = [], initial, [], []
    for n, (value, applied) in enumerate(proposals, start=1):
        iterations.append({"iteration": n, "updates": {"p": value}, "accepted": applied, "applied": applied})
        (expected_kept if applied else expected_other).append((current, value))
        current = value if applied else current
    task = {"task": "t", "iterations": iterations, "params": {"initial": {"p": initial}, "final": {"p": current}}}
    diffs = [_old_and_new(d) for d in _proposal_diffs(render_report({"tasks": [task]}))]
    clean = str.maketrans({c: "\ufffd" for c in map(chr, [*range(9), 11, 12, *range(14, 32), 127])})
    assert diffs == [(old.translate(clean), new.translate(clean)) for old, new in expected_kept + expected_other]


def test_error_counts_are_shown_per_task_and_in_all():
    """A task's errors and errors by kind are shown in its section; the summary sums them over tasks."""
    first, second = make_task("bbh:navigate", "algorithmic", 0.5), make_task("bbh:snarks", "nlp", 0.7)
    second["errors"], second["errors_by_kind"] = 1, {"server": 1}
    page = parse(render_report(make_results([first, second], task="bbh:all")))
    text = page.all_text()
    assert page.element("task-0-errors")[0] == "p" and page.element("errors-summary")[0] == "p"
    assert "Failed calls: 3 (timeout 2, rate_limit 1)" in text and "Failed calls: 1 (server 1)" in text
    assert "Failed calls: 4 (timeout 2, rate_limit 1, server 1)" in text


def test_run_level_error_counts_win_over_the_tasks_sum():
    """When results.json records its own error counts, the summary shows those."""
    results = make_results([make_task("gsm8k", None, 0.9)], task="gsm8k")
    results["errors"], results["errors_by_kind"] = 5, {"timeout": 5}
    assert "Failed calls: 5 (timeout 5)" in parse(render_report(results)).all_text()


def test_calls_the_budget_refused_are_not_said_to_count_as_wrong_answers():
    """The header says only the calls that failed at the backend count as wrong answers; refused ones are never sent."""
    results = make_results([make_task("gsm8k", None, 0.9)], task="gsm8k")
    results["errors"], results["errors_by_kind"] = 6, {"budget": 4, "server": 2}
    text = parse(render_report(results)).all_text()
    assert "2 calls without a reply (server 2): the scores count them as wrong answers" in text
    assert "4 calls refused by the run's budget or stop, never sent: no score includes them" in text
    results["errors"], results["errors_by_kind"] = 4, {"budget": 4}  # a run resumed to its end after a budget stop
    page = render_report(results)
    assert "wrong answers" not in page and 'id="refused-notice"' in page


def test_no_error_counts_no_error_line():
    """Results that record no error counts show no failed-calls line; zero recorded errors show 0."""
    task = make_task("gsm8k", None, 0.9)
    del task["errors"], task["errors_by_kind"]
    assert "Failed calls" not in _single(task)
    task["errors"] = 0
    assert "Failed calls: 0" in parse(_single(task)).all_text()


def test_a_fit_results_statistics_give_the_error_fields():
    """errors_json turns a FitResult's RunStatistics into the fields the report shows."""
    stats = RunStatistics(calls=9, errors=2, errors_by_kind=FrozenMap({"timeout": 1, "parse": 1}))
    task = {"task": "fit", **errors_json(stats)}
    assert "Failed calls: 2 (timeout 1, parse 1)" in parse(render_report({"tasks": [task]})).all_text()


def test_write_html_never_passes_a_fit_s_gate_score_off_as_a_validation_accuracy(tmp_path):
    """A fit without a validation set shows its best gate score (on the training items) as the gate score only."""
    from semgrad.backends.fake import FunctionLLM
    from semgrad.core import GraphBuilder, optim
    from semgrad.effects import fit_sync
    from semgrad.report import write_html

    b = GraphBuilder()
    _ = b.llm("answer", inputs=[b.input("question")], instruction="Answer.")
    graph, params = b.build(output="answer")
    items = [{"inputs": {"question": "2+2?"}, "target": "4"}]
    result = fit_sync(graph, params, optim.neighbor_sgd(k=1), train=items, llm=FunctionLLM(lambda r: "4"), iterations=1)
    page = write_html(result, tmp_path / "r.html", graph=graph).read_text("utf-8")
    assert result.best_score == 1.0
    assert '<th scope="row">Validation accuracy</th><td>\u2014</td>' in page
    assert '<th scope="row">Gate score (initial \u2192 best)</th><td>100.0 % \u2192 100.0 %</td>' in page


def test_write_html_of_a_fit_shows_its_failed_calls(tmp_path):
    """write_html of a fit whose LLM failed calls shows the failed calls by kind from the FitResult's statistics."""
    from semgrad.backends import fake
    from semgrad.core import LLMError, LLMFailure, optim
    from semgrad.effects import fit_sync
    from semgrad.report import write_html
    from semgrad.topologies import paper_graph

    graph, params = paper_graph()

    def answer(request):
        if request.purpose == "backward":
            raise LLMFailure(LLMError("server", "boom", retryable=False))
        return fake.reply_forward(request, "7")

    items = [{"inputs": {"question": "What is 3 + 4?"}, "target": "8"}]
    result = fit_sync(
        graph, params, optim.neighbor_sgd(k=1, gate=False), train=items, llm=fake.FunctionLLM(answer), iterations=1
    )
    n = result.statistics.errors
    assert n >= 1
    text = parse(write_html(result, tmp_path / "r.html", graph=graph).read_text("utf-8")).all_text()
    assert f"Failed calls: {n} (server {n})" in text


@given(st.lists(st.lists(st.sampled_from([True, False, None]), min_size=1, max_size=3), min_size=2, max_size=4))
def test_a_mean_gate_point_counts_the_tasks_gates_that_accepted(verdicts_by_task):
    """Over several tasks, each mean gate point says how many of that iteration's gates accepted, of those that ran:
    never "no gate" when the tasks were gated."""
    from semgrad.report._task import mean_points

    tasks = [
        {"iterations": [
            {"iteration": i + 1, "train_score": 0.5, "validation_score": 0.5, "accepted": verdict}
            for i, verdict in enumerate(verdicts)
        ]}
        for verdicts in verdicts_by_task
    ]  # fmt: skip
    for point in mean_points(tasks):
        column = [v[point.iteration - 1] for v in verdicts_by_task if len(v) >= point.iteration]
        assert point.verdicts == (column.count(True), sum(v is not None for v in column))
