"""Fixtures for the report tests: realistic run results, hostile ones, and an HTML checker."""

from __future__ import annotations

import copy
import html.parser
from typing import Any

import pytest

from semgrad.diagrams import to_dot, to_mermaid
from semgrad.topologies import HINT_INSTRUCTION, SOLVE_INSTRUCTION, paper_graph

#: Strings that would break out of an element, an attribute, a style sheet or an SVG
#: if the report pasted them unescaped.
HOSTILE = (
    "<script>alert(1)</script>",
    "</div></section></main>",
    '"><img src=x onerror=alert(1)>',
    "javascript:alert(1)",
    "</style><style>body{display:none}</style>",
    "</pre></details></table>",
    "</text></svg><script>alert(2)</script>",
    "</title><a href='javascript:alert(3)'>x</a>",
    "<!-- ]]> -->&amp;&lt;",
)

#: Elements without an end tag (svg shapes written as ``<x/>`` come as start-end tags).
VOID = frozenset({"meta", "br", "img", "input", "link", "hr", "wbr"})


def _graph() -> dict[str, Any]:
    graph, _ = paper_graph()
    return {
        "nodes": [{"name": n.name, "kind": n.kind, "role": n.role} for n in graph.nodes.values()],
        "edges": [[source, node.name] for node in graph.nodes.values() for source in node.inputs],
        "output": graph.output,
        "dot": to_dot(graph),
        "mermaid": to_mermaid(graph),
    }


def _iteration(n: int, train: float, validation: float, accepted: bool) -> dict[str, Any]:
    return {
        "iteration": n,
        "train_score": train,
        "validation_score": validation,
        "accepted": accepted,
        "applied": accepted,
        "updates": {"answer.instruction": f"Solve the problem step by step, version {n}."},
        "gradients": {"answer.instruction": f"Gradient {n}: the answer ignored hint_2 on sample {n + 2}."},
        "report": [["select_error_samples", [f"{n} wrong", "selected: 3, 7"]], ["propose_rewrite", []]],
        "calls": {"forward": 120, "backward": 2, "rewrite": 1},
    }


def make_task(name: str, category: str | None, test: float) -> dict[str, Any]:
    """One optimized task (heldout protocol) with three iterations (the second rejected) on the paper graph."""
    return {
        "task": name,
        "category": category,
        "sizes": {"train": 20, "validation": 20, "test": 210},
        "protocol": "heldout",
        "scored_on": "test",
        "initial_score": 0.4,
        "best_score": 0.6,
        "iterations": [_iteration(1, 0.35, 0.6, True), _iteration(2, 0.5, 0.55, False), _iteration(3, 0.55, 0.6, True)],
        "accuracy": {"train": 0.5, "validation": 0.6, "test": test, "initial_test": 0.45},
        "params": {
            "initial": {"hint_1.instruction": HINT_INSTRUCTION, "answer.instruction": SOLVE_INSTRUCTION},
            "final": {
                "hint_1.instruction": HINT_INSTRUCTION,
                "answer.instruction": "Solve the problem step by step, version 3.",
            },
        },
        "graph": _graph(),
        "published": None,
        "errors": 3,
        "errors_by_kind": {"timeout": 2, "rate_limit": 1},
        "predictions_split": "test",
        "predictions": [
            {"sample": 0, "inputs": {"question": "What is 3 + 4?"}, "output": "7", "target": "7", "correct": True},
            {"sample": 1, "inputs": {"question": "What is 2 + 2?"}, "output": "5", "target": "4", "correct": False},
            {
                "sample": 2,
                "inputs": {"question": "Go north, then south.", "options": "(A) yes (B) no"},
                "output": "(A)",
                "target": "(A)",
                "correct": True,
            },
        ],
    }


