"""The Pareto search of GEPA (the `gepa` package, 0.1.4) as a `Transform`, its proposal step pluggable.

`pareto_search(propose, ...)` runs GEPA's engine over the values of `semgrad.core.optim._pareto`
(pool, front, pruning, parent draw, minibatch) and `semgrad.core.optim._merge`: one proposal per
`fit` iteration. `gepa` passes GEPA's proposal step (reflect on one component with the system's
global feedback); another optimizer passes its own ``propose`` (a `ProposalTask` in, a program
of `Proposed` out) and keeps everything else.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from .._example import Example
from .._frozen import FrozenMap
from .._graph import Params
from .._program import Program, bind, map_, pure
from .._scoring import Loss, Score
from .._trace import Trace
from ._base import ParamGradient, Step, Transform
from ._lineage import lineage_notes
from ._merge import merge_attempt, subsample
from ._pareto import (
    COMPONENT_CHOICES,
    Candidate,
    ParetoState,
    ProposalRecord,
    averages,
    best_candidate,
    front_counts,
    generator,
    generator_state,
    next_minibatch,
    prune_dominated,
    sample_parent,
)

__all__ = ["Propose", "ProposalTask", "Proposed", "pareto_search"]


@attrs.frozen
class ProposalTask:
    """What a proposal step is given.

    Attributes:
        step: The iteration's step (graph, loss, options, training items).
        parent: The parent's index in the pool.
        params: The params with the parent's values.
        components: The components to rewrite (under round-robin one; ``"all"``: every one).
        minibatch: The training indices the parent was run on.
        results: The parent's ``(trace, score)`` per minibatch item, in minibatch order.
    """

    step: Step
    parent: int
    params: Params
    components: tuple[str, ...]
    minibatch: tuple[int, ...]
    results: tuple[tuple[Trace, Score], ...]


@attrs.frozen
class Proposed:
    """What a proposal step returns: new values by component (none: nothing proposed), notes for the
    report, and what each component was rewritten from (shown as the iteration's gradients)."""

    values: FrozenMap[str, Any] = FrozenMap()
    notes: tuple[str, ...] = ()
    gradients: FrozenMap[str, ParamGradient] = FrozenMap()


Propose = Callable[[ProposalTask], Program[Proposed]]


def _evaluate(step: Step, params: Params, examples: Sequence[Example]) -> Program[tuple[tuple[Trace, Score], ...]]:
    from ._stages import evaluate

    loss: Loss | None = step.loss
    if loss is None:
        raise ValueError("a Pareto search needs step.loss and step.train (fit sets them)")
    return evaluate(step.graph, params, examples, loss, options=step.options.get("forward"))


def _with(params: Params, values: Mapping[str, Any]) -> Params:
    changed = {n: v for n, v in values.items() if params.value(n) != v}
    return params.with_values(changed) if changed else params


def _misfit(state: ParetoState, step: Step, params: Params, instances: Sequence[Example]) -> str | None:
    """What makes a search state (perhaps read from a checkpoint) unusable for this step, or None."""
    names = set(step.trainable(params))
    for k, candidate in enumerate(state.pool):
        if set(candidate.values) != names:
            return f"candidate {k} has values for other parameters than the trainable ones"
        if len(candidate.scores) != len(instances):
            return f"candidate {k} has {len(candidate.scores)} scores for {len(instances)} instances"
        if any(not (type(p) is int and 0 <= p < k) for p in candidate.parents):
            return f"candidate {k} names a parent that is not an earlier candidate"
        if not (type(candidate.next_component) is int and 0 <= candidate.next_component < max(len(names), 1)):
            return f"candidate {k}'s next component is out of range"
    if any(not (type(i) is int and 0 <= i < len(step.train)) for i in state.sampler.order):
        return "its minibatch order names items the training set does not have"
    if state.metric_calls < 0 or state.iteration < 0 or any(r.child >= len(state.pool) for r in state.lineage):
        return "its counts or lineage do not hold together"
    return None


@attrs.frozen
class _Search:
    """The settings of one `pareto_search`."""

    propose: Propose
    label: str
    minibatch: int
    components: str
    merge: bool
    max_merges: int
    merge_overlap: int
    max_metric_calls: int | None
    seed: int
    skip_perfect: bool
    perfect_score: float

    def instances(self, step: Step) -> tuple[Example, ...]:
        return step.validation or step.train

    # The seed's evaluation (GEPA scores it on the instances before its first iteration).
    def seeded(self, step: Step, state: ParetoState, params: Params) -> Program[ParetoState]:
        if state.pool:
            return pure(state)
        names = step.trainable(params)
        if not names:
            raise ValueError(f"{self.label} needs at least one trainable parameter")
        values = FrozenMap((n, params.value(n)) for n in names)
        instances = self.instances(step)
        if not step.validation and len(step.scores) == len(instances):
            scored: Program[tuple[float, ...]] = pure(tuple(s.value for s in step.scores))  # fit's own forward
        else:
            scored = map_(_evaluate(step, params, instances), lambda rs: tuple(s.value for _, s in rs))
        rng = generator_state(generator((), self.seed))
        return map_(
            scored,
            lambda scores: attrs.evolve(
                state, pool=(Candidate(values, (), scores, 0, 0),), rng=rng, metric_calls=len(instances)
            ),
        )

    def update(self, step: Step, state: ParetoState, params: Params) -> Program[tuple[Step, ParetoState]]:
        if step.loss is None or not step.train:
            raise ValueError(f"{self.label} needs step.train and step.loss (fit sets them)")
        problem = _misfit(state, step, params, self.instances(step))
        if problem:
            raise ValueError(f"{self.label}: the search state does not fit this run: {problem}")
        return bind(self.seeded(step, state, params), lambda seeded: self.iterate(step, seeded, params))

    def spent(self, state: ParetoState) -> bool:
        return self.max_metric_calls is not None and state.metric_calls >= self.max_metric_calls

    def iterate(self, step: Step, state: ParetoState, params: Params) -> Program[tuple[Step, ParetoState]]:
        if self.spent(state):
            record = ProposalRecord(state.iteration, "budget", metric_calls=state.metric_calls)
            return pure(self.finish(step, state, params, record, None, ()))
        state = attrs.evolve(state, iteration=state.iteration + 1)
        if self.merge and state.merge.due > 0 and state.merge.last_found:
            return self.try_merge(step, state, params)
        if self.merge:
            state = attrs.evolve(state, merge=attrs.evolve(state.merge, last_found=False))
        return self.reflect(step, state, params)

    def reflect(self, step: Step, state: ParetoState, params: Params) -> Program[tuple[Step, ParetoState]]:
        """One reflective proposal: parent, minibatch, the parent's run, the proposal, the child's run, the verdict."""
        rng = generator(state.rng, self.seed)
        parent = sample_parent(state.pool, rng)
        batch, sampler = next_minibatch(state.sampler, rng, len(step.train), self.minibatch, state.iteration - 1)
        state = attrs.evolve(state, rng=generator_state(rng), sampler=sampler)
        parent_params = _with(params, state.pool[parent].values)

        def ran(results: tuple[tuple[Trace, Score], ...]) -> Program[tuple[Step, ParetoState]]:
            before = tuple(s.value for _, s in results)
            spent = attrs.evolve(state, metric_calls=state.metric_calls + len(batch))
            if self.skip_perfect and all(v >= self.perfect_score for v in before):
                record = ProposalRecord(
                    spent.iteration, "perfect", (parent,), (), batch, before, (), False, -1, len(batch)
                )
                return pure(self.finish(step, spent, params, record, None, ()))
            chosen, spent = self.choose_components(spent, parent)
            task = ProposalTask(step, parent, parent_params, chosen, batch, results)
            return bind(self.propose(task), lambda proposed: self.try_child(step, spent, params, task, proposed))

        return bind(self.run_parent(step, params, parent_params, batch), ran)

    def run_parent(
        self, step: Step, params: Params, parent: Params, batch: tuple[int, ...]
    ) -> Program[tuple[tuple[Trace, Score], ...]]:
        """The parent's traces and scores on the minibatch: when the parent is the current params, those of
        `fit`'s own forward of the training items (no call; GEPA's metric calls are counted all the same)."""
        if parent is params and len(step.traces) == len(step.scores) == len(step.train):
            return pure(tuple((step.traces[i], step.scores[i]) for i in batch))
        return _evaluate(step, parent, tuple(step.train[i] for i in batch))

    def try_merge(self, step: Step, state: ParetoState, params: Params) -> Program[tuple[Step, ParetoState]]:
        """One merge iteration (GEPA's engine): a merge scored on a subsample and kept when its sum is at least
        the better parent's; with no merge to try, the iteration goes on to a reflective proposal."""
        rng = generator(state.rng, self.seed)
        attempt, merge = merge_attempt(state.pool, state.merge, rng, self.merge_overlap)
        state = attrs.evolve(state, rng=generator_state(rng), merge=attrs.evolve(merge, last_found=False))
        if attempt is None:
            return self.reflect(step, state, params)
        values, i, j, _, changed = attempt
        picked = subsample(state.pool[i].scores, state.pool[j].scores, rng)
        state = attrs.evolve(state, rng=generator_state(rng))
        if not picked:
            return self.reflect(step, state, params)
        before = tuple(sum(state.pool[p].scores[k] for k in picked) for p in (i, j))
        instances = self.instances(step)

        def judged(results: tuple[tuple[Trace, Score], ...]) -> Program[tuple[Step, ParetoState]]:
            after = tuple(s.value for _, s in results)
            spent = attrs.evolve(state, metric_calls=state.metric_calls + len(picked))
            if not sum(after) >= max(before):
                record = ProposalRecord(spent.iteration, "merge", (i, j), changed, picked, before, after, False, -1,
                                        len(picked))  # fmt: skip
                return pure(self.finish(step, spent, params, record, None, ()))

            def added(pair: tuple[ParetoState, Any]) -> tuple[Step, ParetoState]:
                grown, full = pair
                merge = attrs.evolve(grown.merge, due=grown.merge.due - 1, tested=grown.merge.tested + 1)
                grown = attrs.evolve(grown, merge=merge)
                record = ProposalRecord(grown.iteration, "merge", (i, j), changed, picked, before, after, True,
                                        len(grown.pool) - 1, len(picked) + len(instances))  # fmt: skip
                return self.finish(step, grown, params, record, full, ())

            return map_(self.add(step, spent, params, values, (i, j), found=False), added)

        return bind(_evaluate(step, _with(params, values), tuple(instances[k] for k in picked)), judged)

    def choose_components(self, state: ParetoState, parent: int) -> tuple[tuple[str, ...], ParetoState]:
        """The components to rewrite; under round-robin the parent's turn moves on (GEPA's selector)."""
        candidate = state.pool[parent]
        names = tuple(candidate.values)
        if self.components == "all":
            return names, state
        turn = candidate.next_component % len(names)
        moved = attrs.evolve(candidate, next_component=(turn + 1) % len(names))
        pool = state.pool[:parent] + (moved,) + state.pool[parent + 1 :]
        return (names[turn],), attrs.evolve(state, pool=pool)

    def try_child(
        self, step: Step, state: ParetoState, params: Params, task: ProposalTask, proposed: Proposed
    ) -> Program[tuple[Step, ParetoState]]:
        parent = state.pool[task.parent]
        before = tuple(s.value for _, s in task.results)
        values = {n: v for n, v in proposed.values.items() if n in parent.values}
        if not values:
            record = ProposalRecord(state.iteration, "none", (task.parent,), (), task.minibatch, before, (), False, -1,
                                    len(task.minibatch))  # fmt: skip
            return pure(self.finish(step, state, params, record, None, proposed.notes, proposed.gradients))
        child_values = FrozenMap({**parent.values, **values})
        child_params = _with(params, child_values)
        examples = tuple(step.train[i] for i in task.minibatch)

        def judged(results: tuple[tuple[Trace, Score], ...]) -> Program[tuple[Step, ParetoState]]:
            after = tuple(s.value for _, s in results)
            spent = attrs.evolve(state, metric_calls=state.metric_calls + len(task.minibatch))
            calls = 2 * len(task.minibatch)
            changed = tuple(n for n in parent.values if n in values)
            if not sum(after) > sum(before):
                record = ProposalRecord(spent.iteration, "reflective", (task.parent,), changed, task.minibatch,
                                        before, after, False, -1, calls)  # fmt: skip
                return pure(self.finish(step, spent, params, record, None, proposed.notes, proposed.gradients))

            def added(pair: tuple[ParetoState, Any]) -> tuple[Step, ParetoState]:
                grown, full = pair
                record = ProposalRecord(grown.iteration, "reflective", (task.parent,), changed, task.minibatch,
                                        before, after, True, len(grown.pool) - 1,
                                        calls + len(self.instances(step)))  # fmt: skip
                return self.finish(step, grown, params, record, full, proposed.notes, proposed.gradients)

            return map_(self.add(step, spent, params, child_values, (task.parent,), found=True), added)

        return bind(_evaluate(step, child_params, examples), judged)

    def add(
        self,
        step: Step,
        state: ParetoState,
        params: Params,
        values: FrozenMap[str, Any],
        parents: tuple[int, ...],
        *,
        found: bool,
    ) -> Program[tuple[ParetoState, tuple[tuple[Trace, Score], ...]]]:
        """Evaluate an accepted child on every instance and add it to the pool (and schedule a merge)."""
        instances = self.instances(step)

        def grown(results: tuple[tuple[Trace, Score], ...]) -> tuple[ParetoState, tuple[tuple[Trace, Score], ...]]:
            turn = max((state.pool[p].next_component for p in parents), default=0)
            child = Candidate(values, parents, tuple(s.value for _, s in results), turn, state.metric_calls)
            merge = state.merge
            if found and self.merge:
                due = merge.due + (1 if merge.tested < self.max_merges else 0)
                merge = attrs.evolve(merge, last_found=True, due=due)
            new = attrs.evolve(
                state, pool=(*state.pool, child), metric_calls=state.metric_calls + len(instances), merge=merge
            )
            return new, results

        return map_(_evaluate(step, _with(params, values), instances), grown)

    def finish(
        self,
        step: Step,
        state: ParetoState,
        params: Params,
        record: ProposalRecord,
        full: tuple[tuple[Trace, Score], ...] | None,
        notes: tuple[str, ...],
        gradients: FrozenMap[str, ParamGradient] | None = None,
    ) -> tuple[Step, ParetoState]:
        """The step proposing the pool's best candidate (when it differs from `params`), with the lineage noted."""
        state = attrs.evolve(state, lineage=(*state.lineage, record)) if record.kind != "budget" else state
        best = best_candidate(state.pool)
        updates = FrozenMap((n, v) for n, v in state.pool[best].values.items() if params.value(n) != v)
        on_train = not step.validation
        reuse = full is not None and on_train and record.child == best
        fronts = state.front
        counts = dict(front_counts(prune_dominated(fronts, averages(state.pool))))
        budget = f" of {self.max_metric_calls}" if self.max_metric_calls is not None else ""
        lines = (
            record.describe(),
            *notes,
            f"front: {_front_text(fronts)}; pruned counts {counts}",
            f"best: candidate {best} of {len(state.pool)} at {state.pool[best].average:.3f}",
            f"metric calls: {state.metric_calls}{budget}",
            *lineage_notes(record, averages(state.pool), tuple(counts.items())),
        )
        new = attrs.evolve(
            step,
            param_gradients=gradients if gradients else step.param_gradients,
            updates=updates,
            accepted=bool(updates),
            candidate_score=state.pool[best].average,
            candidate_results=tuple(full) if reuse and full is not None else None,
        ).noted(self.label, *lines)
        return new, state


def _front_text(fronts: Sequence[tuple[int, ...]]) -> str:
    return "[" + ", ".join("{" + ", ".join(str(k) for k in f) + "}" for f in fronts) + "]"


def pareto_search(
    propose: Propose,
    *,
    name: str = "pareto_search",
    minibatch: int = 3,
    components: str = "round_robin",
    merge: bool = False,
    max_merges: int = 5,
    merge_overlap: int = 5,
    max_metric_calls: int | None = None,
    seed: int = 0,
    skip_perfect: bool = True,
    perfect_score: float = 1.0,
) -> Transform:
    """GEPA's search with a pluggable proposal step: one proposal per `fit` iteration.

    Each update: the seed is scored on every instance (once, in the first update); then,
    unless `max_metric_calls` are spent, a merge when one is due (with `merge`), else a
    reflective proposal -- a parent drawn from the pruned front, a minibatch of `minibatch`
    training items, the parent run on it, ``propose(task)`` for new values of the chosen
    components, the child run on the same minibatch and kept only when its sum is strictly
    higher, then scored on every instance and added to the pool. The step proposes the pool's
    best candidate (by mean score): `fit` applies it when it differs from the current params
    (``step.accepted`` is whether the best changed).

    Args:
        propose: The proposal step (see `ProposalTask` and `Proposed`).
        name: The transform's name and its report's stage.
        minibatch: Training items per proposal (GEPA's 3).
        components: ``"round_robin"`` (one component per proposal, in turn per candidate) or ``"all"``.
        merge: Try merges of two front candidates that share an ancestor.
        max_merges: Merges accepted at most (GEPA's 5).
        merge_overlap: Instances two candidates must both be scored on for a merge (GEPA's 5).
        max_metric_calls: Stop proposing once this many items were evaluated (None: no limit).
        seed: The seed of the search's generator (GEPA's ``seed``).
        skip_perfect: Propose nothing when the parent is perfect on the minibatch.
        perfect_score: What a perfect item scores.

    Examples:
        >>> from semgrad.core.optim import Step
        >>> t = pareto_search(lambda task: pure(Proposed()), name="search", max_metric_calls=10)
        >>> t.name
        'search'
    """
    if not (type(minibatch) is int and minibatch >= 1):
        raise ValueError(f"{name} needs a whole number minibatch >= 1, got {minibatch!r}")
    if components not in COMPONENT_CHOICES:
        raise ValueError(f"{name}: unknown components {components!r}; choose one of: {', '.join(COMPONENT_CHOICES)}")
    if max_metric_calls is not None and not (type(max_metric_calls) is int and max_metric_calls >= 1):
        raise ValueError(f"{name} needs a whole number max_metric_calls >= 1 or None, got {max_metric_calls!r}")
    if not (type(max_merges) is int and max_merges >= 0):
        raise ValueError(f"{name} needs a whole number max_merges >= 0, got {max_merges!r}")
    search = _Search(propose, name, minibatch, components, merge, max_merges, merge_overlap, max_metric_calls, seed,
                     skip_perfect, perfect_score)  # fmt: skip
    return Transform(lambda params: ParetoState(), search.update, name)
