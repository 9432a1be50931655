"""Noise-aware acceptance and the overfitting guard through `fit`: the run's records say what they decided."""

from __future__ import annotations

import pytest

from semgrad._bundled_pairs import gsm8k_sample
from semgrad.backends.fake import FunctionLLM, RecordingLLM, reply_rewrite
from semgrad.backends.simulated import SimulatedLLM
from semgrad.core import Example, GraphBuilder, optim
from semgrad.core.scoring import numeric_match
from semgrad.effects import fit_sync
from semgrad.topologies import paper_graph

REWRITE = "Rewritten instruction."


def _graph():
    b = GraphBuilder()
    b.llm("answer", inputs=[b.input("question")], instruction="Answer the question.")
    return b.build(output="answer")


NAMES = ("Lena", "Omar", "Ines", "Piet", "Yuki", "Ravi", "Ada", "Kofi", "Mina", "Tom", "Zoe", "Ivo", "Eli", "Noa")


def _question(i):
    """A question whose every run of 8 words names someone no other question names."""
    return f"How many apples does {NAMES[i % 14]} keep after giving two to {NAMES[(i + 7) % 14]}"


def _items(ids):
    return [Example({"question": _question(i)}, "1", id=i) for i in ids]


def _llm(rewrite):
    """Every answer is wrong under the initial instruction; under `rewrite`'s value item 10 only is right."""

    def answer(request):
        if request.purpose == "rewrite":
            return reply_rewrite(request, rewrite)
        if request.purpose == "backward":
            return "".join(f'<feedback input="{t}">do better</feedback>' for t in request.targets)
        right = rewrite in request.system and request.sample == 10
        return "1" if right else "2"

    return FunctionLLM(answer)


def _fit(gate, rewrite=REWRITE, guard=False):
    graph, params = _graph()
    stages = [optim.neighbor_sgd(k=2, gate=False)]
    if guard:
        stages.append(optim.memorization_guard())
    stages.append(gate)
    return fit_sync(
        graph,
        params,
        optim.chain(*stages),
        train=_items(range(4)),
        validation=_items(range(10, 20)),
        llm=_llm(rewrite),
        iterations=1,
    )


def _notes(result, stage):
    return [note for report in result.history[0].report if report.stage == stage for note in report.notes]


def test_a_lucky_one_item_win_is_accepted_by_the_sum_rule_and_refused_by_lcb_and_the_record_says_why():
    """A rewrite that fixes 1 of 10 validation items: the default gate applies it; rule="lcb" does not,
    and the iteration record's gate report gives the paired gain, the bound and the verdict."""
    graph, params = _graph()
    summed = _fit(optim.validation_gate())
    assert summed.history[0].accepted is True and summed.params.value("answer.instruction") == REWRITE
    bounded = _fit(optim.validation_gate(rule="lcb", alpha=0.05))
    record = bounded.history[0]
    assert record.accepted is False and not record.applied and bounded.params == params
    assert record.validation_score == 0.1
    (note,) = _notes(bounded, "validation_gate")
    assert note.startswith("candidate 0.100 vs best 0.000 on validation; rule lcb: paired gain +0.100, lower 95%")
    assert note.endswith("(10 items, t with 9 df): rejected")


def test_a_rewrite_that_pastes_a_training_question_is_refused_before_the_gate_and_recorded():
    """With memorization_guard before the gate, a rewrite holding a training question verbatim is never
    applied (nor scored), and the iteration record names the parameter and the item it copies."""
    graph, params = _graph()
    copying = f"Answer as in this case: {_question(2)}"
    result = _fit(optim.validation_gate(), rewrite=copying, guard=True)
    record = result.history[0]
    assert record.accepted is False and not record.applied and result.params == params
    (note,) = _notes(result, "memorization_guard")
    assert note.startswith(
        "answer.instruction: refused, it copies 8 consecutive words of training item 2 (input question)"
    )
    assert _notes(result, "validation_gate") == ["nothing to update; rejected"]


def _demo(**options):
    """`fit_sync` on the demo task (paper graph, bundled GSM8K items, simulated LLM) under the lcb gate."""
    samples = gsm8k_sample()
    examples = [Example({"question": q}, a, id=i) for i, (q, a) in enumerate(samples)]
    graph, params = paper_graph()
    optimizer = optim.chain(optim.neighbor_sgd(k=2, gate=False), optim.validation_gate(rule="lcb", alpha=0.2))
    llm = options.pop("llm", None) or SimulatedLLM(dict(samples), seed=5)
    return fit_sync(
        graph, params, optimizer, train=examples[:5], validation=examples[5:], llm=llm, loss=numeric_match(), **options
    )


def test_a_run_under_the_lcb_gate_resumes_from_its_checkpoint_to_the_same_result(tmp_path):
    """The gate's kept per-item scores go into the checkpoint: a run resumed after an accepted update ends as
    an uninterrupted one, making the same calls (no rescoring of the current params)."""
    full = _demo(iterations=3)
    assert any(r.accepted for r in full.history[:1]) and "rule lcb" in str(full.history[0].report)
    path = tmp_path / "ckpt.json"
    _demo(iterations=1, checkpoint=path)
    rec = RecordingLLM(SimulatedLLM(dict(gsm8k_sample()), seed=5))
    resumed = _demo(iterations=3, resume=path, llm=rec)
    assert (resumed.params, resumed.history, resumed.best_score) == (full.params, full.history, full.best_score)
    assert sum(rec.counts().values()) == sum(sum(r.calls.values()) for r in full.history[1:])


def test_every_ready_made_optimizer_takes_a_gate_stage_in_place_of_its_own():
    """neighbor_sgd, tgd, textgrad, optoprime and the ablations end with the gate stage given (the guard and the
    lcb gate here); min_gain beside a given gate, and a gate for the no-gate ablation, are refused."""
    gate = optim.chain(optim.memorization_guard(), optim.validation_gate(rule="lcb"))
    made = [
        optim.neighbor_sgd(gate=gate),
        optim.tgd(gate=gate),
        optim.textgrad(gate=gate),
        optim.optoprime(gate=gate),
        *(optim.ablation(name, gate=gate, param="answer.instruction") for name in ("one-parameter",)),
        *(optim.ablation(name, gate=gate) for name in optim.ABLATIONS if name not in ("no-gate", "one-parameter")),
    ]
    for optimizer in made:
        assert optimizer.name.endswith("chain(memorization_guard, validation_gate))"), optimizer.name
    with pytest.raises(ValueError, match="min_gain is the default gate's"):
        optim.neighbor_sgd(gate=gate, min_gain=0.1)
    with pytest.raises(ValueError, match="no-gate ablation has no gate to replace"):
        optim.ablation("no-gate", gate=gate)
