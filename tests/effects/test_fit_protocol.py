"""The official protocol in `fit`: the gate scores candidates on the training items and its forward is reused."""

from __future__ import annotations

import itertools
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from semgrad.backends.fake import FunctionLLM, RecordingLLM, reply_backward, reply_forward, reply_rewrite
from semgrad.core import Example, optim
from semgrad.effects import fit_sync
from semgrad.topologies import paper_graph

N = 6  # at most 4 helpful rewrites: always at least k = 2 wrong items


def _train(n=N):
    return [Example({"question": f"question {i}"}, "1", id=i) for i in range(n)]


def _llm(helpful):
    """Item j is answered right when the answer instruction holds more than j '+' marks; the rewrites of
    iteration i add '+' (helpful[i]) or '-' (harmful: the score stays, so a strict gate rejects)."""
    rewrites = itertools.count()

    def answer(request):
        if request.purpose == "rewrite":
            i = next(rewrites) // 3
            current = request.prompt.split("<current>\n", 1)[1].split("\n</current>", 1)[0]
            return reply_rewrite(request, current + (" +" if helpful[min(i, len(helpful) - 1)] else " -"))
        if request.purpose == "backward":
            return reply_backward(request, {t: "do better" for t in request.targets})
        if request.node != "answer":
            return reply_forward(request, "a hint")
        marks = request.system.count(" +")
        j = int(re.search(r"^question (\d+)$", request.prompt, re.M).group(1))
        return reply_forward(request, "1" if j < marks else "2")

    return FunctionLLM(answer)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.booleans(), min_size=1, max_size=4))
def test_official_protocol_makes_exactly_the_paper_counts_accepted_or_rejected(helpful):
    """Without a validation set: 3N forward once, then per iteration 3N forward (the gate's, reused), k backward
    and one rewrite per parameter, whatever the gate decides; its verdicts follow the training score."""
    graph, params = paper_graph()
    rec = RecordingLLM(_llm(helpful))
    iterations = len(helpful)
    result = fit_sync(graph, params, optim.neighbor_sgd(k=2), train=_train(), llm=rec, iterations=iterations)
    expected = {"forward": 3 * N * (1 + iterations), "backward": 2 * iterations, "rewrite": 3 * iterations}
    assert dict(rec.counts()) == expected
    assert [r.accepted for r in result.history] == helpful
    marks = sum(helpful)
    assert result.best_score == min(marks, N) / N and result.initial_score == 0.0
    assert [r.calls.get("forward") for r in result.history] == [6 * N] + [3 * N] * (iterations - 1)
    # Each iteration's training score is the score of the params it started from (reused, not recomputed).
    expected, best = [], 0
    for h in helpful:
        expected.append(min(best, N) / N)
        best += h
    assert list(result.scores) == expected


def test_held_out_protocol_is_unchanged_with_a_validation_set():
    """With a validation set the gate scores on it: 3N + 3V per iteration plus 3V once to seed the gate."""
    graph, params = paper_graph()
    rec = RecordingLLM(_llm([True, False]))
    fit_sync(graph, params, optim.neighbor_sgd(k=2), train=_train(), validation=_train(3), llm=rec, iterations=2)
    assert dict(rec.counts()) == {"forward": 2 * (3 * N + 3 * 3) + 3 * 3, "backward": 4, "rewrite": 6}


def test_no_gate_ablation_scores_and_reuses_the_candidate_like_the_official_code():
    """The "no gate" ablation accepts every candidate, with the same counts as the gated official protocol."""
    graph, params = paper_graph()
    rec = RecordingLLM(_llm([False, False]))
    result = fit_sync(graph, params, optim.ablation("no-gate"), train=_train(), llm=rec, iterations=2)
    assert [r.accepted for r in result.history] == [True, True]
    assert result.params.value("answer.instruction").endswith(" - -")
    assert dict(rec.counts()) == {"forward": 3 * N * 3, "backward": 4, "rewrite": 6}
