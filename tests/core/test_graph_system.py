"""The core's shape for systems written as Python: tool nodes, occurrences sharing an instruction, llm_call."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from returns.result import Failure, Success

from semgrad.core import GraphBuilder, GraphError, LLMError, LLMResponse, forward
from semgrad.core._graph import description_name, occurrence_name
from semgrad.core.programs import llm_call


def test_a_graph_without_the_new_fields_keeps_its_fingerprint():
    """A graph of the old kinds hashes as before the tool kind and occurrences existed (checkpoints stay valid)."""
    b = GraphBuilder()
    q, p = b.input("q"), b.param("p", "v")
    b.llm("a", inputs=[q, p], instruction="x", output_format="Yes", reason=False)
    b.function("f", str, inputs=["a"])
    assert b.build(output="f")[0].fingerprint == "09d6dab1ee84b1c3"


def test_occurrences_share_their_components_instruction_and_must_agree_on_it():
    """Occurrences of one component read one parameter; another instruction or trainable flag is refused,
    as is an occurrence of itself."""
    b = GraphBuilder()
    q = b.input("q")
    b.llm(occurrence_name("act", 1), inputs=[q], instruction="Act.", occurrence_of="act")
    b.llm("act#2", inputs=["act#1"], instruction="Act.", occurrence_of="act")
    with pytest.raises(GraphError, match="shares one instruction"):
        b.llm("act#3", inputs=["act#2"], instruction="Other.", occurrence_of="act")
    with pytest.raises(GraphError, match="must name another component"):
        b.llm("x", inputs=[q], instruction="X.", occurrence_of="x")
    graph, params = b.build(output="act#2")
    assert list(params) == ["act.instruction"] and params["act.instruction"].node == "act"
    assert params["act.instruction"].is_instruction
    assert graph["act#1"].component == "act" and graph.fingerprint != _plain_chain().fingerprint


def _plain_chain():
    b = GraphBuilder()
    q = b.input("q")
    b.llm("act#1", inputs=[q], instruction="Act.")
    b.llm("act#2", inputs=["act#1"], instruction="Act.")
    return b.build(output="act#2")[0]


def test_a_tool_node_has_its_arguments_and_a_fixed_or_trainable_description():
    """A tool's arguments default to its inputs' names and must name one keyword per input; a trainable
    description is the parameter '<tool>.description' (not an instruction); the description is in the fingerprint."""
    b = GraphBuilder()
    q = b.input("q")
    b.tool("lookup", inputs=[q], description="Find it.")
    with pytest.raises(GraphError, match="one keyword per input"):
        b.tool("bad", inputs=[q], arguments=["a", "b"])
    b.tool("search", inputs=[q], arguments=["query"], description="Search.", trainable_description=True)
    graph, params = b.build(output="search")
    assert graph["lookup"].arguments == ("q",) and graph["lookup"].computed
    assert graph["search"].description_parameter == description_name("search") == "search.description"
    assert params["search.description"].value == "Search." and not params["search.description"].is_instruction
    other = GraphBuilder()
    other.tool("lookup", inputs=[other.input("q")], description="Find something else.")
    assert other.build(output="lookup")[0].fingerprint != _tool_fingerprint("Find it.")


def _tool_fingerprint(description):
    b = GraphBuilder()
    b.tool("lookup", inputs=[b.input("q")], description=description)
    return b.build(output="lookup")[0].fingerprint


def test_forward_refuses_a_graph_with_a_tool():
    """forward cannot run a tool (an effect): it raises InputError naming the tool node."""
    b = GraphBuilder()
    b.tool("lookup", inputs=[b.input("q")])
    graph, params = b.build(output="lookup")
    with pytest.raises(Exception, match="'lookup'"):
        forward(graph, params, {"q": "x"})


_REPLIES = st.sampled_from(["<result>4</result>", "It is 4.", "Four, <result>four</result>", ""])


@given(st.lists(st.one_of(_REPLIES, st.just(None)), min_size=2, max_size=2), st.booleans())
def test_llm_call_makes_the_forward_machines_requests_and_run(replies, reason):
    """For any replies (readable, unreadable, failed calls), one node's llm_call asks the same requests --
    the repair request included -- and ends with the same run as the forward machine for that node."""
    b = GraphBuilder()
    q = b.input("question")
    b.llm("answer", inputs=[q], instruction="Solve.", output_format="A number.", reason=reason)
    graph, params = b.build(output="answer")

    def drive(program):
        asked, left = [], list(replies)
        while not program.done:
            ((token, request),) = program.emitted
            asked.append(request)
            text = left.pop(0)
            reply = Failure(LLMError("server", "HTTP 500")) if text is None else Success(LLMResponse(text))
            program = program.feed(token, reply)
        return asked, program.value

    machine_asked, trace = drive(forward(graph, params, {"question": "2+2?"}, sample=7))
    shown = (("question", graph["question"].role, "2+2?"),)
    call_asked, run = drive(llm_call(graph["answer"], params, shown, sample=7))
    assert call_asked == machine_asked and run == trace["answer"]
