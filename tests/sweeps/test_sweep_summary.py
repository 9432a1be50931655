"""sweep.json as a typed value: `SweepSummary` writes today's file key for key, checks a file once, and is what
the page reads."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from semgrad.sweeps import SweepRow, SweepSummary, parse_spec, render_sweep, summarize, write_sweep_report
from semgrad.sweeps._summary import _summary_json

SPEC = parse_spec({"tasks": ["bbh:navigate", "gsm8k", "liar"], "seeds": [0, 1], "optimizers": ["tgd"]})

#: Tasks with the category a row of theirs has.
TASKS = (("bbh:navigate", "algorithmic"), ("bbh:snarks", "nlp"), ("gsm8k", None), ("liar", None))

_score = st.none() | st.floats(0, 1)
_count = st.none() | st.integers(0, 10**9)
_text = st.text(max_size=12)


@st.composite
def _rows(draw: st.DrawFn) -> dict[str, Any]:
    """A row as `run_row` writes it: every key, in its order."""
    task, category = draw(st.sampled_from(TASKS))
    return {
        "name": draw(_text),
        "task": task,
        "category": category,
        "seed": draw(st.integers(0, 5)),
        "optimizer": draw(st.sampled_from(["tgd", "neighbor-sgd"])),
        "models": draw(st.none() | _text),
        "accuracy": {part: draw(_score) for part in ("train", "validation", "test", "initial_test")},
        "scored_on": draw(st.sampled_from(["test", "train"])),
        "test_items": draw(st.none() | st.integers(1, 300)),
        "iterations": draw(st.integers(0, 9)),
        "calls": draw(_count),
        "tokens": {"input": draw(_count), "output": draw(_count)},
        "cost_usd": draw(st.none() | st.floats(0, 1e6)),
        "stopped": draw(st.none() | st.sampled_from(["budget", "halted"])),
        "errors": draw(_count),
        "errors_by_kind": draw(st.none() | st.dictionaries(st.sampled_from(["timeout", "budget"]), st.integers(0, 9))),
        "error": draw(st.none() | _text),
    }


def _ordered(value: Any) -> str:
    """`value` as JSON text with its keys in their order: equal texts, equal values in equal key order."""
    return json.dumps(value, ensure_ascii=False)


@settings(max_examples=60, deadline=None)
@given(st.lists(_rows(), max_size=6))
def test_to_json_of_from_json_is_what_summarize_wrote_key_for_key(rows):
    """For any rows, summarize's value writes today's sweep.json (same keys, same order), and reading that file
    back and writing it again gives it unchanged: to_json(from_json(x)) == x in key order."""
    today = _summary_json(SPEC, rows)
    assert _ordered(summarize(SPEC, rows).to_json()) == _ordered(today)
    text = json.loads(json.dumps(today))
    assert _ordered(SweepSummary.from_json(text).to_json()) == _ordered(today)


def test_write_sweep_report_writes_summarize_s_json(tmp_path):
    """sweep.json as written from summarize's value is the file today's summarize wrote, key for key."""
    rows = [{"name": "r", "task": "gsm8k", "category": None, "optimizer": "tgd", "accuracy": {"test": 0.5}}]
    written, _ = write_sweep_report(tmp_path, summarize(SPEC, rows))
    expected = json.loads(json.dumps(_summary_json(SPEC, [SweepRow.from_json(rows[0]).to_json()])))
    assert _ordered(json.loads(written.read_text("utf-8"))) == _ordered(expected)


def _full(**row: Any) -> dict[str, Any]:
    """A row with every key (those not given empty)."""
    return SweepRow.from_json(row).to_json()


def _file() -> dict[str, Any]:
    rows = [_full(name="r", task="gsm8k", seed=0, optimizer="tgd", accuracy={"test": 0.5}, calls=3, tokens={})]
    return summarize(SPEC, rows).to_json()


@pytest.mark.parametrize(
    ("path", "value", "field"),
    [
        (("runs", 0, "accuracy", "test"), 1.5, "runs[0].accuracy.test"),
        (("runs", 0, "accuracy", "test"), float("nan"), "runs[0].accuracy.test"),
        (("runs", 0, "calls"), -1, "runs[0].calls"),
        (("runs", 0, "seed"), "0", "runs[0].seed"),
        (("runs", 0, "tokens", "input"), True, "runs[0].tokens.input"),
        (("runs", 0, "error"), ["x"], "runs[0].error"),
        (("runs",), "x", "runs"),
        (("averages", "tgd", "overall"), 2, "averages.tgd.overall"),
        (("by_task", "gsm8k", "tgd"), "high", "by_task.gsm8k.tgd"),
        (("average_tasks", "overall", "tasks"), -3, "average_tasks.overall.tasks"),
        (("totals", "cost_usd"), float("inf"), "totals.cost_usd"),
        (("totals", "failed"), 0.5, "totals.failed"),
        (("sweep", "name"), 3, "sweep.name"),
        (("published", "gsm8k"), 93.2, "published.gsm8k"),
    ],
)
def test_from_json_refuses_a_hand_changed_field_with_one_line_naming_it(path, value, field):
    """A sweep.json with one field changed to a value of the wrong kind is refused by from_json with one line
    that starts with the field's name."""
    data = copy.deepcopy(_file())
    SweepSummary.from_json(data)  # the file as written reads
    target = data
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    with pytest.raises(ValueError) as raised:
        SweepSummary.from_json(data)
    message = str(raised.value)
    assert message.startswith(f"{field} must be ") and "\n" not in message, message


