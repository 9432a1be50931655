"""`optim.copro()` against the real DSPy COPRO (dspy 3.4.1), offline, on the paper's graph.

DSPy side: the graph as a `dspy.Module` of three `Predict`s (their instructions are
ours), compiled by ``COPRO(breadth=3, depth=...)`` on two training items, its task model and
its prompt model each a recording `DummyLM` subclass (no network, no cache: every call
reaches them). Our side: ``optim.copro(breadth=3, depth=...)``, one round per update, with a
fake that gives the same candidates and the same forward answers. Two scenarios:

* ``answer``: the answer is right only under one particular candidate instruction of the
  answer node (two rounds), so both must find it;
* ``ties``: one candidate of ``hint_1`` makes every answer right, so every candidate of the
  nodes scored after it ties: DSPy returns the program of that single best evaluation, in
  which the other instructions are still the ones they started with, not each node's best
  (the first of its ties) combined.

We compare the calls per purpose (per parameter and round, as many independent proposals as
DSPy's ``n`` completions; every candidate scored on the whole training set), which model
(task or prompt) and sampling options each call gets, what each proposal prompt shows, and
the result. DSPy's output-field prefix has no counterpart in a semgrad graph and is left out.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from semgrad.core import Example, LLMRequest, forward, optim
from semgrad.core.optim import Step
from semgrad.core.scoring import exact_match
from semgrad.effects import run_sync

from ._baselines import SAMPLES, SemgradFake, forward_value, import_peer, paper_graph

# The peer's own warnings (deprecations in its dependencies) are not ours to fail on.
pytestmark = pytest.mark.filterwarnings("ignore")

BREADTH = 3
NODES = ("hint_1", "hint_2", "answer")
TEMPERATURE = 1.4  # DSPy's default init_temperature
#: Per scenario: the node one of whose first-round candidates wins, and the rounds run.
SCENARIOS = {"answer": ("answer", 2), "ties": ("hint_1", 1)}


def _roles() -> dict[str, str]:
    _, params = paper_graph()
    return {n: params[f"{n}.instruction"].role for n in NODES}


def _initial() -> dict[str, str]:
    _, params = paper_graph()
    return {n: params.value(f"{n}.instruction") for n in NODES}


def candidate(node: str, index: int, round_: int) -> str:
    """The `index`-th candidate both fakes propose for `node` in generation round `round_` (1-based)."""
    return f"improved {_roles()[node]} #{index} (round {round_})"


def winner(scenario: str) -> str:
    """The candidate that makes answers right in `scenario`: the second of its node's first round."""
    return candidate(SCENARIOS[scenario][0], 2, 1)


def answer_for(scenario: str, node: str, question: str, instruction: str, shown: str) -> str:
    """Both fakes' forward answer: under the winner, the answer node answers right (``answer``), or
    hint_1 writes a step that makes the answer node answer right (``ties``); `shown` is the call's input."""
    won = winner(scenario) in instruction
    qid = next(i for q, _, i in SAMPLES if q == question)
    if node == SCENARIOS[scenario][0] == "hint_1" and won:
        return f"first step RIGHT for {qid}"
    if node == "answer" and (won or f"RIGHT for {qid}" in shown):
        return "Answer: " + next(t for q, t, _ in SAMPLES if q == question)
    return forward_value(node, question)


def _node_of_generation(text: str, instructions: dict[str, str]) -> str:
    roles = _roles()
    for node in NODES:
        if roles[node] in text or instructions[node] in text:
            return node
    raise AssertionError(f"no parameter in generation prompt {text[:200]!r}")


