"""How a task's outputs are scored: the official protocol's metrics and ours.

The paper's code compares the final node's answer with the label as a string on
BBH and GSM8K (a GSM8K label written ``65,960`` must be answered ``65,960``), and
on LIAR counts an answer as "Yes" when it starts with ``YES`` in any case. These
are the metrics of the official protocol; the held-out protocol keeps our more
lenient ones (normalised text, numbers), which ``--metric`` also selects.
"""

from __future__ import annotations

from typing import Any, Literal

from ..core import Example, Loss, Program, Score, Trace
from ..core.programs import pure
from ..core.scoring import exact_match, extract_answer, normalized_match, numeric_match

__all__ = ["METRICS", "Metric", "check_metric", "default_metric", "metric_loss", "yes_prefix_match"]

Metric = Literal["exact", "normalized", "numeric", "yes-prefix"]

#: Every metric a task can be scored by, with what it compares.
METRICS: dict[str, str] = {
    "exact": "the answer equals the label as a string (the official BBH and GSM8K scoring)",
    "normalized": "the answer equals the label after normalising case, spaces and option letters",
    "numeric": "the answer's last number equals the label's",
    "yes-prefix": "the answer says Yes exactly when it starts with YES in any case (the official LIAR scoring)",
}


def check_metric(metric: str) -> Metric:
    """`metric` if it is one of `METRICS`, else a one-line ValueError."""
    if metric not in METRICS:
        raise ValueError(f"unknown metric {metric!r}; choose one of: {', '.join(METRICS)}")
    return metric  # type: ignore[return-value]


def default_metric(dataset: str, protocol: str) -> Metric:
    """The metric a dataset is scored by under a protocol.

    Examples:
        >>> [default_metric(d, "official") for d in ("bbh", "gsm8k", "liar")]
        ['exact', 'exact', 'yes-prefix']
        >>> [default_metric(d, "heldout") for d in ("bbh", "gsm8k", "liar")]
        ['normalized', 'numeric', 'normalized']
    """
    if protocol == "official":
        return "yes-prefix" if dataset == "liar" else "exact"
    return "numeric" if dataset == "gsm8k" else "normalized"


def yes_prefix_match() -> Loss:
    """Right when the answer starts with ``YES`` (any case) exactly when the target is ``Yes``.

    Examples:
        >>> from semgrad.core import NodeRun
        >>> trace = Trace(0, "g", "out", {"out": NodeRun("out", "llm", value="yes, it is a lie")})
        >>> yes_prefix_match()(Example({}, "Yes"), trace).value.value
        1.0
        >>> yes_prefix_match()(Example({}, "No"), trace).value.value
        0.0
    """

    def loss(example: Example, trace: Trace) -> Program[Score]:
        if trace.output_value is None:
            return pure(Score(0.0, f'The system produced no output; the expected output is "{example.target}".', None))
        answer = extract_answer(trace.output_value)
        said_yes = answer.strip().upper().startswith("YES")
        if said_yes == (str(example.target).strip().upper() == "YES"):
            return pure(Score(1.0, f'The output "{answer}" is correct.', answer))
        feedback = f'The output "{answer}" is wrong; the expected output is "{example.target}".'
        return pure(Score(0.0, feedback, answer))

    return loss


def metric_loss(metric: str) -> Loss:
    """The loss that scores by `metric` (one of `METRICS`)."""
    losses: dict[str, Any] = {
        "exact": exact_match,
        "normalized": normalized_match,
        "numeric": numeric_match,
        "yes-prefix": yes_prefix_match,
    }
    return losses[check_metric(metric)]()  # type: ignore[no-any-return]
