"""The Pareto machinery of GEPA (the `gepa` package, 0.1.4) as pure values and functions.

A *pool* of candidates, each its values of the trainable parameters, its parents and its
score per instance (the validation items, or the training items when there is none); the
*front*: per instance, the candidates with the best score on it; *pruning*: a candidate
all of whose front instances another surviving candidate also holds is dropped, the
lowest average first (GEPA's ``remove_dominated_programs``); the *parent draw*: a
candidate with probability proportional to the instances on whose pruned front it is;
the *minibatch*: GEPA's epoch-shuffled sampler. Every draw comes from one seeded
generator whose state is kept in the run's state (`ParetoState.rng`), so the draws are
GEPA's own and a resumed run draws as an uninterrupted one would.

The search that uses them is `semgrad.core.optim._search.pareto_search`.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import attrs

from .._frozen import FrozenMap

__all__ = [
    "COMPONENT_CHOICES",
    "Candidate",
    "MergeState",
    "ParetoState",
    "ProposalRecord",
    "SamplerState",
    "averages",
    "best_candidate",
    "dominates",
    "front",
    "front_counts",
    "generator",
    "generator_state",
    "next_minibatch",
    "prune_dominated",
    "sample_parent",
    "sampling_list",
]

#: How the components a proposal rewrites are chosen: one at a time in turn, per candidate, or all.
COMPONENT_CHOICES = ("round_robin", "all")


@attrs.frozen
class Candidate:
    """One candidate of the pool.

    Attributes:
        values: Its value per component (trainable parameter), in the parameters' order.
        parents: The pool indices it was made from (none for the seed; two for a merge).
        scores: Its score per instance (validation item, or training item without a validation set).
        next_component: Under round-robin, the index of the component its next proposal rewrites.
        discovered_at: The metric calls spent when it joined the pool.
    """

    values: FrozenMap[str, Any]
    parents: tuple[int, ...] = ()
    scores: tuple[float, ...] = ()
    next_component: int = 0
    discovered_at: int = 0

    @property
    def average(self) -> float:
        """Its mean score over the instances (0.0 for none)."""
        return sum(self.scores) / len(self.scores) if self.scores else 0.0


@attrs.frozen
class SamplerState:
    """GEPA's epoch-shuffled minibatch sampler: the current epoch's order (padded) and the epoch."""

    order: tuple[int, ...] = ()
    epoch: int = -1


@attrs.frozen
class MergeState:
    """GEPA's merge schedule and the merges tried.

    Attributes:
        due: Merges scheduled (one per accepted proposal, while fewer than the maximum were tested).
        tested: Merges accepted so far (GEPA counts a merge as tested when it is accepted).
        last_found: Whether the previous proposal found a new candidate (a merge is tried only then).
        triplets: The ``(id1, id2, ancestor)`` merged so far.
        descriptions: The ``(id1, id2, sources)`` merged so far (which candidate gave each component).
    """

    due: int = 0
    tested: int = 0
    last_found: bool = False
    triplets: tuple[tuple[int, int, int], ...] = ()
    descriptions: tuple[tuple[int, int, tuple[int, ...]], ...] = ()


@attrs.frozen
class ProposalRecord:
    """The lineage: what one proposal did.

    Attributes:
        iteration: GEPA's iteration number (from 1).
        kind: ``"reflective"``, ``"merge"``, ``"perfect"`` (the parent was perfect on the minibatch:
            nothing proposed), ``"none"`` (the proposal step proposed nothing) or ``"budget"`` (no proposal: the
            budget is spent; such a record is reported, never kept in the lineage).
        parents: The parent(s) in the pool.
        components: The components rewritten (a merge: those taken from the other parent).
        minibatch: The items scored (training indices; a merge: instance indices).
        before: The parent's score per minibatch item (a merge: each parent's sum on the subsample).
        after: The child's score per minibatch item.
        accepted: Whether the child joined the pool.
        child: Its index in the pool when it joined, else -1.
        metric_calls: The metric calls this proposal spent (its full evaluation included).
    """

    iteration: int
    kind: str
    parents: tuple[int, ...] = ()
    components: tuple[str, ...] = ()
    minibatch: tuple[int, ...] = ()
    before: tuple[float, ...] = ()
    after: tuple[float, ...] = ()
    accepted: bool = False
    child: int = -1
    metric_calls: int = 0

    def describe(self) -> str:
        """One line for the step's report.

        Examples:
            >>> record = ProposalRecord(2, "reflective", (0,), ("a",), (1, 2, 0), (0.0, 1.0, 0.0), (1.0, 1.0, 0.0),
            ...                         True, 1, 9)
            >>> for part in record.describe().split(": "):
            ...     print(part)
            proposal 2 (reflective)
            parent 0, components a, minibatch [1, 2, 0]
            sum 1 -> 2
            accepted as candidate 1; 9 metric calls
        """
        if self.kind in ("perfect", "none", "budget"):
            said = {"perfect": "perfect on the minibatch, nothing proposed", "none": "nothing proposed"}
            head = f"proposal {self.iteration} ({self.kind})"
            if self.kind == "budget":
                return f"no proposal: the metric-call budget is spent ({self.metric_calls} metric calls made)"
            return f"{head}: parent {_ids(self.parents)}, minibatch {list(self.minibatch)}: {said[self.kind]}; " + (
                f"{self.metric_calls} metric calls"
            )
        before = f"{sum(self.before):g}" if self.kind == "reflective" else f"max {max(self.before, default=0.0):g}"
        verdict = f"accepted as candidate {self.child}" if self.accepted else "rejected"
        return (
            f"proposal {self.iteration} ({self.kind}): parent {_ids(self.parents)}, components "
            f"{', '.join(self.components) or 'none'}, minibatch {list(self.minibatch)}: sum {before} -> "
            f"{sum(self.after):g}: {verdict}; {self.metric_calls} metric calls"
        )


def _ids(ids: Sequence[int]) -> str:
    return " and ".join(str(i) for i in ids)


@attrs.frozen
class ParetoState:
    """A Pareto search so far: the pool, the generator, the sampler, the budget spent and the lineage.

    Attributes:
        pool: Every candidate kept, the seed first (the front is derived from their scores: `front`).
        rng: The state of the search's one generator (`generator_state`), empty before the first step.
        sampler: The minibatch sampler.
        metric_calls: Items evaluated so far (one metric call per item and candidate).
        iteration: Proposals attempted (GEPA's iteration counter).
        merge: The merge schedule.
        lineage: One record per proposal, in order.
    """

    pool: tuple[Candidate, ...] = ()
    rng: tuple[int, ...] = ()
    sampler: SamplerState = SamplerState()
    metric_calls: int = 0
    iteration: int = 0
    merge: MergeState = MergeState()
    lineage: tuple[ProposalRecord, ...] = ()

    @property
    def front(self) -> tuple[tuple[int, ...], ...]:
        """Per instance, the candidates with the best score on it (`front`)."""
        return front(self.pool)


# --- the generator -----------------------------------------------------------------------------------------


def generator_state(rng: random.Random) -> tuple[int, ...]:
    """The Mersenne Twister state of `rng` as a tuple of ints (what a checkpoint holds).

    Examples:
        >>> rng = random.Random(3)
        >>> saved = generator_state(rng)
        >>> generator(saved, 0).random() == rng.random()
        True
    """
    version, internal, gauss = rng.getstate()
    return tuple(internal)


def generator(saved: Sequence[int], seed: int) -> random.Random:
    """The generator `saved` holds, or a fresh one seeded with `seed` when `saved` is empty (GEPA's
    ``random.Random(seed)``).

    Raises:
        ValueError: When `saved` is not a generator's state (a damaged checkpoint).
    """
    rng = random.Random(seed)
    if saved:
        try:
            rng.setstate((3, tuple(saved), None))
        except (TypeError, ValueError) as exc:
            raise ValueError(f"the search's generator state is damaged: {exc}") from None
    return rng


# --- the front ---------------------------------------------------------------------------------------------


def front(pool: Sequence[Candidate]) -> tuple[tuple[int, ...], ...]:
    """Per instance, the indices of the candidates with the best score on it, ascending.

    Examples:
        >>> pool = (Candidate(FrozenMap(), scores=(1.0, 0.0)), Candidate(FrozenMap(), scores=(1.0, 1.0)))
        >>> front(pool)
        ((0, 1), (1,))
    """
    if not pool:
        return ()
    found = []
    for i in range(len(pool[0].scores)):
        best = max(c.scores[i] for c in pool)
        found.append(tuple(k for k, c in enumerate(pool) if c.scores[i] == best))
    return tuple(found)


def averages(pool: Sequence[Candidate]) -> tuple[float, ...]:
    """Each candidate's mean score."""
    return tuple(c.average for c in pool)


def best_candidate(pool: Sequence[Candidate]) -> int:
    """The candidate with the best mean score (the first among equals), as GEPA returns it."""
    scores = averages(pool)
    return scores.index(max(scores))


def dominates(a: Sequence[float], b: Sequence[float]) -> bool:
    """Whether scores `a` are at least `b`'s on every instance and better on one.

    Examples:
        >>> dominates((1.0, 1.0), (1.0, 0.0)), dominates((1.0, 0.0), (0.0, 1.0))
        (True, False)
    """
    return all(x >= y for x, y in zip(a, b, strict=True)) and any(x > y for x, y in zip(a, b, strict=True))


def _covered(y: int, others: set[int], fronts: Sequence[tuple[int, ...]]) -> bool:
    """GEPA's ``is_dominated``: every front holding `y` also holds one of `others`."""
    return all(any(o in others for o in f) for f in fronts if y in f)


def prune_dominated(fronts: Sequence[tuple[int, ...]], scores: Sequence[float]) -> tuple[tuple[int, ...], ...]:
    """The fronts without the candidates another one covers (GEPA's ``remove_dominated_programs``).

    Candidates are visited from the lowest mean score (`scores`, by pool index) up, the first
    met first among equals; the first whose every front also holds another surviving candidate
    is dropped, and the visit starts over, until none is. Every instance keeps at least one.

    Examples:
        >>> prune_dominated(((0, 1), (1,)), (0.5, 1.0))
        ((1,), (1,))
    """
    seen: dict[int, None] = {}
    for f in fronts:
        for k in f:
            seen.setdefault(k, None)
    order = sorted(seen, key=lambda k: scores[k])
    dropped: set[int] = set()
    again = True
    while again:
        again = False
        for y in order:
            if y in dropped:
                continue
            if _covered(y, set(order) - {y} - dropped, fronts):
                dropped.add(y)
                again = True
                break
    return tuple(tuple(k for k in f if k not in dropped) for f in fronts)


def front_counts(fronts: Sequence[tuple[int, ...]]) -> tuple[tuple[int, int], ...]:
    """``(candidate, instances on whose front it is)``, in the order candidates first appear.

    Examples:
        >>> front_counts(((2, 0), (0,), (1,)))
        ((2, 1), (0, 2), (1, 1))
    """
    counts: dict[int, int] = {}
    for f in fronts:
        for k in f:
            counts[k] = counts.get(k, 0) + 1
    return tuple(counts.items())


def sampling_list(fronts: Sequence[tuple[int, ...]]) -> tuple[int, ...]:
    """Each candidate repeated once per instance on whose front it is (GEPA draws the parent from it)."""
    return tuple(k for k, n in front_counts(fronts) for _ in range(n))


def sample_parent(pool: Sequence[Candidate], rng: random.Random) -> int:
    """The parent: one draw from the pruned front's `sampling_list` (GEPA's ``rng.choice``), so each
    candidate's chance is the number of instances on whose pruned front it is, over their total."""
    fronts = prune_dominated(front(pool), averages(pool))
    return rng.choice(sampling_list(fronts))


# --- the minibatch -----------------------------------------------------------------------------------------


def _reshuffled(items: int, size: int, rng: random.Random) -> tuple[int, ...]:
    """One epoch's order: the items shuffled, padded to a multiple of `size` with the least used."""
    order = list(range(items))
    rng.shuffle(order)
    freq = {i: 1 for i in order}
    for _ in range((size - items % size) % size):
        least = min(reversed(list(freq.items())), key=lambda pair: pair[1])[0]
        order.append(least)
        freq[least] += 1
    return tuple(order)


def next_minibatch(
    sampler: SamplerState, rng: random.Random, items: int, size: int, iteration: int
) -> tuple[tuple[int, ...], SamplerState]:
    """GEPA's epoch-shuffled minibatch for its `iteration` (counted from 0): ``size`` training indices,
    a new shuffle (from `rng`) at each epoch.

    Examples:
        >>> batch, sampler = next_minibatch(SamplerState(), random.Random(0), 5, 3, 0)
        >>> len(batch), len(sampler.order), sampler.epoch
        (3, 6, 0)
    """
    if items < 1:
        raise ValueError("a minibatch needs at least one training item")
    start = iteration * size
    epoch = 0 if sampler.epoch == -1 else start // max(len(sampler.order), 1)
    if not sampler.order or epoch > sampler.epoch or len(set(sampler.order)) != items:
        sampler = SamplerState(_reshuffled(items, size, rng), epoch)
    start %= len(sampler.order)
    return sampler.order[start : start + size], sampler


#: The run-state types of this module a checkpoint may hold (see `semgrad.effects._checkpoint`).
CHECKPOINT_TYPES = (Candidate, SamplerState, MergeState, ProposalRecord, ParetoState)
