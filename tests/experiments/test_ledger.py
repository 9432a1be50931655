"""`ledger.json`: what `save` writes is the whole ledger, however many saves came before."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from semgrad.core import GraphBuilder
from semgrad.effects._checkpoint import read_checkpoint
from semgrad.experiments._ledger import Ledger
from semgrad.experiments._run_stack import empty_counters

_b = GraphBuilder()
_b.llm("a", inputs=[_b.input("q")], instruction="Solve.")
_, PARAMS = _b.build(output="a")

TASKS = st.sampled_from(["bbh:navigate", "bbh:snarks", "gsm8k"])
STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("add"), st.one_of(st.none(), TASKS), st.integers(0, 50)),
        st.tuples(st.just("evaluated"), TASKS, st.sampled_from(["train", "test"]), st.integers(0, 4)),
        st.tuples(st.just("read"), TASKS),
        st.tuples(
            st.just("save"),
        ),
    ),
    max_size=25,
)


@settings(max_examples=60, deadline=None)
@given(STEPS)
def test_every_save_writes_the_whole_ledger_as_it_is_now(steps):
    """After any mix of counting, scoring, reading and saving, the file holds exactly the ledger in memory,
    and loads back to equal counters and evaluations."""
    with tempfile.TemporaryDirectory() as d:
        ledger = Ledger(Path(d))
        for step in [*steps, ("save",)]:
            if step[0] == "add":
                ledger.add(step[1], {**empty_counters(), "calls": step[2], "errors_by_kind": {"server": step[2]}})
            elif step[0] == "evaluated":
                predictions = [{"sample": i, "correct": i % 2 == 0, "score": float(i % 2 == 0)} for i in range(step[3])]
                score = sum(p["score"] for p in predictions) / len(predictions) if predictions else 0.0
                ledger.evaluated(step[1], step[2], PARAMS, score, predictions if step[2] == "test" else None)
            elif step[0] == "read":
                ledger.counters(step[1])
            else:
                ledger.save()
                saved = read_checkpoint(Path(d) / Ledger.FILE)["ledger"]
                assert saved == {"preflight": ledger.preflight, "tasks": ledger.tasks, "journal": ledger.journal}
        again = Ledger.load(Path(d))
        assert (again.preflight, again.tasks) == (ledger.preflight, ledger.tasks)
