"""Backward and training through systems written as Python: tools, loops, branches (issue #35, points 2-5)."""

from __future__ import annotations

from typing import Any

import anyio
from hypothesis import given, settings
from hypothesis import strategies as st

import semgrad
from semgrad.backends import fake
from semgrad.backends.simulated import SimulatedLLM
from semgrad.core import Graph, LLMRequest, Params, as_examples, backward, optim
from semgrad.core.optim import Step, aggregate, backpropagate, select_error_samples
from semgrad.core.optim._combining import chain
from semgrad.core.scoring import normalized_match
from semgrad.effects import Runner, as_trainable, fit
from semgrad.testing import graphs, inputs_for


def lookup_invoice(query: str) -> str:
    """Find the customer's invoice from a short query."""
    return f"Invoice for {query}: 42 EUR"


def _recorded(system: Any, items: list[dict[str, Any]], llm: Any) -> tuple[Runner, Step, Params]:
    """Forward `items` through `system` (a runner that knows it), as a Step of every item, and the run's params."""
    ref, systems = as_trainable(system)
    runner = Runner(llm, systems=systems)
    examples = as_examples(items)
    results = runner.run_sync(optim.evaluate(ref, Params({}), examples, normalized_match()))
    step = Step(ref, train=examples, traces=tuple(t for t, _ in results), scores=tuple(s for _, s in results))
    from semgrad.core.programs import merged_params

    return runner, step, merged_params(Params({}), step.traces)


def _gradients(system: Any, items: list[dict[str, Any]], llm: Any) -> tuple[Step, list[LLMRequest]]:
    """Select every item, backpropagate and aggregate; the step and the backward requests made."""
    asked: list[LLMRequest] = []

    def counting(request: LLMRequest) -> Any:
        if request.purpose == "backward":
            asked.append(request)
        return llm(request)

    runner, step, params = _recorded(system, items, counting)
    stages = chain(select_error_samples(k=len(items)), backpropagate(), aggregate())
    new, _ = runner.run_sync(stages.update(step, stages.init(params), params))
    return new, asked


def _question(i: int, text: str = "") -> dict[str, Any]:
    return {"inputs": {"question": text or f"question {i}?"}, "target": "never said", "id": i}


@semgrad.system
async def support(ctx, question):
    topic = await ctx.llm("classify", instruction="Name the topic of the question.", inputs={"question": question})
    facts = await ctx.tool("lookup", lookup_invoice, query=topic)
    return await ctx.llm("answer", instruction="Answer the customer.", inputs={"question": question, "facts": facts})


def test_a_tool_node_sends_the_node_that_wrote_its_argument_a_gradient() -> None:
    """The tool's backward request shows its docstring, argument, result and feedback; the LLM node that wrote
    the argument receives a partial from the tool and is trained."""
    step, asked = _gradients(support, [_question(0)], fake.HashLLM())
    (tool,) = [r for r in asked if r.node == "lookup"]
    assert tool.targets == ("classify",)
    prompt = tool.prompt
    assert "Find the customer's invoice from a short query." in prompt
    assert "[1] query (written by classify)" in prompt and "Invoice for" in prompt
    partials = step.gradients.for_node("classify")
    assert [p.source for p in partials] == ["lookup"]
    assert step.param_gradients["classify.instruction"].examples[0].feedback == partials[0].text


def broken_lookup(query: str) -> str:
    """Find the customer's invoice (the service is down)."""
    raise ValueError("the invoice service rejected the query")


@semgrad.system
async def breaking(ctx, question):
    topic = await ctx.llm("classify", instruction="Name the topic.", inputs={"question": question})
    facts = await ctx.tool("lookup", broken_lookup, query=topic)
    return await ctx.llm("answer", instruction="Answer the customer.", inputs={"question": question, "facts": facts})


def test_a_raising_tools_message_becomes_part_of_the_feedback_upstream() -> None:
    """A tool that raised is backpropagated through: its error is shown, and the node that wrote its argument
    still receives a gradient (the tool's failure is data, never the end of backward)."""
    step, asked = _gradients(breaking, [_question(0)], fake.HashLLM())
    (trace,) = step.traces
    assert trace.output == "lookup" and trace["lookup"].error is not None
    (tool,) = [r for r in asked if r.node == "lookup"]
    assert "the invoice service rejected the query" in tool.prompt and "It failed with this error" in tool.prompt
    assert [p.source for p in step.gradients.for_node("classify")] == ["lookup"]
    assert not step.gradients.failures


@semgrad.system
async def described(ctx, question):
    facts = await ctx.tool("lookup", lookup_invoice, query=question, trainable_description=True)
    return await ctx.llm("answer", instruction="Answer the customer.", inputs={"question": question, "facts": facts})


