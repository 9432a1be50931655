"""The training loop: call counts, the gate, checkpoints and resume, budgets, test-time optimisation."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path

import anyio
import attrs
import pytest

from semgrad._bundled_pairs import gsm8k_sample
from semgrad.backends.fake import FunctionLLM, HashLLM, RecordingLLM, reply_backward, reply_forward, reply_rewrite
from semgrad.backends.simulated import SimulatedLLM
from semgrad.core import Example, GraphBuilder, LLMError, LLMFailure, LLMResponse, optim
from semgrad.core.programs import pure
from semgrad.core.scoring import llm_judge, numeric_match
from semgrad.effects import Budget, CheckpointError, RetryPolicy, fit, fit_sync, retrying
from semgrad.effects._limit import estimate_tokens
from semgrad.topologies import paper_graph

ROOT = Path(__file__).resolve().parents[2]


def _gsm8k(n_train=5):
    samples = gsm8k_sample()
    examples = [Example({"question": q}, a, id=i) for i, (q, a) in enumerate(samples)]
    return SimulatedLLM(dict(samples), seed=5), examples[:n_train], examples[n_train:]


def _demo_fit(*, llm=None, optimizer=None, **options):
    """`fit_sync` on the demo task (paper graph, bundled GSM8K items, simulated LLM): (result, params)."""
    simulated, train, validation = _gsm8k()
    graph, params = paper_graph()
    options = {"train": train, "validation": validation, "loss": numeric_match(), **options}
    result = fit_sync(graph, params, optimizer or optim.neighbor_sgd(k=2), llm=llm or simulated, **options)
    return result, params


@pytest.mark.parametrize(
    ("via_feedback", "rewrite_side"), [(False, {"rewrite": 3}), (True, {"critique": 3, "rewrite": 3})]
)
def test_one_neighbor_sgd_iteration_makes_exactly_the_paper_counts(via_feedback, rewrite_side):
    """One iteration on the paper's graph: 3N forward + 3V once for the initial score + 3V gate,
    2 backward, and 3 rewrite (6 rewrite-side calls with the critique step)."""
    llm, train, validation = _gsm8k()
    rec = RecordingLLM(llm)
    _demo_fit(llm=rec, optimizer=optim.neighbor_sgd(k=2, via_feedback=via_feedback), iterations=1)
    n, v = len(train), len(validation)
    assert dict(rec.counts()) == {"forward": 3 * n + 3 * v + 3 * v, "backward": 2, **rewrite_side}


def test_zero_iterations_with_a_validation_set_only_score_the_initial_params():
    """iterations=0: the validation set is scored once (3V forward calls), nothing else runs, and the score is kept."""
    llm, train, validation = _gsm8k()
    rec = RecordingLLM(llm)
    result, _ = _demo_fit(llm=rec, iterations=0)
    assert dict(rec.counts()) == {"forward": 3 * len(validation)}
    assert result.initial_score == result.best_score == 0.0
    assert len(result.history) == 0


def test_the_demo_task_improves_and_returns_the_best_accepted_params():
    """On the simulated task every accepted update raises the validation score; FitResult.params holds them."""
    result, params = _demo_fit(iterations=3)
    accepted = [r.validation_score for r in result.history if r.accepted]
    assert accepted and accepted == sorted(set(accepted))  # each accepted update beats the one before
    assert all(r.accepted is not None for r in result.history)
    assert result.initial_score == 0.0 and result.best_score == 1.0
    assert result.params.value("answer.instruction") != params.value("answer.instruction")
    assert result.params == result.initial_params.with_values(
        {k: v for r in result.history if r.applied for k, v in r.updates.items()}
    )


def _scripted_gate_llm(better: bool):
    """Forward answers right for even sample questions under the initial instruction; a rewrite makes
    every answer right (better=True) or wrong (better=False)."""

    def answer(request):
        if request.purpose == "rewrite":
            return reply_rewrite(request, "Rewritten instruction.")
        if request.purpose == "backward":
            return "".join(f'<feedback input="{t}">do better</feedback>' for t in request.targets)
        if request.node != "answer":
            return "hint"
        rewritten = "Rewritten instruction." in request.system
        even = any(f"question {i}" in request.prompt for i in (0, 2, 4, 6))
        right = (rewritten and better) or (not rewritten and even)
        return "Answer: 1" if right else "Answer: 2"

    return FunctionLLM(answer)


def _numbered(n, start=0):
    return [Example({"question": f"question {i}"}, "1", id=i) for i in range(start, start + n)]


@pytest.mark.parametrize(
    ("better", "gate", "applied"),
    [(False, True, False), (True, True, True), (False, False, True)],
    ids=["harmful-gated", "helpful-gated", "harmful-ungated"],
)
def test_the_gate_rejects_harm_accepts_help_and_no_gate_always_applies(better, gate, applied):
    """With rewrites that lower the validation score the gate rejects every update and returns the initial
    params; with helpful rewrites they are accepted; with no gate they are always applied."""
    graph, params = paper_graph()
    result = fit_sync(
        graph,
        params,
        optim.neighbor_sgd(k=2, gate=gate),
        train=_numbered(4),
        validation=_numbered(4, 4),
        llm=_scripted_gate_llm(better),
        iterations=2,
    )
    assert all(r.applied == applied for r in result.history[:1])
    if applied:
        assert result.params.value("answer.instruction") == "Rewritten instruction."
    else:
        assert result.params == params
        assert [r.accepted for r in result.history] == [False, False]


def test_checkpoint_none_writes_no_file(tmp_path, monkeypatch):
    """fit(..., checkpoint=None) writes no file anywhere under the working directory."""
    monkeypatch.chdir(tmp_path)
    _demo_fit(iterations=1, checkpoint=None)
    assert list(tmp_path.iterdir()) == []


def test_a_checkpoint_is_json_and_resume_continues_to_the_same_result(tmp_path):
    """A checkpoint is plain JSON; resuming a 2-iteration checkpoint to 4 iterations equals a 4-iteration run."""
    full, _ = _demo_fit(iterations=4)
    path = tmp_path / "ckpt.json"
    _demo_fit(iterations=2, checkpoint=path)
    json.loads(path.read_text())
    rec = RecordingLLM(_gsm8k()[0])
    resumed, _ = _demo_fit(llm=rec, iterations=4, resume=path)
    assert (resumed.params, resumed.history, resumed.best_score) == (full.params, full.history, full.best_score)
    assert sum(rec.counts().values()) == sum(sum(r.calls.values()) for r in full.history[2:])


@attrs.frozen
class _Used:
    """A stage's own state (as docs/optimizers.md's LimitState): how many iterations proposed updates."""

    n: int = 0


def _counting_stage():
    """A stage that keeps its state in `_Used`, never in a closure."""

    def update(step, state, params):
        return pure((step, _Used(state.n + (1 if step.updates else 0))))

    return optim.Transform(lambda params: _Used(), update, "count_updates")


def _with_own_stage():
    return optim.chain(
        optim.select_error_samples(2), optim.backpropagate(), optim.aggregate(), optim.propose_rewrite(),
        optim.full_update(), _counting_stage(), optim.validation_gate(),
    )  # fmt: skip


def test_a_stage_of_your_own_checkpoints_its_state_when_fit_is_told_its_type(tmp_path):
    """With state_types=[its class], a stage's own state is checkpointed and resumes to an uninterrupted run's result;
    without it, the state is refused before any call, and a checkpoint naming it is refused on resume."""
    full, _ = _demo_fit(optimizer=_with_own_stage(), iterations=3)
    path = tmp_path / "ckpt.json"
    rec = RecordingLLM(_gsm8k()[0])
    with pytest.raises(TypeError, match=r"state_types=\[_Used\]"):
        _demo_fit(llm=rec, optimizer=_with_own_stage(), iterations=2, checkpoint=path)
    assert rec.requests == () and not path.exists()  # refused before the first call
    _demo_fit(optimizer=_with_own_stage(), iterations=2, checkpoint=path, state_types=[_Used])
    resumed, _ = _demo_fit(optimizer=_with_own_stage(), iterations=3, resume=path, state_types=[_Used])
    assert (resumed.params, resumed.history) == (full.params, full.history)
    with pytest.raises(CheckpointError, match="which is not a run-state type"):
        _demo_fit(optimizer=_with_own_stage(), iterations=3, resume=path)


@attrs.frozen
class _Seen:
    """A stage's own state that grows: the updated parameters' names, one entry per iteration that updated."""

    names: tuple[str, ...] = ()


def _remembering_stage():
    def update(step, state, params):
        return pure((step, _Seen(state.names + tuple(step.updates or ()))))

    return optim.Transform(lambda params: _Seen(), update, "remember_updates")


def test_a_stage_state_whose_tuple_grew_resumes(tmp_path):
    """A checkpointed state with a typed tuple field longer than its initial one resumes to an uninterrupted run's
    result (it was refused as 'inconsistent', its tuple's length compared with the fresh state's)."""
    graph, params = paper_graph()
    opt = optim.chain(optim.neighbor_sgd(k=1, gate=False), _remembering_stage())
    train = [{"inputs": {"question": "What is 3 + 4?"}, "target": "7"}]
    run = dict(train=train, llm=HashLLM(), state_types=[_Seen])
    full = fit_sync(graph, params, opt, iterations=2, **run)
    fit_sync(graph, params, opt, iterations=1, checkpoint=tmp_path / "ckpt.json", **run)
    resumed = fit_sync(graph, params, opt, iterations=2, resume=tmp_path / "ckpt.json", **run)
    assert (resumed.params, resumed.history) == (full.params, full.history)


def test_state_types_must_be_attrs_classes():
    """state_types lists attrs classes: a bare class, a string or a plain class is a TypeError before any call."""
    for wrong in (_Used, "_Used", [dict]):
        with pytest.raises(TypeError, match="state_types"):
            _demo_fit(optimizer=_with_own_stage(), iterations=1, state_types=wrong)


SCRIPT = textwrap.dedent(
    """
    import os, signal, sys
    from semgrad._bundled_pairs import gsm8k_sample
    from semgrad.backends.simulated import SimulatedLLM
    from semgrad.core import Example, optim
    from semgrad.core.scoring import numeric_match
    from semgrad.effects import fit_sync
    from semgrad.topologies import paper_graph

    checkpoint, log, mode = sys.argv[1], sys.argv[2], sys.argv[3]
    samples = gsm8k_sample()
    examples = [Example({"question": q}, a, id=i) for i, (q, a) in enumerate(samples)]
    inner = SimulatedLLM(dict(samples), seed=5)

    def llm(request):
        with open(log, "a") as f:
            f.write(request.purpose + "\\n")
        return inner(request)

    def progress(event):
        if mode == "kill" and event.phase == "done" and event.iteration == 2:
            os.kill(os.getpid(), signal.SIGKILL)

    graph, params = paper_graph()
    result = fit_sync(graph, params, optim.neighbor_sgd(k=2), train=examples[:5], validation=examples[5:], llm=llm,
                      iterations=4, loss=numeric_match(), checkpoint=checkpoint,
                      resume=checkpoint if mode == "resume" else None,
                      on_progress=progress)
    print(repr(sorted(result.params.texts().items())))
    """
)


@pytest.mark.slow
def test_a_run_killed_after_iteration_2_resumes_to_the_same_result(tmp_path):
    """A real subprocess SIGKILLed after iteration 2 of 4 resumes from its checkpoint to the same params and
    history as an uninterrupted run, making no call for the completed iterations."""
    script = tmp_path / "run.py"
    script.write_text(SCRIPT)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    ckpt, log = tmp_path / "ckpt.json", tmp_path / "calls.log"
    killed = subprocess.run(
        [sys.executable, str(script), str(ckpt), str(log), "kill"], env=env, capture_output=True, text=True, timeout=120
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    first_calls = len(log.read_text().splitlines())
    log.unlink()
    resumed = subprocess.run(
        [sys.executable, str(script), str(ckpt), str(log), "resume"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert resumed.returncode == 0, resumed.stderr
    full, params = _demo_fit(iterations=4)
    graph = paper_graph()[0]
    assert resumed.stdout.strip() == repr(sorted(full.params.texts().items()))
    from semgrad.effects._fit import _RunState

    state = _RunState.load(ckpt, graph, params)
    assert state.history == full.history
    resumed_calls = len(log.read_text().splitlines())
    assert resumed_calls == sum(sum(r.calls.values()) for r in full.history[2:])
    assert first_calls == sum(full.statistics.calls_by_purpose.values()) - resumed_calls


def test_a_budget_stops_cleanly_with_the_best_result_so_far():
    """A call budget ends the run early, keeping the params of the last completed iteration."""
    result, params = _demo_fit(iterations=4, budget=Budget(max_calls=50))
    assert result.stopped == "budget"
    assert len(result.history) == 1 and result.history[0].accepted
    assert result.params == params.with_values(result.history[0].updates)


@pytest.mark.parametrize("reports_usage", [False, True])
def test_a_token_budget_stops_the_run_whether_or_not_replies_report_usage(reports_usage):
    """fit's token budget ends the run when the replies report no usage (their estimates are charged),
    as it does when they report it."""
    simulated, train, validation = _gsm8k()

    def llm(request):
        reply = simulated(request)
        text = reply if isinstance(reply, str) else reply.text
        return LLMResponse(text, {"input_tokens": 300, "output_tokens": 30}) if reports_usage else text

    result, _ = _demo_fit(llm=llm, iterations=4, budget=Budget(max_tokens=5000), max_concurrency=1)
    assert result.stopped == "budget"
    assert len(result.history) < 4


def test_a_token_budget_charges_replies_that_failed_after_being_paid_for():
    """fit's token budget charges the estimate of a call failed as paid (a reply cut at its cap), so it ends the run."""
    calls = []

    def llm(request):
        calls.append(request)
        raise LLMFailure(LLMError("truncated", "stopped at the output-token cap before writing any text"))

    result, _ = _demo_fit(llm=llm, iterations=4, budget=Budget(max_tokens=5000), max_concurrency=1)
    assert result.stopped == "budget"
    assert sum(estimate_tokens(r) for r in calls) <= 5000


