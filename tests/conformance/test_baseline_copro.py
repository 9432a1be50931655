"""`optim.copro()` against the real DSPy COPRO (dspy 3.4.1), offline, on the paper's graph.

DSPy side: the graph as a `dspy.Module` of three `Predict`s (their instructions are
ours), compiled by ``COPRO(breadth=3, depth=2)`` on two training items with a
recording `DummyLM` subclass (no network, no cache: every call reaches it). Our
side: ``optim.copro(breadth=3, depth=2)``, one round per update, with a fake that
gives the same candidates and the same forward answers: the answer is right only
under one particular candidate instruction, so both must find it. We compare the
calls per purpose (one generation call per parameter and round, with the same
number of candidates; every candidate scored on the whole training set), what each
generation prompt shows, and the result. DSPy's output-field prefix has no
counterpart in a semgrad graph and is left out.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from semgrad.core import Example, LLMRequest, exact_match, forward, optim
from semgrad.core.optim import Step
from semgrad.effects import run_sync

from ._baselines import SAMPLES, SemgradFake, forward_value, import_peer, paper_graph

# The peer's own warnings (deprecations in its dependencies) are not ours to fail on.
pytestmark = pytest.mark.filterwarnings("ignore")

BREADTH, DEPTH = 3, 2
NODES = ("hint_1", "hint_2", "answer")


def _roles() -> dict[str, str]:
    _, params = paper_graph()
    return {n: params[f"{n}.instruction"].role for n in NODES}


def candidate(node: str, index: int, round_: int) -> str:
    """The `index`-th candidate both fakes propose for `node` in generation round `round_` (1-based)."""
    return f"improved {_roles()[node]} #{index} (round {round_})"


#: The answer node is right only under this instruction.
WINNER = candidate("answer", 2, 1)


def answer_for(node: str, question: str, instruction: str) -> str:
    """Both fakes' forward answer."""
    if node == "answer" and WINNER in instruction:
        return "Answer: " + next(t for q, t, _ in SAMPLES if q == question)
    return forward_value(node, question)


def _node_of_generation(text: str, instructions: dict[str, str]) -> str:
    roles = _roles()
    for node in NODES:
        if roles[node] in text or instructions[node] in text:
            return node
    raise AssertionError(f"no parameter in generation prompt {text[:200]!r}")


def _dspy_run() -> dict[str, Any]:
    dspy = import_peer("dspy")
    from dspy.teleprompt import COPRO
    from dspy.utils.dummies import DummyLM

    graph, params = paper_graph()
    initial = {n: params.value(f"{n}.instruction") for n in NODES}
    rounds: dict[str, int] = {}

    class Reply(dict):
        """DummyLM's answer table, computed from the messages of the current call."""

        def __init__(self, lm: Any) -> None:
            super().__init__({"": {}})
            self.lm = lm

        def items(self) -> Any:
            return [("", self.lm.reply())]

    class RecordingLM(DummyLM):
        """Records every call (its messages and the completions asked for) and answers like our fake."""

        def __init__(self) -> None:
            super().__init__({"": {}})
            self.answers = Reply(self)
            self.calls: list[dict[str, Any]] = []

        def forward(self, prompt: Any = None, messages: Any = None, **kwargs: Any) -> Any:
            system, user = messages[0]["content"], messages[-1]["content"]
            generation = "proposed_instruction" in system
            call = {"purpose": "rewrite" if generation else "forward", "user": user, "n": kwargs.get("n") or 1}
            if generation:
                node = _node_of_generation(user, initial)
                rounds[node] = rounds.get(node, 0) + 1
                call.update(node=node, round=rounds[node], made=0)
            else:
                outputs = system.split("Your output fields are:")[1].split("All interactions")[0]
                call["node"] = next(n for n in NODES if f"`{n}`" in outputs)
                call["system"] = system
            self.calls.append(call)
            return super().forward(prompt=prompt, messages=messages, **kwargs)

        def reply(self) -> dict[str, str]:
            call = self.calls[-1]
            if call["purpose"] == "rewrite":
                call["made"] += 1
                text = candidate(call["node"], call["made"], call["round"])
                return {"proposed_instruction": text, "proposed_prefix_for_output_field": "Result:"}
            question = next(q for q, _, _ in SAMPLES if q in call["user"])
            return {call["node"]: answer_for(call["node"], question, call["system"])}

    lm = RecordingLM()
    dspy.configure(lm=lm)
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
    teleprompter = COPRO(metric=metric, breadth=BREADTH, depth=DEPTH)
    settings = {"num_threads": 1, "display_progress": False}
    compiled = teleprompter.compile(Paper(), trainset=trainset, eval_kwargs=settings)
    final = {name: p.signature.instructions for name, p in compiled.named_predictors()}
    return {"calls": lm.calls, "final": final}


