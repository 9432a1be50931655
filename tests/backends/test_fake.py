"""The fakes' reply helpers write replies the core's parsers read back."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st
from returns.result import Success

from semgrad.backends import fake
from semgrad.core import LLMRequest, Message
from semgrad.core._parse import parse_result
from semgrad.core.optim._named_blocks import parse_named
from semgrad.core.prompts import parse_backward, parse_tagged

REQUEST = LLMRequest((Message("user", "x"),), node="n")

# Any text, and the texts a block trips on: blank ones, tags of every helper in odd spellings.
texts = st.text(st.characters(blacklist_categories=["Cs"]), max_size=40) | st.sampled_from(
    ["", " ", "\n\t", "<result>", "a</result>b", "< / RESULT >", "</critique>", "x</Summary >", "<improved>",
     "a</feedback>b", "</ FEEDBACK>", "<feedback>", "x < y > z", "<b>bold</b>", "  padded  "]
)  # fmt: skip

TAGGED = {"improved": fake.reply_rewrite, "critique": fake.reply_critique, "summary": fake.reply_summary}


def _readable(text: str, tag: str) -> bool:
    """What a ``<tag>`` block carries back: text that is not blank and holds no ``<tag>`` or ``</tag>``."""
    return bool(text.strip()) and not re.search(rf"<\s*/?\s*{tag}\s*>", text, re.IGNORECASE)


@given(texts, texts, st.sampled_from(["result", *TAGGED]))
def test_a_helper_either_refuses_a_text_or_its_reply_parses_back_to_it(text, reasoning, tag):
    """For any text, reply_forward/rewrite/critique/summary raise ValueError, or their reply parses to text.strip()."""
    try:
        if tag == "result":
            reply = fake.reply_forward(REQUEST, text, reasoning=reasoning)
        else:
            reply = TAGGED[tag](REQUEST, text)
    except ValueError as error:
        assert not _readable(text, tag), error
        return
    assert _readable(text, tag)
    parsed = parse_result(reply) if tag == "result" else parse_tagged(reply, [tag])
    assert parsed == Success(text.strip())


@given(st.lists(texts, min_size=1, max_size=4))
def test_reply_backward_either_refuses_a_text_or_its_reply_parses_back_to_it(bodies):
    """For any feedback texts, reply_backward raises ValueError, or its reply parses to each text stripped."""
    targets = tuple(f"t_{i}" for i in range(len(bodies)))
    request = LLMRequest((Message("user", "x"),), purpose="backward", node="n", targets=targets)
    feedback = dict(zip(targets, bodies))
    try:
        reply = fake.reply_backward(request, feedback)
    except ValueError:
        assert not all(_readable(body, "feedback") for body in bodies)
        return
    assert all(_readable(body, "feedback") for body in bodies)
    parsed = parse_backward(reply, targets, dict(enumerate(targets, 1)))
    assert parsed == Success({t: body.strip() for t, body in feedback.items()})


@given(st.lists(texts, min_size=1, max_size=3))
def test_reply_rewrites_either_refuses_a_text_or_its_reply_parses_back_to_it(values):
    """For any values, reply_rewrites raises ValueError, or its reply parses to each value stripped."""
    targets = tuple(f"p_{i}" for i in range(len(values)))
    request = LLMRequest((Message("user", "x"),), purpose="rewrite", node="n", targets=targets)
    try:
        reply = fake.reply_rewrites(request, dict(zip(targets, values)))
    except ValueError:
        assert not all(_readable(value, "improved") for value in values)
        return
    assert parse_named(reply, "improved", targets) == Success({t: v.strip() for t, v in zip(targets, values)})


@pytest.mark.parametrize(
    ("helper", "value", "message"),
    [
        (fake.reply_forward, "", "reply_forward: the value is empty"),
        (fake.reply_rewrite, "", "reply_rewrite: the new value is empty"),
        (fake.reply_summary, "   ", "reply_summary: the text is empty (or whitespace alone)"),
        (fake.reply_critique, "</critique>", "reply_critique: the text contains the tag <critique> or </critique>"),
        (fake.reply_forward, "a <RESULT> b", "reply_forward: the value contains the tag <result> or </result>"),
    ],
)
def test_the_helpers_refuse_what_the_parser_would_not_read_back(helper, value, message):
    """Blank texts and texts holding their own tag are refused with a ValueError naming the helper, not written."""
    with pytest.raises(ValueError, match=re.escape(message)):
        helper(REQUEST, value)


def test_reply_backward_refuses_blank_feedback_and_its_closing_tag():
    """reply_backward refuses a target's blank feedback or one holding </feedback>, naming the target."""
    request = LLMRequest((Message("user", "x"),), purpose="backward", node="n", targets=("a", "b"))
    with pytest.raises(ValueError, match="reply_backward: the feedback for 'b' is empty"):
        fake.reply_backward(request, {"a": "fine", "b": " "})
    with pytest.raises(ValueError, match="reply_backward: the feedback for 'a' contains the tag"):
        fake.reply_backward(request, {"a": "ends </FEEDBACK> here", "b": "fine"})


