"""Semantic backpropagation: traversal, rules, aggregation and failures."""

from __future__ import annotations

import math

import attrs
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from returns.result import Failure, Success

from semgrad.backends.fake import HashLLM, RecordingLLM, ScriptedLLM, reply_backward
from semgrad.core import Graph, GraphBuilder, LLMError, LLMResponse, backward, forward, gather, merge_gradients, rules
from semgrad.core._prompts import render_neighbor_aware
from semgrad.core.programs import plan_backward
from semgrad.effects import run_sync
from semgrad.testing import graphs, inputs_for, pure_llms
from semgrad.topologies import paper_graph

from ._helpers import expected_steps, trainable_sources

FEEDBACK = "The expected output is 7."


def _forward_and_backward(graph, params, inputs, llm, rule=None, sample=0):
    trace = run_sync(forward(graph, params, inputs, sample=sample), llm)
    rec = RecordingLLM(llm)
    grads = run_sync(backward(graph, params, trace, FEEDBACK, rule), rec)
    return trace, grads, rec


@given(graphs(), st.data(), pure_llms())
def test_one_neighbor_aware_request_per_contributing_node(gp, data, llm):
    """Exactly one backward request per LLM node on a path to the output with an input that needs a
    gradient, and none for any other node."""
    graph, params = gp
    _, grads, rec = _forward_and_backward(graph, params, data.draw(inputs_for(graph)), llm)
    asked = sorted(r.node for r in rec.requests)
    expected = sorted(n for n in expected_steps(graph, params) if graph[n].kind == "llm")
    assert asked == expected
    assert all(r.purpose == "backward" for r in rec.requests)
    assert grads.ok


@given(graphs(), st.data(), pure_llms())
def test_every_input_that_needs_a_gradient_gets_one_partial_per_successor(gp, data, llm):
    """Each input needing a gradient receives exactly one partial from each contributing successor;
    nodes that cannot reach the output and non-trainable inputs receive nothing."""
    graph, params = gp
    _, grads, _ = _forward_and_backward(graph, params, data.draw(inputs_for(graph)), llm)
    steps = expected_steps(graph, params)
    for name in graph.topological_order:
        sources = sorted(p.source for p in grads.for_node(name))
        if graph.reaches_output(name) and trainable_sources(graph, params, name):
            assert sources == sorted(s for s in graph.successors(name) if s in steps)
        else:
            assert sources == []


@given(graphs(), st.data(), pure_llms())
def test_neighbor_aware_partials_record_the_siblings_shown(gp, data, llm):
    """A neighbour-aware partial lists exactly the other inputs of its source as siblings."""
    graph, params = gp
    _, grads, _ = _forward_and_backward(graph, params, data.draw(inputs_for(graph)), llm)
    for partial in grads.partials:
        if graph[partial.source].kind == "llm":
            assert partial.siblings == graph.siblings(partial.source, of=partial.target)
        else:
            assert partial.siblings == ()


def _two_input_graph():
    b = GraphBuilder()
    q = b.input("q")
    a = b.llm("a", inputs=[q], instruction="Make A.")
    c = b.llm("b", inputs=[q], instruction="Make B.")
    b.llm("out", inputs=[a, c], instruction="Combine.")
    return b.build(output="out")


def test_per_edge_hides_siblings_and_neighbor_aware_shows_them():
    """per_edge shows a's request no value of b; neighbor_aware shows both in one request."""
    graph, params = _two_input_graph()
    llm = ScriptedLLM(
        [({"node": "a", "purpose": "forward"}, "VALUE-OF-A"), ({"node": "b", "purpose": "forward"}, "VALUE-OF-B")],
        default=HashLLM(),
    )
    trace = run_sync(forward(graph, params, {"q": "?"}), llm)
    edge = RecordingLLM(HashLLM())
    grads = run_sync(backward(graph, params, trace, FEEDBACK, rules.per_edge()), edge)
    by_target = {r.targets: r for r in edge.requests}
    assert set(by_target) == {("a",), ("b",)}
    text_a = "\n".join(m.content for m in by_target[("a",)].messages)
    assert "VALUE-OF-A" in text_a and "VALUE-OF-B" not in text_a
    assert all(p.siblings == () for p in grads.partials)
    aware = RecordingLLM(HashLLM())
    grads = run_sync(backward(graph, params, trace, FEEDBACK, rules.neighbor_aware()), aware)
    (request,) = aware.requests
    text = "\n".join(m.content for m in request.messages)
    assert request.targets == ("a", "b") and "VALUE-OF-A" in text and "VALUE-OF-B" in text
    assert [p.siblings for p in grads.for_node("a")] == [("b",)]


