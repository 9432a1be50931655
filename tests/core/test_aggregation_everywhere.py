"""A rule's aggregator applies to every node that receives partials, stepping or not, and to free parameters."""

from __future__ import annotations

from collections.abc import Sequence

import attrs
from hypothesis import given, settings
from hypothesis import strategies as st

from semgrad.backends.fake import HashLLM, RecordingLLM, reply_summary
from semgrad.core import GraphBuilder, Score, backward, forward, optim, rules
from semgrad.core._gradients import Partial
from semgrad.core._program import pure
from semgrad.effects import run_sync
from semgrad.testing import graphs, inputs_for, pure_llms


@attrs.frozen
class Marked:
    """An aggregator whose result shows it ran: ``AGG[text|text...]``."""

    def __call__(self, node: str, role: str, partials: Sequence[Partial]):
        return pure("AGG[" + "|".join(p.text for p in partials) + "]")


@settings(max_examples=60, deadline=None)
@given(graphs(), st.data(), pure_llms(), st.sampled_from(["neighbor_aware", "per_edge"]))
def test_every_node_that_receives_partials_gets_the_rules_aggregate(pair, data, llm, kind):
    """On random DAGs, every graph node that received partials has, per sample, exactly the aggregate the
    rule's aggregator makes of them (in source order) -- whether it steps itself or only collects."""
    graph, params = pair
    rule = getattr(rules, kind)(aggregate=Marked())
    trace = run_sync(forward(graph, params, data.draw(inputs_for(graph)), sample=0), llm)
    grads = run_sync(backward(graph, params, trace, "The expected output is X.", rule=rule), llm)
    order = {name: i for i, name in enumerate(graph.topological_order)}
    for name in graph.nodes:
        received = sorted(grads.for_node(name), key=lambda p: order[p.source])
        told = grads.feedback_for(name)
        if name == graph.output:
            continue
        if received:
            assert [f.value for f in told] == ["AGG[" + "|".join(p.text for p in received) + "]"], name
        else:
            assert [f.value for f in told if f.value is not None] == [], name


def _two_readers():
    """A free parameter read by two LLM nodes that feed the output; neither reader steps (no trainable input)."""
    b = GraphBuilder()
    q = b.input("question")
    style = b.param("style", "Be brief.", role="a shared style guide")
    a = b.llm("a", inputs=[q, style], instruction="Say A.")
    c = b.llm("c", inputs=[q, style], instruction="Say C.")
    b.llm("out", inputs=[a, c], instruction="Combine.")
    return b.build(output="out")


def test_a_summarize_aggregator_reaches_free_parameters_and_what_they_are_rewritten_from():
    """With summarize(), a free parameter fed by two nodes gets one summarize call per sample, and its rewrite
    request shows the summary instead of the concatenated partials."""
    graph, params = _two_readers()

    def answer(request):
        if request.purpose == "summarize":
            return reply_summary(request, "SUMMARY-OF-STYLE")
        return HashLLM()(request)

    rec = RecordingLLM(answer)
    rule = rules.neighbor_aware(aggregate=rules.summarize())
    trace = run_sync(forward(graph, params, {"question": "q"}, sample=0), rec)
    grads = run_sync(backward(graph, params, trace, "The expected output is X.", rule=rule), rec)
    assert [f.value for f in grads.feedback_for("style")] == ["SUMMARY-OF-STYLE"]
    assert [r.node for r in rec.requests if r.purpose == "summarize"] == ["style"]
    step = optim.Step(graph, 0, selected=(0,), traces=(trace,), scores=(Score(0.0, "wrong"),), gradients=grads)
    new, _ = optim.aggregate().update(step, None, params).value
    assert new.param_gradients["style"].feedback == "SUMMARY-OF-STYLE"
