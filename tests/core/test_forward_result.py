"""Forward replies: reasoning first, the result in tags; the result flows on and is scored, the reply is kept."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from returns.result import Success

from semgrad.backends.fake import reply_forward
from semgrad.core import Example, GraphBuilder, LLMResponse, NodeRun, Trace, forward
from semgrad.core._parse import parse_result
from semgrad.core.scoring import normalized_match
from semgrad.effects import run_sync

_text = st.text(st.characters(blacklist_characters="<>", blacklist_categories=("Cs",)), min_size=1).filter(
    lambda t: t.strip()
)


def _graph():
    b = GraphBuilder()
    q = b.input("question")
    h = b.llm("hint", inputs=[q], instruction="Hint.")
    b.llm("answer", inputs=[q, h], instruction="Solve.")
    return b.build(output="answer")


@given(value=_text, reasoning=st.text(st.characters(blacklist_characters="<>", blacklist_categories=("Cs",))))
def test_the_tagged_result_flows_on_and_the_full_reply_is_kept(value, reasoning):
    """Whatever the reasoning, a node's value is the stripped content of <result>, its successor is shown that
    value only, and the node's run keeps the full reply as `raw`."""
    graph, params = _graph()
    replies = {}

    def llm(request):
        shown = value if request.node == "hint" else "done"
        replies[request.node] = reply_forward(request, shown, reasoning=reasoning + " (hidden)")
        return replies[request.node]

    trace = run_sync(forward(graph, params, {"question": "q?"}), llm)
    assert trace["hint"].value == value.strip()
    assert trace["hint"].raw == replies["hint"]
    assert dict(trace["answer"].inputs)["hint"] == value.strip()
    assert "(hidden)" not in trace["answer"].request.prompt


def test_scoring_reads_the_result_not_the_reasoning():
    """An 'Answer:' line in the reasoning is ignored: only the tagged result is scored."""
    graph, params = _graph()
    trace = run_sync(
        forward(graph, params, {"question": "q?"}),
        lambda r: reply_forward(r, "Answer: 7", reasoning="Maybe\nAnswer: 8\nor not."),
    )
    score = run_sync(normalized_match()(Example({"question": "q?"}, "7"), trace), lambda r: "")
    assert score.value == 1.0 and trace.output_value == "Answer: 7"


def test_a_reply_without_a_result_gets_one_repair_request_then_a_recorded_failure():
    """No <result> block: one repair request (the reply and the reason shown); still none: the node fails with
    a clear error and its successors fail without a call -- never the whole reply as the value."""
    graph, params = _graph()
    seen = []

    def llm(request):
        seen.append(request)
        return "I think it is 7."

    trace = run_sync(forward(graph, params, {"question": "q?"}), llm)
    assert [r.node for r in seen] == ["hint", "hint"]
    assert seen[1].messages[-2].content == "I think it is 7." and "<result>" in seen[1].prompt
    assert trace["hint"].value is None and "no <result> block" in trace["hint"].error
    assert trace["hint"].raw == "I think it is 7."
    assert trace["answer"].error == "input 'hint' failed"


def test_a_repaired_reply_is_used():
    """When the repair reply has the tag, its result is the node's value."""
    graph, params = _graph()

    def llm(request):
        if request.node == "hint" and len(request.messages) == 2:
            return "7"
        return reply_forward(request, "7")

    trace = run_sync(forward(graph, params, {"question": "q?"}), llm)
    assert trace.ok and trace["hint"].value == "7" and len(trace["hint"].request.messages) == 4


@given(value=_text, noise=st.sampled_from(["<result>", "< Result >", "<RESULT>"]))
def test_parse_result_is_tolerant_and_reads_the_last_block(value, noise):
    """Tags in any case and spacing parse; with several blocks the last one wins; the canonical form round-trips."""
    assert parse_result(f"{noise}draft</result> then {noise}{value}</ result >") == Success(value.strip())
    assert parse_result(reply_forward(None, value, reasoning="why")) == Success(value.strip())
    assert not isinstance(parse_result(value), Success)
    assert LLMResponse(reply_forward(None, value)).text.endswith("</result>")


@given(st.sampled_from(["result", "improved", "summary"]), st.text(" \n\t", max_size=3), st.booleans())
def test_an_empty_block_is_reported_as_empty_and_no_block_as_missing(tag, blank, closed):
    """A block holding only whitespace (closed or not) fails as empty; a reply without one, as having none."""
    from semgrad.core.prompts import parse_tagged

    read = parse_result if tag == "result" else lambda text: parse_tagged(text, [tag])
    reply = f"Prose.\n<{tag}>{blank}" + (f"</{tag}>" if closed else "")
    assert read(reply).failure().reason == f"the <{tag}> block is empty"
    assert read("Prose only.").failure().reason == f"the reply has no <{tag}> block"


def test_a_trace_asked_for_a_node_it_lacks_names_its_nodes():
    """trace["nope"] and trace.value("nope") raise a KeyError that names the node asked for and the trace's nodes."""
    trace = Trace(
        0, "g", "answer", {"question": NodeRun("question", "input", value="q"), "answer": NodeRun("answer", "llm")}
    )
    for look in (lambda: trace["nope"], lambda: trace.value("nope")):
        with pytest.raises(KeyError, match=r"no node named 'nope' in this trace; its nodes: question, answer"):
            look()
    assert trace.value("question") == "q" and trace["answer"].node == "answer"
