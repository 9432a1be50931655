"""The forward state machine."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from returns.result import Failure, Success

from semgrad.backends.fake import HashLLM, RecordingLLM, ScriptedLLM
from semgrad.core import GraphBuilder, InputError, LLMError, LLMResponse, forward, gather, request_key
from semgrad.core.programs import ForwardMachine
from semgrad.effects import run_sync
from semgrad.testing import graphs, inputs_for, join_text, pure_llms


@given(graphs(), st.data(), pure_llms(), st.integers(1, 3))
def test_one_call_per_llm_node_per_sample(gp, data, llm, n_samples):
    """Forward makes exactly one forward call per LLM node per sample, and none for other nodes."""
    graph, params = gp
    samples = [data.draw(inputs_for(graph)) for _ in range(n_samples)]
    rec = RecordingLLM(llm)
    run_sync(gather(*(forward(graph, params, x, sample=i) for i, x in enumerate(samples))), rec)
    calls = sorted((r.sample, r.node) for r in rec.requests)
    expected = sorted((i, n) for i in range(n_samples) for n in graph.of_kind("llm"))
    assert calls == expected
    assert all(r.purpose == "forward" for r in rec.requests)


@given(graphs(), st.data(), pure_llms())
def test_requests_are_emitted_only_after_all_inputs_and_order_does_not_matter(gp, data, llm):
    """Whatever order replies arrive in, a node's request is emitted only once all its inputs exist,
    and the final trace is the same."""
    graph, params = gp
    inputs = data.draw(inputs_for(graph))
    reference = run_sync(forward(graph, params, inputs), llm)
    state = forward(graph, params, inputs)
    pending = list(state.emitted)
    while not state.done:
        for _, request in state.emitted:
            pos = graph.position(request.node)
            assert isinstance(state, ForwardMachine)
            for parent in graph.predecessors(request.node):
                assert state.runs[graph.position(parent)] is not None, f"{request.node} before {parent}"
            assert state.runs[pos] is None
        index = data.draw(st.integers(0, len(pending) - 1))
        token, request = pending.pop(index)
        state = state.feed(token, Success(LLMResponse(llm(request))))
        pending.extend(state.emitted)
    assert state.value == reference


@given(graphs(), st.data(), pure_llms())
def test_same_inputs_give_same_trace_and_request_order(gp, data, llm):
    """Running twice with a pure fake gives equal traces and the same request sequence."""
    graph, params = gp
    inputs = data.draw(inputs_for(graph))
    r1, r2 = RecordingLLM(llm), RecordingLLM(llm)
    t1 = run_sync(forward(graph, params, inputs, sample="s"), r1)
    t2 = run_sync(forward(graph, params, inputs, sample="s"), r2)
    assert t1 == t2
    assert r1.requests == r2.requests
    for run in t1.runs.values():
        if run.kind == "llm":
            assert run.request_key in {request_key(r) for r in r1.requests}


def _paper_like():
    b = GraphBuilder()
    q = b.input("question")
    h = b.llm("hint", inputs=[q], instruction="Hint.")
    j = b.function("join", join_text, inputs=[q, h])
    b.llm("answer", inputs=[j], instruction="Answer.")
    b.llm("side", inputs=[q], instruction="Unused branch.")
    return b.build(output="answer")


@pytest.mark.parametrize("inputs", [{}, {"question": "x", "extra": "y"}, {"q": "x"}])
def test_missing_or_extra_inputs_fail_before_any_call(inputs):
    """Wrong input fields raise InputError naming them, before any request exists."""
    graph, params = _paper_like()
    with pytest.raises(InputError, match="the graph's inputs are: 'question'"):
        forward(graph, params, inputs)


@pytest.mark.parametrize("inputs", ["What is 3 + 4?", "x", ["question"]])
def test_inputs_that_are_no_mapping_fail_saying_so(inputs):
    """forward(graph, params, "the question") raises InputError asking for a mapping of input fields to values."""
    b = GraphBuilder()
    b.llm("answer", inputs=[b.input("x")], instruction="Answer.")
    graph, params = b.build(output="answer")
    with pytest.raises(InputError, match=r"^inputs must be a mapping .* such as \{'x': \.\.\.\}, got (str|list)$"):
        forward(graph, params, inputs)


def test_function_nodes_run_inline_and_feed_their_successors():
    """A function node computes its value from its inputs with no LLM call."""
    graph, params = _paper_like()
    rec = RecordingLLM(ScriptedLLM([({"node": "hint"}, "H")], default="A"))
    trace = run_sync(forward(graph, params, {"question": "Q"}), rec)
    assert trace.value("join") == "Q | H"
    assert trace["answer"].inputs == (("join", "Q | H"),)
    assert sorted(r.node for r in rec.requests) == ["answer", "hint", "side"]


def test_a_failed_call_fails_its_dependents_without_calls():
    """When a node's call fails, the nodes that depend on it fail too, and are never asked."""
    graph, params = _paper_like()
    rec = RecordingLLM(ScriptedLLM([({"node": "hint"}, LLMError("server", "boom", True))], default="ok"))
    trace = run_sync(forward(graph, params, {"question": "Q"}), rec)
    assert trace["hint"].error == LLMError("server", "boom", True)
    assert trace["join"].error == "input 'hint' failed"
    assert trace["answer"].error == "input 'join' failed"
    assert trace.output_value is None and not trace.ok
    assert trace.value("side") == "ok"
    assert sorted(r.node for r in rec.requests) == ["hint", "side"]


