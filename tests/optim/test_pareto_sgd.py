"""`optim.pareto_sgd`: GEPA's search whose proposals are the paper's chain (semantic gradients) on the minibatch."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from semgrad.backends.fake import RecordingLLM
from semgrad.backends.simulated import SimulatedLLM
from semgrad.core import Example, optim, rules
from semgrad.core.optim._lineage import LINEAGE_PREFIX
from semgrad.effects import fit_sync
from semgrad.topologies import paper_graph

SUMS = {f"What is {i} + {i + 3}?": str(2 * i + 3) for i in range(12)}
TRAIN = [Example({"question": q}, a, id=f"q{i}") for i, (q, a) in enumerate(SUMS.items())]
NAMES = ("hint_1.instruction", "hint_2.instruction", "answer.instruction")


def _fit(optimizer, iterations, **options):
    graph, params = paper_graph()
    llm = options.pop("llm", None) or RecordingLLM(SimulatedLLM(SUMS))
    return fit_sync(graph, params, optimizer, train=TRAIN, llm=llm, iterations=iterations, **options), llm


def _first_proposal(llm):
    """The requests of the first proposal: those after the seed's and the parent's forward calls."""
    return [r for r in llm.requests if r.purpose != "forward"]


def _lineage(result):
    notes = [
        json.loads(n.removeprefix(LINEAGE_PREFIX))
        for r in result.history
        for s in r.report
        for n in s.notes
        if n.startswith(LINEAGE_PREFIX)
    ]
    return [n for n in notes if "front" not in n], [n["front"] for n in notes if "front" in n]


def test_a_proposal_backpropagates_the_minibatch_failures_and_rewrites_every_component_with_a_gradient():
    """Every item is wrong at first: the first proposal asks one neighbour-aware backward question per failing
    minibatch item (only the answer node has inputs that need gradients) and rewrites all three components."""
    result, llm = _fit(optim.pareto_sgd(), 1)
    asked = _first_proposal(llm)
    backward = [r for r in asked if r.purpose == "backward"]
    assert len(backward) == 3 and all(r.node == "answer" and len(r.targets) == 2 for r in backward)
    assert sorted(r.node for r in asked if r.purpose == "rewrite") == sorted(NAMES)
    stages = [s.stage for s in result.history[0].report]
    assert stages == ["pareto_sgd"]
    notes = " ".join(result.history[0].report[0].notes)
    assert "backward: 6 partials" in notes and "full_update: updating" in notes
    (proposal,), _ = _lineage(result)
    assert proposal["kind"] == "reflective" and proposal["parents"] == [0] and proposal["accepted"] is True


def test_round_robin_rewrites_one_component_per_proposal_and_still_backpropagates_through_the_graph():
    """Under round-robin the first proposal rewrites the first component only; the backward calls are the same."""
    _, llm = _fit(optim.pareto_sgd(components="round_robin"), 1)
    asked = _first_proposal(llm)
    assert [r.node for r in asked if r.purpose == "rewrite"] == ["hint_1.instruction"]
    assert sum(r.purpose == "backward" for r in asked) == 3


def test_the_paper_ablations_change_the_proposal_chain_as_they_change_neighbor_sgd():
    """no-gradients makes no backward call; no-neighbors asks about one input at a time; one-parameter rewrites
    only its parameter."""
    _, none = _fit(optim.pareto_sgd(ablation="no-gradients"), 1)
    assert not [r for r in none.requests if r.purpose == "backward"]
    assert all("Feedback on the output" not in r.prompt for r in none.requests if r.purpose == "rewrite")
    _, edges = _fit(optim.pareto_sgd(ablation="no-neighbors"), 1)
    backward = [r for r in edges.requests if r.purpose == "backward"]
    assert backward and all(len(r.targets) == 1 for r in backward)
    result, one = _fit(optim.pareto_sgd(ablation="one-parameter", param="hint_2.instruction"), 2)
    assert {r.node for r in one.requests if r.purpose == "rewrite"} == {"hint_2.instruction"}
    assert [n for n in NAMES if result.params.value(n) != paper_graph()[1].value(n)] in ([], ["hint_2.instruction"])


def test_an_unknown_ablation_or_a_misplaced_param_is_refused():
    """Names outside PARETO_ABLATIONS, param without one-parameter, and rule beside no-neighbors are errors."""
    with pytest.raises(ValueError, match="unknown ablation"):
        optim.pareto_sgd(ablation="no-gate")
    with pytest.raises(ValueError, match="param="):
        optim.pareto_sgd(param="answer.instruction")
    with pytest.raises(ValueError, match="not both"):
        optim.pareto_sgd(ablation="no-neighbors", rule=rules.per_edge())
    with pytest.raises(ValueError, match="k >= 1"):
        optim.pareto_sgd(k=0)


def test_a_resumed_run_ends_as_an_uninterrupted_one(tmp_path):
    """The pool, front, generator and lineage are checkpointed: resumed after two proposals, a run ends with the
    same params, history and best score as one run straight through, making the later iterations' calls and one
    forward of the training items (`fit` scores the current params again on resuming)."""
    full, _ = _fit(optim.pareto_sgd(seed=3), 5)
    path = tmp_path / "ckpt.json"
    _fit(optim.pareto_sgd(seed=3), 2, checkpoint=path)
    rec = RecordingLLM(SimulatedLLM(SUMS))
    resumed, _ = _fit(optim.pareto_sgd(seed=3), 5, resume=path, llm=rec)
    assert (resumed.params, resumed.history, resumed.best_score) == (full.params, full.history, full.best_score)
    later = sum(sum(r.calls.values()) for r in full.history[2:])
    assert sum(rec.counts().values()) == later + 3 * len(TRAIN)


@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 50), minibatch=st.integers(1, 4), components=st.sampled_from(["all", "round_robin"]))
def test_a_child_joins_the_pool_only_on_a_strictly_better_minibatch_sum(seed, minibatch, components):
    """Whatever the seed and minibatch, every accepted proposal beat its parent's minibatch sum strictly, every
    rejected one did not, and the front names only candidates that joined the pool."""
    result, _ = _fit(optim.pareto_sgd(seed=seed, minibatch=minibatch, components=components), 4)
    proposals, fronts = _lineage(result)
    joined = {0} | {p["candidate"] for p in proposals if p["accepted"]}
    for p in proposals:
        if p["kind"] == "reflective":
            assert p["accepted"] == (p["child_sum"] > p["parent_sum"]), p
    assert fronts and all(int(k) in joined for front in fronts for k in front)