def _dspy_run(scenario: str) -> dict[str, Any]:
    dspy = import_peer("dspy")
    from dspy.teleprompt import COPRO
    from dspy.utils.dummies import DummyLM

    initial = _initial()
    rounds: dict[str, int] = {}
    calls: list[dict[str, Any]] = []

    class Reply(dict):
        """DummyLM's answer table, computed from the messages of the current call."""

        def __init__(self, lm: Any) -> None:
            super().__init__({"": {}})
            self.lm = lm

        def items(self) -> Any:
            return [("", self.lm.reply())]

    class RecordingLM(DummyLM):
        """Records every call (its model, messages, options and completions asked for); answers like our fake."""

        def __init__(self, label: str) -> None:
            super().__init__({"": {}})
            self.answers = Reply(self)
            self.label = label

        def forward(self, prompt: Any = None, messages: Any = None, **kwargs: Any) -> Any:
            system, user = messages[0]["content"], messages[-1]["content"]
            generation = "proposed_instruction" in system
            call = {
                "purpose": "rewrite" if generation else "forward",
                "model": self.label,
                "options": dict(kwargs),
                "user": user,
                "n": kwargs.get("n") or 1,
            }
            if generation:
                node = _node_of_generation(user, initial)
                rounds[node] = rounds.get(node, 0) + 1
                call.update(node=node, round=rounds[node], made=0)
            else:
                outputs = system.split("Your output fields are:")[1].split("All interactions")[0]
                call["node"] = next(n for n in NODES if f"`{n}`" in outputs)
                call["system"] = system
            calls.append(call)
            return super().forward(prompt=prompt, messages=messages, **kwargs)

        def reply(self) -> dict[str, str]:
            call = calls[-1]
            if call["purpose"] == "rewrite":
                call["made"] += 1
                text = candidate(call["node"], call["made"], call["round"])
                return {"proposed_instruction": text, "proposed_prefix_for_output_field": "Result:"}
            question = next(q for q, _, _ in SAMPLES if q in call["user"])
            return {call["node"]: answer_for(scenario, call["node"], question, call["system"], call["user"])}

    dspy.configure(lm=RecordingLM("task"))
    dspy.configure_cache(enable_disk_cache=False, enable_memory_cache=False)

    class Paper(dspy.Module):
        def __init__(self) -> None:
            super().__init__()
            self.hint_1 = dspy.Predict(dspy.Signature("question -> hint_1", initial["hint_1"]))
            self.hint_2 = dspy.Predict(dspy.Signature("question -> hint_2", initial["hint_2"]))
            self.answer = dspy.Predict(dspy.Signature("question, hint_1, hint_2 -> answer", initial["answer"]))

        def forward(self, question: str) -> Any:
            h1 = self.hint_1(question=question).hint_1
            h2 = self.hint_2(question=question).hint_2
            return self.answer(question=question, hint_1=h1, hint_2=h2)

    def metric(example: Any, prediction: Any, trace: Any = None) -> bool:
        return prediction.answer.rsplit("Answer:", 1)[-1].strip() == example.answer

    trainset = [dspy.Example(question=q, answer=t).with_inputs("question") for q, t, _ in SAMPLES]
    depth = SCENARIOS[scenario][1]
    teleprompter = COPRO(prompt_model=RecordingLM("prompt"), metric=metric, breadth=BREADTH, depth=depth)
    settings = {"num_threads": 1, "display_progress": False}
    compiled = teleprompter.compile(Paper(), trainset=trainset, eval_kwargs=settings)
    final = {name: p.signature.instructions for name, p in compiled.named_predictors()}
    return {"calls": calls, "final": final}


class _Fake(SemgradFake):
    """Our fake for COPRO: the same candidates and the same forward answers as DSPy's."""

    scenario = "answer"

    def __call__(self, request: LLMRequest) -> str:
        from semgrad.backends.fake import reply_forward, reply_rewrite

        self.requests.append(request)
        if request.purpose == "rewrite":
            node = str(request.node).split(".")[0]
            round_ = sum(1 for r in self.requests if r.purpose == "rewrite" and r.node == request.node and r.draw == 0)
            return reply_rewrite(request, candidate(node, request.draw + 1, round_))
        question = next(q for q, _, _ in SAMPLES if q in request.prompt)
        return reply_forward(request, answer_for(self.scenario, str(request.node), question, request.system,
                                                 request.prompt))  # fmt: skip


def _semgrad_run(scenario: str) -> dict[str, Any]:
    graph, params = paper_graph()
    fake = _Fake(graph, params)
    fake.scenario = scenario
    train = tuple(Example({"question": q}, t, id=i) for q, t, i in SAMPLES)
    traces = tuple(run_sync(forward(graph, params, e.inputs, sample=e.id), fake) for e in train)
    scores = tuple(run_sync(exact_match()(e, t), fake) for e, t in zip(train, traces))
    fake.requests.clear()
    depth = SCENARIOS[scenario][1]
    opt = optim.copro(breadth=BREADTH, depth=depth)
    state, current = opt.init(params), params
    step = Step(graph, 0, train, traces, scores, (), exact_match())
    for _ in range(depth):
        new, state = run_sync(opt.update(step, state, current), fake)
        current = current.with_values(new.updates)
    return {"fake": fake, "final": {n: current.value(f"{n}.instruction") for n in NODES}}


@pytest.fixture(scope="module", params=sorted(SCENARIOS))
def runs(request: Any) -> tuple[dict[str, Any], dict[str, Any], str]:
    """Both runs of a scenario, once for the module."""
    return _dspy_run(request.param), _semgrad_run(request.param), request.param