def _paper_samples(llm, n=4):
    graph, params = paper_graph()
    traces = run_sync(gather(*(forward(graph, params, {"question": f"Q{i}?"}, sample=i) for i in range(n))), llm)
    return graph, params, traces


@pytest.mark.parametrize(
    ("rule", "calls"),
    [(rules.neighbor_aware(), 4), (rules.per_edge(), 8), (rules.per_edge(include_instructions=True), 8 + 12)],
    ids=["neighbor_aware", "per_edge", "per_edge+instructions"],
)
def test_paper_graph_backward_call_counts(rule, calls):
    """On the paper's graph with 4 error samples: neighbour-aware 4 calls, per-edge 8, per-edge with
    instructions 8 + 3 per sample -- and nothing else."""
    llm = HashLLM()
    graph, params, traces = _paper_samples(llm)
    rec = RecordingLLM(llm)
    grads = run_sync(gather(*(backward(graph, params, t, FEEDBACK, rule) for t in traces)), rec)
    assert len(rec.requests) == calls
    assert {r.purpose for r in rec.requests} == {"backward"}
    merged = merge_gradients(grads)
    assert [p.sample for p in merged.for_node("hint_1")] == [0, 1, 2, 3]
    if rule.include_instructions:
        assert [p.source for p in merged.for_node("answer.instruction")] == ["answer"] * 4
        assert len(merged.for_node("hint_1.instruction")) == 4


def test_diamond_aggregates_both_successors_in_order():
    """A node feeding two successors holds both partials, ordered by successor and attributed;
    its own request sees them aggregated in that order."""
    b = GraphBuilder()
    q = b.input("q")
    shared = b.llm("shared", inputs=[q], instruction="Shared step.")
    left = b.llm("left", inputs=[shared], instruction="Left.")
    right = b.llm("right", inputs=[shared], instruction="Right.")
    b.llm("out", inputs=[right, left], instruction="Join.")
    graph, params = b.build(output="out")
    script = ScriptedLLM(
        [
            ({"purpose": "backward", "node": "out"}, lambda r: reply_backward(r, {"left": "L-fb", "right": "R-fb"})),
            ({"purpose": "backward", "node": "left"}, lambda r: reply_backward(r, {"shared": "from left"})),
            ({"purpose": "backward", "node": "right"}, lambda r: reply_backward(r, {"shared": "from right"})),
        ],
        default="value",
    )
    trace = run_sync(forward(graph, params, {"q": "?"}), script)
    rec = RecordingLLM(script)
    grads = run_sync(backward(graph, params, trace, FEEDBACK), rec)
    assert [(p.source, p.text) for p in grads.for_node("shared")] == [("left", "from left"), ("right", "from right")]
    assert [r.node for r in rec.requests] == ["out", "left", "right"]
    assert grads.feedback_for("left")[0].value == "L-fb"


def test_a_free_parameter_shared_by_two_nodes_receives_both_partials():
    """A shared system prompt (free parameter) collects partials from both nodes that read it."""
    b = GraphBuilder()
    q = b.input("q")
    system = b.param("system_prompt", "Be careful.", role="a system prompt shared by both solvers")
    s1 = b.llm("solver_1", inputs=[system, q], instruction="Solve.")
    s2 = b.llm("solver_2", inputs=[system, q], instruction="Solve differently.")
    b.llm("out", inputs=[s1, s2], instruction="Pick the better answer.")
    graph, params = b.build(output="out")
    _, grads, rec = _forward_and_backward(graph, params, {"q": "?"}, HashLLM())
    assert [p.source for p in grads.for_node("system_prompt")] == ["solver_1", "solver_2"]
    assert [p.siblings for p in grads.for_node("system_prompt")] == [("q",), ("q",)]
    assert sorted(r.node for r in rec.requests) == ["out", "solver_1", "solver_2"]
    assert next(r for r in rec.requests if r.node == "solver_1").targets == ("system_prompt",)