class _Fake(SemgradFake):
    """Our fake for COPRO: the same candidates and the same forward answers as DSPy's."""

    def __call__(self, request: LLMRequest) -> str:
        from semgrad.backends.fake import reply_forward, reply_rewrites

        self.requests.append(request)
        if request.purpose == "rewrite":
            node = str(request.node).split(".")[0]
            round_ = sum(1 for r in self.requests if r.purpose == "rewrite" and r.node == request.node)
            return reply_rewrites(request, {t: candidate(node, i, round_) for i, t in enumerate(request.targets, 1)})
        question = next(q for q, _, _ in SAMPLES if q in request.prompt)
        return reply_forward(request, answer_for(str(request.node), question, request.system))


def _semgrad_run() -> dict[str, Any]:
    graph, params = paper_graph()
    fake = _Fake(graph, params)
    train = tuple(Example({"question": q}, t, id=i) for q, t, i in SAMPLES)
    traces = tuple(run_sync(forward(graph, params, e.inputs, sample=e.id), fake) for e in train)
    scores = tuple(run_sync(exact_match()(e, t), fake) for e, t in zip(train, traces))
    fake.requests.clear()
    opt = optim.copro(breadth=BREADTH, depth=DEPTH)
    state, current = opt.init(params), params
    step = Step(graph, 0, train, traces, scores, (), exact_match())
    for _ in range(DEPTH):
        new, state = run_sync(opt.update(step, state, current), fake)
        current = current.with_values(new.updates)
    return {"fake": fake, "final": {n: current.value(f"{n}.instruction") for n in NODES}}


@pytest.fixture(scope="module")
def runs() -> tuple[dict[str, Any], dict[str, Any]]:
    """Both runs, once for the module."""
    return _dspy_run(), _semgrad_run()


def test_same_calls_per_purpose(runs: Any) -> None:
    """Same generation calls (per parameter and round, same number of candidates) and same scoring calls."""
    theirs, ours = runs
    requests = ours["fake"].requests
    theirs_gen = [(c["node"], c["round"], c["n"]) for c in theirs["calls"] if c["purpose"] == "rewrite"]
    ours_gen = [
        (str(r.node).split(".")[0], sum(1 for s in requests[: i + 1] if s.purpose == "rewrite" and s.node == r.node),
         len(r.targets))
        for i, r in enumerate(requests)
        if r.purpose == "rewrite"
    ]  # fmt: skip
    assert sorted(theirs_gen) == sorted(ours_gen)
    assert sorted(theirs_gen) == sorted((n, d, BREADTH - 1 if d == 1 else BREADTH) for n in NODES for d in (1, 2))
    theirs_forward = sum(1 for c in theirs["calls"] if c["purpose"] == "forward")
    assert theirs_forward == ours["fake"].counts()["forward"] == 3 * (BREADTH + 2 * BREADTH) * len(SAMPLES) * 3


def test_generation_prompts_show_what_copros_show(runs: Any) -> None:
    """The first prompt shows the current instruction; later ones every attempt, worst first, with its score."""
    theirs, ours = runs
    requests = [r for r in ours["fake"].requests if r.purpose == "rewrite"]
    for call in (c for c in theirs["calls"] if c["purpose"] == "rewrite"):
        mine = next(
            r.prompt for i, r in enumerate(requests)
            if str(r.node).startswith(call["node"] + ".")
            and sum(1 for s in requests[: i + 1] if s.node == r.node) == call["round"]
        )  # fmt: skip
        if call["round"] == 1:
            basic = call["user"].split("[[ ## basic_instruction ## ]]")[1].split("\n\n")[0].strip()
            assert basic and basic in mine
            continue
        tried = re.findall(r"«Instruction #\d+: (.*?)»", call["user"])
        scored = [float(s) / 100 for s in re.findall(r"«Resulting Score #\d+: ([\d.]+)»", call["user"])]
        assert len(tried) == BREADTH
        assert re.findall(r"(?m)^Instruction: (.*)$", mine) == tried
        assert [float(s) for s in re.findall(r"(?m)^Score: ([\d.]+)$", mine)] == scored


def test_both_find_the_same_instructions(runs: Any) -> None:
    """Both end with the same instruction per parameter (the answer node's winning candidate)."""
    theirs, ours = runs
    assert ours["final"]["answer"] == WINNER
    assert theirs["final"] == ours["final"]
