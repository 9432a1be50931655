"""The simulated LLM: deterministic replies that depend on what each prompt shows (a simulation only)."""

from __future__ import annotations

import anyio
from hypothesis import given, settings
from hypothesis import strategies as st

from semgrad.backends.simulated import CAPACITY, SKILLS, VERIFY, SimulatedLLM
from semgrad.core import Example, Message, backward, forward, optim, rules
from semgrad.core._prompts import render_rewrite
from semgrad.core.prompts import parse_tagged
from semgrad.effects import fit, run_sync
from semgrad.topologies import paper_graph

QUESTIONS = {f"Question number {i}: how far?": str(i) for i in range(12)}


def _llm(seed: int = 0) -> SimulatedLLM:
    return SimulatedLLM(QUESTIONS, seed=seed)


def _params(hint_1: str = "", hint_2: str = "", answer: str = ""):
    graph, params = paper_graph()
    values = {"hint_1.instruction": hint_1, "hint_2.instruction": hint_2, "answer.instruction": answer}
    updates = {name: f"{params.value(name)} {extra}".strip() for name, extra in values.items()}
    return graph, optim.apply_updates(params, updates)


@given(st.sampled_from(sorted(QUESTIONS)), st.integers(0, 5))
@settings(max_examples=30, deadline=None)
def test_the_final_answer_is_right_exactly_when_its_prompt_shows_what_the_question_needs(question, seed):
    """The final node answers right iff the needed step is shown (its instruction or a hint's notes)
    and, for a strict question, its instruction has VERIFY."""
    llm = _llm(seed)
    need, strict = llm.needed(question), llm.strict(question)
    for hint, answer in [("", ""), (need, ""), ("", need), (need, VERIFY), ("", f"{need} {VERIFY}")]:
        graph, params = _params(hint_1=hint, answer=answer)
        trace = run_sync(forward(graph, params, {"question": question}), llm)
        right = bool(hint or need in answer) and (not strict or VERIFY in answer)
        assert (str(trace.output_value).strip() == QUESTIONS[question]) == right


def test_same_request_same_reply():
    """Replies are a function of the request: a forward pass twice gives the same trace."""
    graph, params = _params()
    q = sorted(QUESTIONS)[0]
    assert run_sync(forward(graph, params, {"question": q}), _llm()) == run_sync(
        forward(graph, params, {"question": q}), _llm()
    )


def test_two_nodes_sent_the_same_request_get_the_same_reply():
    """A reply depends on what the request shows, never on the node's name (which no provider is sent): two hints
    with the same instruction and input get the same notes, so a memo keyed on what is sent may answer one from
    the other, as the paper's memoised chat does, and the trained method is unchanged by it."""
    import attrs

    from semgrad.effects._memo import memo_key

    graph, params = _params()
    q = sorted(QUESTIONS)[0]
    trace = run_sync(forward(graph, params, {"question": q}), _llm())
    assert trace.value("hint_1") == trace.value("hint_2") and "hint_1" not in str(trace.value("hint_1"))
    request = next(r for r in _requests(graph, params, q) if r.node == "hint_1")
    twin = attrs.evolve(request, node="hint_2")
    assert memo_key(request) == memo_key(twin) and _llm()(request) == _llm()(twin)


def _requests(graph, params, question):
    seen = []

    def llm(request):
        seen.append(request)
        return _llm()(request)

    run_sync(forward(graph, params, {"question": question}), llm)
    return seen


def test_the_backward_reads_each_inputs_notes_by_its_label_when_the_notes_are_alike():
    """With both hints' notes alike (the same instruction), the backward still sees two inputs by their labels and
    asks one of them for the missing step, the other to keep what it does (not the per-edge guess)."""
    need, texts = _backward(rules.neighbor_aware())
    asked = [n for n, text in texts.items() if need in text]
    assert len(asked) == 1 and "Keep this input" in texts[({"hint_1", "hint_2"} - set(asked)).pop()]


