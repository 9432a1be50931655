"""Training a system whose graph differs per sample (issue #35, points 2, 3 and 5's backward side)."""

from __future__ import annotations

from typing import Any

import anyio
import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from semgrad.backends import fake
from semgrad.core import Example, LLMRequest, Params, as_examples, optim
from semgrad.core._system import SystemRef
from semgrad.core.optim import Step, aggregate, backpropagate, select_error_samples
from semgrad.core.optim._combining import chain
from semgrad.core.scoring import normalized_match
from semgrad.effects import Runner, fit
from semgrad.effects._systems import as_trainable
from semgrad.testing import graphs, inputs_for
from semgrad.topologies import paper_graph
from tests._graph_systems import GraphSystem, branching, items, static


def _forward(system: GraphSystem, params: Params, examples: tuple[Example, ...], llm: Any) -> Runner:
    """A runner that answers the system's calls, and the forward it made (as a Step of every item)."""
    ref, systems = as_trainable(system)
    runner = Runner(llm, systems=systems)
    results = runner.run_sync(optim.evaluate(ref, params, examples, normalized_match()))
    step = Step(ref, train=examples, traces=tuple(t for t, _ in results), scores=tuple(s for _, s in results))
    return runner, step


def _gradients_step(every_taken: frozenset[int], n: int) -> tuple[Step, list[LLMRequest]]:
    """Forward `n` items (those in `every_taken` take the branch), select them all, backward and aggregate."""
    system = GraphSystem("support", branching(taken=lambda e: int(e.id) in every_taken))
    asked: list[LLMRequest] = []

    def llm(request: LLMRequest) -> Any:
        asked.append(request)
        return fake.HashLLM()(request)

    examples = as_examples(items(n))
    runner, step = _forward(system, Params({}), examples, llm)
    from semgrad.core._system import merged_params

    params = merged_params(Params({}), step.traces)
    stages = chain(select_error_samples(k=n), backpropagate(), aggregate())
    new, _ = runner.run_sync(stages.update(step, stages.init(params), params))
    return new, asked


@settings(max_examples=25)
@given(n=st.integers(1, 7), data=st.data())
def test_a_parameter_gathers_examples_from_exactly_the_samples_that_ran_it(n: int, data: st.DataObject) -> None:
    """The branch's instruction gets one example per selected sample that took the branch, the shared ones
    one per sample, and the branch's node is backpropagated on the samples that ran it and no other."""
    taken = frozenset(data.draw(st.sets(st.integers(0, n - 1))))
    step, asked = _gradients_step(taken, n)
    grads = step.param_gradients
    assert grads is not None
    lookup = grads.get("lookup.instruction")
    assert (tuple(e.sample for e in lookup.examples) if lookup else ()) == tuple(sorted(taken))
    assert tuple(e.sample for e in grads["classify.instruction"].examples) == tuple(range(n))
    assert tuple(e.sample for e in grads["answer.instruction"].examples) == tuple(range(n))
    backward_on = sorted(r.sample for r in asked if r.purpose == "backward" and r.node == "lookup")
    assert backward_on == sorted(taken)


def test_a_branch_one_sample_in_five_takes_is_trained() -> None:
    """With a branch taken by one sample in five, that branch's instruction is rewritten and kept (scores rise)."""
    system = GraphSystem("support", branching(5))

    def llm(request: LLMRequest) -> Any:
        if request.purpose == "rewrite":
            return fake.reply_rewrite(request, "Better: " + request.node if request.node else "Better.")
        if request.purpose == "forward" and request.node == "answer":
            better = "Better" in request.messages[0].content or "Better" in request.prompt
            return fake.reply_forward(request, "never said" if better else "wrong")
        return fake.HashLLM()(request)

    result = anyio.run(lambda: fit(system, Params({}), optim.neighbor_sgd(k=5), train=items(5), llm=llm, iterations=1))
    assert result.best_score == 1.0 > result.initial_score
    assert result.initial_params.value("lookup.instruction") == "Recall the facts about the topic."
    assert result.params.value("lookup.instruction") != result.initial_params.value("lookup.instruction")
    lookup_examples = [r for r in result.history[0].report if r.stage == "aggregate"]
    assert "lookup.instruction" in lookup_examples[0].notes[0]


def _requests_of(system_or_graph: Any, params: Params, train: list[dict[str, Any]], llm: Any, **kw: Any) -> tuple:
    asked: list[str] = []

    def on_reply(request: LLMRequest, reply: Any) -> None:
        asked.append(f"{request.purpose}|{request.node}|{request.sample}|{request.prompt}")

    result = anyio.run(
        lambda: fit(system_or_graph, params, optim.neighbor_sgd(k=2), train=train, llm=llm, on_reply=on_reply, **kw)
    )
    return result, sorted(asked)


