"""Graph construction, validation and pure queries."""

from __future__ import annotations

import re

import pytest
from hypothesis import Phase, assume, find, given, settings
from hypothesis import strategies as st

from semgrad.backends.fake import HashLLM, RecordingLLM
from semgrad.core import GraphBuilder, GraphError, backward, forward, rules
from semgrad.core._parse import format_backward
from semgrad.core.programs import plan_backward
from semgrad.core.prompts import parse_backward
from semgrad.effects import run_sync
from semgrad.testing import graphs


def test_generated_graphs_have_frozen_instructions_and_unusual_names_sometimes():
    """graphs() draws, among others, a frozen instruction and names with spaces, non-ASCII letters, capitals, "["."""
    found = settings(phases=[Phase.generate], database=None)  # an example is enough: no shrinking
    find(graphs(), lambda gp: any(p.is_instruction and not p.trainable for p in gp[1].values()), settings=found)
    for unusual in (lambda n: " " in n, lambda n: not n.isascii(), lambda n: n != n.lower(), lambda n: "[" in n):
        find(graphs(), lambda gp, unusual=unusual: any(unusual(n) for n in gp[0].nodes), settings=found)


def test_most_generated_graphs_give_backward_something_to_do():
    """In 40 derandomized draws (CI's count), half of graphs() have a backward step, 1 in 4 a node fed by two steps
    (28 and 22 of 40 with hypothesis 6.x today; the old strategy drew 17 with a step)."""
    counts = {"steps": 0, "two": 0, "draws": 0}

    @settings(max_examples=40, derandomize=True, database=None, deadline=None)
    @given(graphs())
    def draw(gp):
        graph, params = gp
        steps = set(plan_backward(graph, params).steps)
        counts["draws"] += 1
        counts["steps"] += bool(steps)
        counts["two"] += any(len(steps.intersection(graph.successors(n))) >= 2 for n in graph.nodes)

    draw()
    assert counts["steps"] >= counts["draws"] * 0.5 and counts["two"] >= counts["draws"] * 0.25, counts


@given(graphs(frozen=False, unusual_names=False))
def test_generated_graphs_can_keep_to_trainable_instructions_and_plain_names(gp):
    """graphs(frozen=False, unusual_names=False) draws only trainable instructions and names such as 'n_3'."""
    graph, params = gp
    assert all(p.trainable for p in params.values() if p.is_instruction)
    assert all(re.fullmatch(r"(in|p|n|f)_\d+", name) for name in graph.nodes)


@given(graphs())
def test_topological_order_puts_every_node_after_its_inputs(gp):
    """Every node comes after all of its inputs in the topological order."""
    graph, _ = gp
    order = graph.topological_order
    for name in order:
        for parent in graph.predecessors(name):
            assert order.index(parent) < order.index(name)


@given(graphs())
def test_successors_are_the_inverse_of_predecessors(gp):
    """u is a successor of w exactly when w is an input of u."""
    graph, _ = gp
    for name in graph.topological_order:
        for succ in graph.successors(name):
            assert name in graph.predecessors(succ)
        for parent in graph.predecessors(name):
            assert name in graph.successors(parent)


@given(graphs())
def test_ancestors_are_transitive_predecessors(gp):
    """ancestors(v) is the transitive closure of predecessors, in topological order."""
    graph, _ = gp
    for name in graph.topological_order:
        expected, stack = set(), list(graph.predecessors(name))
        while stack:
            node = stack.pop()
            if node not in expected:
                expected.add(node)
                stack.extend(graph.predecessors(node))
        ancestors = graph.ancestors(name)
        assert set(ancestors) == expected
        assert list(ancestors) == [n for n in graph.topological_order if n in expected]


@given(graphs())
def test_siblings_are_the_other_inputs(gp):
    """siblings(w, of=u) lists w's inputs other than u, in input order."""
    graph, _ = gp
    for name in graph.topological_order:
        for parent in graph.predecessors(name):
            assert graph.siblings(name, of=parent) == tuple(p for p in graph.predecessors(name) if p != parent)