def _backward(rule, hint_1: str = "", hint_2: str = "", seed: int = 0):
    llm = _llm(seed)
    graph, params = _params(hint_1=hint_1, hint_2=hint_2)
    q = sorted(QUESTIONS)[3]
    trace = run_sync(forward(graph, params, {"question": q}), llm)
    grads = run_sync(backward(graph, params, trace, feedback="The expected output is 3.", rule=rule), llm)
    return llm.needed(q), {n: grads.for_node(n)[0].text for n in ("hint_1", "hint_2")}


def test_neighbour_aware_feedback_asks_the_least_loaded_hint_only():
    """Seeing both hints, the backward asks for the missing step from the hint that applies fewer steps."""
    other = SKILLS[-1]
    need, texts = _backward(rules.neighbor_aware(), hint_1=other)
    if need == other:
        need, texts = _backward(rules.neighbor_aware(), hint_1=SKILLS[0])
    assert need in texts["hint_2"] and need not in texts["hint_1"]
    assert "Keep this input" in texts["hint_1"]


def test_per_edge_feedback_cannot_see_the_question_and_gives_every_hint_the_same_guess():
    """Seeing one input alone (no question, no siblings), each hint gets the same guessed step."""
    _, texts = _backward(rules.per_edge())
    assert "question is not shown" in texts["hint_1"]
    assert texts["hint_1"] == texts["hint_2"]


@given(st.lists(st.sampled_from(SKILLS), max_size=4), st.lists(st.sampled_from(SKILLS), max_size=3))
def test_a_rewrite_adds_the_asked_steps_within_capacity(held, asked):
    """A hint's rewrite holds the asked steps and at most CAPACITY steps; told to keep, it keeps."""
    llm = _llm()
    current = " ".join(["Work out a step.", *dict.fromkeys(held)])
    feedback = "\n".join(f"Add this step to the instruction: {s}" for s in asked) or "Keep this input as it is."
    reply = llm(render_rewrite("hint_1.instruction", "an instruction", current, feedback=feedback))
    new = parse_tagged(reply, ["improved"]).unwrap()
    shown = [s for s in SKILLS if s.rstrip(".") in new]
    assert len(shown) <= (CAPACITY if asked else max(CAPACITY, len(set(held))))
    assert set(dict.fromkeys(asked)) <= set(shown) or len(set(asked)) > CAPACITY
    if not asked:
        assert set(shown) == set(s for s in dict.fromkeys(held))


def test_a_rewrite_shown_no_feedback_learns_no_step():
    """Without any feedback (the no-gradients ablation), a rewrite rephrases and adds no step."""
    reply = _llm()(render_rewrite("hint_1.instruction", "an instruction", "Work out a step.", examples="x -> y"))
    new = parse_tagged(reply, ["improved"]).unwrap()
    assert not [s for s in SKILLS if s.rstrip(".") in new]


def test_the_final_node_learns_verify_only_when_shown_an_expected_answer():
    """The final node's rewrite adds VERIFY when it sees an expected answer, and not otherwise."""
    llm = _llm()
    shown = render_rewrite("answer.instruction", "i", "Solve.", examples='the expected output is "3".')
    hidden = render_rewrite("answer.instruction", "i", "Solve.", examples="an output")
    assert VERIFY in parse_tagged(llm(shown), ["improved"]).unwrap()
    assert VERIFY not in parse_tagged(llm(hidden), ["improved"]).unwrap()


def test_every_purpose_gets_a_reply():
    """Critique, summarize and evaluate requests are answered too."""
    from semgrad.core import LLMRequest

    llm = _llm()
    for purpose in ("critique", "summarize", "evaluate"):
        assert llm(LLMRequest((Message("user", "x"),), purpose=purpose))


def test_the_full_method_improves_and_no_gradients_does_not():
    """On the simulated world, neighbor_sgd raises the score and the no-gradients ablation cannot."""
    graph, params = paper_graph()
    items = [Example({"question": q}, a, id=i) for i, (q, a) in enumerate(sorted(QUESTIONS.items()))]
    scores = {}
    for name in ("full", "no-gradients"):
        result = anyio.run(
            lambda name=name: fit(
                graph, params, optim.ablation(name), train=items[:8], validation=items[8:], llm=_llm(), iterations=3
            )
        )
        scores[name] = (result.initial_score, result.best_score)
    assert scores["full"][1] > scores["full"][0]
    assert scores["no-gradients"][1] == scores["no-gradients"][0]