def test_a_call_budget_counts_fits_calls_not_the_attempts_below_them():
    """Budget(max_calls=N) lets N of fit's calls through, however many attempts a retrying layer inside
    the LLM makes; the calls it refuses are counted as failed calls of kind 'budget'."""
    simulated, _, _ = _gsm8k()
    attempts = []

    def flaky(request):
        attempts.append(request)
        if len(attempts) % 2:
            raise LLMFailure(LLMError("server", "HTTP 503", retryable=True))
        return simulated(request)

    llm = retrying(flaky, RetryPolicy(base_delay=0.0, jitter=False))
    result, _ = _demo_fit(llm=llm, iterations=2, budget=Budget(max_calls=20), max_concurrency=1)
    refused = result.errors_by_kind["budget"]
    assert result.stopped == "budget" and refused >= 1
    assert result.statistics.calls == 20 + refused and result.errors == refused
    assert len(attempts) == 40


def test_test_time_optimisation_of_a_free_solution_with_an_llm_judge():
    """A free `solution` parameter scored by an LLM judge improves over iterations, and the judge's critique
    is what reaches the rewrite request."""
    b = GraphBuilder()
    solution = b.param("solution", "x = 1", role="a solution to the coding problem")
    b.function("submitted", lambda text: text, inputs=[solution])
    graph, params = b.build(output="submitted")
    rewrites = []

    def llm(request):
        if request.purpose == "evaluate":
            steps = request.prompt.count("refined")
            critique = f"CRITIQUE-{steps}: handle the empty input."
            return f"<score>{min(1.0, steps / 3):.2f}</score><critique>{critique}</critique>"
        if request.purpose == "rewrite":
            rewrites.append(request)
            current = request.prompt.split("<current>\n", 1)[1].split("\n</current>", 1)[0]
            return reply_rewrite(request, current + " refined")
        pytest.fail(f"unexpected call {request.purpose}")

    result = fit_sync(
        graph,
        params,
        optim.neighbor_sgd(k=1, gate=False),
        train=[Example({}, None, id="task")],
        llm=FunctionLLM(llm),
        iterations=3,
        loss=llm_judge("The code must handle empty input."),
    )
    assert list(result.scores) == pytest.approx([0.0, 1 / 3, 2 / 3], abs=0.01)
    assert result.params.value("solution") == "x = 1 refined refined refined"
    assert [f"CRITIQUE-{i}" in r.prompt for i, r in enumerate(rewrites)] == [True, True, True]