def _our_generations(requests: list[LLMRequest]) -> dict[tuple[str, int], list[LLMRequest]]:
    """Our proposal requests by (node, round): a round starts at each node's draw 0."""
    found: dict[tuple[str, int], list[LLMRequest]] = {}
    rounds: dict[str, int] = {}
    for r in requests:
        if r.purpose != "rewrite":
            continue
        node = str(r.node).split(".")[0]
        rounds[node] = rounds.get(node, 0) + (r.draw == 0)
        found.setdefault((node, rounds[node]), []).append(r)
    return found


def test_same_calls_per_purpose(runs: Any) -> None:
    """Per parameter and round, as many independent proposals (draws 0..n-1, one request each) as DSPy asks
    completions of (breadth - 1, then breadth), and the same scoring calls."""
    theirs, ours, scenario = runs
    depth = SCENARIOS[scenario][1]
    requests = ours["fake"].requests
    theirs_gen = sorted((c["node"], c["round"], c["n"]) for c in theirs["calls"] if c["purpose"] == "rewrite")
    mine = _our_generations(requests)
    assert all([r.draw for r in batch] == list(range(len(batch))) for batch in mine.values())
    assert theirs_gen == sorted((node, round_, len(batch)) for (node, round_), batch in mine.items())
    assert theirs_gen == sorted((n, d, BREADTH - 1 if d == 1 else BREADTH) for n in NODES for d in range(1, depth + 1))
    theirs_forward = sum(1 for c in theirs["calls"] if c["purpose"] == "forward")
    scored = sum(BREADTH * (d + 1) for d in range(depth))  # with several predictors, every candidate so far
    assert theirs_forward == ours["fake"].counts()["forward"] == 3 * scored * len(SAMPLES) * 3


def test_each_call_has_dspys_model_and_sampling_options(runs: Any) -> None:
    """Proposals go to the optimizer's model at DSPy's temperature (1.4), scoring to the task model with the
    run's own options: each request's engine and options are those of the DSPy call it stands for."""
    theirs, ours, _ = runs
    engine = {"prompt": "optimizer", "task": "forward"}
    for purpose in ("rewrite", "forward"):
        calls = [c for c in theirs["calls"] if c["purpose"] == purpose]
        requests = [r for r in ours["fake"].requests if r.purpose == purpose]
        assert {engine[c["model"]] for c in calls} == {r.engine for r in requests} == {engine[calls[0]["model"]]}
        theirs_temperature = {c["options"].get("temperature") for c in calls}
        assert theirs_temperature == {r.options.get("temperature") for r in requests}
    assert {c["options"].get("temperature") for c in theirs["calls"] if c["purpose"] == "rewrite"} == {TEMPERATURE}
    assert all(dict(r.options) == {"temperature": TEMPERATURE} for r in ours["fake"].requests if r.purpose == "rewrite")


def test_generation_prompts_show_what_copros_show(runs: Any) -> None:
    """The first prompt shows the current instruction; later ones every attempt, worst first, with its score."""
    theirs, ours, _ = runs
    mine = _our_generations(ours["fake"].requests)
    for call in (c for c in theirs["calls"] if c["purpose"] == "rewrite"):
        prompts = {r.prompt for r in mine[(call["node"], call["round"])]}
        assert len(prompts) == 1  # n draws of one prompt
        (prompt,) = prompts
        if call["round"] == 1:
            basic = call["user"].split("[[ ## basic_instruction ## ]]")[1].split("\n\n")[0].strip()
            assert basic and basic in prompt
            continue
        tried = re.findall(r"«Instruction #\d+: (.*?)»", call["user"])
        scored = [float(s) / 100 for s in re.findall(r"«Resulting Score #\d+: ([\d.]+)»", call["user"])]
        assert len(tried) == BREADTH
        assert re.findall(r"(?m)^Instruction: (.*)$", prompt) == tried
        assert [float(s) for s in re.findall(r"(?m)^Score: ([\d.]+)$", prompt)] == scored


def test_both_return_the_program_of_the_single_best_evaluation(runs: Any) -> None:
    """Both end with the same instruction per parameter: the program of the best evaluation (with ties, the
    first), not each parameter's best combined."""
    theirs, ours, scenario = runs
    assert theirs["final"] == ours["final"]
    if scenario == "answer":
        assert ours["final"]["answer"] == winner(scenario)
    else:  # the other nodes stay as they were in hint_1's winning evaluation
        assert ours["final"] == {**_initial(), "hint_1": winner(scenario)}