def test_a_raising_function_is_recorded_as_a_failure():
    """A function node that raises is recorded as failed with the exception's text."""
    b = GraphBuilder()
    q = b.input("q")
    b.function("bad", lambda x: 1 / 0, inputs=[q])
    graph, params = b.build(output="bad")
    trace = run_sync(forward(graph, params, {"q": "x"}), HashLLM())
    assert trace["bad"].error == "function raised ZeroDivisionError: division by zero"


def test_forward_prompt_shows_instruction_and_labelled_inputs():
    """The rendered forward prompt is stable (golden): instruction in the system message, inputs numbered."""
    graph, params = _paper_like()
    state = forward(graph, params, {"question": "What is 3 + 4?"}, sample=0)
    request = next(r for _, r in state.emitted if r.node == "hint")
    assert request.system == (
        "Follow your instruction on your inputs: reason step by step, then give your result between "
        "<result> and </result>; only it is passed on.\n\n"
        "Instruction:\nHint."
    )
    assert request.prompt == "[1] question (the input 'question'):\nWhat is 3 + 4?"
    assert (request.purpose, request.engine, request.sample, request.targets) == ("forward", "forward", 0, ())


def test_feeding_an_unexpected_token_is_refused():
    """The machine refuses a reply for a node it did not ask about."""
    from semgrad.core import ProtocolError

    graph, params = _paper_like()
    state = forward(graph, params, {"question": "Q"})
    with pytest.raises(ProtocolError):
        state.feed(("answer",), Failure(LLMError("x", "y")))


def _counting(log):
    """A str type whose formatting (how prompts show a value) is logged in `log`."""

    class Counted(str):
        def __format__(self, spec):
            log.append(str(self))
            return str.__format__(self, spec)

    return Counted


def _drive(state, pending, llm):
    """Answer every pending request with `llm`, first in first out, until the program is done."""
    pending = list(pending)
    while not state.done:
        token, request = pending.pop(0)
        state = state.feed(token, Success(LLMResponse(llm(request))))
        pending.extend(state.emitted)
    return state.value


@given(graphs(functions=False), st.data(), pure_llms())
def test_a_forward_pass_renders_its_first_requests_when_first_read_and_only_once(gp, data, llm):
    """forward() renders no prompt; the first read of its state renders each first request's inputs
    once (requests with the very same inputs share it), later reads render nothing, and feeding it
    before any read gives the same trace."""
    graph, params = gp
    inputs = data.draw(inputs_for(graph))
    log: list[str] = []
    counted = _counting(log)
    state = forward(graph, params, {name: counted(value) for name, value in inputs.items()}, sample=1)
    assert log == []
    reference = run_sync(forward(graph, params, inputs, sample=1), llm)
    first = data.draw(st.sampled_from(["emitted", "runs", "in_flight", "feed"]))
    if first == "feed":  # a reply to a first request (as another pass emitted it), before any read
        emitted = forward(graph, params, inputs, sample=1).emitted
        token, request = emitted[0]
        fed = state.feed(token, Success(LLMResponse(llm(request))))
        assert _drive(fed, emitted[1:] + fed.emitted, llm) == reference
        return
    getattr(state, first)
    distinct = dict.fromkeys(tuple(graph.predecessors(r.node)) for _, r in state.emitted)
    shown = [p for predecessors in distinct for p in predecessors if p in graph.inputs]
    assert sorted(log) == sorted(str(inputs[name]) for name in shown)
    for name in ("emitted", "runs", "in_flight"):
        getattr(state, name)
    assert len(log) == len(shown)
    assert _drive(state, state.emitted, llm) == reference


