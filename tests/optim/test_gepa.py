"""`optim.gepa` under `fit`: its budget, its lineage in the report, its arguments, and checkpoint/resume.

The world is the GEPA conformance test's (tests/conformance/test_baseline_gepa.py): items whose kind
decides which strategy an instruction must name, and a reflection model whose k-th reply is fixed.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest

from semgrad.backends.fake import reply_rewrite
from semgrad.core import Example, LLMRequest, optim
from semgrad.core.optim._search import ProposalTask, Proposed, pareto_search
from semgrad.core.programs import pure
from semgrad.effects import fit_sync
from semgrad.effects._checkpoint import decode, encode
from semgrad.effects._fit_state import FitState
from tests.conformance.test_baseline_gepa import PROPOSALS, TRAIN, VALIDATION, Fake, _graph, _loss

ITEMS = [Example({"question": q}, t, id=f"t{i}") for i, (q, t, _) in enumerate(TRAIN)]
HELD_OUT = [Example({"question": q}, t, id=f"v{i}") for i, (q, t, _) in enumerate(VALIDATION)]


def _run(optimizer: Any, nodes: tuple[str, ...] = ("plan", "answer"), **options: Any) -> Any:
    graph, params = _graph(nodes)
    options.setdefault("llm", Fake())
    return fit_sync(graph, params, optimizer, train=ITEMS, loss=_loss, **options)


class Stateless(Fake):
    """The world's fake with a reflection reply chosen by what the request shows, not by how many came before
    (a resumed process gives the same replies as an uninterrupted one)."""

    def __call__(self, request: LLMRequest) -> str:
        if request.purpose != "rewrite":
            return super().__call__(request)
        self.requests.append(request)
        digest = int(hashlib.sha256(("6" + request.prompt).encode()).hexdigest(), 16)  # "6": a merge in 12 iterations
        return reply_rewrite(request, PROPOSALS[digest % len(PROPOSALS)])


def test_a_resumed_gepa_run_ends_as_an_uninterrupted_one(tmp_path):
    """Pool, front, generator, sampler, merge schedule and lineage go into the checkpoint: a run stopped after 3
    iterations (a merge due) and resumed to 12 ends with the same params, history and search state as one run
    for 12."""
    graph, params = _graph(("plan", "answer"))
    paths = tmp_path / "full.json", tmp_path / "part.json"

    def run(iterations: int, **options: Any) -> Any:
        optimizer = optim.gepa(merge=True, max_metric_calls=200)
        return _run(optimizer, validation=HELD_OUT, iterations=iterations, llm=Stateless(), **options)

    full = run(12, checkpoint=paths[0])
    run(3, checkpoint=paths[1])
    resumed = run(12, resume=paths[1])
    states = [FitState.load(p, graph, params).opt_state for p in paths]
    assert states[0] == states[1]
    assert (resumed.params, resumed.history, resumed.best_score) == (full.params, full.history, full.best_score)
    assert {"reflective", "merge"} <= {r.kind for r in states[0].lineage} and len(states[0].pool) > 2
    assert decode(json.loads(json.dumps(encode(states[0])))) == states[0]


def test_the_budget_stops_the_proposals_and_the_report_says_so():
    """Once max_metric_calls are spent, an iteration proposes nothing and makes no call of its own; the report
    names the lineage of each proposal and the front."""
    result = _run(optim.gepa(max_metric_calls=30), validation=HELD_OUT, iterations=8)
    notes = [r.report[-1].notes for r in result.history]
    spent = [i for i, n in enumerate(notes) if n[0].startswith("no proposal: the metric-call budget is spent")]
    assert spent and spent == list(range(spent[0], len(notes)))
    assert all(r.calls.get("rewrite", 0) == 0 for r in result.history[spent[0] :])
    assert notes[0][0].startswith("proposal 1 (reflective): parent 0, components plan.instruction, minibatch [")
    assert any(line.startswith("front: [{") for line in notes[0])


def test_round_robin_moves_through_the_components_and_all_rewrites_every_one():
    """Under round-robin, the seed's successive proposals rewrite plan, then answer; under "all", both at once."""
    rr = _run(optim.gepa(), validation=HELD_OUT, iterations=2)
    assert [r.report[-1].notes[0].split("components ")[1].split(",")[0] for r in rr.history] == [
        "plan.instruction",
        "answer.instruction",
    ]
    every = _run(optim.gepa(components="all"), validation=HELD_OUT, iterations=1)
    assert every.history[0].calls["rewrite"] == 2


