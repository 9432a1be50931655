"""The paper's ablations as it ran them: no gradients, one named parameter, no gate."""

from __future__ import annotations

import pytest

from semgrad.backends.fake import FunctionLLM, HashLLM, RecordingLLM, reply_forward, reply_rewrite
from semgrad.core import Example, GraphBuilder, optim
from semgrad.effects import fit_sync
from semgrad.topologies import liar_graph, paper_graph

EXPECTED = "EXPECTED-ANSWER"


def _train(n=4):
    return [Example({"question": f"question {i}"}, EXPECTED, id=i) for i in range(n)]


def _run(optimizer, iterations=2):
    rec = RecordingLLM(HashLLM())
    graph, params = paper_graph()
    result = fit_sync(graph, params, optimizer, train=_train(), llm=rec, iterations=iterations)
    return rec, result


def test_no_gradients_shows_no_feedback_to_any_rewrite_not_even_the_output():
    """No backward call; every rewrite request, the output node's included, shows inputs and outputs but no
    feedback and never the expected answer."""
    rec, _ = _run(optim.ablation("no-gradients"))
    rewrites = [r for r in rec.requests if r.purpose == "rewrite"]
    assert "backward" not in rec.counts()
    assert {r.node for r in rewrites} == {"hint_1.instruction", "hint_2.instruction", "answer.instruction"}
    for r in rewrites:
        assert EXPECTED not in r.prompt and "Feedback" not in r.prompt and "feedback>" not in r.prompt
        assert any(f"question {i}" in r.prompt for i in range(4))
        assert "Output:" in r.prompt


@pytest.mark.parametrize("gradients", [True, False])
def test_an_instruction_whose_node_does_not_reach_the_output_is_never_rewritten(gradients):
    """With or without gradients, only instructions of nodes that reach the output are rewritten (no blind call)."""
    b = GraphBuilder()
    q = b.input("question")
    b.llm("dead", inputs=[q], instruction="Note something.")
    b.llm("out", inputs=[q], instruction="Solve the problem.")
    graph, params = b.build(output="out")
    rec = RecordingLLM(HashLLM())
    optimizer = optim.neighbor_sgd(k=1, gradients=gradients, gate=False)
    result = fit_sync(graph, params, optimizer, train=_train(), llm=rec, iterations=1)
    assert [r.node for r in rec.requests if r.purpose == "rewrite"] == ["out.instruction"]
    assert result.params.value("dead.instruction") == "Note something."


def test_the_full_method_shows_the_expected_answer_to_the_output_rewrite():
    """The contrast: with gradients the output node's rewrite sees the expected answer."""
    rec, _ = _run(optim.ablation("full"), iterations=1)
    (answer,) = [r for r in rec.requests if r.purpose == "rewrite" and r.node == "answer.instruction"]
    assert EXPECTED in answer.prompt


@pytest.mark.parametrize("param", ["hint_2.instruction", "answer.instruction"])
def test_one_parameter_trains_only_the_named_parameter_with_one_rewrite_per_iteration(param):
    """`ablation("one-parameter", param=...)`: one rewrite per iteration, always of that parameter, and only
    its value ever changes (no-gate here so every candidate applies)."""
    rec = RecordingLLM(HashLLM())
    graph, params = paper_graph()
    result = fit_sync(
        graph, params, optim.ablation("one-parameter", param=param), train=_train(), llm=rec, iterations=3
    )
    assert [r.node for r in rec.requests if r.purpose == "rewrite"] == [param] * 3
    assert rec.counts()["backward"] == 3 * 2
    changed = {n for n in params.trainable() if result.params.value(n) != params.value(n)}
    assert changed <= {param}


def test_one_parameter_needs_a_real_parameter_name():
    """Without a name, or with a name that is no trainable parameter, the ablation refuses before any call."""
    with pytest.raises(ValueError, match="param=NAME"):
        optim.ablation("one-parameter")
    with pytest.raises(ValueError, match="param= is for the one-parameter"):
        optim.ablation("no-gate", param="answer.instruction")
    graph, params = liar_graph()
    calls = []
    with pytest.raises(ValueError, match="no trainable parameter 'hint_1.instruction'; choose from: statement_"):
        fit_sync(
            graph,
            params,
            optim.ablation("one-parameter", param="hint_1.instruction"),
            train=[Example(dict.fromkeys(graph.inputs, "x"), "No")],
            llm=calls.append,
            iterations=1,
        )
    assert calls == []


def test_each_liar_parameter_can_be_trained_alone():
    """On the LIAR system, each of its six parameters trained alone is the only one rewritten."""
    graph, params = liar_graph()
    train = [Example(dict.fromkeys(graph.inputs, f"field {i}"), "Yes", id=i) for i in range(3)]

    def answer(request):
        if request.purpose == "rewrite":
            return reply_rewrite(request, "A new instruction.")
        if request.purpose == "forward":
            return reply_forward(request, "No" if request.node == "answer" else "an analysis")
        return HashLLM()(request)

    for name in params.trainable():
        rec = RecordingLLM(FunctionLLM(answer))
        result = fit_sync(
            graph, params, optim.ablation("one-parameter", param=name), train=train, llm=rec, iterations=1
        )
        assert [r.node for r in rec.requests if r.purpose == "rewrite"] == [name]
        assert {n for n in params.trainable() if result.params.value(n) != params.value(n)} <= {name}