@settings(max_examples=12)
@given(built=graphs(max_computed=5, unusual_names=False), data=st.data())
def test_a_static_graph_written_as_a_system_trains_the_same(built: tuple, data: st.DataObject) -> None:
    """A static graph as a system makes the same requests, gradients and updates as the graph itself."""
    graph, params = built
    rows = data.draw(st.lists(inputs_for(graph, st.sampled_from(["a", "b", "c"])), min_size=1, max_size=4))
    train = [{"inputs": dict(r), "target": "never said", "id": i} for i, r in enumerate(rows)]
    llm = fake.HashLLM()
    as_graph, asked_graph = _requests_of(graph, params, train, llm, iterations=2)
    system = GraphSystem("same", static(lambda: (graph, params)))
    as_system, asked_system = _requests_of(system, params, train, llm, iterations=2)
    assert asked_system == asked_graph
    assert as_system.params == as_graph.params
    assert [h.gradients for h in as_system.history] == [h.gradients for h in as_graph.history]
    assert [h.calls for h in as_system.history] == [h.calls for h in as_graph.history]


def test_a_system_trains_under_the_held_out_protocol_and_resumes(tmp_path: Any) -> None:
    """A system's run resumes from its checkpoint (whose params the runs extended) to the uninterrupted result."""
    system = GraphSystem("support", branching(3))
    train, validation = items(6), [dict(i, id=10 + i["id"]) for i in items(3)]
    whole = anyio.run(
        lambda: fit(system, Params({}), optim.neighbor_sgd(k=2), train=train, validation=validation,
                    llm=fake.HashLLM(), iterations=3)
    )  # fmt: skip
    path = tmp_path / "checkpoint.json"
    anyio.run(
        lambda: fit(system, Params({}), optim.neighbor_sgd(k=2), train=train, validation=validation,
                    llm=fake.HashLLM(), iterations=1, checkpoint=path)
    )  # fmt: skip
    resumed = anyio.run(
        lambda: fit(system, Params({}), optim.neighbor_sgd(k=2), train=train, validation=validation,
                    llm=fake.HashLLM(), iterations=3, resume=path)
    )  # fmt: skip
    assert resumed.params == whole.params
    assert [h.gradients for h in resumed.history] == [h.gradients for h in whole.history]
    assert "lookup.instruction" in resumed.initial_params


def test_a_checkpoint_of_another_systems_run_is_refused(tmp_path: Any) -> None:
    """A checkpoint written for one system does not resume another."""
    path = tmp_path / "checkpoint.json"
    one = GraphSystem("one", branching(2))
    anyio.run(lambda: fit(one, Params({}), optim.neighbor_sgd(), train=items(2), llm=fake.HashLLM(), iterations=1,
                          checkpoint=path))  # fmt: skip
    other = GraphSystem("other", branching(2))
    with pytest.raises(Exception, match="another graph"):
        anyio.run(lambda: fit(other, Params({}), optim.neighbor_sgd(), train=items(2), llm=fake.HashLLM(),
                              iterations=2, resume=path))  # fmt: skip


def test_a_program_that_runs_a_system_needs_a_runner_that_knows_it() -> None:
    """Running a system's forward without systems= fails clearly, never by calling the LLM with it."""
    program = optim.evaluate(SystemRef("s", "k"), Params({}), as_examples(items(1)), normalized_match())
    with pytest.raises(Exception, match="systems="):
        Runner(fake.HashLLM()).run_sync(program)


@pytest.mark.parametrize(
    "optimizer",
    [
        optim.neighbor_sgd(k=2, gradients=False),
        optim.neighbor_sgd(k=2, rule=None, via_feedback=True),
        optim.neighbor_sgd(k=2, update=0.5),
        optim.neighbor_sgd(k=2, only=["answer.instruction"]),
        optim.neighbor_sgd(k=2, gate=False),
    ],
    ids=["no-gradients", "via-feedback", "sampled", "only-answer", "no-gate"],
)
def test_the_ablations_run_on_a_system(optimizer: Any) -> None:
    """Each ablation of neighbor_sgd trains a system recorded per sample to the end, with calls made."""
    system = GraphSystem("support", branching(2))
    result = anyio.run(lambda: fit(system, Params({}), optimizer, train=items(4), llm=fake.HashLLM(), iterations=2))
    assert len(result.history) == 2
    assert result.statistics.calls_by_purpose["forward"] > 0


def test_a_budget_stops_a_system_cleanly() -> None:
    """A call budget stops a system's run between calls, keeping what it reached."""
    system = GraphSystem("support", branching(2))
    result = anyio.run(
        lambda: fit(system, Params({}), optim.neighbor_sgd(), train=items(4), llm=fake.HashLLM(), iterations=3,
                    budget={"max_calls": 12})
    )  # fmt: skip
    assert result.stopped == "budget"
    stats = result.statistics
    assert stats.calls - stats.errors_by_kind.get("budget", 0) <= 12 < stats.calls


def test_paper_graph_as_a_system_is_trained_like_the_graph() -> None:
    """The paper's graph as a one-graph system gives the same params as the graph after two iterations."""
    graph, params = paper_graph()
    train = [{"inputs": {"question": f"q{i}"}, "target": "never said", "id": i} for i in range(4)]
    a, asked_a = _requests_of(graph, params, train, fake.HashLLM(), iterations=2)
    b, asked_b = _requests_of(GraphSystem("paper", static(paper_graph)), params, train, fake.HashLLM(), iterations=2)
    assert asked_a and asked_a == asked_b and a.params == b.params
    assert attrs.evolve(a.statistics, peak_in_flight=0).calls_by_purpose == b.statistics.calls_by_purpose
