"""gepa and pareto-sgd on systems written as Python: each trace's own graph, branches, tools, loops (#35, point 2)."""

from __future__ import annotations

from typing import Any

import anyio
from hypothesis import given, settings
from hypothesis import strategies as st

import semgrad
from semgrad.backends import fake
from semgrad.backends.simulated import SimulatedLLM
from semgrad.core import LLMRequest, Params, as_examples, optim
from semgrad.core.optim import Step
from semgrad.core.optim._gepa import reflection_examples
from semgrad.core.optim._search import ProposalTask
from semgrad.core.programs import merged_params
from semgrad.core.scoring import normalized_match
from semgrad.effects import Runner, as_trainable, fit


def lookup_invoice(query: str) -> str:
    """Find the customer's invoice from a short query."""
    return f"Invoice for {query}: 42 EUR"


@semgrad.system
async def routed(ctx, question):
    topic = await ctx.llm("classify", instruction="Name the topic.", inputs={"question": question})
    facts = ""
    if "billing" in question:
        query = await ctx.llm("recall", instruction="Write a lookup query.", inputs={"topic": topic})
        facts = await ctx.tool("lookup", lookup_invoice, query=query)
    return await ctx.llm("answer", instruction="Answer the customer.",
                         inputs={"question": question, "topic": topic, "facts": facts})  # fmt: skip


@semgrad.system
async def looping(ctx, question):
    notes = question
    for _ in range(3):
        notes = await ctx.llm(
            "act", instruction="Think one step further.", inputs={"question": question, "notes": notes}
        )
    return await ctx.llm("answer", instruction="Answer.", inputs={"notes": notes})


def _item(i: int, billing: bool) -> dict[str, Any]:
    word = "billing" if billing else "shipping"
    return {"inputs": {"question": f"{word} question {i}?"}, "target": "never said", "id": i}


def _task(system: Any, items: list[dict[str, Any]], components: tuple[str, ...]) -> ProposalTask:
    """A proposal task over every item, from `system`'s recorded runs on a fake."""
    ref, systems = as_trainable(system)
    runner = Runner(fake.HashLLM(), systems=systems)
    examples = as_examples(items)
    results = runner.run_sync(optim.evaluate(ref, Params({}), examples, normalized_match()))
    step = Step(ref, train=examples, traces=tuple(t for t, _ in results), scores=tuple(s for _, s in results))
    params = merged_params(Params({}), step.traces)
    return ProposalTask(step, 0, params, components, tuple(range(len(items))), tuple(results))


@settings(max_examples=10, deadline=None)
@given(billing=st.lists(st.booleans(), min_size=1, max_size=5))
def test_gepas_reflective_dataset_reads_each_traces_own_graph(billing: list[bool]) -> None:
    """A component behind a branch gets one example per item whose run reached it (what that run's node read and
    wrote); a component every run reached gets one per item."""
    billing = [*billing, True]  # one run at least reaches the branch (else its parameter is never met)
    items = [_item(i, b) for i, b in enumerate(billing)]
    task = _task(routed, items, ("recall.instruction", "classify.instruction"))
    recall = reflection_examples(task, "recall.instruction")
    assert [e.sample for e in recall] == [i for i, b in enumerate(billing) if b]
    for example, (trace, _) in zip(recall, [r for r, b in zip(task.results, billing, strict=True) if b], strict=True):
        assert example.inputs == trace["recall"].inputs and example.output == trace["recall"].value
    assert [e.sample for e in reflection_examples(task, "classify.instruction")] == list(range(len(items)))


def test_gepas_reflective_dataset_has_one_example_per_occurrence_of_a_loop() -> None:
    """A loop's act#1..act#3 share one instruction: its reflective dataset shows each occurrence, in order."""
    task = _task(looping, [_item(0, False), _item(1, False)], ("act.instruction",))
    examples = reflection_examples(task, "act.instruction")
    assert [e.sample for e in examples] == [0, 0, 0, 1, 1, 1]
    (first, _), (second, _) = task.results
    assert [e.output for e in examples] == [t[f"act#{k}"].value for t in (first, second) for k in (1, 2, 3)]


def _fit(optimizer: Any, llm: Any) -> tuple[Any, list[LLMRequest]]:
    asked: list[LLMRequest] = []
    items = [_item(i, i % 3 == 0) for i in range(9)]
    result = anyio.run(
        lambda: fit(routed, Params({}), optimizer, train=items[:6], validation=items[6:], llm=llm, iterations=4,
                    on_reply=lambda r, _: asked.append(r))
    )  # fmt: skip
    return result, asked


def test_gepa_trains_a_python_system_with_a_branch_and_a_tool() -> None:
    """fit with optim.gepa on a @semgrad.system runs, reflects on the branch's component from the items that took
    it only, and counts the tool's calls apart from LLM calls."""
    result, asked = _fit(optim.gepa(components="all", minibatch=6, max_metric_calls=40), fake.HashLLM())
    rewrites = [r for r in asked if r.purpose == "rewrite" and r.node == "recall.instruction"]
    assert rewrites and all(r.prompt.count("Inputs:") == 2 for r in rewrites)  # items 0 and 3 of the six
    assert set(result.params.texts()) == {"classify.instruction", "recall.instruction", "answer.instruction"}
    assert result.statistics.tool_calls > 0 and "tool" not in result.statistics.calls_by_purpose


def test_pareto_sgd_backpropagates_a_python_system_on_each_traces_own_graph() -> None:
    """fit with optim.pareto_sgd on a @semgrad.system runs backward on each failing item's own recorded graph: the
    branch's node and the tool are backpropagated on the items that took the branch only."""
    result, asked = _fit(optim.pareto_sgd(seed=1, minibatch=6), fake.HashLLM())
    backward = [r for r in asked if r.purpose == "backward"]
    assert backward and {r.sample for r in backward if r.node in ("recall", "lookup")} <= {0, 3}
    assert any(r.node == "lookup" for r in backward)
    assert result.statistics.tool_calls > 0


def test_pareto_sgd_and_gepa_raise_a_react_agents_score_in_the_simulated_world() -> None:
    """Both searches improve a ReAct-style agent with a tool against the simulated LLM."""
    from tests.effects.test_python_system_training import _question, react_agent

    answers = {f"What is {i} plus {i}?": str(2 * i) for i in range(12)}
    items = [_question(i, q) | {"target": a} for i, (q, a) in enumerate(answers.items())]
    for optimizer in (optim.gepa(max_metric_calls=60, seed=1), optim.pareto_sgd(seed=1)):
        result = anyio.run(
            lambda o=optimizer: fit(react_agent, Params({}), o, train=items[:6], validation=items[6:],
                                    llm=SimulatedLLM(answers), iterations=3)
        )  # fmt: skip
        assert result.best_score > result.initial_score