def test_bad_arguments_fail_clearly():
    """fit refuses an empty training set and a negative iteration count."""
    graph, params = paper_graph()
    with pytest.raises(ValueError, match="at least one training example"):
        anyio.run(lambda: fit(graph, params, optim.neighbor_sgd(), train=[], llm=lambda r: "", iterations=1))
    with pytest.raises(ValueError, match="iterations must be >= 0"):
        fit_sync(graph, params, optim.neighbor_sgd(), train=_numbered(1), llm=lambda r: "", iterations=-1)


@pytest.mark.parametrize("skip", ["every_k", "apply_if"])
def test_a_step_every_k_or_apply_if_skips_passes_the_gate_with_nothing_to_update(skip):
    """fit with every_k(propose, 2) or apply_if(odd iterations, propose) before the gate: the skipped iteration 0
    makes no call besides the training forward, updates nothing and is rejected; iteration 1 runs the gate."""
    graph, params = paper_graph()
    propose = optim.chain(
        optim.select_error_samples(2),
        optim.backpropagate(),
        optim.aggregate(),
        optim.propose_rewrite(),
        optim.full_update(),
    )
    wrapped = optim.every_k(propose, 2) if skip == "every_k" else optim.apply_if(lambda s: s.iteration % 2, propose)
    rec = RecordingLLM(HashLLM())
    train = [{"inputs": {"question": "q"}, "target": "7"}]
    result = fit_sync(graph, params, optim.chain(wrapped, optim.validation_gate()), train=train, llm=rec, iterations=2)
    first, second = result.history
    assert (dict(first.calls), first.accepted, first.applied, dict(first.updates)) == ({"forward": 3}, False, False, {})
    assert second.accepted is not None and second.validation_score is not None and second.calls["rewrite"] == 3


