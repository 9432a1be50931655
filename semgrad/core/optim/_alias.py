"""Ready-made optimizers: the paper's `neighbor_sgd`, the formal per-edge `tgd`, and the LIAR ablations.

The baselines as their packages run them are in `_textgrad`, `_optoprime` and `_copro`.

Each is just a `chain` of stages; every ablation is a one-argument change.
"""

from __future__ import annotations

from collections.abc import Sequence

from .._rules import Rule, neighbor_aware, per_edge
from ._base import Transform
from ._combining import chain, masked
from ._stages import (
    after_first_accept,
    aggregate,
    backpropagate,
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
    gate: bool | str | Transform = True,
    min_gain: float = 0.0,
    history: int = 0,
    constraints: Sequence[str] = (),
    only: Sequence[str] | None = None,
    draw: str = "per-iteration",
    fallback: bool = True,
    shuffled: Sequence[int] = (),
    reuse: bool = False,
) -> Transform:
    """Semantic gradient descent as the paper runs it.

    ``select_error_samples(k) -> backpropagate(neighbor_aware) -> aggregate ->
    [critique] -> propose_rewrite -> full_update -> validation_gate``.

    Args:
        k: Error samples backpropagated per iteration.
        seed: Seeds sample selection (and sampled updates).
        rule: The backward rule (default `rules.neighbor_aware()`; `rules.per_edge()`
            is the "no neighbours" ablation).
        gradients: False skips backpropagation and shows no feedback at all: every
            instruction, the output's included, is rewritten from its inputs and outputs
            on the error samples only (the "no gradients" ablation, as the paper ran it).
        via_feedback: Ask for an explicit critique of each instruction first.
        update: "full", "one" (one parameter at a time), or a probability for
            a seeded random subset.
        gate: True keeps the update gate; "always" scores each candidate but accepts it
            whatever its score (the "no gate" ablation as the official code runs it, so
            the candidate's forward still serves the next iteration); False drops the
            gate stage (each iteration then forwards the training set itself). A `Transform`
            is the gate stage itself: ``validation_gate(rule="lcb", alpha=0.05)`` for the
            noise-aware rule, ``chain(memorization_guard(), validation_gate())`` to refuse
            rewrites that copy training items first.
        min_gain: How much the default gate's candidate must beat the best score by (a gate
            given as a `Transform` takes its own).
        history: With n > 0, show the last n gradients and rejected attempts (momentum).
        constraints: Stated in every rewrite prompt (e.g. ``["Keep the output format."]``).
        only: Train these parameters only (by name; the others are never rewritten):
            ``only=["answer.instruction"]`` is the "one parameter" ablation, with one
            rewrite per iteration. Backpropagation still runs through the whole graph.
        draw: How error samples are drawn (see `select_error_samples`): ``"official"``
            (the paper's scripts' draw, from one generator seeded once after the split's
            `shuffled` sizes) or ``"per-iteration"`` (ours: seeded afresh each iteration, sorted).
        fallback: With no wrong sample, backpropagate `k` random samples (ours); False
            (the paper's code): no backward call and no rewrite that iteration.
        shuffled: The split's shuffle sizes, for the official draw.
        reuse: A sample drawn again with unchanged backward questions keeps its feedback
            (no new call), as the paper's code does (False: ask again).

        The paper's own protocol is ``draw="official", fallback=False, reuse=True`` with the
        split's `shuffled` sizes: what ``semgrad run --protocol official`` passes (see
        `semgrad.experiments.make_optimizer`); these defaults are ours.

    Examples:
        >>> neighbor_sgd(k=2).name
        'chain(select_error_samples, backward, aggregate, propose_rewrite, full_update, validation_gate)'
    """
    stages = [select_error_samples(k, seed=seed, fallback=fallback, draw=draw, shuffled=shuffled)]
    if gradients:
        stages.append(backpropagate(rule if rule is not None else neighbor_aware(), reuse=reuse))
    rewrite = [aggregate(require_gradients=gradients, feedback=gradients)]
    if via_feedback:
        rewrite.append(critique())
    if history:
        rewrite.append(momentum(history=history))
    rewrite.append(propose_rewrite(constraints=constraints))
    if update == "full":
        rewrite.append(full_update())
    elif update == "one":
        rewrite.append(one_at_a_time(seed=seed))
    elif isinstance(update, (int, float)) and not isinstance(update, bool):
        rewrite.append(sample_update(float(update), seed=seed))
    else:
        raise ValueError(f"update must be 'full', 'one' or a probability, got {update!r}")
    stages.extend(rewrite if only is None else [_only(chain(*rewrite), only)])
    if isinstance(gate, Transform):
        if min_gain != 0.0:
            raise ValueError(
                "min_gain is the default gate's: pass it to the gate you give, validation_gate(min_gain=...)"
            )
        stages.append(gate)
    elif gate == "always":
        stages.append(validation_gate(always_accept=True))
    elif gate is True:
        stages.append(validation_gate(min_gain=min_gain))
    elif gate is not False:
        raise ValueError(f"gate must be True, False, 'always' or a gate stage, got {gate!r}")
    return chain(*stages)