def test_a_malformed_reply_gets_one_repair_then_a_recorded_failure():
    """An unreadable backward reply is asked again once; if still unreadable, the partials are recorded
    as failed with the reason, and the rest of the pass completes."""
    graph, params = _two_input_graph()
    script = ScriptedLLM([({"purpose": "backward"}, "I am not sure what to say.")], default="v")
    trace = run_sync(forward(graph, params, {"q": "?"}), script)
    rec = RecordingLLM(script)
    grads = run_sync(backward(graph, params, trace, FEEDBACK), rec)
    assert len(rec.requests) == 2 and rec.requests[1].messages[-2].role == "assistant"
    assert grads.partials == ()
    (failure,) = grads.failures
    assert failure.source == "out" and failure.targets == ("a", "b")
    assert "after one repair" in failure.reason and "'a'" in failure.reason


def test_a_repair_that_answers_the_missing_target_completes_the_gradient():
    """When the first reply misses one target and the repair supplies it, both partials arrive."""
    graph, params = _two_input_graph()
    replies = iter(['<feedback input="a">fix a</feedback>', '<feedback input="b">fix b</feedback>'])
    script = ScriptedLLM([({"purpose": "backward"}, lambda r: next(replies))], default="v")
    trace = run_sync(forward(graph, params, {"q": "?"}), script)
    rec = RecordingLLM(script)
    grads = run_sync(backward(graph, params, trace, FEEDBACK), rec)
    assert [(p.target, p.text) for p in grads.partials] == [("a", "fix a"), ("b", "fix b")]
    assert rec.requests[1].targets == ("b",) and grads.ok


def test_a_failed_call_fails_downstream_targets_without_calls():
    """A failed backward call records failures, and the nodes starved of feedback fail without calls."""
    b = GraphBuilder()
    q = b.input("q")
    first = b.llm("first", inputs=[q], instruction="x")
    mid = b.llm("mid", inputs=[first], instruction="y")
    b.llm("out", inputs=[mid], instruction="z")
    graph, params = b.build(output="out")
    script = ScriptedLLM(
        [({"purpose": "backward", "node": "out"}, LLMError("server", "down", True))], default=HashLLM()
    )
    trace = run_sync(forward(graph, params, {"q": "?"}), script)
    rec = RecordingLLM(script)
    grads = run_sync(backward(graph, params, trace, FEEDBACK), rec)
    assert [r.node for r in rec.requests] == ["out"]
    assert [(f.source, f.targets) for f in grads.failures] == [("mid", ("first",)), ("out", ("mid",))]
    assert "server: down" in grads.failures[1].reason
    assert "no feedback reached node 'mid'" in grads.failures[0].reason


def test_function_nodes_pass_feedback_through_without_a_call():
    """A plain-function node hands its gradient to its inputs unchanged, with no LLM call."""
    b = GraphBuilder()
    q = b.input("q")
    a = b.llm("a", inputs=[q], instruction="x")
    j = b.function("join", lambda x: f"[{x}]", inputs=[a])
    b.llm("out", inputs=[j], instruction="y")
    graph, params = b.build(output="out")
    _, grads, rec = _forward_and_backward(graph, params, {"q": "?"}, HashLLM())
    assert [r.node for r in rec.requests] == ["out"]
    (partial,) = grads.for_node("a")
    assert partial.source == "join" and partial.text == grads.for_node("join")[0].text


def test_summarize_aggregation_asks_once_per_node_with_several_texts():
    """With summarize(), a node with two distinct incoming partials gets one summarize call and
    its backward request shows the summary."""
    b = GraphBuilder()
    q = b.input("q")
    base = b.llm("base", inputs=[q], instruction="b")
    shared = b.llm("shared", inputs=[base], instruction="x")
    left = b.llm("left", inputs=[shared], instruction="l")
    right = b.llm("right", inputs=[shared], instruction="r")
    b.llm("out", inputs=[left, right], instruction="o")
    graph, params = b.build(output="out")
    trace = run_sync(forward(graph, params, {"q": "?"}), HashLLM())
    rec = RecordingLLM(HashLLM())
    run_sync(backward(graph, params, trace, FEEDBACK, rules.neighbor_aware(aggregate=rules.summarize())), rec)
    assert [r.purpose for r in rec.requests].count("summarize") == 1
    summary = next(r for r in rec.requests if r.purpose == "summarize")
    assert summary.node == "shared"
    summary_text = HashLLM()(summary).split(">")[1].split("<")[0].strip()
    shared_request = next(r for r in rec.requests if r.purpose == "backward" and r.node == "shared")
    assert summary_text in shared_request.prompt


