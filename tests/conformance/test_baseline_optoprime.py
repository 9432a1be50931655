"""`optim.optoprime()` against the real Trace OptoPrime (PyPI ``trace-opt`` 0.1.3.8), offline, on the paper's graph.

CI installs ``trace-opt`` (the ``test`` extra; about a minute) and these tests run the package
itself; where it is missing they compare against the calls, options and prompt recorded from it
(``recorded/trace-opt-0.1.3.8-optoprime.json``, written by this module's `record`).

Trace side: each LLM node is a `bundle` whose body asks a recording fake; the
instructions are trainable `node`s (their role as the constraint); the two error
samples' answers are joined by a ``batchify`` bundle and given one feedback text
with a line per sample (how Trace steps on a batch: later Trace versions ship this
``batchify``); then ``zero_feedback, backward, step`` with a fake OptoPrime LLM. Our
side: the same samples through ``optim.optoprime(k=2)`` with a fake that replies in the package's JSON
shape. We compare the calls per purpose and their options (JSON mode, the 4,096-token cap),
and check that every value OptoPrime's prompt shows is in ours.
"""

from __future__ import annotations

import importlib.util
import json
import re
import types
from pathlib import Path
from typing import Any

import pytest

from semgrad.core import Example, LLMRequest, forward, optim
from semgrad.core.optim import Step
from semgrad.core.scoring import exact_match
from semgrad.effects import run_sync

from ._baselines import (
    HINT_1,
    HINT_2,
    SAMPLES,
    SOLVE,
    SemgradFake,
    forward_value,
    import_peer,
    new_value,
    paper_graph,
    pieces_missing,
)

# The peer's own warnings (deprecations in its dependencies) are not ours to fail on.
pytestmark = pytest.mark.filterwarnings("ignore")

NODE_OF = {HINT_1: "hint_1", HINT_2: "hint_2", SOLVE: "answer"}
RECORDED = Path(__file__).parent / "recorded" / "trace-opt-0.1.3.8-optoprime.json"
SECTIONS = ("#Instruction", "#Code", "#Documentation", "#Variables", "#Constraints", "#Inputs", "#Others",
            "#Outputs", "#Feedback")  # fmt: skip


def _section(prompt: str, name: str) -> str:
    after = prompt.split(f"\n{name}\n", 1)[1]
    ends = [after.index(f"\n{s}\n") for s in SECTIONS if f"\n{s}\n" in after] + [after.index("\n=====")]
    return after[: min(ends)].strip()


def _entries(section: str, sep: str = "=") -> dict[str, str]:
    """``(type) name=value`` entries (values may span lines) by name."""
    parts = re.split(rf"(?m)^\(\w+\) ([^\s=:]+){re.escape(sep)}", section)
    return {parts[i]: parts[i + 1].strip() for i in range(1, len(parts) - 1, 2)}


def _semgrad_scores() -> tuple[Any, ...]:
    graph, params = paper_graph()
    fake = SemgradFake(graph, params)
    train = tuple(Example({"question": q}, t, id=i) for q, t, i in SAMPLES)
    traces = tuple(run_sync(forward(graph, params, e.inputs, sample=e.id), fake) for e in train)
    scores = tuple(run_sync(exact_match()(e, t), fake) for e, t in zip(train, traces))
    return graph, params, fake, train, traces, scores


