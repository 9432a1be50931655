"""Ready-made optimizers: the paper's `neighbor_sgd`, the formal per-edge `tgd`, and the LIAR ablations.

The baselines as their packages run them are in `_textgrad`, `_optoprime` and `_copro`.

Each is just a `chain` of stages; every ablation is a one-argument change.
"""

from __future__ import annotations

from collections.abc import Sequence

from .._rules import Rule, neighbor_aware, per_edge
from ._base import Transform
from ._combining import chain
from ._stages import (
    aggregate,
    backward,
    critique,
    full_update,
    momentum,
    one_at_a_time,
    propose_rewrite,
    sample_update,
    select_error_samples,
    validation_gate,
)

__all__ = ["ABLATIONS", "ablation", "neighbor_sgd", "tgd"]


def neighbor_sgd(
    k: int = 2,
    *,
    seed: int = 0,
    rule: Rule | None = None,
    gradients: bool = True,
    via_feedback: bool = False,
    update: str | float = "full",
    gate: bool = True,
    min_gain: float = 0.0,
    history: int = 0,
    constraints: Sequence[str] = (),
) -> Transform:
    """Semantic gradient descent as the paper runs it.

    ``select_error_samples(k) -> backward(neighbor_aware) -> aggregate ->
    [critique] -> propose_rewrite -> full_update -> validation_gate``.

    Args:
        k: Error samples backpropagated per iteration.
        seed: Seeds sample selection (and sampled updates).
        rule: The backward rule (default `rules.neighbor_aware()`; `rules.per_edge()`
            is the "no neighbours" ablation).
        gradients: False skips backpropagation: instructions are rewritten from
            examples whose only feedback is the output's (the "no gradients" ablation).
        via_feedback: Ask for an explicit critique of each instruction first.
        update: "full", "one" (one parameter at a time), or a probability for
            a seeded random subset.
        gate: Keep the validation gate (False: the "no gate" ablation).
        min_gain: How much the candidate must beat the best score by.
        history: With n > 0, show the last n gradients and rejected attempts (momentum).
        constraints: Stated in every rewrite prompt (e.g. "Keep the output format.").

    Examples:
        >>> neighbor_sgd(k=2).name
        'chain(select_error_samples, backward, aggregate, propose_rewrite, full_update, validation_gate)'
    """
    stages = [select_error_samples(k, seed=seed)]
    if gradients:
        stages.append(backward(rule if rule is not None else neighbor_aware()))
    stages.append(aggregate(require_gradients=gradients))
    if via_feedback:
        stages.append(critique())
    if history:
        stages.append(momentum(history=history))
    stages.append(propose_rewrite(constraints=constraints))
    if update == "full":
        stages.append(full_update())
    elif update == "one":
        stages.append(one_at_a_time(seed=seed))
    elif isinstance(update, (int, float)) and not isinstance(update, bool):
        stages.append(sample_update(float(update), seed=seed))
    else:
        raise ValueError(f"update must be 'full', 'one' or a probability, got {update!r}")
    if gate:
        stages.append(validation_gate(min_gain=min_gain))
    return chain(*stages)


def tgd(k: int = 2, *, seed: int = 0, gate: bool = False, constraints: Sequence[str] = ()) -> Transform:
    """Textual gradient descent with the formal per-edge rule (DESIGN 1.2's special case).

    Per-edge backward (each input judged alone with only the node's output and
    gradient, instructions included), every parameter rewritten from its own
    aggregated partials, no gate by default. This is not TextGrad's behaviour:
    TextGrad's backward calls also show the node's instruction and whole input, and
    its loss makes a backward call of its own; that is `optim.textgrad()`.
    """
    stages = [
        select_error_samples(k, seed=seed),
        backward(per_edge(include_instructions=True)),
        aggregate(examples=False),
        propose_rewrite(constraints=constraints),
        full_update(),
    ]
    if gate:
        stages.append(validation_gate())
    return chain(*stages)


#: The paper's LIAR ablations, each a one-argument change to `neighbor_sgd`.
ABLATIONS = ("full", "no-gradients", "no-neighbors", "one-parameter", "no-gate")


def ablation(name: str, k: int = 2, *, seed: int = 0) -> Transform:
    """One of the paper's LIAR variants by name: full, no-gradients, no-neighbors,
    one-parameter, no-gate.

    Examples:
        >>> ablation("no-gate").name.endswith("full_update)")
        True
    """
    if name == "full":
        return neighbor_sgd(k, seed=seed)
    if name == "no-gradients":
        return neighbor_sgd(k, seed=seed, gradients=False)
    if name == "no-neighbors":
        return neighbor_sgd(k, seed=seed, rule=per_edge())
    if name == "one-parameter":
        return neighbor_sgd(k, seed=seed, update="one")
    if name == "no-gate":
        return neighbor_sgd(k, seed=seed, gate=False)
    raise ValueError(f"unknown ablation {name!r}; choose one of: {', '.join(ABLATIONS)}")