def _right_once_rewritten(request):
    """Answers '7' once the answer instruction asks for the number only (which every rewrite proposes)."""
    if request.purpose == "forward":
        shown = " ".join(m.content for m in request.messages)
        return reply_forward(request, "7" if "number only" in shown else "seven")
    if request.purpose == "backward":
        return reply_backward(request, {t: "Give the number only." for t in request.targets})
    return reply_rewrite(request, "Give the number only.")


@pytest.mark.parametrize("gate", [True, "always", False])
@pytest.mark.parametrize("held_out", [True, False])
def test_best_score_is_the_gate_s_score_of_the_returned_params_or_none(tmp_path, gate, held_out):
    """Once an update is applied, FitResult.best_score is the gate's score of FitResult.params (the last applied
    candidate's, with a gate or gate='always') or None without a gate (it stayed the initial params' score); a run
    resumed from a checkpoint ends with the same params and best_score."""
    graph, params = paper_graph()
    data = [{"inputs": {"question": "3+4?"}, "target": "7"}]
    options = {"train": data, "validation": data if held_out else (), "llm": _right_once_rewritten}
    result = fit_sync(graph, params, optim.neighbor_sgd(k=1, gate=gate), iterations=2, **options)
    applied = [r for r in result.history if r.applied]
    assert applied and result.params != result.initial_params
    assert result.best_score == (applied[-1].validation_score if gate else None)
    if gate:
        assert result.best_score == 1.0
    path = tmp_path / "ckpt.json"
    fit_sync(graph, params, optim.neighbor_sgd(k=1, gate=gate), iterations=1, checkpoint=path, **options)
    resumed = fit_sync(graph, params, optim.neighbor_sgd(k=1, gate=gate), iterations=2, resume=path, **options)
    assert (resumed.params, resumed.best_score) == (result.params, result.best_score)


