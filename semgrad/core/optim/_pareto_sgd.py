"""`pareto_sgd`: GEPA's Pareto search driven by semantic gradients.

GEPA's pool, per-instance front, parent draw, minibatch, strict minibatch acceptance and merge
(`semgrad.core.optim._search.pareto_search`), with another proposal step: the paper's chain
without its gate -- ``select_error_samples -> backpropagate(neighbor_aware) -> aggregate ->
propose_rewrite -> full_update`` -- run on the parent's minibatch. Each component is rewritten
from feedback about its own contribution (backward through the graph from each failing
example), not from the system's global feedback, and every component that received a gradient
is rewritten in one proposal (``components="round_robin"``: one at a time, in turn).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._frozen import FrozenMap
from .._program import Program, map_
from .._rules import Rule, per_edge
from ._alias import neighbor_sgd
from ._base import Step, Transform
from ._search import ProposalTask, Proposed, pareto_search

__all__ = ["PARETO_ABLATIONS", "gradient_proposal", "pareto_sgd"]

#: The paper's ablations `pareto_sgd` takes (``ablation=``): the proposal chain changes as `ablation` changes
#: `neighbor_sgd`'s. The search's minibatch acceptance is its gate, so there is no "no-gate".
PARETO_ABLATIONS = ("full", "no-gradients", "no-neighbors", "no-neighbours", "one-parameter")


def _sub_step(task: ProposalTask) -> Step:
    """The step the proposal chain runs on: the parent's run on the minibatch, nothing filled in yet, the
    rewrite restricted to the components the search chose."""
    step = task.step
    return Step(
        step.graph,
        iteration=step.iteration,
        train=tuple(step.train[i] for i in task.minibatch),
        traces=tuple(trace for trace, _ in task.results),
        scores=tuple(score for _, score in task.results),
        loss=step.loss,
        previous_rejected=step.previous_rejected,
        active=task.components,
        options=step.options,
    )


def gradient_proposal(chain: Transform) -> Any:
    """A proposal step for `pareto_search` that runs `chain` (stages up to an update stage, no gate) on the
    parent's minibatch and proposes its updates; what each component was rewritten from is its gradient.

    The chain starts from ``chain.init(params)`` at every proposal: a stage's state does not carry from one
    proposal to the next (the search's own state -- pool, front, generator, lineage -- does).
    """

    def propose(task: ProposalTask) -> Program[Proposed]:
        def done(pair: tuple[Step, Any]) -> Proposed:
            new, _ = pair
            notes = tuple(f"{r.stage}: {note}" for r in new.report for note in r.notes)
            return Proposed(new.updates or FrozenMap(), notes, new.param_gradients or FrozenMap())

        return map_(chain.update(_sub_step(task), chain.init(task.params), task.params), done)

    return propose


def _ablated(ablation: str, param: str | None) -> dict[str, Any]:
    if ablation not in PARETO_ABLATIONS:
        raise ValueError(f"pareto_sgd: unknown ablation {ablation!r}; choose one of: {', '.join(PARETO_ABLATIONS)}")
    if (ablation == "one-parameter") != bool(param):
        raise ValueError("pareto_sgd: param= names the parameter of ablation='one-parameter', and only of it")
    if ablation == "no-gradients":
        return {"gradients": False}
    if ablation in ("no-neighbors", "no-neighbours"):
        return {"rule": per_edge()}
    if ablation == "one-parameter":
        return {"only": (param,)}
    return {}


def pareto_sgd(
    k: int | None = None,
    *,
    minibatch: int = 3,
    components: str = "all",
    merge: bool = False,
    max_merges: int = 5,
    max_metric_calls: int | None = None,
    seed: int = 0,
    rule: Rule | None = None,
    via_feedback: bool = False,
    constraints: Sequence[str] = (),
    ablation: str = "full",
    param: str | None = None,
    skip_perfect: bool = True,
    perfect_score: float = 1.0,
) -> Transform:
    """A Pareto search (GEPA's) whose proposals come from neighbour-aware semantic gradients.

    GEPA's search, step for step (`gepa`): a pool of candidates, the per-instance front, the parent drawn in
    proportion to the instances on whose pruned front it is, a minibatch of `minibatch` training items, the child
    kept only when its minibatch sum strictly beats the parent's and then scored on every instance, merge as an
    option, the budget in metric calls. Each proposal is the paper's chain without its gate, run on the parent's
    minibatch: its failing examples (up to `k`; all of them by default) are backpropagated through the graph
    (`rules.neighbor_aware()`), and every component that received a gradient is rewritten from its own examples
    and feedback (``components="round_robin"``: only the component whose turn it is; backpropagation still runs
    through the whole graph). The paper's ablations change the proposal chain as they change `neighbor_sgd`:
    ``ablation="no-gradients"`` (no feedback at all), ``"no-neighbors"`` (per-edge backward, siblings hidden),
    ``"one-parameter"`` with `param`.

    Calls per proposal (paper's graph, m = `minibatch`, w wrong items of it, N instances): forward 3m for the
    parent's run and 3m for the child's, backward at most w (one per failing example at the node whose inputs need
    gradients), rewrite 3 (1 under round-robin), and 3N for an accepted child's full evaluation. Metric calls
    (GEPA's unit, one per item scored): 2m per proposal and N per accepted child.

    Args:
        k: Failing minibatch examples backpropagated per proposal (None: every one).
        minibatch, components, merge, max_merges, max_metric_calls, seed, skip_perfect, perfect_score: The
            search's (see `gepa`).
        rule: The backward rule (default `rules.neighbor_aware()`).
        via_feedback: Ask for a critique of each instruction before rewriting it.
        constraints: Stated in every rewrite prompt.
        ablation: One of `PARETO_ABLATIONS`.
        param: The parameter trained alone, for ``ablation="one-parameter"``.

    Examples:
        >>> from semgrad.core import Example
        >>> from semgrad.effects import fit_sync
        >>> from semgrad.backends.simulated import SimulatedLLM
        >>> from semgrad.topologies import paper_graph
        >>> graph, params = paper_graph()
        >>> sums = {f"What is {i} + {i + 1}?": str(2 * i + 1) for i in range(6)}
        >>> train = [Example({"question": q}, a, id=f"q{i}") for i, (q, a) in enumerate(sums.items())]
        >>> result = fit_sync(graph, params, pareto_sgd(seed=1), train=train, llm=SimulatedLLM(sums), iterations=4)
        >>> result.history[0].report[0].stage, result.best_score > result.initial_score
        ('pareto_sgd', True)
    """
    if k is not None and not (type(k) is int and k >= 1):
        raise ValueError(f"pareto_sgd needs a whole number k >= 1 or None, got {k!r}")
    if not (type(minibatch) is int and minibatch >= 1):
        raise ValueError(f"pareto_sgd needs a whole number minibatch >= 1, got {minibatch!r}")
    options = _ablated(ablation, param)
    if rule is not None:
        if "rule" in options:
            raise ValueError("pareto_sgd: give rule= or ablation='no-neighbors', not both")
        options["rule"] = rule
    chain = neighbor_sgd(
        k if k is not None else minibatch,
        seed=seed,
        via_feedback=via_feedback,
        constraints=constraints,
        gate=False,
        fallback=False,
        **options,
    )
    return pareto_search(
        gradient_proposal(chain),
        name="pareto_sgd",
        minibatch=minibatch,
        components=components,
        merge=merge,
        max_merges=max_merges,
        max_metric_calls=max_metric_calls,
        seed=seed,
        skip_perfect=skip_perfect,
        perfect_score=perfect_score,
    )