def make_results(tasks: list[dict[str, Any]], *, task: str, simulated: bool = True) -> dict[str, Any]:
    """A results.json document around `tasks`."""
    return {
        "semgrad_version": "0.1.0",
        "task": task,
        "backend": "simulated" if simulated else "openai",
        "optimizer": "neighbor-sgd",
        "seed": 0,
        "simulated": simulated,
        "tasks": tasks,
        "averages": {"nlp": 0.7, "algorithmic": 0.55, "overall": 0.625},
        "published": {"gsm8k": 0.932, "bbh_nlp": 0.825, "bbh_algorithmic": 0.856, "textgrad_gsm8k": 0.782},
        "calls": {
            "by_purpose": {"forward": 500, "backward": 8, "rewrite": 12},
            "by_role": {"forward": 500, "backward": 8, "optimizer": 12},
        },
        "tokens": {"input": 12345, "output": 678},
        "cost_usd": 0.12,
        "stopped": None,
    }


@pytest.fixture
def results() -> dict[str, Any]:
    """A two-task BBH run (one algorithmic, one NLP task), three iterations each."""
    return make_results(
        [make_task("bbh:navigate", "algorithmic", 0.55), make_task("bbh:snarks", "nlp", 0.7)], task="bbh:all"
    )


@pytest.fixture
def gsm8k_results() -> dict[str, Any]:
    """A single-task GSM8K run with a real (not simulated) backend."""
    return make_results([make_task("gsm8k", None, 0.9)], task="gsm8k", simulated=False)


def hostile_version(results: dict[str, Any], text: str) -> dict[str, Any]:
    """`results` with `text` in every kind of string field the report shows."""
    hostile = copy.deepcopy(results)
    hostile["task"] = hostile["optimizer"] = text
    first = hostile["tasks"][0]
    first["task"] = first["category"] = text
    first["params"]["initial"][text] = text
    first["params"]["final"][text] = text + " changed"
    first["params"]["final"]["answer.instruction"] = text
    iteration = first["iterations"][0]
    iteration["gradients"]["answer.instruction"] = text
    iteration["updates"][text] = text
    iteration["report"].append([text, [text]])
    iteration["calls"][text] = 1
    first["graph"]["nodes"].append({"name": text, "kind": text, "role": text})
    first["graph"]["edges"].append(["question", text])
    first["graph"]["dot"] = first["graph"]["mermaid"] = text
    first["published"] = {"label": text, "value": 0.5}
    hostile["calls"]["by_purpose"][text] = 3
    first.setdefault("errors_by_kind", {})[text] = 1
    predictions = first.setdefault("predictions", [{"inputs": {}, "correct": False}])
    prediction = predictions[-1]
    prediction["inputs"][text] = prediction["output"] = prediction["target"] = text
    prediction["nodes"] = {text: text}
    first["predictions_split"] = text
    hostile["stopped"] = text
    return hostile


@pytest.fixture
def hostile_results(results: dict[str, Any]) -> dict[str, Any]:
    """The two-task run with all of `HOSTILE` in every kind of string field."""
    return hostile_version(results, " ".join(HOSTILE))


class Page(html.parser.HTMLParser):
    """An HTML document as tags, attributes and text, with end tags checked against the open ones."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.parents: list[tuple[str, ...]] = []
        self.text: list[str] = []
        self.mismatched: list[str] = []
        self.stack: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self.parents.append(tuple(self.stack))
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self.parents.append(tuple(self.stack))

    def handle_endtag(self, tag: str) -> None:
        if not self.stack or self.stack.pop() != tag:
            self.mismatched.append(tag)

    def handle_data(self, data: str) -> None:
        self.text.append(data)

    def ids(self) -> list[str]:
        """Every id attribute, in document order."""
        return [a["id"] or "" for _, a in self.tags if "id" in a]

    def element(self, element_id: str) -> tuple[str, tuple[str, ...]]:
        """The tag of the element with `element_id` and the tags of its ancestors."""
        found = [(tag, self.parents[i]) for i, (tag, a) in enumerate(self.tags) if a.get("id") == element_id]
        assert len(found) == 1, f"{len(found)} elements with id {element_id!r}"
        return found[0]

    def all_text(self) -> str:
        """The text content of the whole document."""
        return "".join(self.text)


def parse(document: str) -> Page:
    """`document` parsed into a `Page`."""
    page = Page()
    page.feed(document)
    page.close()
    return page