def test_one_item_given_for_a_list_of_items_is_refused_naming_the_argument():
    """fit(validation={"inputs": ..., "target": ...}) (one dict, not a list) is a TypeError saying to write [item]."""
    graph, params = paper_graph()
    item = {"inputs": {"question": "What is 3 + 4?"}, "target": "7"}
    for where in ("train", "validation"):
        arguments = {"train": [item], where: item}
        said = rf"^{where}: items must be a list of items, got one item; .* write \[item\]"
        with pytest.raises(TypeError, match=said):
            fit_sync(graph, params, optim.neighbor_sgd(k=1), llm=HashLLM(), iterations=1, **arguments)


def test_a_budget_that_is_neither_a_budget_nor_a_mapping_is_refused_saying_what_to_pass():
    """fit(budget=100) is a TypeError naming Budget and the mapping form, not "'int' object is not iterable"."""
    graph, params = paper_graph()
    train = [{"inputs": {"question": "What is 3 + 4?"}, "target": "7"}]
    said = r"^budget must be a Budget or a mapping such as \{'max_calls': 100\}, got int$"
    with pytest.raises(TypeError, match=said):
        fit_sync(graph, params, optim.neighbor_sgd(k=1), train=train, llm=HashLLM(), iterations=1, budget=100)


def test_a_run_whose_stage_noted_a_number_resumes_from_its_checkpoint(tmp_path):
    """step.noted(stage, 1) keeps the note as the text '1', so the checkpoint fit wrote is read back on resume."""
    graph, params = paper_graph()
    count = optim.stateless(lambda step, params: pure(step.noted("count", len(step.traces))), "count")
    opt = optim.chain(optim.neighbor_sgd(k=1), count)
    run = dict(train=[{"inputs": {"question": "What is 3 + 4?"}, "target": "7"}], llm=HashLLM())
    first = fit_sync(graph, params, opt, iterations=1, checkpoint=tmp_path / "ckpt.json", **run)
    assert first.history[0].report[-1].notes == ("1",)
    resumed = fit_sync(graph, params, opt, iterations=2, resume=tmp_path / "ckpt.json", **run)
    assert resumed.history[0] == first.history[0] and len(resumed.history) == 2


