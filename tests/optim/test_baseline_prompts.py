"""Issue 31 point 12: no TextGrad or OptoPrime request carries the sentence the packages do not have."""

from __future__ import annotations

import pytest

from semgrad.backends.fake import HashLLM, RecordingLLM
from semgrad.core import Example, optim
from semgrad.core._prompts import OPTIMIZER_SYSTEM
from semgrad.effects import fit_sync
from semgrad.topologies import paper_graph

#: The sentence our own rewrite prompt has and the packages' prompts lack (its words, lower-cased).
ADDED = "general improvement"


@pytest.mark.parametrize(
    "make",
    [optim.textgrad, lambda: optim.textgrad(errors_only=True), optim.optoprime],
    ids=["textgrad", "errors", "opto"],
)
def test_no_baseline_request_asks_for_general_improvements(make):
    """Every request a TextGrad or OptoPrime run makes -- forward, backward and update, two iterations -- is free
    of the 'write general improvements' sentence our own rewrite prompt carries (checked to be there)."""
    assert ADDED in OPTIMIZER_SYSTEM.lower()  # the probe finds the sentence where it is
    graph, params = paper_graph()
    train = [Example({"question": f"What is {i} + {i}?"}, str(2 * i), id=str(i)) for i in range(6)]
    rec = RecordingLLM(HashLLM())
    fit_sync(graph, params, make(), train=train, llm=rec, iterations=2)
    purposes = {r.purpose for r in rec.requests}
    assert "rewrite" in purposes and ("backward" in purposes or make is optim.optoprime)
    for request in rec.requests:
        assert ADDED not in "\n".join(m.content for m in request.messages).lower(), request.purpose