def test_plan_is_pure_and_matches_the_paper_graph():
    """The paper's graph steps only at the final node, which targets both hints."""
    graph, params = paper_graph()
    plan = plan_backward(graph, params)
    assert plan.steps == ("answer",)
    assert plan.targets["answer"] == ("hint_1", "hint_2")
    assert plan == plan_backward(graph, params)


@given(graphs(functions=False), st.data(), pure_llms())
def test_reply_order_does_not_change_gradients(gp, data, llm):
    """Delivering backward replies in a random order gives the same Gradients as run_sync."""
    graph, params = gp
    trace = run_sync(forward(graph, params, data.draw(inputs_for(graph))), llm)
    reference = run_sync(backward(graph, params, trace, FEEDBACK), llm)
    state = backward(graph, params, trace, FEEDBACK)
    pending = list(state.emitted)
    while not state.done:
        token, request = pending.pop(data.draw(st.integers(0, len(pending) - 1)))
        state = state.feed(token, Success(LLMResponse(llm(request))))
        pending.extend(state.emitted)
    assert state.value == reference


def _numeric_graph(data):
    """A random DAG of elementary functions over numeric parameters."""
    from semgrad.core.autodiff import ADD, EXP, MUL, SIN, SQUARE, SUB, TANH

    b = GraphBuilder()
    names = []
    for i in range(data.draw(st.integers(1, 3))):
        names.append(b.param(f"x{i}", data.draw(st.floats(-1.5, 1.5))))
    for i in range(data.draw(st.integers(1, 7))):
        op = data.draw(st.sampled_from([ADD, MUL, SUB, SIN, EXP, TANH, SQUARE]))
        arity = op.arity or data.draw(st.integers(1, min(3, len(names))))
        if arity > len(names):
            op, arity = SIN, 1
        inputs = data.draw(st.lists(st.sampled_from(names), min_size=arity, max_size=arity, unique=True))
        names.append(b.function(f"f{i}", op.fn, inputs=inputs, vjp=op.vjp))
    return b.build(output=names[-1])


@given(st.data())
def test_numeric_rule_is_reverse_mode_autodiff(data):
    """rules.numeric() gradients equal central finite differences, shared nodes summing their partials."""
    graph, params = _numeric_graph(data)
    nothing = lambda request: pytest.fail("numeric graphs make no LLM call")  # noqa: E731
    trace = run_sync(forward(graph, params, {}), nothing)
    grads = run_sync(backward(graph, params, trace, 1.0, rules.numeric()), nothing)
    if trace.output_value is None:  # a function overflowed (exp of exp of ...): no value, so no gradient
        assert all(grads.for_node(name) == () for name in graph.of_kind("param"))
        return
    for name in graph.of_kind("param"):
        if not graph.reaches_output(name):
            assert grads.for_node(name) == ()
            continue
        analytic = sum(p.value for p in grads.for_node(name))
        h = 1e-6
        x = params.value(name)
        up = run_sync(forward(graph, params.with_values({name: x + h}), {}), nothing).output_value
        down = run_sync(forward(graph, params.with_values({name: x - h}), {}), nothing).output_value
        assume(up is not None and down is not None)  # a step of h that overflows has no finite difference
        numeric = (up - down) / (2 * h)
        assert math.isclose(analytic, numeric, rel_tol=1e-4, abs_tol=1e-4), (name, analytic, numeric)
        assert len(grads.for_node(name)) == len([s for s in graph.successors(name) if graph.reaches_output(s)])


def test_numeric_rule_gives_no_gradient_through_an_overflowed_output():
    """exp(exp(exp(exp(1.5)))) overflows: the forward records the error and backward gives x no gradient."""
    from semgrad.core.autodiff import EXP

    b = GraphBuilder()
    node = b.param("x", 1.5)
    for i in range(4):
        node = b.function(f"f{i}", EXP.fn, inputs=[node], vjp=EXP.vjp)
    graph, params = b.build(output=node)
    trace = run_sync(forward(graph, params, {}), lambda request: "")
    assert trace.output_value is None and trace.errors[0][0] == "f3"
    assert run_sync(backward(graph, params, trace, 1.0, rules.numeric()), lambda request: "").for_node("x") == ()


