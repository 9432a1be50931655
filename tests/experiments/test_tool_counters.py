"""A run's tally keeps a system's tool calls apart from its LLM calls; ledgers written before still load (#35)."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from semgrad.effects import Accounts, Amount, Line
from semgrad.experiments._ledger import Ledger
from semgrad.experiments._run_stack import add_counters, counters_of, empty_counters
from semgrad.report._summary import _usage_rows

_tool_outcomes = st.lists(st.tuples(st.sampled_from(["lookup", "search"]), st.sampled_from(["", "timeout"])))


@given(outcomes=_tool_outcomes, llm_calls=st.integers(0, 5))
def test_tool_calls_are_counted_in_the_counters_and_never_as_llm_calls(outcomes, llm_calls) -> None:
    """counters_of counts each tool call in tool_calls (failed ones in tool_errors too), and the LLM calls alone
    in calls and calls_by_purpose; add_counters sums them."""
    accounts = Accounts().add(Line("forward", "forward", "m"), Amount(calls=llm_calls))
    for tool, error in outcomes:
        accounts = accounts.add(Line("tool", "tool", tool, error), Amount(tool_calls=1, tool_errors=int(bool(error))))
    c = counters_of(accounts)
    assert c["tool_calls"] == len(outcomes) and c["tool_errors"] == sum(1 for _, e in outcomes if e)
    assert c["calls"] == llm_calls and set(c["calls_by_purpose"]) <= {"forward"} and not c["errors"]
    assert add_counters(c, c)["tool_calls"] == 2 * len(outcomes)


@settings(max_examples=20)
@given(calls=st.integers(0, 9), dropped=st.sampled_from([(), ("batch_calls", "batch_tokens_by_model")]))
def test_a_ledger_written_before_tool_calls_were_kept_still_loads(tmp_path_factory, calls, dropped) -> None:
    """A ledger whose counters lack tool_calls and tool_errors (and, older, the batch keys) loads, with them 0."""
    folder = tmp_path_factory.mktemp("run")
    ledger = Ledger(folder)
    ledger.add("t", {**empty_counters(), "calls": calls})
    ledger.save()
    gone = ("tool_calls", "tool_errors", *dropped)

    def strip(value):  # a saved dict is {"$dict": [[key, value], ...]}
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items()}
        if isinstance(value, list):
            return [strip(v) for v in value if not (isinstance(v, list) and v and v[0] in gone)]
        return value

    path = folder / "ledger.json"
    saved = json.loads(path.read_text())
    assert "tool_calls" in path.read_text()
    path.write_text(json.dumps(strip(saved)))
    assert "tool_calls" not in path.read_text()
    loaded = Ledger.load(folder).counters("t")
    assert loaded["calls"] == calls and loaded["tool_calls"] == loaded["tool_errors"] == 0


def test_the_reports_calls_table_shows_tool_calls_apart() -> None:
    """The report's usage rows gain a 'Tool calls' row when a run called tools, and none when it did not."""
    rows = _usage_rows({"counters": {**empty_counters(), "tool_calls": 7, "tool_errors": 2}})
    (row,) = [r for r in rows if r[0] == "Tool calls"]
    assert "7" in row[1] and "2 failed" in row[1] and "not LLM calls" in row[1]
    assert not [r for r in _usage_rows({"counters": empty_counters()}) if r[0] == "Tool calls"]