def _trace_run() -> dict[str, Any]:
    """Forward both samples in Trace, backward the batched output with one feedback text, one OptoPrime step."""
    import_peer("opto")
    from opto.optimizers import OptoPrime
    from opto.trace import bundle, node

    graph, params, _, _, _, scores = _semgrad_scores()
    calls: list[tuple[str, str]] = []
    system: list[str] = []
    options: list[dict[str, Any]] = []

    def model(instruction: str, question: str) -> str:
        calls.append(("forward", instruction))
        return forward_value(NODE_OF[instruction], question)

    @bundle()
    def llm(instruction: str, question: str) -> str:
        """Asks a language model: the instruction is its system prompt and the question its user message."""
        return model(instruction, question)

    @bundle()
    def llm_answer(instruction: str, question: str, hint_1: str, hint_2: str) -> str:
        """Asks a language model: the instruction is its system prompt; the question and hints its user message."""
        return model(instruction, question)

    @bundle()
    def batchify(*items: str) -> str:
        """Joins the outputs of several runs, one per line with its id."""
        return "".join(f"ID [{i}]: {item}\n" for i, item in enumerate(items))

    class FakeLLM:
        """OptoPrime's model: records the prompt, suggests a new value for every variable."""

        def __call__(self, messages: list[dict[str, str]], **kwargs: Any) -> Any:
            user = messages[1]["content"]
            calls.append(("rewrite", user))
            options.append(dict(kwargs))
            system.append(messages[0]["content"])
            roles = _entries(_section(user, "#Constraints"), ": ")
            suggestion = {n: new_value(r) for n, r in roles.items()}
            content = json.dumps({"reasoning": "", "answer": "", "suggestion": suggestion})
            message = types.SimpleNamespace(content=content)
            return types.SimpleNamespace(choices=[types.SimpleNamespace(message=message)])

    instructions = {
        name: node(params.value(f"{name}.instruction"), name=name, trainable=True,
                   constraint=params[f"{name}.instruction"].role)
        for name in ("hint_1", "hint_2", "answer")
    }  # fmt: skip
    answers = []
    for question, _, _ in SAMPLES:
        q = node(question, name="question")
        hints = [llm(instructions[n], q) for n in ("hint_1", "hint_2")]
        answers.append(llm_answer(instructions["answer"], q, *hints))
    feedback = "".join(f"ID [{i}]: {s.feedback}\n" for i, s in enumerate(scores))
    optimizer = OptoPrime(list(instructions.values()), llm=FakeLLM())
    optimizer.zero_feedback()
    optimizer.backward(batchify(*answers), feedback)
    optimizer.step()
    new = {n: v.data for n, v in instructions.items()}
    return {"calls": calls, "system": system[0], "options": options[0], "new": new}


def record() -> None:
    """Write the recording from the installed package (run with ``trace-opt`` 0.1.3.8 installed)."""
    from importlib.metadata import version

    assert version("trace-opt") == "0.1.3.8", version("trace-opt")
    run = _trace_run()
    data = {
        "package": "trace-opt",
        "version": "0.1.3.8",
        "source": "opto/optimizers/optoprime.py: OptoPrime.construct_prompt, problem_instance and call_llm, "
        "as run by tests/conformance/test_baseline_optoprime.py::_trace_run",
        "calls": run["calls"],
        "system": run["system"],
        "options": run["options"],
        "new": run["new"],
    }
    RECORDED.parent.mkdir(exist_ok=True)
    RECORDED.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", "utf-8")


def _theirs() -> dict[str, Any]:
    """The live package's run when ``trace-opt`` is installed, else the recording."""
    if importlib.util.find_spec("opto") is not None:
        return _trace_run()
    data = json.loads(RECORDED.read_text("utf-8"))
    assert (data["package"], data["version"]) == ("trace-opt", "0.1.3.8")
    calls = [tuple(c) for c in data["calls"]]
    return {"calls": calls, "system": data["system"], "options": data["options"], "new": data["new"]}


class _JsonFake(SemgradFake):
    """Our fake for OptoPrime: the same forward outputs; the optimizer call answered in the package's JSON."""

    def __call__(self, request: LLMRequest) -> str:
        if request.purpose != "rewrite":
            return super().__call__(request)
        self.requests.append(request)
        suggestion = {t: new_value(self.role(t)) for t in request.targets}
        return json.dumps({"reasoning": "", "answer": "", "suggestion": suggestion})