@attrs.frozen
class _Listed:
    """A stage's own state in a list field (the checkpoint writes lists)."""

    names: list[str] = attrs.Factory(list)


@attrs.frozen
class _Sequenced:
    """A stage's own state in a field typed as an abstract sequence."""

    names: Sequence[str] = ()


@pytest.mark.parametrize(("kind", "grown"), [(_Listed, lambda names: [*names, "x"]), (_Sequenced, lambda n: (*n, "x"))])
def test_a_stage_state_with_a_list_field_resumes_from_the_checkpoint_fit_wrote(tmp_path, kind, grown):
    """A state field typed list[str] or Sequence[str] is read back on resume (it was written, then refused)."""
    graph, params = paper_graph()
    grow = optim.Transform(lambda p: kind(), lambda s, st, p: pure((s, kind(grown(st.names)))), "grow")
    opt = optim.chain(optim.neighbor_sgd(k=1, gate=False), grow)
    run = dict(train=[{"inputs": {"question": "What is 3 + 4?"}, "target": "7"}], llm=HashLLM(), state_types=[kind])
    full = fit_sync(graph, params, opt, iterations=2, **run)
    fit_sync(graph, params, opt, iterations=1, checkpoint=tmp_path / "ckpt.json", **run)
    resumed = fit_sync(graph, params, opt, iterations=2, resume=tmp_path / "ckpt.json", **run)
    assert (resumed.params, resumed.history) == (full.params, full.history)


def test_a_state_class_read_from_a_checkpoint_is_not_kept_alive_by_the_reader():
    """The checkpoint reader's memo of a class's fields holds the class weakly: a user's state class made for one
    run (a test's, say) is freed once nothing else holds it."""
    import gc
    import weakref

    from semgrad.effects._checkpoint import _field_types

    @attrs.frozen
    class Local:
        names: tuple[str, ...] = ()

    assert _field_types(Local) == {"names": ("names", tuple[str, ...], False)}
    ref = weakref.ref(Local)
    del Local
    gc.collect()
    assert ref() is None


def test_a_checkpoint_numbered_from_0_by_an_older_semgrad_resumes_numbered_from_1(tmp_path):
    """Iterations are numbered from 1 (as the CLI and the report number them); a checkpoint an older semgrad
    wrote, its history numbered from 0, is read renumbered and resumes, not refused as inconsistent."""
    import json

    from semgrad.backends import fake
    from semgrad.core import GraphBuilder, optim

    b = GraphBuilder()
    b.llm("answer", inputs=[b.input("question")], instruction="Answer.")
    graph, params = b.build(output="answer")
    items = [{"inputs": {"question": f"{i}?"}, "target": str(i), "id": i} for i in range(4)]
    ckpt = tmp_path / "ckpt.json"

    def run(iterations, resume=None):
        return fit_sync(
            graph, params, optim.neighbor_sgd(k=1), train=items[:2], validation=items[2:], llm=fake.HashLLM(),
            iterations=iterations, checkpoint=ckpt, resume=resume,
        )  # fmt: skip

    assert [r.iteration for r in run(2).history] == [1, 2]
    data = json.loads(ckpt.read_text())
    for record in data["state"]["fields"]["history"]["$tuple"]:
        record["fields"]["iteration"] -= 1  # as an older semgrad numbered them
    ckpt.write_text(json.dumps(data))
    assert [r.iteration for r in run(3, resume=ckpt).history] == [1, 2, 3]