def test_first_requests_with_the_same_inputs_share_one_rendering_of_them():
    """Nodes ready at the start that read the very same inputs get one user message (formatted once);
    their requests are those rendered one by one."""
    from semgrad.core import GraphBuilder
    from semgrad.core.prompts import render_forward

    b = GraphBuilder()
    q, c = b.input("question"), b.input("context")
    b.llm("a", inputs=[q], instruction="A.")
    b.llm("b", inputs=[q], instruction="B.")
    b.llm("c", inputs=[q, c], instruction="C.")
    b.llm("d", inputs=[c, q], instruction="D.")
    b.llm("out", inputs=["a", "b", "c", "d"], instruction="Join.")
    graph, params = b.build(output="out")
    log: list[str] = []
    counted = _counting(log)
    emitted = forward(graph, params, {"question": counted("Q"), "context": counted("C")}, sample=4).emitted
    requests = {request.node: request for _, request in emitted}
    assert requests["a"].messages[1] is requests["b"].messages[1]
    assert requests["c"].messages[1] is not requests["d"].messages[1]
    assert sorted(log) == ["C", "C", "Q", "Q", "Q"]  # a and b once, c, d
    for node in "abcd":
        shown = [(p, graph.nodes[p].role, {"question": "Q", "context": "C"}[p]) for p in graph.nodes[node].inputs]
        assert requests[node] == render_forward(node, params.value(graph.nodes[node].instruction), shown, sample=4)


def test_a_prompt_that_cannot_be_rendered_fails_when_the_pass_is_run():
    """An input that cannot be formatted makes the run raise its own exception, unwrapped."""

    class Unprintable(str):
        def __format__(self, spec):
            raise ValueError("no text for this value")

    graph, params = _paper_like()
    with pytest.raises(ValueError, match="no text for this value"):
        run_sync(forward(graph, params, {"question": Unprintable("Q")}), HashLLM())


def test_building_a_gather_or_a_bind_of_forward_passes_renders_nothing_until_read():
    """gather and bind do not start lazy forward passes when built; reading their emitted requests does."""
    from semgrad.core.programs import bind

    graph, params = _paper_like()
    log: list[str] = []
    counted = _counting(log)
    batch = gather(*(forward(graph, params, {"question": counted(f"Q{i}")}, sample=i) for i in range(3)))
    chained = bind(forward(graph, params, {"question": counted("Q9")}, sample=9), lambda trace: trace)
    assert log == []
    assert [(token[0], request.node) for token, request in batch.emitted] == [
        (i, node) for i in range(3) for node in ("hint", "side")
    ]
    assert sorted(set(log)) == ["Q0", "Q1", "Q2"]
    assert [request.sample for _, request in chained.emitted] == [9, 9]
    assert "Q9" in log


@given(graphs(), st.data(), pure_llms(), st.sampled_from([None, 0, "s"]))
def test_forward_requests_equal_the_public_renderer_and_come_in_topological_order(gp, data, llm, sample):
    """Every forward request is `render_forward` of its node's instruction and its inputs' names, roles and traced
    values; the requests made ready together are emitted in topological order, whatever order replies came in."""
    from semgrad.core.prompts import render_forward

    graph, params = gp
    state = forward(graph, params, data.draw(inputs_for(graph)), sample=sample)
    pending, requests = [], []
    while True:
        positions = [graph.position(request.node) for _, request in state.emitted]
        assert positions == sorted(positions)
        pending.extend(state.emitted)
        requests += [request for _, request in state.emitted]
        if state.done:
            break
        token, request = pending.pop(data.draw(st.integers(0, len(pending) - 1)))
        state = state.feed(token, Success(LLMResponse(llm(request))))
    trace = state.value
    assert len(requests) == len(graph.of_kind("llm"))
    for request in requests:
        node = graph[request.node]
        shown = [(name, graph[name].role, trace.value(name)) for name in node.inputs]
        assert request == render_forward(node.name, params.value(node.instruction), shown, sample=sample)


@given(graphs(), st.data(), pure_llms())
def test_a_node_with_failed_inputs_fails_naming_its_first_failed_input_and_is_never_asked(gp, data, llm):
    """With a random set of LLM nodes' calls failing, a node with a failed input is never asked and records that its
    first failed input, in input order, failed; every other LLM node is asked once."""
    from semgrad.core import LLMFailure

    graph, params = gp
    failing = set(data.draw(st.sets(st.sampled_from(graph.of_kind("llm"))) if graph.of_kind("llm") else st.just(set())))

    def flaky(request):
        if request.node in failing:
            raise LLMFailure(LLMError("server", "boom", False))
        return llm(request)

    rec = RecordingLLM(flaky)
    trace = run_sync(forward(graph, params, data.draw(inputs_for(graph))), rec)
    broken = set()
    for name in graph.topological_order:
        failed_inputs = [i for i in graph.predecessors(name) if i in broken]
        if failed_inputs:
            assert trace[name].error == f"input {failed_inputs[0]!r} failed"
        if failed_inputs or name in failing:
            broken.add(name)
    asked = [n for n in graph.of_kind("llm") if not any(i in broken for i in graph.predecessors(n))]
    assert sorted(r.node for r in rec.requests) == sorted(asked)
