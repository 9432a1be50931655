"""The report's lineage of a Pareto search and its front: shown from the stage notes, hostile input kept as text."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from semgrad.report import render_report
from semgrad.report._lineage import lineage_entries, lineage_note, lineage_section

from .conftest import HOSTILE, make_results, parse


def _task(notes: list[Any]) -> dict[str, Any]:
    return {
        "task": "x",
        "iterations": [
            {
                "iteration": 1,
                "train_score": 0.5,
                "report": [["pareto_sgd", ["proposal 1 (reflective): ...", *notes]]],
                "accepted": True,
            }
        ],
        "params": {"initial": {"a.instruction": "a"}, "final": {"a.instruction": "b"}},
    }


def test_each_proposal_is_a_row_with_its_parent_component_and_verdict():
    """Every proposal note becomes one row naming its candidate, parent, components, minibatch sums and verdict."""
    notes = [
        lineage_note(
            candidate=1,
            parents=[0],
            components=["hint_1.instruction"],
            accepted=True,
            parent_sum=1,
            child_sum=2,
            score=0.75,
        ),
        lineage_note(
            candidate=2, parents=[1], components=["answer.instruction"], accepted=False, parent_sum=2, child_sum=2
        ),
        lineage_note(candidate=3, parents=[1, 0], kind="merge", components=[], accepted=True),
        lineage_note(front={"0": 1, "1": 4}),
    ]
    html = lineage_section(_task(notes))
    assert html.count('<tr class="accepted">') == 2 and html.count('<tr class="rejected">') == 1
    assert "hint_1.instruction" in html and "1 \u2192 2" in html and "0.75" in html and "merge" in html
    assert "<td>1, 0</td>" in html, "both parents of a merge are named"
    assert '<table class="front">' in html and "<td>4</td>" in html


def test_a_run_without_lineage_shows_no_section():
    """A run of another optimizer has no lineage notes, and the page gains nothing."""
    assert lineage_section(_task([])) == ""
    assert "Candidates: lineage" not in render_report(make_results([_task([])], task="x"))


def test_the_page_shows_the_lineage_of_a_task():
    """`render_report` puts the lineage into the task's section."""
    note = lineage_note(candidate=1, parents=[0], components=["a.instruction"], accepted=True)
    page = render_report(make_results([_task([note])], task="x"))
    assert "Candidates: lineage" in page and "Pareto front" in page


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
        max_leaves=12,
    )
)
def test_any_json_note_renders_without_breaking_the_page(value):
    """Whatever JSON a note holds (any field of any type), the section renders, well formed and script free."""
    notes = [
        json.dumps(value),
        lineage_note(
            candidate=value,
            parents=value,
            components=value,
            accepted=value,
            parent_sum=value,
            child_sum=value,
            score=value,
            kind=value,
        ),
        lineage_note(front=value),
    ]
    page = parse(render_report(make_results([_task(notes)], task="x")))
    assert page.mismatched == [] and page.stack == []
    assert "script" not in [tag for tag, _ in page.tags]


def test_hostile_text_in_the_lineage_is_shown_as_text():
    """Component names and front keys that look like markup are escaped, never interpreted."""
    for text in HOSTILE:
        notes = [
            lineage_note(candidate=1, parents=[0], components=[text], accepted=True, kind=text),
            lineage_note(front={text: 2}),
        ]
        page = parse(render_report(make_results([_task(notes)], task="x")))
        assert page.mismatched == [] and page.stack == [], text
        assert "script" not in [tag for tag, _ in page.tags], text
        assert page.all_text().count(text) >= 2, text


def test_notes_that_are_not_lineage_objects_are_skipped():
    """A note without the lineage prefix, not JSON, too long, or not an object is left out, in any stage."""
    long = lineage_note(candidate=1, pad="x" * 30_000)
    task = _task(
        ["lineage: {", "lineage: [1, 2]", 7, long, '{"candidate": 8}', lineage_note(candidate=5, accepted=False)]
    )
    task["iterations"][0]["report"].append(["validation_gate", [lineage_note(candidate=9), None]])
    task["iterations"][0]["report"].append("not an entry")
    proposals, front = lineage_entries(task)
    assert [note["candidate"] for _, note in proposals] == [5, 9] and front == {}