def _semgrad_run() -> dict[str, Any]:
    graph, params, _, train, traces, scores = _semgrad_scores()
    fake = _JsonFake(graph, params)
    opt = optim.optoprime(k=2)
    step, _ = run_sync(opt.update(Step(graph, 0, train, traces, scores, (), exact_match()), opt.init(params), params),
                       fake)  # fmt: skip
    return {"fake": fake, "step": step, "params": params}


@pytest.fixture(scope="module")
def runs() -> tuple[dict[str, Any], dict[str, Any]]:
    """Both runs, once for the module."""
    return _theirs(), _semgrad_run()


def test_same_calls_per_purpose(runs: Any) -> None:
    """Like OptoPrime, ours makes one optimizer call per step and no backward call."""
    theirs, ours = runs
    purposes = [p for p, _ in theirs["calls"]]
    assert purposes.count("forward") == 6 and purposes.count("rewrite") == 1
    assert ours["fake"].counts() == {"rewrite": 1}


def test_every_parameter_gets_the_suggested_value(runs: Any) -> None:
    """Both apply the suggestion to every trainable parameter at once."""
    theirs, ours = runs
    params = ours["params"]
    assert theirs["new"] == {n: new_value(params[f"{n}.instruction"].role) for n in ("hint_1", "hint_2", "answer")}
    assert dict(ours["step"].updates) == {f"{n}.instruction": v for n, v in theirs["new"].items()}


def test_the_prompt_shows_what_optoprimes_shows(runs: Any) -> None:
    """Every variable, constraint, input, intermediate value, output and feedback OptoPrime shows is in ours."""
    theirs, ours = runs
    prompt = next(text for purpose, text in theirs["calls"] if purpose == "rewrite")
    (request,) = ours["fake"].requests
    mine = "\n".join(m.content for m in request.messages)
    pieces = [*_entries(_section(prompt, "#Variables")).values()]
    pieces += _entries(_section(prompt, "#Constraints"), ": ").values()
    pieces += _entries(_section(prompt, "#Inputs")).values()
    pieces += _entries(_section(prompt, "#Others")).values()
    for section in ("#Outputs", "#Feedback"):
        text = _section(prompt, section).split("=", 1)[-1] if section == "#Outputs" else _section(prompt, section)
        pieces += [p.strip() for p in re.split(r"ID \[\d+\]: ", text) if p.strip()]
    assert len(pieces) >= 3 + 3 + 2 + 6 + 2 + 2
    assert pieces_missing(pieces, mine) == []
    # The code: one call per LLM node and sample there; one line per node, with its instruction and inputs, here.
    code = _section(prompt, "#Code")
    assert code.count("llm(") == 4 and code.count("llm_answer(") == 2
    for line in ("hint_1 = llm(hint_1.instruction, question)", "hint_2 = llm(hint_2.instruction, question)",
                 "answer = llm(answer.instruction, question, hint_1, hint_2)"):  # fmt: skip
        assert line in mine


if __name__ == "__main__":
    record()


def test_the_call_has_optoprimes_options(runs: Any) -> None:
    """Like OptoPrime's call, ours asks for JSON mode with a 4,096-token cap, from the optimizer's model."""
    theirs, ours = runs
    (request,) = ours["fake"].requests
    assert theirs["options"] == {"response_format": {"type": "json_object"}, "max_tokens": 4096}
    assert {k: request.options[k] for k in theirs["options"]} == theirs["options"]
    assert request.engine == "optimizer"


def test_the_prompts_add_no_sentence_the_package_lacks(runs: Any) -> None:
    """Neither prompt tells the optimizer to write general improvements rather than answers to the runs."""
    theirs, ours = runs
    (request,) = ours["fake"].requests
    for text in (theirs["system"], *(p for _, p in theirs["calls"])):
        assert "general improvement" not in text.lower()
    assert "general improvement" not in "\n".join(m.content for m in request.messages).lower()
