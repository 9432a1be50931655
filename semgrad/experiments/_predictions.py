"""Per-sample predictions of a run, as plain JSON for ``results.json`` and the report."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..core import Example, Score, Trace

__all__ = ["predictions_json"]

#: The kinds of node whose value a prediction keeps (inputs are its ``inputs``; params are the run's params).
_SHOWN = ("llm", "function", "tool")


def _plain(value: Any) -> Any:
    """`value` if JSON can hold it as it is, else its text."""
    return value if value is None or isinstance(value, (str, int, float, bool)) else str(value)


def predictions_json(examples: Sequence[Example], results: Sequence[tuple[Trace, Score]]) -> list[dict[str, Any]]:
    """One entry per example: its id, inputs, the system's output, every other node's, the target, and whether
    it was correct.

    ``nodes`` holds the value of every LLM and function node other than the output, in the
    trace's (topological) order, None for a node that failed; results written before it
    existed lack it.

    Args:
        examples: The scored examples, in order.
        results: Their ``(trace, score)`` pairs, as `semgrad.core.optim.evaluate` returns them.

    Examples:
        >>> from semgrad.core import Example, NodeRun, Score, Trace
        >>> runs = {"q": NodeRun("q", "input", value="2+2?"), "plan": NodeRun("plan", "llm", value="add"),
        ...         "a": NodeRun("a", "llm", value="4")}
        >>> trace = Trace(0, "g", "a", runs)
        >>> (entry,) = predictions_json([Example({"q": "2+2?"}, "4", id=0)], [(trace, Score(1.0, "ok", "4"))])
        >>> entry["inputs"], entry["output"], entry["nodes"], entry["target"], entry["correct"]
        ({'q': '2+2?'}, '4', {'plan': 'add'}, '4', True)
    """
    found = []
    for example, (trace, score) in zip(examples, results, strict=True):
        entry = {
            "sample": _plain(example.id),
            "inputs": {str(name): _plain(value) for name, value in example.inputs.items()},
            "output": _plain(trace.output_value),
            "nodes": {
                str(name): _plain(run.value)
                for name, run in trace.runs.items()
                if run.kind in _SHOWN and name != trace.output
            },
            "target": _plain(example.target),
            "answer": _plain(score.answer),
            "correct": score.correct,
            "score": score.value,
        }
        recording = trace.recording
        if recording is not None:  # a system written as Python: the graph this item's run recorded
            graph = recording.graph
            entry["graph"] = {
                "nodes": [{"name": n.name, "kind": n.kind, "role": n.role} for n in graph.nodes.values()],
                "edges": [[i, n.name] for n in graph.nodes.values() for i in n.inputs],
                "output": graph.output,
            }
        if trace.errors:
            entry["errors"] = [f"{node}: {getattr(error, 'kind', error)}" for node, error in trace.errors]
        found.append(entry)
    return found
