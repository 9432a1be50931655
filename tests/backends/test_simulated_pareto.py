"""The simulated world where the front matters: one candidate cannot serve every item, and GEPA's global feedback
cannot tell which node made an error (a simulation of the mechanism, not evidence about real models)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from semgrad.backends.simulated import CAPACITY, SKILLS, VERIFY, SimulatedLLM
from semgrad.core import Example, backward, forward, optim, rules
from semgrad.core.optim import InstructionExample, ParetoState
from semgrad.core.optim._gepa import render_reflection
from semgrad.core.prompts import parse_tagged
from semgrad.effects import fit_sync, run_sync
from semgrad.effects._checkpoint import allowed_types, read_checkpoint
from semgrad.topologies import paper_graph

QUESTIONS = {f"Route {i}: how many steps back to the start?": str(i % 7) for i in range(24)}
ITEMS = [Example({"question": q}, a, id=f"r{i}") for i, (q, a) in enumerate(QUESTIONS.items())]


def _reflect(llm, name, current, questions, outputs):
    """GEPA's reflection request for `name`, shown each question with the system's (wrong or right) answer."""
    examples = tuple(
        InstructionExample(
            f"s{i}",
            (("question", q),),
            "Notes: none.",
            f'The output "{out}" is correct.'
            if out == QUESTIONS[q]
            else f'The output "{out}" is wrong; the expected output is "{QUESTIONS[q]}".',
        )
        for i, (q, out) in enumerate(zip(questions, outputs, strict=True))
    )
    reply = llm(render_reflection(name, "a hint", current, examples))
    return parse_tagged(reply, ["improved"]).unwrap()


@settings(max_examples=25, deadline=None)
@given(st.lists(st.sampled_from(sorted(QUESTIONS)), min_size=1, max_size=3, unique=True), st.integers(0, 4))
def test_gepa_blames_every_hint_alike_for_an_error_the_other_could_fix(questions, seed):
    """Shown the same failures with the system's global feedback, both hints add the same steps (the ones the
    missed questions need, at most CAPACITY): neither can see that the other already applies one, while the
    neighbour-aware backward call at the answer asks one hint only and tells the other to keep what it does."""
    llm = SimulatedLLM(QUESTIONS, seed=seed)
    wrong = ["x"] * len(questions)
    base = "Work out an intermediate step that helps solve the problem."
    one, two = (_reflect(llm, f"hint_{k}.instruction", base, questions, wrong) for k in (1, 2))
    needs = {llm.needed(q) for q in questions}
    held = [s for s in SKILLS if s.rstrip(".") in one]
    assert one == two and set(held) <= needs and 1 <= len(held) <= CAPACITY
    graph, params = paper_graph()
    question = questions[0]
    trace = run_sync(forward(graph, params, {"question": question}), llm)
    grads = run_sync(backward(graph, params, trace, feedback="wrong", rule=rules.neighbor_aware()), llm)
    asked = [p.source for p in grads.partials if "Add this step" in p.text]
    assert len(asked) == 1, "the call that sees both hints asks one of them"


def test_a_reflection_shown_only_right_answers_changes_no_hint_and_the_answer_gains_the_check():
    """No missed question, no new step for a hint; the answering node shown an expected answer gains VERIFY,
    as every rewrite of it does."""
    llm = SimulatedLLM(QUESTIONS)
    questions = sorted(QUESTIONS)[:3]
    right = [QUESTIONS[q] for q in questions]
    assert _reflect(llm, "hint_1.instruction", "Work it out.", questions, right) == "Work it out."
    answer = _reflect(llm, "answer.instruction", "Solve the problem.", questions, ["x", "x", "x"])
    assert VERIFY in answer and not any(s.rstrip(".") in answer for s in SKILLS)


def _final_pool(optimizer, tmp_path):
    graph, params = paper_graph()
    path = tmp_path / f"{optimizer.name}.json"
    llm = SimulatedLLM(QUESTIONS)
    fit_sync(graph, params, optimizer, train=ITEMS, llm=llm, iterations=12, checkpoint=path)
    found = [v for v in _walk(read_checkpoint(path, allowed_types())) if isinstance(v, ParetoState)]
    return llm, found[0].pool


def _walk(value):
    yield value
    if isinstance(value, dict):
        for item in value.values():
            yield from _walk(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _walk(item)
    elif hasattr(type(value), "__attrs_attrs__"):
        for field in type(value).__attrs_attrs__:
            yield from _walk(getattr(value, field.name))


def test_no_single_candidate_serves_every_item_but_the_front_does(tmp_path):
    """The items need all five steps and a system holds at most four (two hints of CAPACITY two): the best
    candidate of a gepa or pareto-sgd search scores below 1, while the front -- each item's best candidate --
    scores strictly higher: the pool keeps strategies that one instruction set cannot hold together."""
    for optimizer in (optim.gepa(), optim.pareto_sgd()):
        llm, pool = _final_pool(optimizer, tmp_path)
        assert {llm.needed(q) for q in QUESTIONS} == set(SKILLS)
        best = max(c.average for c in pool)
        front = sum(max(c.scores[i] for c in pool) for i in range(len(ITEMS))) / len(ITEMS)
        assert best < 1.0 and front > best, (optimizer.name, best, front)
