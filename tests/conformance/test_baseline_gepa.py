"""`optim.gepa()` against GEPA itself (the `gepa` package, 0.1.4), offline, on the same system and data.

GEPA side: ``gepa.optimize`` with a recording fake task model and a recording fake reflection
model (plain callables: no network), and a callback that snapshots, per iteration, the parent
it drew, the minibatch, the verdict, the metric calls spent and the per-instance front. Our
side: ``fit`` with ``optim.gepa(...)`` and fakes that answer the same way, its checkpoint read
back for the search's lineage and pool. Three scenarios:

* ``held-out``: one component (GEPA's default adapter: the candidate's text is the system
  prompt, the item's input the user message), a validation set of 5 items;
* ``official``: the same without a validation set (GEPA then uses the training items as its
  validation set; we score on them, the seed's scores coming from `fit`'s own forward);
* ``chain``: two components -- a plan node and an answer node that reads the question and the
  plan -- with the smallest GEPA adapter that runs that graph (each module's inputs and output
  with the system's feedback in its reflective dataset, as GEPA's DSPy adapter builds it),
  round-robin over the components and merge on (``chain-all``: every component rewritten in each
  proposal, GEPA's ``module_selector="all"``).

Both draw from ``Random(seed)`` in the same order (the parent from the pruned front's sampling
list, the epoch shuffles, the merge's draws), so the decisions are compared one by one and must
be equal: parent, minibatch (a merge's: its subsample), components, accepted or not, the metric
calls after each iteration, the front after each iteration and the final best candidate. Each
reflection request must show what GEPA's shows -- the current text and, per example, its inputs,
the output and the feedback, each in its own section -- in our own words (no sentence of GEPA's
template).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from semgrad.backends.fake import reply_forward, reply_rewrite
from semgrad.core import Example, GraphBuilder, LLMRequest, optim
from semgrad.core.optim._pareto import front
from semgrad.core.programs import pure
from semgrad.core.scoring import Score
from semgrad.effects import fit_sync
from semgrad.effects._fit_state import FitState

from ._baselines import import_peer

pytestmark = pytest.mark.filterwarnings("ignore")

SEED_TEXT = {"answer": "Answer the question.", "plan": "Make a plan."}
TRAIN = tuple((f"Item t{i}: which word goes with kind {k}?", f"word{k}{i}", k) for i, k in enumerate("ABCABC"))
VALIDATION = tuple((f"Item v{i}: which word goes with kind {k}?", f"word{k}{i}", k) for i, k in enumerate("ABCAB"))
#: The reflection model's k-th reply (both sides), whatever it is asked.
PROPOSALS = (
    "Say nothing useful.",
    "Use strategy A.",
    "Use strategy B.",
    "Use strategy C.",
    "Use strategy B. Use strategy C.",
    "Use strategy A. Use strategy C.",
    "Use strategy A. Use strategy B.",
    "Use strategy A. Use strategy B. Use strategy C.",
)
#: Per scenario: the components, whether there is a validation set, GEPA's settings.
SCENARIOS: dict[str, dict[str, Any]] = {
    "held-out": {"nodes": ("answer",), "validation": True, "budget": 80, "merge": False},
    "official": {"nodes": ("answer",), "validation": False, "budget": 80, "merge": False},
    "chain": {"nodes": ("plan", "answer"), "validation": True, "budget": 90, "merge": True},
    "chain-all": {"nodes": ("plan", "answer"), "validation": True, "budget": 90, "merge": False, "all": True},
}


def _item(text: str) -> tuple[str, str, str]:
    for question, target, kind in TRAIN + VALIDATION:
        if question in text:
            return question, target, kind
    raise AssertionError(f"no item in {text[:200]!r}")


def plan_for(instruction: str, question: str) -> str:
    """The plan node's output: names the item's kind when its instruction has that kind's strategy."""
    item, _, kind = _item(question)
    return f"plan {kind} for {item.split(':')[0]}" if f"strategy {kind}" in instruction else "no plan"


def answer_for(instruction: str, question: str, plan: str = "") -> str:
    """The answer: right when the answer's instruction has the item's strategy or the plan names its kind; the
    seed's instruction gets kind C right (a candidate that rewrites it loses them unless it has strategy C)."""
    item, target, kind = _item(question)
    if f"strategy {kind}" in instruction or f"plan {kind} for" in plan:
        return target
    if kind == "C" and SEED_TEXT["answer"] in instruction:
        return target
    return f"no idea about {item.split(':')[0]}"