def tgd(k: int = 2, *, seed: int = 0, gate: bool | Transform = False, constraints: Sequence[str] = ()) -> Transform:
    """Textual gradient descent with the formal per-edge rule (DESIGN 1.2's special case).

    Per-edge backward (each input judged alone with only the node's output and
    gradient, instructions included), every parameter rewritten from its own
    aggregated partials, no gate by default. This is not TextGrad's behaviour:
    TextGrad's backward calls also show the node's instruction and whole input, and
    its loss makes a backward call of its own; that is `optim.textgrad()`. `gate`: True adds
    `validation_gate()`; a `Transform` is the gate stage itself.
    """
    stages = [
        select_error_samples(k, seed=seed),
        backpropagate(per_edge(include_instructions=True)),
        aggregate(examples=False),
        propose_rewrite(constraints=constraints),
        full_update(),
    ]
    if gate:
        stages.append(gate if isinstance(gate, Transform) else validation_gate())
    return chain(*stages)


#: The paper's LIAR ablations, each a one-argument change to `neighbor_sgd`.
ABLATIONS = ("full", "no-gradients", "no-neighbors", "no-neighbours-as-run", "one-parameter", "no-gate")


def _only(inner: Transform, names: Sequence[str]) -> Transform:
    """`masked(inner, names)` (which refuses names that are not trainable parameters of the params it starts from),
    refusing no names at all."""
    if isinstance(names, str):
        raise TypeError("only: pass a sequence of parameter names, not a single string")
    wanted = tuple(names)
    if not wanted:
        raise ValueError("only: name at least one parameter to train")
    masked_inner = masked(inner, wanted)
    return Transform(masked_inner.init, masked_inner.update, f"only({', '.join(wanted)}: {inner.name})")


def ablation(
    name: str,
    k: int = 2,
    *,
    seed: int = 0,
    param: str | None = None,
    draw: str = "per-iteration",
    fallback: bool = True,
    shuffled: Sequence[int] = (),
    reuse: bool = False,
    gate: Transform | None = None,
) -> Transform:
    """One of the paper's LIAR variants by name, as the paper ran them.

    * ``full``: the method;
    * ``no-gradients``: no feedback reaches any node (the output included); each
      instruction is rewritten from its inputs and outputs on the error samples;
    * ``no-neighbors`` (also spelled ``no-neighbours``): per-edge backward, siblings hidden
      throughout the run;
    * ``no-neighbours-as-run``: the no-neighbours run as the paper's code made it: siblings
      hidden until the first accepted update, shown from the next iteration on (its full
      update builds the new system without the flag);
    * ``one-parameter``: only `param` (e.g. ``"answer.instruction"``) is trained, for
      the whole run, with one rewrite per iteration;
    * ``no-gate``: every candidate is scored and accepted.

    `draw`, `fallback`, `shuffled` and `reuse` are `neighbor_sgd`'s; `gate`, a gate stage
    (``validation_gate(rule="lcb")``, say) in place of the default one (not for ``no-gate``).

    Examples:
        >>> ablation("no-gate").name.endswith("full_update, validation_gate)")
        True
    """
    common = {"seed": seed, "draw": draw, "fallback": fallback, "shuffled": shuffled, "reuse": reuse}
    if gate is not None:
        if name == "no-gate":
            raise ValueError("the no-gate ablation has no gate to replace; gate= is for the others")
        common["gate"] = gate
    if name == "full":
        return neighbor_sgd(k, **common)  # type: ignore[arg-type]
    if name == "no-gradients":
        return neighbor_sgd(k, gradients=False, **common)  # type: ignore[arg-type]
    if name in ("no-neighbors", "no-neighbours"):
        return neighbor_sgd(k, rule=per_edge(), **common)  # type: ignore[arg-type]
    if name == "no-neighbours-as-run":
        hidden = neighbor_sgd(k, rule=per_edge(), **common)  # type: ignore[arg-type]
        return after_first_accept(hidden, neighbor_sgd(k, **common))  # type: ignore[arg-type]
    if name == "one-parameter":
        if not param:
            raise ValueError("the one-parameter ablation trains one named parameter: pass param=NAME")
        return neighbor_sgd(k, only=(param,), **common)  # type: ignore[arg-type]
    if param is not None:
        raise ValueError(f"param= is for the one-parameter ablation, not {name!r}")
    if name == "no-gate":
        # As the official code runs it: the candidate is still scored (its forward serves the next
        # iteration) but always accepted.
        return neighbor_sgd(k, gate="always", **common)  # type: ignore[arg-type]
    raise ValueError(f"unknown ablation {name!r}; choose one of: {', '.join(ABLATIONS)}")