@given(st.integers(1, 3), st.integers(-3, 2).filter(bool), st.floats(-2, 2))
def test_a_vjp_returning_the_wrong_number_of_cotangents_is_a_failure_naming_the_node(arity, extra, seed):
    """A vjp returning more or fewer cotangents than inputs is its node's BackwardFailure, with both counts."""
    from semgrad.core.autodiff import ADD, MUL

    count = max(0, arity + extra)
    b = GraphBuilder()
    xs = [b.param(f"x{i}", float(i + 1)) for i in range(arity)]
    b.function("f", MUL.fn, inputs=xs, vjp=lambda xs, out, g: tuple(g for _ in range(count)))
    b.function("out", ADD.fn, inputs=["f"], vjp=ADD.vjp)
    graph, params = b.build(output="out")
    nothing = lambda request: pytest.fail("numeric graphs make no LLM call")  # noqa: E731
    trace = run_sync(forward(graph, params, {}), nothing)
    grads = run_sync(backward(graph, params, trace, seed, rules.numeric()), nothing)
    assert [(f.source, f.targets) for f in grads.failures] == [("f", tuple(xs))]
    assert f"the vjp of node 'f' returned {count} cotangent(s) for its {arity} input(s)" in grads.failures[0].reason
    assert all(grads.for_node(x) == () for x in xs)


def test_a_vjp_returning_no_sequence_is_a_failure_naming_the_node():
    """A vjp returning a bare number instead of a tuple gives its node a BackwardFailure saying what it returned."""
    b = GraphBuilder()
    x = b.param("x", 2.0)
    b.function("f", lambda a: a * a, inputs=[x], vjp=lambda xs, out, g: 2 * g * xs[0])
    graph, params = b.build(output="f")
    trace = run_sync(forward(graph, params, {}), lambda request: "")
    grads = run_sync(backward(graph, params, trace, 1.0, rules.numeric()), lambda request: "")
    assert "the vjp of node 'f' returned a float for its 1 input(s)" in grads.failures[0].reason


def test_a_vjp_that_raises_is_a_failure_of_its_node_and_the_other_branches_go_on():
    """A vjp that raises gives its node a BackwardFailure naming the exception (as a function that raises in forward
    is its node's error), and the other inputs of the output still get their gradients."""
    from semgrad.core.autodiff import ADD

    def broken(xs, out, g):
        raise ZeroDivisionError("no slope here")

    b = GraphBuilder()
    x, y = b.param("x", 2.0), b.param("y", 3.0)
    b.function("f", lambda a: a * a, inputs=[x], vjp=broken)
    b.function("out", ADD.fn, inputs=["f", y], vjp=ADD.vjp)
    graph, params = b.build(output="out")
    trace = run_sync(forward(graph, params, {}), lambda request: "")
    grads = run_sync(backward(graph, params, trace, 1.0, rules.numeric()), lambda request: "")
    assert [(f.source, f.targets) for f in grads.failures] == [("f", ("x",))]
    assert "the vjp of node 'f' raised ZeroDivisionError: no slope here" in grads.failures[0].reason
    assert [float(p.text) for p in grads.for_node("y")] == [1.0] and grads.for_node("x") == ()


@given(st.text() | st.none() | st.lists(st.floats(), max_size=2))
def test_numeric_refuses_a_seed_that_is_not_a_number(seed):
    """rules.numeric() refuses a seed that is no number up front, as the LLM rules refuse one that is no text."""
    from semgrad.core.autodiff import SQUARE

    b = GraphBuilder()
    x = b.param("x", 2.0)
    b.function("f", SQUARE.fn, inputs=[x], vjp=SQUARE.vjp)
    graph, params = b.build(output="f")
    trace = run_sync(forward(graph, params, {}), lambda request: "")
    with pytest.raises(TypeError, match=f"feedback must be a number for Numeric, got {type(seed).__name__}"):
        backward(graph, params, trace, seed, rules.numeric())


