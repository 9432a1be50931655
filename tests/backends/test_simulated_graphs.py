"""The simulated LLM on any graph: random DAGs and random targets start low and rise under the method."""

from __future__ import annotations

import string

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from semgrad._bundled_pairs import gsm8k_sample
from semgrad.backends.simulated import VERIFY, SimulatedLLM
from semgrad.core import Example, GraphBuilder, forward, optim
from semgrad.effects import fit_sync, run_sync
from semgrad.topologies import layered_graph, liar_graph, paper_graph

WORDS = st.text(string.ascii_lowercase, min_size=1, max_size=6)
TARGETS = st.one_of(
    st.integers(-50, 500).map(str),
    st.text(string.ascii_letters + string.digits + " ", min_size=1, max_size=12).filter(str.strip),
)


@st.composite
def dags(draw):
    """A valid DAG by construction: inputs ``question`` (the item) and maybe ``context``; each LLM node reads a
    non-empty set of earlier nodes, at least one of them the question or an LLM node; the last node, or a function
    node reading it, is the output."""
    inputs = ["question"] + (["context"] if draw(st.booleans()) else [])
    b = GraphBuilder()
    for name in inputs:
        b.input(name, role=f"the {name}")
    earlier = list(inputs)
    for i in range(draw(st.integers(1, 5))):
        knowing = [n for n in earlier if n != "context"]
        reads = draw(st.lists(st.sampled_from(earlier), unique=True, max_size=3))
        reads = list(dict.fromkeys([draw(st.sampled_from(knowing)), *reads]))
        earlier.append(b.llm(f"n{i}", inputs=reads, instruction=f"Do step {i} of the work."))
    if draw(st.booleans()):  # the answer passed through a function node, which is then the output
        earlier.append(b.function("tidy", str.strip, inputs=[earlier[-1]]))
    return b.build(output=earlier[-1])


@st.composite
def worlds(draw):
    """A random DAG, eight items with distinct questions and random targets, and a seed."""
    graph, params = draw(dags())
    targets = draw(st.lists(TARGETS, min_size=8, max_size=8))
    context = "context" in graph.inputs
    items = [
        Example(
            {
                "question": f"Question {i}: what of the {draw(WORDS)}?",
                **({"context": f"Context {i}."} if context else {}),
            },
            target,
            id=i,
        )
        for i, target in enumerate(targets)
    ]
    return graph, params, items, draw(st.integers(0, 20))


def _fit(graph, params, items, seed, optimizer):
    llm = SimulatedLLM({e.inputs["question"]: e.target for e in items}, seed=seed, graph=graph)
    return fit_sync(graph, params, optimizer, llm=llm, train=items, iterations=4)


@given(worlds())
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_on_any_graph_the_score_starts_low_and_rises_under_the_method(world):
    """On a random DAG with random targets the initial score is below 1, the method's score rises above it,
    and without gradients (rewrites shown no feedback) it never does."""
    graph, params, items, seed = world
    result = _fit(graph, params, items, seed, optim.neighbor_sgd())
    assert result.initial_score is not None and result.initial_score < 1
    assert result.best_score is not None and result.best_score > result.initial_score
    blind = _fit(graph, params, items, seed, optim.ablation("no-gradients"))
    assert blind.best_score == blind.initial_score


def _chain():
    b = GraphBuilder()
    q = b.input("question", role="the question")
    facts = b.llm("extract", inputs=[q], instruction="List the facts.")
    verdict = b.llm("judge", inputs=[facts], instruction="Say which facts decide it.")
    b.llm("answer", inputs=[verdict], instruction="Give the answer.")
    return b.build(output="answer")


def test_a_node_whose_successor_does_not_read_the_item_restates_it():
    """In a chain the answer reads only the judge's notes, which restate the item, so it answers from the item's
    target once the needed step reaches it (without the graph it cannot tell which item it works on)."""
    graph, params = _chain()
    question = "How many legs has a spider?"
    llm = SimulatedLLM({question: "8"}, seed=1, graph=graph)
    trace = run_sync(forward(graph, params, {"question": question}), llm)
    assert trace.value("judge").endswith(f"The item: {question}")
    assert str(trace.output_value) == "9"
    blind = SimulatedLLM({question: "8"}, seed=1, final_nodes=("answer",))
    assert str(run_sync(forward(graph, params, {"question": question}), blind).output_value) == "unknown"
    updates = {"extract.instruction": f"List the facts. {llm.needed(question)}", "answer.instruction": VERIFY}
    assert (
        str(run_sync(forward(graph, optim.apply_updates(params, updates), {"question": question}), llm).output_value)
        == "8"
    )


class _Both:
    """Calls the simulated LLM with and without the graph and checks that every reply is the same."""

    is_async = False

    def __init__(self, plain, graphed):
        self.plain, self.graphed, self.calls, self.differ = plain, graphed, 0, []

    def __call__(self, request):
        reply = self.plain(request)
        if self.graphed(request) != reply:  # noted, not raised: the run would record a raised error as a failure
            self.differ.append((request.purpose, request.node, request.targets))
        self.calls += 1
        return reply


def _paper_items():
    samples = gsm8k_sample()
    return paper_graph(), [Example({"question": q}, a, id=i) for i, (q, a) in enumerate(samples)][:6]


def _liar_items():
    fields = ("statement", "party", "job_title", "source", "state")
    items = [Example({f: f"{f} of record {i}" for f in fields}, "Yes" if i % 2 else "No", id=i) for i in range(6)]
    return liar_graph(), items


@pytest.mark.parametrize("optimizer", ["neighbor-sgd", "no-neighbors", "no-gate", "textgrad", "optoprime", "copro"])
@pytest.mark.parametrize("task", [_paper_items, _liar_items], ids=["paper", "liar"])
def test_on_the_paper_graphs_a_graph_changes_no_reply(task, optimizer):
    """On the paper's graphs (hints read the item, the answer reads it and the hints) the simulated LLM given the
    graph replies to every request of a run exactly as without it, so the README's simulated tables stand."""
    (graph, params), items = task()
    answers = {str(next(iter(e.inputs.values()))): e.target for e in items}
    both = _Both(SimulatedLLM(answers, seed=5), SimulatedLLM(answers, seed=5, graph=graph))
    methods = {
        "neighbor-sgd": optim.neighbor_sgd(),
        "no-neighbors": optim.ablation("no-neighbors"),
        "no-gate": optim.ablation("no-gate"),
        "textgrad": optim.textgrad(),
        "optoprime": optim.optoprime(),
        "copro": optim.copro(breadth=3, depth=1),
    }
    fit_sync(graph, params, methods[optimizer], llm=both, train=items, iterations=2)
    assert both.calls > 0 and both.differ == []


def test_the_paper_graphs_are_given_no_new_role():
    """On the paper's graphs (and a layered graph with skips) no node restates and the answer holds no step."""
    for graph, _ in (paper_graph(), liar_graph(), layered_graph(2, 1, skip=True)):
        llm = SimulatedLLM({}, graph=graph)
        assert llm._restating == () and llm._holding == () and llm.final_nodes == (graph.output,)