@given(graphs(), st.data())
def test_a_back_edge_is_rejected_naming_a_node_on_the_cycle(gp, data):
    """Adding an edge from a node to one of its ancestors is rejected as a cycle naming a node on it."""
    graph, params = gp
    candidates = [n for n in graph.topological_order if graph[n].kind == "llm" and graph.ancestors(n)]
    computed = [a for n in candidates for a in graph.ancestors(n) if graph[a].kind == "llm"]
    if not computed:
        return
    ancestor = data.draw(st.sampled_from(computed))
    descendant = next(n for n in candidates if ancestor in graph.ancestors(n))
    b = GraphBuilder()
    for name, node in graph.nodes.items():
        if node.kind == "input":
            b.input(name)
        elif node.kind == "param":
            b.param(name, params.value(name))
        elif node.kind == "function":
            b.function(name, node.fn, inputs=node.inputs)
        else:
            inputs = node.inputs + ((descendant,) if name == ancestor else ())
            b.llm(name, inputs=inputs, instruction="x")
    with pytest.raises(GraphError, match="cycle through node") as info:
        b.build(output=graph.output)
    cycle_nodes = str(info.value).split(": ", 1)[1].split(" -> ")
    assert ancestor in cycle_nodes and descendant in cycle_nodes


@given(graphs(), st.sampled_from(["ghost", "missing_node"]))
def test_a_dangling_input_is_rejected_naming_the_reader(gp, ghost):
    """A node reading an unknown name is rejected with a message naming the node and the name."""
    graph, _ = gp
    b = GraphBuilder()
    b.input("x")
    b.llm("reader", inputs=["x", ghost], instruction="x")
    with pytest.raises(GraphError, match=f"node 'reader' reads unknown input '{ghost}'"):
        b.build(output="reader")


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda b: (b.input("a"), b.input("a")), "duplicate name 'a'"),
        (lambda b: b.llm("a", inputs=[], instruction="  "), "node 'a' needs a non-empty instruction"),
        (lambda b: b.llm("a", inputs=["a"], instruction="x"), "node 'a' lists itself as an input"),
        (lambda b: (b.input("q"), b.llm("a", inputs=["q", "q"], instruction="x")), "lists input 'q' more than once"),
        (lambda b: b.llm("a", inputs="q", instruction="x"), "not the string"),
    ],
)
def test_bad_nodes_are_rejected_when_added(build, message):
    """Duplicate names, empty instructions, self-inputs and repeated inputs fail at once, naming the node."""
    with pytest.raises(GraphError, match=message):
        build(GraphBuilder())


# Names from a broad alphabet (any code point but surrogates), and the characters a reply's label trips on.
any_names = st.text(st.characters(blacklist_categories=["Cs"]), min_size=1, max_size=8) | st.sampled_from(
    ["user's hint", 'the "hint"', "hint", "a>b", " hint", "hint ", "a\tb", "HINT", "\u00df", "ss", "[1]", "[Hint] B"]
)


def _add(b: GraphBuilder, kind: int, name: str) -> str:
    """Add `name` to `b` as an input, a parameter, an LLM node or a function node reading 'question'."""
    if kind == 0:
        return b.input(name)
    if kind == 1:
        return b.param(name, "a value")
    if kind == 2:
        return b.llm(name, inputs=["question"], instruction="Work it out.")
    return b.function(name, str, inputs=["question"])


@given(st.lists(st.tuples(st.integers(0, 3), any_names), min_size=1, max_size=6))
def test_every_name_the_builder_accepts_labels_backward_feedback(kinds_and_names):
    """Names the builder accepts round-trip through format_backward/parse_backward; refused ones raise GraphError."""
    b = GraphBuilder()
    accepted = [b.input("question")]
    for kind, name in kinds_and_names:
        try:
            accepted.append(_add(b, kind, name))
        except GraphError as error:
            assert repr(name) in str(error)
    numbering = dict(enumerate(accepted, 1))  # as the prompts number a reader's inputs
    feedback = {name: f"Feedback {i} for this input." for i, name in enumerate(accepted)}
    assert parse_backward(format_backward(feedback), accepted, numbering).unwrap() == feedback
    for name in accepted:  # one target per reply, as per_edge asks
        assert parse_backward(format_backward({name: feedback[name]}), [name], numbering).unwrap() == {
            name: feedback[name]
        }