def test_a_trace_from_another_graph_is_refused():
    """backward refuses a trace produced by a different graph."""
    from semgrad.core import ProtocolError

    graph, params = paper_graph()
    other, other_params = _two_input_graph()
    trace = run_sync(forward(other, other_params, {"q": "?"}), HashLLM())
    with pytest.raises(ProtocolError, match="different graph"):
        backward(graph, params, trace, FEEDBACK)


@given(graphs(), st.data())
def test_a_trace_made_with_other_params_is_refused_and_its_own_accepted(gp, data):
    """backward accepts the params a trace was made with (or equal ones) and refuses a trace made with other values:
    its prompts would show an instruction beside an output another instruction produced."""
    from semgrad.core import ProtocolError

    graph, params = gp
    trace = run_sync(forward(graph, params, data.draw(inputs_for(graph))), HashLLM())
    backward(graph, params, trace, FEEDBACK)
    backward(graph, params.with_values({}), trace, FEEDBACK)  # equal values: the same digest
    assume(len(params) > 0)
    name = data.draw(st.sampled_from(list(params)))
    changed = params.with_values({name: f"{params.value(name)} (rewritten)"})
    with pytest.raises(ProtocolError, match="other params"):
        backward(graph, changed, trace, FEEDBACK)
    by_hand = attrs.evolve(trace, params=None)  # a trace built by hand says nothing of its params: not checked
    backward(graph, changed, by_hand, FEEDBACK)


def test_backward_failure_reply_from_runner_is_data():
    """A Failure reply fed to the machine becomes a recorded failure, not an exception."""
    graph, params = _two_input_graph()
    trace = run_sync(forward(graph, params, {"q": "?"}), HashLLM())
    state = backward(graph, params, trace, FEEDBACK)
    ((token, _),) = state.emitted
    done = state.feed(token, Failure(LLMError("timeout", "slow", True)))
    assert done.done and done.value.failures[0].targets == ("a", "b")


@given(graphs(), st.data(), pure_llms(), st.text(max_size=30))
def test_neighbor_aware_requests_equal_the_public_renderer(gp, data, llm, feedback):
    """Each neighbour-aware request (rendered from the params' pre-split template) equals
    `render_neighbor_aware` of the node's task, inputs, output and aggregated gradient."""
    graph, params = gp
    trace = run_sync(forward(graph, params, data.draw(inputs_for(graph)), sample=3), llm)
    rec = RecordingLLM(llm)
    for _ in range(2):  # the second pass renders from the params' memo
        grads = run_sync(backward(graph, params, trace, feedback, rules.neighbor_aware()), rec)
    gradient = {f.node: f.value for f in grads.feedback}
    for request in rec.requests:
        node = graph[request.node]
        shown = [(name, graph[name].role, trace.value(name)) for name in node.inputs]
        expected = render_neighbor_aware(
            node.name,
            str(params.value(node.instruction)),
            shown,
            trace.value(node.name),
            gradient[node.name],
            request.targets,
            sample=3,
        )
        assert request == expected


def test_neighbor_aware_prompts_render_values_that_are_not_text_and_nodes_without_inputs():
    """An input whose value is not text (a function's number) and a node without inputs (stepping for its own
    instruction) get the request `render_neighbor_aware` builds."""
    b = GraphBuilder()
    q = b.input("q")
    seed = b.llm("seed", inputs=[], instruction="Say something.")
    ratio = b.function("ratio", lambda text: len(text) / 4, inputs=[q])
    b.llm("out", inputs=[seed, ratio], instruction="Combine them.")
    graph, params = b.build(output="out")
    trace = run_sync(forward(graph, params, {"q": "abcdef"}, sample=1), HashLLM())
    rec = RecordingLLM(HashLLM())
    rule = attrs.evolve(rules.neighbor_aware(), include_instructions=True)
    grads = run_sync(backward(graph, params, trace, "Shorter.", rule), rec)
    gradient = {f.node: f.value for f in grads.feedback}
    assert [r.node for r in rec.requests] == ["out", "seed"]
    for request in rec.requests:
        node = graph[request.node]
        shown = [(name, graph[name].role, trace.value(name)) for name in node.inputs]
        task = str(params.value(node.instruction))
        output = trace.value(node.name)
        expected = render_neighbor_aware(node.name, task, shown, output, gradient[node.name], request.targets, sample=1)
        assert request == expected