def test_a_perfect_minibatch_proposes_nothing():
    """A parent right on every minibatch item gets no reflection request (GEPA's skip_perfect_score)."""
    graph, params = _graph(("answer",))
    params = params.with_values({"answer.instruction": "Use strategy A. Use strategy B. Use strategy C."})
    fake = Fake()
    result = fit_sync(graph, params, optim.gepa(), train=ITEMS, loss=_loss, llm=fake, iterations=2)
    assert "rewrite" not in {r.purpose for r in fake.requests}
    assert "perfect on the minibatch, nothing proposed" in result.history[0].report[-1].notes[0]


def test_the_proposal_step_is_pluggable():
    """`pareto_search` runs any proposal step: it gets the parent's params, the components and the parent's
    results on the minibatch, and its values become the child."""
    seen: list[ProposalTask] = []

    def propose(task: ProposalTask) -> Any:
        seen.append(task)
        return pure(Proposed({n: "Use strategy A. Use strategy B. Use strategy C." for n in task.components}))

    result = _run(pareto_search(propose, name="mine"), nodes=("answer",), iterations=1)
    (task,) = seen
    assert task.components == ("answer.instruction",) and len(task.results) == len(task.minibatch) == 3
    assert result.params.value("answer.instruction").startswith("Use strategy A.")


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"minibatch": 0}, "minibatch"),
        ({"components": "some"}, "components"),
        ({"max_metric_calls": 0}, "max_metric_calls"),
        ({"max_merges": -1}, "max_merges"),
    ],
)
def test_bad_settings_are_refused_when_built(options, message):
    """A setting GEPA would refuse is a ValueError naming it, before any call."""
    with pytest.raises(ValueError, match=message):
        optim.gepa(**options)


def test_a_parent_that_is_the_current_params_is_not_run_again():
    """When the parent drawn is the current params, its minibatch results are `fit`'s own forward of the training
    items: a proposal costs the training forward, the child's minibatch and, accepted, the child's validation."""
    result = _run(optim.gepa(), nodes=("answer",), validation=HELD_OUT, iterations=2)
    second = result.history[1]
    assert second.report[-1].notes[0].startswith("proposal 2 (reflective): parent 0,")
    assert "accepted as candidate 1" in second.report[-1].notes[0] and not result.history[0].applied
    assert second.calls["forward"] == len(ITEMS) + 3 + len(HELD_OUT)


def test_a_search_state_that_does_not_fit_the_run_is_refused():
    """A search state whose candidates were scored on other instances (a crafted or stale checkpoint) is a clear
    error before any call."""
    from semgrad.core import FrozenMap
    from semgrad.core.optim import Step
    from semgrad.core.optim._pareto import Candidate, ParetoState

    graph, params = _graph(("answer",))
    state = ParetoState(pool=(Candidate(FrozenMap({"answer.instruction": "x"}), scores=(1.0,)),))
    step = Step(graph, 0, tuple(ITEMS), validation=tuple(HELD_OUT), loss=_loss)
    with pytest.raises(ValueError, match="does not fit this run: candidate 0 has 1 scores for 5 instances"):
        optim.gepa().update(step, state, params)


def test_an_unreadable_reflection_proposes_nothing_and_says_why():
    """A reflection reply with no new text is no proposal: no child is run, and the report names the component."""

    class Unreadable(Fake):
        def __call__(self, request: LLMRequest) -> str:
            if request.purpose == "rewrite":
                self.requests.append(request)
                return "I would rather not."
            return super().__call__(request)

    fake = Unreadable()
    result = _run(optim.gepa(), nodes=("answer",), validation=HELD_OUT, iterations=1, llm=fake)
    notes = result.history[0].report[-1].notes
    assert notes[0].startswith("proposal 1 (none): parent 0") and notes[1] == "answer.instruction: no usable reply"
    assert result.history[0].calls["forward"] == len(ITEMS) + 2 * len(HELD_OUT)  # training forward, seed scoring
