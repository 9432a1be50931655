"""Golden files for every prompt renderer: wording changes are deliberate, reviewed diffs.

Regenerate after an intended change with ``SEMGRAD_UPDATE_GOLDEN=1 pytest tests/core/test_prompts_golden.py``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from semgrad.core import LLMRequest, forward
from semgrad.core._prompts import (
    render_critique,
    render_examples,
    render_forward_repair,
    render_neighbor_aware,
    render_per_edge,
    render_repair,
    render_rewrite,
    render_summarize,
)
from semgrad.core._scoring import JUDGE_USER
from semgrad.topologies import paper_graph

GOLDEN = Path(__file__).parent / "golden"
SHOWN = (
    ("question", "the problem to solve", "What is 3 + 4?"),
    ("hint_1", "an intermediate step", "Add them."),
    ("hint_2", "an intermediate step", "It is 7."),
)
PAIRS = tuple((name, value) for name, _, value in SHOWN)


def _requests() -> dict[str, LLMRequest]:
    graph, params = paper_graph()
    (_, hint), _ = forward(graph, params, {"question": "What is 3 + 4?"}, sample=3).emitted
    aware = render_neighbor_aware(
        "answer", "Solve the problem.", SHOWN, "Answer: 8", "The expected output is 7.", ["hint_1", "hint_2"], sample=3
    )
    examples = render_examples([(PAIRS, "Answer: 8", "The expected output is 7.")])
    role = "the instruction of component 'answer'"
    return {
        "forward": hint,
        "forward_repair": render_forward_repair(hint, "Add 3 and 4.", "the reply has no <result> block"),
        "backward_neighbor_aware": aware,
        "backward_per_edge": render_per_edge("answer", SHOWN[1], "Answer: 8", "The expected output is 7.", sample=3),
        "backward_repair": render_repair(aware, "no idea", "no feedback for 'hint_2'", ["hint_2"]),
        "summarize": render_summarize("hint_1", "an intermediate step", ["Be shorter.", "Name the numbers."], sample=3),
        "critique": render_critique("answer.instruction", role, "Solve the problem.", examples),
        "rewrite": render_rewrite(
            "answer.instruction",
            role,
            "Solve the problem.",
            examples=examples,
            feedback="Be careful.",
            history=("iteration 0: too vague",),
            constraints=("Keep the output format.",),
        ),
    }


def _text(request: LLMRequest) -> str:
    head = f"purpose={request.purpose} engine={request.engine} node={request.node} sample={request.sample}"
    head += f" targets={list(request.targets)}"
    return "\n".join([head, *(f"--- {m.role}\n{m.content}" for m in request.messages)]) + "\n"


@pytest.mark.parametrize("name", sorted(_requests()))
def test_prompt_matches_its_golden_file(name):
    """Each renderer's prompt (metadata and every message) equals its golden file, byte for byte."""
    path = GOLDEN / f"{name}.txt"
    rendered = _text(_requests()[name])
    if os.environ.get("SEMGRAD_UPDATE_GOLDEN"):
        path.write_text(rendered, "utf-8")
    assert path.exists(), f"no golden file {path.name}; run with SEMGRAD_UPDATE_GOLDEN=1 once"
    assert rendered == path.read_text("utf-8")


def test_judge_prompt_asks_for_a_score_and_a_critique():
    """The LLM-judge prompt asks for the tagged score and critique its parser reads."""
    assert "<score>" in JUDGE_USER and "<critique>" in JUDGE_USER