def feedback(target: str, output: str) -> str:
    return "Right." if output == target else f"Wrong: the expected word is {target}, the reply was {output!r}."


def proposal(k: int) -> str:
    return PROPOSALS[(k - 1) % len(PROPOSALS)]


# --- GEPA's side ---------------------------------------------------------------------------------------------


def _gepa_run(scenario: str) -> dict[str, Any]:
    gepa = import_peer("gepa")
    from gepa.adapters.default_adapter.default_adapter import DefaultAdapter, EvaluationResult
    from gepa.core.adapter import EvaluationBatch

    setting = SCENARIOS[scenario]
    events: list[tuple[str, dict[str, Any]]] = []
    reflections: list[str] = []

    class Recorder:
        """Every GEPA callback, its event copied and the state it carries snapshotted at that moment."""

        def __getattr__(self, name: str) -> Any:
            if not name.startswith("on_"):
                raise AttributeError(name)

            def record(event: Any) -> None:
                event = dict(event)
                state = event.pop("state", None) or event.pop("final_state", None)
                if state is not None:
                    event["evals"] = state.total_num_evals
                    event["front"] = [tuple(sorted(f)) for _, f in sorted(state.get_pareto_front_mapping().items())]
                events.append((name, event))

            return record

    def reflection_lm(prompt: str) -> str:
        reflections.append(prompt)
        return f"```\n{proposal(len(reflections))}\n```"

    def evaluator(data: Any, response: str) -> Any:
        ok = response == data["answer"]
        return EvaluationResult(1.0 if ok else 0.0, feedback(data["answer"], response))

    class ChainAdapter:
        """The smallest adapter running the plan -> answer chain: each module's inputs and output with
        the system's feedback in its reflective dataset (what GEPA's DSPy adapter builds)."""

        propose_new_texts = None

        def evaluate(self, batch: list[Any], candidate: dict[str, str], capture_traces: bool = False) -> Any:
            outputs, scores, trajectories = [], [], []
            for data in batch:
                plan = plan_for(candidate["plan"], data["input"])
                answer = answer_for(candidate["answer"], data["input"], plan)
                result = evaluator(data, answer)
                outputs.append(answer)
                scores.append(result.score)
                trajectories.append({"question": data["input"], "plan": plan, "answer": answer, "fb": result.feedback})
            return EvaluationBatch(outputs, scores, trajectories if capture_traces else None)

        def make_reflective_dataset(self, candidate: Any, eval_batch: Any, components: list[str]) -> Any:
            found = {}
            for name in components:
                rows = []
                for t in eval_batch.trajectories:
                    inputs = (
                        {"question": t["question"]}
                        if name == "plan"
                        else {"question": t["question"], "plan": t["plan"]}
                    )
                    rows.append({"Inputs": inputs, "Generated Outputs": t[name], "Feedback": t["fb"]})
                found[name] = rows
            return found

    class Quiet:
        def log(self, *args: Any, **kwargs: Any) -> None:
            pass

    def data(rows: tuple[tuple[str, str, str], ...]) -> list[dict[str, Any]]:
        return [{"input": q, "additional_context": {}, "answer": t} for q, t, _ in rows]

    if setting["nodes"] == ("answer",):

        def task_lm(messages: list[dict[str, str]]) -> str:
            return answer_for(messages[0]["content"], messages[1]["content"])

        task = {"adapter": DefaultAdapter(model=task_lm, evaluator=evaluator)}
    else:
        task = {"adapter": ChainAdapter()}
    result = gepa.optimize(
        seed_candidate={n: SEED_TEXT[n] for n in setting["nodes"]},
        trainset=data(TRAIN),
        valset=data(VALIDATION) if setting["validation"] else None,
        reflection_lm=reflection_lm,
        max_metric_calls=setting["budget"],
        use_merge=setting["merge"],
        module_selector="all" if setting.get("all") else "round_robin",
        callbacks=[Recorder()],
        logger=Quiet(),
        seed=0,
        **task,
    )
    return {"events": events, "reflections": reflections, "best": dict(result.best_candidate)}


