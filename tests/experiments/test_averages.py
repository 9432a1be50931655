"""Averages over tasks: item-weighted (the paper's) with the unweighted mean beside it."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from semgrad.experiments._averages import task_averages
from semgrad.report import render_report

_task = st.tuples(st.sampled_from(["nlp", "algorithmic"]), st.integers(1, 50), st.integers(0, 50))


@given(st.lists(_task, min_size=1, max_size=8))
def test_item_weighted_average_is_the_accuracy_over_every_test_item(rows):
    """The item-weighted average equals right answers / test items pooled over the group's tasks;
    the unweighted one is the mean of the tasks' accuracies."""
    tasks = [{"category": c, "accuracy": {"test": min(r, n) / n}, "sizes": {"test": n}} for c, n, r in rows]
    weighted, plain = task_averages(tasks)
    for group in ("nlp", "algorithmic", "overall"):
        chosen = [(n, min(r, n)) for c, n, r in rows if group in ("overall", c)]
        if not chosen:
            assert weighted[group] is None and plain[group] is None
            continue
        assert abs(weighted[group] - sum(r for _, r in chosen) / sum(n for n, _ in chosen)) < 1e-9
        assert abs(plain[group] - sum(r / n for n, r in chosen) / len(chosen)) < 1e-9


def test_report_shows_both_averages():
    """The report labels the item-weighted average and shows the unweighted mean beside it."""
    page = render_report(
        {
            "task": "bbh:all",
            "tasks": [{"task": "bbh:a"}, {"task": "bbh:b"}],
            "averages": {"nlp": 0.75},
            "averages_unweighted": {"nlp": 0.5},
        }
    )
    assert "BBH NLP average (test, item-weighted)" in page and "75.0 %" in page
    assert "BBH NLP average (test, unweighted mean over tasks)" in page and "50.0 %" in page


def test_report_puts_the_training_score_first_when_a_task_is_scored_on_its_training_items():
    """A LIAR run under the official protocol shows the training accuracy as its score and the test one as ours."""
    page = render_report(
        {"task": "liar", "tasks": [{"task": "liar", "scored_on": "train", "accuracy": {"train": 0.62, "test": 0.55}}]}
    )
    summary = page.split('id="summary"')[1].split("</table>")[0]
    assert "<strong>62.0 %</strong>" in summary and "the paper" in summary
    assert "Test accuracy (held out; our addition)" in summary and "55.0 %" in summary