@pytest.mark.parametrize(
    ("names", "message"),
    [
        (["user's hint"], 'node name "user\'s hint" contains "\'": names may not contain quotes'),
        (['the "hint"'], "contains '\"'"),
        (["a<b>"], "contains '<' '>'"),
        (["line\nbreak"], "contains '\\n'"),
        (["hint "], "node name 'hint ' starts or ends with whitespace"),
        (["\thint"], "contains '\\t'"),
        (["hint", "Hint"], "node name 'Hint' collides with 'hint' ignoring case"),
        (["\u00df", "SS"], "node name 'SS' collides with '\u00df' ignoring case"),
    ],
)
@pytest.mark.parametrize("kind", [0, 1, 2, 3])
def test_names_a_reply_cannot_label_are_refused_for_every_kind_of_node(names, message, kind):
    """Quotes, '<', '>', control characters, outer whitespace and case-only differences are refused for every kind."""
    b = GraphBuilder()
    b.input("question")
    for name in names[:-1]:
        _add(b, kind, name)
    with pytest.raises(GraphError, match=re.escape(message)):
        _add(b, kind, names[-1])


def test_an_instruction_name_may_not_collide_ignoring_case():
    """An LLM node's instruction and another name that are equal ignoring case are refused, whichever comes first."""
    b = GraphBuilder()
    b.llm("a", inputs=[], instruction="x")
    with pytest.raises(GraphError, match="node name 'A.Instruction' collides with 'a.instruction' ignoring case"):
        b.param("A.Instruction", "v")
    b = GraphBuilder()
    b.param("A.Instruction", "v")
    with pytest.raises(GraphError, match="node 'a': its instruction 'a.instruction' collides with 'A.Instruction'"):
        b.llm("a", inputs=[], instruction="x")
    assert list(b._nodes) == ["A.Instruction"]  # the refused node left the builder as it was


@pytest.mark.parametrize("rule", [rules.neighbor_aware, rules.per_edge])
def test_unusual_names_the_builder_accepts_get_their_feedback_at_the_first_reply(rule):
    """Names with spaces, unicode letters, digits and brackets get their feedback from the first reply (no repair)."""
    names = ["user hint", "\u00e9tape 1", "\u6b65\u9aa4", "2", "[1]", "[Hint] B", "x.y", "a=b", "Caf\u00e9"]
    b = GraphBuilder()
    q = b.input("question")
    for name in names:
        b.llm(name, inputs=[q], instruction="Work it out.")
    b.llm("answer", inputs=[q, *names], instruction="Solve.")
    graph, params = b.build(output="answer")
    llm = RecordingLLM(HashLLM())
    trace = run_sync(forward(graph, params, {"question": "3+4?"}), llm)
    llm.clear()
    grads = run_sync(backward(graph, params, trace, "The expected output is 7.", rule()), llm)
    assert grads.ok, grads.failures
    assert all(len(grads.for_node(n)) == 1 for n in names)
    assert all(r.purpose == "backward" and r.node == "answer" for r in llm.requests)  # the hints read no trainable node
    assert len(llm.requests) == (1 if rule is rules.neighbor_aware else len(names))  # no repair call


def test_unknown_or_unreachable_output_is_rejected():
    """An unknown output, or one no input or parameter reaches, is rejected by name."""
    b = GraphBuilder()
    b.input("q")
    b.llm("lonely", inputs=[], instruction="Say something.")
    with pytest.raises(GraphError, match="output 'nope' is not a node"):
        b.build(output="nope")
    with pytest.raises(GraphError, match="output 'lonely' is not reachable"):
        b.build(output="lonely")


def test_params_name_instructions_and_free_parameters():
    """Instructions are named '<node>.instruction'; free parameters keep their name and role."""
    b = GraphBuilder()
    q = b.input("q")
    s = b.param("system_prompt", "Be careful.", role="a shared system prompt")
    b.llm("a", inputs=[q, s], instruction="Answer.")
    graph, params = b.build(output="a")
    assert list(params) == ["system_prompt", "a.instruction"]
    assert params["system_prompt"].role == "a shared system prompt"
    assert params["a.instruction"].node == "a" and params["system_prompt"].node is None
    assert graph.reaches_output("system_prompt")