def _gepa_iterations(events: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """Per GEPA iteration: the parent(s), minibatch, verdict, metric calls and front at its end."""
    found: dict[int, dict[str, Any]] = {}
    for name, event in events:
        if "iteration" not in event or event["iteration"] < 1:
            continue
        it = found.setdefault(event["iteration"], {"verdict": "none"})
        if name == "on_candidate_selected":
            it["parents"] = (event["candidate_idx"],)
        elif name == "on_minibatch_sampled":
            it["minibatch"] = tuple(event["minibatch_ids"])
        elif name == "on_reflective_dataset_built":
            it["components"] = tuple(event["components"])
        elif name == "on_evaluation_skipped":
            it["verdict"] = "perfect"
        elif name == "on_candidate_rejected":
            it["verdict"] = "rejected"
        elif name == "on_evaluation_start" and len(event["parent_ids"]) == 2:  # the merge's subsample
            held_out = [q for q, _, _ in VALIDATION]
            questions = held_out if event["inputs"][0]["input"] in held_out else [q for q, _, _ in TRAIN]
            it["minibatch"] = tuple(questions.index(d["input"]) for d in event["inputs"])
        elif name == "on_merge_attempted":
            it["parents"], it["kind"] = tuple(event["parent_ids"]), "merge"
        elif name == "on_merge_rejected":
            it["verdict"] = "rejected"
        elif name == "on_candidate_accepted":
            it["verdict"] = f"accepted as {event['new_candidate_idx']}"
        elif name == "on_iteration_end":
            it["evals"], it["front"] = event["evals"], event["front"]
    return [found[i] for i in sorted(found)]


# --- our side ------------------------------------------------------------------------------------------------


def _graph(nodes: tuple[str, ...]) -> tuple[Any, Any]:
    b = GraphBuilder()
    q = b.input("question", role="the question")
    if nodes == ("answer",):
        b.llm("answer", inputs=[q], instruction=SEED_TEXT["answer"], role="the answer")
    else:
        p = b.llm("plan", inputs=[q], instruction=SEED_TEXT["plan"], role="a plan")
        b.llm("answer", inputs=[q, p], instruction=SEED_TEXT["answer"], role="the answer")
    return b.build(output="answer")


class Fake:
    """Our fake: the same forward answers and the same k-th reflection reply as GEPA's fakes; records requests."""

    is_async = False

    def __init__(self) -> None:
        self.requests: list[LLMRequest] = []

    def __call__(self, request: LLMRequest) -> str:
        self.requests.append(request)
        if request.purpose == "rewrite":
            return reply_rewrite(request, proposal(sum(1 for r in self.requests if r.purpose == "rewrite")))
        instruction = request.messages[0].content
        text = "\n".join(m.content for m in request.messages)
        if request.node == "plan":
            return reply_forward(request, plan_for(instruction, text))
        plan = re.search(r"(plan [ABC] for Item \w+|no plan)", request.prompt)
        return reply_forward(request, answer_for(instruction, text, plan.group(1) if plan else ""))


def _loss(example: Example, trace: Any) -> Any:
    out = str(trace["answer"].value)
    return pure(Score(1.0 if out == example.target else 0.0, feedback(str(example.target), out)))


def _semgrad_run(scenario: str, folder: Path) -> dict[str, Any]:
    setting = SCENARIOS[scenario]
    graph, params = _graph(setting["nodes"])
    fake = Fake()
    train = [Example({"question": q}, t, id=f"t{i}") for i, (q, t, _) in enumerate(TRAIN)]
    validation = [Example({"question": q}, t, id=f"v{i}") for i, (q, t, _) in enumerate(VALIDATION)]
    components = "all" if setting.get("all") else "round_robin"
    optimizer = optim.gepa(max_metric_calls=setting["budget"], merge=setting["merge"], components=components, seed=0)
    path = folder / f"{scenario}.json"
    result = fit_sync(graph, params, optimizer, train=train, validation=validation if setting["validation"] else (),
                      llm=fake, loss=_loss, iterations=80, checkpoint=path)  # fmt: skip
    state = FitState.load(path, graph, params).opt_state
    return {"fake": fake, "state": state, "result": result, "nodes": setting["nodes"]}


def _our_iterations(state: Any, instances: int) -> list[dict[str, Any]]:
    found, evals, size = [], instances, 1
    for record in state.lineage:
        evals += record.metric_calls
        size = max(size, record.child + 1)
        it: dict[str, Any] = {"parents": record.parents, "evals": evals, "front": list(front(state.pool[:size]))}
        it["minibatch"] = record.minibatch  # a merge's: the instances of its subsample
        if record.kind == "merge":
            it["kind"] = "merge"
        if record.kind in ("reflective", "none"):
            it["components"] = tuple(n.split(".")[0] for n in record.components)
        if record.kind == "perfect":
            it["verdict"] = "perfect"
        elif record.kind == "none":
            it["verdict"] = "none"
        else:
            it["verdict"] = f"accepted as {record.child}" if record.accepted else "rejected"
        found.append(it)
    return found


@pytest.fixture(scope="module", params=sorted(SCENARIOS))
def runs(request: Any, tmp_path_factory: Any) -> tuple[dict[str, Any], dict[str, Any], str]:
    """Both runs of a scenario, once for the module."""
    return _gepa_run(request.param), _semgrad_run(request.param, tmp_path_factory.mktemp("gepa")), request.param


def test_same_decisions_iteration_by_iteration(runs: Any) -> None:
    """Per iteration: the same parent(s), minibatch, verdict, metric calls spent so far and front."""
    theirs, ours, scenario = runs
    instances = len(VALIDATION) if SCENARIOS[scenario]["validation"] else len(TRAIN)
    mine = _our_iterations(ours["state"], instances)
    expected = _gepa_iterations(theirs["events"])
    assert len(mine) == len(expected) > 5
    for number, (a, b) in enumerate(zip(mine, expected, strict=True), 1):
        assert a == b, f"iteration {number}"
    assert any(i["verdict"].startswith("accepted") for i in mine) and any(i["verdict"] == "rejected" for i in mine)


def test_the_budget_is_gepas(runs: Any) -> None:
    """Both stop at the first iteration that reaches max_metric_calls, having spent the same metric calls."""
    theirs, ours, scenario = runs
    budget = SCENARIOS[scenario]["budget"]
    assert ours["state"].metric_calls == _gepa_iterations(theirs["events"])[-1]["evals"] >= budget
    assert ours["state"].metric_calls - ours["state"].lineage[-1].metric_calls < budget


def test_same_best_candidate(runs: Any) -> None:
    """Both end with the same text per component: the pool's best mean score."""
    theirs, ours, _ = runs
    got = {n: ours["result"].params.value(f"{n}.instruction") for n in ours["nodes"]}
    assert got == theirs["best"]
    assert got != {n: SEED_TEXT[n] for n in ours["nodes"]}


def test_reflection_requests_show_what_gepas_show(runs: Any) -> None:
    """Each reflection request shows the same current text and, per example in the same order, the inputs,
    the output and the feedback GEPA's shows, each in its own section, in our words."""
    theirs, ours, _ = runs
    mine = [r for r in ours["fake"].requests if r.purpose == "rewrite"]
    assert len(mine) == len(theirs["reflections"]) > 0
    for request, prompt in zip(mine, theirs["reflections"], strict=True):
        current = prompt.split("```")[1].strip()
        ours_current = request.prompt.split("<current>")[1].split("</current>")[0].strip()
        assert ours_current == current
        examples = re.split(r"# Example \d+\n", prompt.split("```")[3])[1:]
        blocks = re.findall(r"<example (\d+)>\n(.*?)</example \1>", request.prompt, re.S)
        assert len(blocks) == len(examples) == 3
        for (_, block), example in zip(blocks, examples, strict=True):
            inputs = example.split("## Inputs")[1].split("## Generated Outputs")[0]
            output = example.split("## Generated Outputs")[1].split("## Feedback")[0].strip()
            fed = example.split("## Feedback")[1].strip()
            shown_inputs, rest = block.split("Output:")
            shown_output, shown_feedback = rest.split("Feedback")
            for value in re.sub(r"###? \w+\n", "\n", inputs).split("\n"):
                assert value.strip() in shown_inputs
            assert shown_output.strip() == output
            assert fed in shown_feedback
        wording = "\n".join(prompt.split("```")[0::2])  # GEPA's template, without the blocks it fills in
        template = [s.strip() for s in re.split(r"[.,:\n]", wording) if len(s.strip()) > 20]
        assert template and not any(s in request.prompt for s in template)