def test_a_trainable_tool_description_is_rewritten_from_the_feedback_it_receives() -> None:
    """With trainable_description, the description is a parameter that the tool's backward step sends a partial
    to, and the optimizer rewrites it from that feedback."""
    step, asked = _gradients(described, [_question(0)], fake.HashLLM())
    (tool,) = [r for r in asked if r.node == "lookup"]
    assert tool.targets == ("lookup.description",) and "and its description" in tool.prompt
    gradient = step.param_gradients["lookup.description"]
    assert gradient.feedback and not gradient.examples


def _looping(steps: int) -> Any:
    @semgrad.system
    async def react(ctx, question):
        notes = question
        for _ in range(steps):
            notes = await ctx.llm(
                "act", instruction="Think one step further.", inputs={"question": question, "notes": notes}
            )
        return await ctx.llm("answer", instruction="Answer.", inputs={"question": question, "notes": notes})

    return react


@settings(max_examples=8)
@given(steps=st.integers(1, 4), n=st.integers(1, 3))
def test_a_loops_occurrences_pass_gradients_along_the_chain_and_train_one_instruction(steps: int, n: int) -> None:
    """Each occurrence act#k sends act#(k-1) a gradient, and act.instruction gathers one example per occurrence
    and sample, in order."""
    step, asked = _gradients(_looping(steps), [_question(i) for i in range(n)], fake.HashLLM())
    names = [f"act#{k}" for k in range(1, steps + 1)] if steps > 1 else ["act"]
    for sample in range(n):
        chain_asked = [r for r in asked if r.sample == sample and r.node != "answer"]
        assert sorted((r.node, r.targets) for r in chain_asked) == sorted(
            (names[k], (names[k - 1],)) for k in range(1, steps)
        )
    examples = step.param_gradients["act.instruction"].examples
    assert [e.sample for e in examples] == [i for i in range(n) for _ in range(steps)]


def _as_system(graph: Graph, params: Params) -> Any:
    """`graph` written as a Python system: each node in topological order, a ctx call."""

    async def walk(ctx, **inputs):
        values = dict(inputs)
        for name in graph.topological_order:
            node = graph[name]
            if node.kind == "param":
                p = params[name]
                values[name] = ctx.param(name, p.value, role=node.role, trainable=p.trainable)
            elif node.kind == "llm":
                p = params[node.instruction]
                values[name] = await ctx.llm(name, instruction=p.value, trainable=p.trainable, role=node.role,
                                             inputs={i: values[i] for i in node.inputs})  # fmt: skip
        return values[graph.output]

    walk.__name__ = "walk"
    return semgrad.system(walk)


@settings(max_examples=10)
@given(built=graphs(max_computed=5, functions=False, unusual_names=False, frozen=False), data=st.data())
def test_a_static_graph_written_as_a_system_gives_the_same_requests_gradients_and_params(built, data) -> None:
    """On random graphs, @semgrad.system code that makes the graph's calls trains exactly as the GraphBuilder
    graph: the same requests (forward, backward, rewrite), the same gradients and the same params."""
    graph, params = built
    rows = data.draw(st.lists(inputs_for(graph, st.sampled_from(["a", "b"])), min_size=1, max_size=3))
    train = [{"inputs": dict(r), "target": "never said", "id": i} for i, r in enumerate(rows)]

    def trained(system: Any) -> tuple[Any, list[str]]:
        asked: list[str] = []
        result = anyio.run(
            lambda: fit(system, params if isinstance(system, Graph) else Params({}), optim.neighbor_sgd(k=2),
                        train=train, llm=fake.HashLLM(), iterations=2,
                        on_reply=lambda r, _: asked.append(f"{r.purpose}|{r.node}|{r.sample}|{r.prompt}"))
        )  # fmt: skip
        return result, sorted(asked)

    as_graph, asked_graph = trained(graph)
    as_system, asked_system = trained(_as_system(graph, params))
    assert asked_system == asked_graph
    assert dict(as_system.params.texts()) == dict(as_graph.params.texts())
    assert [h.gradients for h in as_system.history] == [h.gradients for h in as_graph.history]


def _search(query: str) -> str:
    """Look the question up in the help centre."""
    return f"Articles about: {query}"


@semgrad.system
async def react_agent(ctx, question):
    notes = ""
    thought = ""
    for step in range(2):
        thought = await ctx.llm("act", instruction="Think about the next step.",
                                inputs={"question": question, "notes": notes})  # fmt: skip
        if step == 0:
            notes = await ctx.tool("search", _search, query=thought, deterministic=True)
    return await ctx.llm("answer", instruction="Answer the question.",
                         inputs={"question": question, "notes": notes, "thought": thought})  # fmt: skip