def test_an_older_sweep_json_reads_with_the_later_fields_empty():
    """A sweep.json from before scored_on, averages_unweighted, average_tasks and the rows' later fields reads,
    each missing field empty, and renders."""
    old = _file()
    for key in ("scored_on", "averages_unweighted", "average_tasks"):
        del old[key]
    for key in ("scored_on", "test_items", "iterations", "stopped", "errors", "errors_by_kind"):
        del old["runs"][0][key]
    summary = SweepSummary.from_json(old)
    assert summary.average_tasks == {} and summary.scored_on == {} and summary.averages_unweighted == {}
    assert summary.runs[0].errors_by_kind is None and summary.runs[0].score("test") == 0.5
    assert "1 of 1 task<" in render_sweep(old)


def test_the_page_reads_the_typed_fields_never_the_dictionary(monkeypatch):
    """render_sweep of a SweepSummary reads its fields: reading it by key raises, and with to_json and from_json
    made to raise the page still shows the run, its score, its calls and the totals."""
    rows = [_full(name="onerun", task="gsm8k", optimizer="tgd", accuracy={"test": 0.25}, calls=1234)]
    summary = summarize(SPEC, rows)
    with pytest.raises(TypeError):
        summary["runs"]  # type: ignore[index]
    with pytest.raises(TypeError):
        summary.runs[0]["name"]  # type: ignore[index]

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the page went back to the dictionary")

    for cls in (SweepSummary, SweepRow):
        monkeypatch.setattr(cls, "to_json", refuse)
        monkeypatch.setattr(cls, "from_json", refuse)
    page = render_sweep(summary)
    assert "onerun" in page and "25.0 %" in page and "1,234" in page and "1 runs on backend" in page


def test_counts_that_sum_beyond_2_53_fail_their_run_alone_and_leave_no_total():
    """A results.json whose calls per purpose are each allowed but sum beyond 2**53 gives a row that would not
    read back: run_row refuses it with one line naming row.calls (that run fails alone), and totals over rows
    whose counts sum beyond 2**53 are null, so summarize still writes a sweep.json that reads back."""
    from semgrad.sweeps._execute import run_row

    (run, *_) = SPEC.runs()
    results = {"tasks": [{"accuracy": {"test": 0.5}}], "calls": {"by_purpose": {"a": 2**53, "b": 2**53}}}
    with pytest.raises(ValueError, match=r"^row\.calls must be a count"):
        run_row(run, results)
    rows = [_full(name=f"r{i}", task="gsm8k", optimizer="tgd", calls=2**53, tokens={"input": 2**53}) for i in (0, 1)]
    summary = summarize(SPEC, rows)
    assert summary.totals.calls is None and summary.totals.tokens["input"] is None
    assert SweepSummary.from_json(json.loads(json.dumps(summary.to_json()))) == summary