def _with_roles(graph, roles):
    """`graph` with its input nodes' roles replaced (the same node and parameter names, so the same params fit)."""
    nodes = {n: attrs.evolve(node, role=roles[n]) if n in roles else node for n, node in graph.nodes.items()}
    return Graph(nodes, graph.output)


@given(graphs(), st.data(), pure_llms())
def test_neighbor_aware_requests_show_each_graphs_own_roles_when_params_serve_two_graphs(gp, data, llm):
    """One params value backpropagated through two graphs that differ only in their inputs' roles (the params'
    memo filled by the first) gives each graph's requests the `render_neighbor_aware` text of its own roles."""
    graph_a, params = gp
    roles = {name: data.draw(st.text(min_size=1, max_size=10), label=name) for name in graph_a.inputs}
    graph_b = _with_roles(graph_a, roles)
    inputs = data.draw(inputs_for(graph_a))
    for graph in (graph_a, graph_b, graph_a):
        trace = run_sync(forward(graph, params, inputs, sample=2), llm)
        rec = RecordingLLM(llm)
        grads = run_sync(backward(graph, params, trace, FEEDBACK, rules.neighbor_aware()), rec)
        gradient = {f.node: f.value for f in grads.feedback}
        for request in rec.requests:
            node = graph[request.node]
            shown = [(name, graph[name].role, trace.value(name)) for name in node.inputs]
            task = str(params.value(node.instruction))
            output = trace.value(node.name)
            assert request == render_neighbor_aware(
                node.name, task, shown, output, gradient[node.name], request.targets, sample=2
            )


def test_neighbor_aware_backward_through_a_second_graph_with_other_input_names():
    """Params first used with a graph whose input is 'question' backpropagate through one whose input is
    'ticket' (same nodes otherwise) without a KeyError, showing 'ticket' and its role."""

    def build(field, role):
        b = GraphBuilder()
        x = b.input(field, role=role)
        h = b.llm("hint", inputs=[x], instruction="Hint.")
        b.llm("answer", inputs=[x, h], instruction="Solve.")
        return b.build(output="answer")

    (graph_a, params), (graph_b, _) = build("question", "the question"), build("ticket", "the support ticket")
    for graph, field in ((graph_a, "question"), (graph_b, "ticket")):
        trace = run_sync(forward(graph, params, {field: "text"}), HashLLM())
        rec = RecordingLLM(HashLLM())
        assert run_sync(backward(graph, params, trace, FEEDBACK, rules.neighbor_aware()), rec).ok
    (request,) = rec.requests
    assert "[1] ticket (the support ticket):" in request.prompt and "question" not in request.prompt


@given(graphs(), st.data(), pure_llms())
def test_params_serving_two_graphs_that_differ_only_in_their_output_backpropagate_through_each_ones_own(gp, data, llm):
    """Two graphs with the same nodes but another output node have other fingerprints, and one params value (its
    memo filled by the first) backpropagates through each from that graph's own output."""
    graph_a, params = gp
    computed = [n for n in graph_a.topological_order if graph_a[n].computed and n != graph_a.output]
    assume(computed)
    graph_b = Graph(graph_a.nodes, data.draw(st.sampled_from(computed)))
    assert graph_a.fingerprint != graph_b.fingerprint
    inputs = data.draw(inputs_for(graph_a))
    for graph in (graph_a, graph_b):
        _, _, rec = _forward_and_backward(graph, params, inputs, llm)
        assert sorted(r.node for r in rec.requests) == sorted(
            n for n in expected_steps(graph, params) if graph[n].kind == "llm"
        )


@given(graphs(), st.booleans())
def test_a_plans_targets_are_the_inputs_needing_a_gradient_in_input_order_then_the_own_instruction(gp, instructions):
    """`plan_backward` gives each node as targets its inputs that need a gradient, in input order, then (with
    `include_instructions`) its own trainable instruction, and steps exactly at the contributing nodes."""
    graph, params = gp
    plan = plan_backward(graph, params, include_instructions=instructions)
    for name in graph.topological_order:
        node = graph[name]
        own = node.kind == "llm" and instructions and params[node.instruction].trainable
        needing = tuple(i for i in node.inputs if trainable_sources(graph, params, i))
        assert plan.targets[name] == needing + ((node.instruction,) if own else ())
    if not instructions:
        assert set(plan.steps) == expected_steps(graph, params)
