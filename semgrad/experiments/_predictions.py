"""Per-sample predictions of a run, as plain JSON for ``results.json`` and the report."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..core import Example, Score, Trace

__all__ = ["predictions_json"]


def _plain(value: Any) -> Any:
    """`value` if JSON can hold it as it is, else its text."""
    return value if value is None or isinstance(value, (str, int, float, bool)) else str(value)


def predictions_json(examples: Sequence[Example], results: Sequence[tuple[Trace, Score]]) -> list[dict[str, Any]]:
    """One entry per example: its id, inputs, the system's output, the target, and whether it was correct.

    Args:
        examples: The scored examples, in order.
        results: Their ``(trace, score)`` pairs, as `semgrad.core.optim.evaluate` returns them.

    Examples:
        >>> from semgrad.core import Example, Score
        >>> class T:  # a stand-in for a Trace
        ...     output_value, errors = "4", ()
        >>> (entry,) = predictions_json([Example({"q": "2+2?"}, "4", id=0)], [(T(), Score(1.0, "ok", "4"))])
        >>> entry["inputs"], entry["output"], entry["target"], entry["correct"]
        ({'q': '2+2?'}, '4', '4', True)
    """
    found = []
    for example, (trace, score) in zip(examples, results, strict=True):
        entry = {
            "sample": _plain(example.id),
            "inputs": {str(name): _plain(value) for name, value in example.inputs.items()},
            "output": _plain(trace.output_value),
            "target": _plain(example.target),
            "answer": _plain(score.answer),
            "correct": score.correct,
            "score": score.value,
        }
        if trace.errors:
            entry["errors"] = [f"{node}: {getattr(error, 'kind', error)}" for node, error in trace.errors]
        found.append(entry)
    return found
