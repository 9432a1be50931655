"""Shared set-up of the baseline conformance tests (tests/conformance/test_baseline_*.py).

Each test runs a peer package (TextGrad 0.1.8, DSPy's COPRO, Trace's OptoPrime)
offline on the paper's graph with a recording fake model, runs our baseline on the
same graph with a fake that gives the same forward outputs and the same feedback
texts, and compares the calls per purpose and the information each prompt shows.

The two hint nodes get slightly different instructions so that every call can be
told apart by what it shows; everything else is the paper's graph.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import os
import socket
import tempfile
import warnings
from collections.abc import Iterator
from typing import Any

from semgrad.backends.fake import reply_backward, reply_forward, reply_rewrite, reply_rewrites
from semgrad.core import GraphBuilder, LLMRequest

HINT_1 = "Work out an intermediate step that helps solve the problem (first)."
HINT_2 = "Work out an intermediate step that helps solve the problem (second)."
SOLVE = "Solve the problem."

#: Question, target and a short id per sample; every value a fake writes carries the id.
SAMPLES = (("What is 3 + 4?", "7", "q0"), ("What is 5 + 6?", "11", "q1"))
QUESTION_ID = {q: i for q, _, i in SAMPLES}


def paper_graph() -> tuple[Any, Any]:
    """The paper's graph (two hints read the question; the answer reads all three)."""
    b = GraphBuilder()
    q = b.input("question", role="the question to answer")
    h1 = b.llm("hint_1", inputs=[q], instruction=HINT_1, role="a first intermediate step")
    h2 = b.llm("hint_2", inputs=[q], instruction=HINT_2, role="a second intermediate step")
    b.llm("answer", inputs=[q, h1, h2], instruction=SOLVE, role="the final answer")
    return b.build(output="answer")


def forward_value(node: str, question: str) -> str:
    """What every fake answers for a forward call (short: TextGrad shows values of <= 20 words in full)."""
    qid = QUESTION_ID[question]
    if node == "hint_1":
        return f"first step for {qid}"
    if node == "hint_2":
        return f"second step for {qid}"
    return f"reasoning for {qid}\nAnswer: wrong-{qid}"


def feedback_text(role: str, qid: str) -> str:
    """The feedback every fake gives a variable with this role for this sample."""
    return f"feedback on {role} for {qid}"


def new_value(role: str) -> str:
    """The new value every fake proposes for a parameter with this role."""
    return f"improved {role}"


def question_in(text: str) -> str:
    """The id of the (one) sample question a prompt shows, or of the id it mentions."""
    for question, _, qid in SAMPLES:
        if question in text or f"for {qid}" in text or f"wrong-{qid}" in text:
            return qid
    raise AssertionError(f"no sample in prompt: {text[:200]!r}")


class SemgradFake:
    """Our side's fake: the same forward outputs and feedback texts as the peer's fake; records requests."""

    is_async = False

    def __init__(self, graph: Any, params: Any) -> None:
        self.graph, self.params = graph, params
        self.requests: list[LLMRequest] = []

    def role(self, name: str) -> str:
        return self.graph[name].role if name in self.graph.nodes else self.params[name].role

    def __call__(self, request: LLMRequest) -> str:
        self.requests.append(request)
        if request.purpose == "forward":
            question = next(q for q, _, _ in SAMPLES if q in request.prompt)
            return reply_forward(request, forward_value(str(request.node), question))
        if request.purpose == "backward":
            qid = question_in(request.prompt)
            return reply_backward(request, {t: feedback_text(self.role(t), qid) for t in request.targets})
        if request.purpose == "rewrite" and request.targets:
            return reply_rewrites(request, {t: new_value(self.role(t)) for t in request.targets})
        return reply_rewrite(request, new_value(self.role(str(request.node))))

    def counts(self) -> dict[str, int]:
        found: dict[str, int] = {}
        for r in self.requests:
            found[r.purpose] = found.get(r.purpose, 0) + 1
        return found


@contextlib.contextmanager
def offline() -> Iterator[None]:
    """No network: any socket connection fails (the peers must run offline)."""

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise OSError("network access is blocked in the conformance tests")

    saved = socket.socket.connect, socket.create_connection
    socket.socket.connect, socket.create_connection = refuse, refuse  # type: ignore[method-assign,assignment]
    try:
        yield
    finally:
        socket.socket.connect, socket.create_connection = saved  # type: ignore[method-assign,assignment]


_SCRATCH = tempfile.mkdtemp(prefix="semgrad-conformance-")
#: Where the peers may write (logs, caches): a scratch folder, never the working directory.
PEER_ENV = {
    "TEXTGRAD_LOG_DIR": os.path.join(_SCRATCH, "textgrad-logs"),
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "DSPY_CACHEDIR": os.path.join(_SCRATCH, "dspy-cache"),
    "HF_DATASETS_OFFLINE": "1",
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
}


def import_peer(name: str) -> Any:
    """Import a peer module offline, with its writes sent to a scratch folder and its warnings silenced;
    the test is skipped, with the reason, when the peer is not installed."""
    import pytest

    if importlib.util.find_spec(name) is None:
        pytest.skip(f"the peer package {name!r} is not installed (pip install -e '.[test]' installs it)")
    for key, value in PEER_ENV.items():
        os.environ.setdefault(key, value)
    with offline(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return importlib.import_module(name)


def pieces_missing(pieces: list[str], text: str) -> list[str]:
    """The pieces (stripped, non-empty) that do not appear in `text`."""
    return [p for p in (p.strip() for p in pieces) if p and p not in text]