def test_a_react_agent_with_a_tool_trains_offline_in_the_simulated_world() -> None:
    """A ReAct-style agent (a bounded loop and a tool) trains against the simulated LLM: its score rises, and
    tool calls are counted apart from LLM calls."""
    answers = {f"What is {i} plus {i}?": str(2 * i) for i in range(12)}
    items = [_question(i, q) | {"target": a} for i, (q, a) in enumerate(answers.items())]
    result = anyio.run(
        lambda: fit(react_agent, Params({}), optim.neighbor_sgd(k=2), train=items[:6], validation=items[6:],
                    llm=SimulatedLLM(answers), iterations=4)
    )  # fmt: skip
    assert result.best_score > result.initial_score
    assert result.params.value("act.instruction") != result.initial_params.value("act.instruction")
    assert result.statistics.tool_calls > 0 and "tool" not in result.statistics.calls_by_purpose


@semgrad.system
async def triage(ctx, question):
    topic = await ctx.llm("classify", instruction="Name the topic.", inputs={"question": question})
    facts = ""
    if question.endswith("0?"):  # one question in five, of the items below
        facts = await ctx.llm("lookup", instruction="Recall the billing facts.", inputs={"topic": topic})
    return await ctx.llm("answer", instruction="Answer the customer.",
                         inputs={"question": question, "topic": topic, "facts": facts})  # fmt: skip


def test_a_branch_one_sample_in_five_takes_is_trained_in_a_python_system() -> None:
    """The branch one item in five takes is backpropagated on that item only and its instruction rewritten."""
    items = [_question(i, f"question {i * 2 if i != 0 else 10}?") for i in range(5)]
    step, asked = _gradients(triage, items, fake.HashLLM())
    assert [r.sample for r in asked if r.node == "lookup"] == [0]
    assert [e.sample for e in step.param_gradients["lookup.instruction"].examples] == [0]
    assert [e.sample for e in step.param_gradients["classify.instruction"].examples] == [0, 1, 2, 3, 4]


def test_backward_on_a_recorded_trace_needs_its_own_graph_and_params() -> None:
    """A recorded trace backpropagates on the graph and params it carries, as a static graph's trace does."""
    _, step, _ = _recorded(support, [_question(0)], fake.HashLLM())
    (trace,) = step.traces
    recording = trace.recording
    grads = Runner(fake.HashLLM()).run_sync(backward(recording.graph, recording.params, trace, "Wrong."))
    assert {p.target for p in grads.partials} == {"classify", "lookup"}


def test_the_html_report_of_a_systems_fit_is_written_without_one_graph(tmp_path) -> None:
    """write_html of a system's fit, given the system as its graph, writes the page and draws no single graph."""
    from semgrad.report import write_html

    result = anyio.run(
        lambda: fit(support, Params({}), optim.neighbor_sgd(), train=[_question(0)], llm=fake.HashLLM(), iterations=1)
    )
    page = write_html(result, tmp_path / "report.html", graph=support).read_text()
    assert "classify.instruction" in page and "no graph recorded" in page


def _fit_react(llm: Any, **kw: Any) -> Any:
    answers = {f"What is {i} plus {i}?": str(2 * i) for i in range(8)}
    items = [_question(i, q) | {"target": a} for i, (q, a) in enumerate(answers.items())]
    return anyio.run(
        lambda: fit(react_agent, Params({}), optim.neighbor_sgd(k=2), train=items[:4], validation=items[4:],
                    llm=llm(answers), **kw)
    )  # fmt: skip


def test_a_python_systems_run_resumes_from_its_checkpoint_to_the_uninterrupted_result(tmp_path) -> None:
    """A @semgrad.system run checkpointed after one iteration and resumed ends where an uninterrupted run does."""
    whole = _fit_react(SimulatedLLM, iterations=3)
    path = tmp_path / "checkpoint.json"
    _fit_react(SimulatedLLM, iterations=1, checkpoint=path)
    resumed = _fit_react(SimulatedLLM, iterations=3, resume=path)
    assert resumed.params == whole.params and resumed.best_score == whole.best_score
    assert [h.gradients for h in resumed.history] == [h.gradients for h in whole.history]


def test_a_cached_python_systems_second_run_makes_no_llm_call(tmp_path) -> None:
    """With a cache, running a @semgrad.system training again answers every LLM call from the cache."""
    from semgrad.effects import cached

    made: list[str] = []

    def counting(answers: dict[str, str]) -> Any:
        inner = SimulatedLLM(answers)

        def llm(request: LLMRequest) -> Any:
            made.append(request.purpose)
            return inner(request)

        return cached(llm, tmp_path / "cache.sqlite")

    first = _fit_react(counting, iterations=2)
    calls = len(made)
    again = _fit_react(counting, iterations=2)
    assert calls > 0 and len(made) == calls
    assert again.params == first.params