def test_graph_and_params_are_hashable_values():
    """Building the same graph twice gives equal, equally hashed values."""

    def make():
        b = GraphBuilder()
        q = b.input("q")
        b.llm("a", inputs=[q], instruction="Answer.")
        return b.build(output="a")

    (g1, p1), (g2, p2) = make(), make()
    assert g1 == g2 and hash(g1) == hash(g2) and g1.fingerprint == g2.fingerprint
    assert p1 == p2 and hash(p1) == hash(p2)


@settings(max_examples=25)
@given(graphs(), st.data())
def test_pickled_and_copied_params_equal_the_original_and_carry_no_memo(gp, data):
    """Params survive pickle and deepcopy equal (and give equal traces), without the engines' memo."""
    import copy
    import pickle

    from semgrad.core import forward
    from semgrad.effects import run_sync
    from semgrad.testing import inputs_for

    graph, params = gp
    inputs = data.draw(inputs_for(graph))
    llm = HashLLM()
    trace = run_sync(forward(graph, params, inputs), llm)  # fills the memo
    for clone in (pickle.loads(pickle.dumps(params)), copy.deepcopy(params)):
        assert clone == params and hash(clone) == hash(params) and not clone._memo
        assert run_sync(forward(graph, clone, inputs), llm) == trace


@given(graphs())
def test_a_params_repr_is_the_constructor_call_that_rebuilds_it(gp):
    """repr(params) reads `Params(items=...)`, the constructor's own keyword, and evaluates back to equal params."""
    from semgrad.core import FrozenMap, Parameter, Params

    _, params = gp
    shown = repr(params)
    assert shown.startswith("Params(items=FrozenMap(")
    assert eval(shown, {"Params": Params, "FrozenMap": FrozenMap, "Parameter": Parameter}) == params


_plain = st.from_regex(r"[a-z][a-z ]{0,4}[a-z]", fullmatch=True)


@given(_plain, _plain, st.sampled_from([",", "|"]), _plain)
def test_graphs_that_differ_have_different_fingerprints_whatever_their_names_hold(a, b, separator, role):
    """Two graphs that differ only in how a ',' or '|' inside names splits them get different fingerprints, so a
    params value serving both shows each graph's own inputs."""
    assume(a != b)

    def make(split):
        g = GraphBuilder()
        for name in (a, b, f"{a}{separator}{b}"):
            g.input(name)
        if separator == ",":
            inputs, shown_role = ([a, b] if split else [f"{a},{b}"]), role
        else:
            inputs, shown_role = ([a] if split else [f"{a}|{b}"]), (f"{b}|{role}" if split else role)
        g.llm("x", inputs=inputs, instruction="Do.", role=shown_role)
        return g.build(output="x")

    (split, params), (joined, _) = make(True), make(False)
    assert split != joined and split.fingerprint != joined.fingerprint
    values = {a: "A", b: "B", f"{a}{separator}{b}": "JOINED"}
    for graph in (split, joined, split):  # one params value, its memo filled by the other graph first
        trace = run_sync(forward(graph, params, values), HashLLM())
        assert [name for name, _ in trace["x"].inputs] == list(graph["x"].inputs)


@settings(max_examples=25)
@given(graphs(), st.data())
def test_params_memo_keeps_one_dict_per_kind_for_this_params_value_only(gp, data):
    """Params.memo(kind) gives the same dict on every call for a kind, another dict for another kind, and an empty
    one for params rebuilt from the same values (a memo is never shared or copied)."""
    graph, params = gp
    kind = data.draw(st.text(min_size=1, max_size=8).filter(lambda k: k != "digest"))
    other = data.draw(st.text(min_size=1, max_size=8).filter(lambda k: k not in (kind, "digest")))
    params.memo(kind)["key"] = 1
    assert params.memo(kind) is params.memo(kind) and params.memo(kind) == {"key": 1}
    assert params.memo(other) == {} and params.memo(other) is not params.memo(kind)
    assert params.with_values({}) == params and params.with_values({}).memo(kind) == {}