def test_reply_backward_answers_only_the_requests_targets():
    """reply_backward leaves out feedback for names that are not the request's targets (one mapping serves all)."""
    request = LLMRequest((Message("user", "x"),), purpose="backward", node="n", targets=("a",))
    reply = fake.reply_backward(request, {"a": "fine", "b": "not asked"})
    assert reply == fake.reply_backward(request, {"a": "fine"})
    assert "not asked" not in reply


def test_a_fake_answering_blank_text_still_sends_an_empty_result_block():
    """A FunctionLLM answering '' to a forward request sends a reply whose <result> block the parser calls empty."""
    reply = fake.FunctionLLM(lambda request: "")(REQUEST)
    assert parse_result(reply).failure().reason == "the <result> block is empty"


@given(st.text(max_size=8))
def test_a_hash_llm_answers_an_llm_judge_in_the_form_it_reads(salt):
    """HashLLM's reply to llm_judge's request (purpose "evaluate") is read: score 0, its critique as the feedback."""
    from semgrad.core import Example, forward
    from semgrad.core.scoring import llm_judge
    from semgrad.effects import run_sync
    from semgrad.topologies import paper_graph

    graph, params = paper_graph()
    llm = fake.HashLLM(salt)
    trace = run_sync(forward(graph, params, {"question": "What is 3 + 4?"}), llm)
    score = run_sync(llm_judge("The sum is right.")(Example({"question": "What is 3 + 4?"}, "7"), trace), llm)
    assert score.value == 0.0 and score.feedback.startswith("Critique answer#")


def test_reply_helpers_take_the_argument_names_the_design_gives():
    """reply_forward(request, value), reply_backward(request, feedback), reply_rewrite(request, instruction) and
    reply_critique(request, text) take those names as keywords, and their replies parse back."""
    request = LLMRequest((Message("user", "x"),), purpose="rewrite", node="answer.instruction", targets=("a",))
    assert parse_tagged(fake.reply_rewrite(request, instruction=" Be brief. "), ["improved"]) == Success("Be brief.")
    assert parse_tagged(fake.reply_critique(request, text="Too long."), ["critique"]) == Success("Too long.")
    assert parse_result(fake.reply_forward(request, value="4")) == Success("4")
    assert parse_backward(fake.reply_backward(request, feedback={"a": "More."}), ("a",)).unwrap()["a"] == "More."


def test_scripted_llm_refuses_targets_given_as_one_string():
    """ScriptedLLM refuses {"targets": "hint_1"} (it could never match) and matches ("hint_1",)."""
    with pytest.raises(TypeError, match=r"such as \('hint_1',\)"):
        fake.ScriptedLLM([({"targets": "hint_1"}, "x")])
    llm = fake.ScriptedLLM([({"targets": ("hint_1",)}, "matched")], default="default")
    request = LLMRequest((Message("user", "x"),), purpose="backward", node="answer", targets=("hint_1",))
    assert llm(request) == "matched"
