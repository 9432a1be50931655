"""`write_html`: the report of any `fit`, written from Python (no run folder needed)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from .._files import write_text_atomically
from ..diagrams import to_dot, to_mermaid
from ._html import render_report
from ._predictions import errors_json

__all__ = ["fit_results", "graph_json", "iteration_json", "write_html"]


def iteration_json(record: Any) -> dict[str, Any]:
    """The ``results.json`` entry of one `IterationRecord` (numbered from 1, as the record and the report are).

    Examples:
        >>> from semgrad.effects import IterationRecord
        >>> iteration_json(IterationRecord(1, 0.5))["iteration"]
        1
    """
    return {
        "iteration": record.iteration,
        "train_score": record.train_score,
        "validation_score": record.validation_score,
        "accepted": record.accepted,
        "applied": record.applied,
        "updates": dict(record.updates),
        "gradients": dict(record.gradients),
        "report": [[s.stage, list(s.notes)] for s in record.report],
        "calls": dict(record.calls),
    }


def graph_json(graph: Any) -> dict[str, Any]:
    """The ``results.json`` form of a graph: its nodes, edges and output, with its DOT and Mermaid text."""
    return {
        "nodes": [{"name": n.name, "kind": n.kind, "role": n.role} for n in graph.nodes.values()],
        "edges": [[i, n.name] for n in graph.nodes.values() for i in n.inputs],
        "output": graph.output,
        "dot": to_dot(graph),
        "mermaid": to_mermaid(graph),
    }


def fit_results(fit_result: Any, *, graph: Any = None, name: str = "fit") -> dict[str, Any]:
    """The ``results.json``-shaped dict of a `FitResult` that `render_report` turns into HTML.

    Args:
        fit_result: What `semgrad.effects.fit` returned.
        graph: The graph that was optimised (its picture, DOT and Mermaid are then shown).
        name: The title of the run.
    """
    stats = fit_result.statistics
    task = {
        "task": name,
        "category": None,
        "initial_score": fit_result.initial_score,
        "best_score": fit_result.best_score,
        "stopped": fit_result.stopped,
        "iterations": [iteration_json(r) for r in fit_result.history],
        # best_score is the gate's, on the validation set or (without one) on the training items: a FitResult
        # does not say which, so it is shown as the gate score (below), never as a validation accuracy
        "accuracy": {"train": None, "validation": None, "test": None, "initial_test": None},
        "params": {"initial": dict(fit_result.initial_params.texts()), "final": dict(fit_result.params.texts())},
        # A system written as Python has no one graph (each sample's run recorded its own): none is drawn.
        "graph": graph_json(graph) if graph is not None and hasattr(graph, "nodes") else None,
        "published": None,
        **errors_json(stats),
    }
    return {
        "task": name,
        "tasks": [task],
        "calls": {"by_purpose": dict(stats.calls_by_purpose), "by_role": dict(stats.calls_by_engine)},
        "tokens": {"input": stats.input_tokens, "output": stats.output_tokens},
        "stopped": fit_result.stopped,
    }


def write_html(fit_result: Any, path: str | os.PathLike[str], *, graph: Any = None, name: str = "fit") -> Path:
    """Write the HTML report of a `fit` to `path` (atomically) and return the path.

    The same self-contained page ``semgrad run`` writes: the score per iteration,
    each parameter's initial and final text with a diff, the gradients and stage
    reports behind every update, and -- given `graph` -- the graph.

    Examples:
        >>> import pathlib, tempfile
        >>> from semgrad.backends import fake
        >>> from semgrad.core import GraphBuilder, optim
        >>> from semgrad.effects import fit_sync
        >>> b = GraphBuilder(); q = b.input("question")
        >>> _ = b.llm("answer", inputs=[q], instruction="Answer.")
        >>> graph, params = b.build(output="answer")
        >>> items = [{"inputs": {"question": "2+2?"}, "target": "4"}]
        >>> result = fit_sync(graph, params, optim.neighbor_sgd(k=1), train=items, validation=items,
        ...                   llm=fake.FunctionLLM(lambda r: "4"), iterations=1)
        >>> page = write_html(result, pathlib.Path(tempfile.mkdtemp()) / "report.html", graph=graph)
        >>> "answer.instruction" in page.read_text()
        True
    """
    target = Path(path)
    write_text_atomically(target, render_report(fit_results(fit_result, graph=graph, name=name)))
    return target
