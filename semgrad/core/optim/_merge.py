"""GEPA's merge (the `gepa` package 0.1.4, ``proposer/merge.py``) as pure functions over a pool.

Two candidates of the pruned front that share an ancestor, neither an ancestor of the
other, are merged component by component: where one of them kept the ancestor's value
and the other changed it, the changed one; where both changed it, the one with the
better mean (a draw between equals); where they agree, theirs. The merge is scored on
a subsample of up to 5 instances, picked across where each parent wins and where they
tie, and kept when its sum is at least the better parent's sum there; a kept merge is
scored on every instance and joins the pool. The draws come from the search's one
generator, in GEPA's order; where GEPA iterates a set of small ints we iterate them
ascending (what CPython does for the pool sizes a run reaches), and the components in
the params' order (GEPA iterates a set of names, in hash order).
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from typing import Any

import attrs

from .._frozen import FrozenMap
from ._pareto import Candidate, MergeState, averages, front, prune_dominated

__all__ = ["ancestors", "merge_attempt", "merge_candidates", "merged_values", "subsample"]

_ATTEMPTS = 10
_SUBSAMPLE = 5


def ancestors(pool: Sequence[Candidate], node: int) -> tuple[int, ...]:
    """Every ancestor of candidate `node`, ascending.

    Examples:
        >>> pool = (Candidate(FrozenMap()), Candidate(FrozenMap(), (0,)), Candidate(FrozenMap(), (1,)))
        >>> ancestors(pool, 2)
        (0, 1)
    """
    found: set[int] = set()
    todo = list(pool[node].parents)
    while todo:
        p = todo.pop()
        if p not in found:
            found.add(p)
            todo.extend(pool[p].parents)
    return tuple(sorted(found))


def merge_candidates(pool: Sequence[Candidate]) -> tuple[int, ...]:
    """The candidates that survive pruning (GEPA's ``find_dominator_programs``), ascending."""
    return tuple(sorted({k for f in prune_dominated(front(pool), averages(pool)) for k in f}))


def _desirable(pool: Sequence[Candidate], ancestor: int, i: int, j: int) -> bool:
    """A component where one of `i`, `j` kept the ancestor's value and they differ."""
    a, x, y = pool[ancestor].values, pool[i].values, pool[j].values
    return any((a[n] == x[n] or a[n] == y[n]) and x[n] != y[n] for n in a)


def _common_ancestor(
    pool: Sequence[Candidate], rng: random.Random, ids: tuple[int, ...], triplets: Sequence[tuple[int, int, int]]
) -> tuple[int, int, int] | None:
    scores = averages(pool)
    for _ in range(_ATTEMPTS):
        if len(ids) < 2:
            return None
        i, j = rng.sample(list(ids), 2)
        if i == j:
            continue
        i, j = min(i, j), max(i, j)
        of_i, of_j = ancestors(pool, i), ancestors(pool, j)
        if j in of_i or i in of_j:
            continue
        common = [
            a
            for a in sorted(set(of_i) & set(of_j))
            if (i, j, a) not in triplets
            and not (scores[a] > scores[i] or scores[a] > scores[j])
            and _desirable(pool, a, i, j)
        ]
        if common:
            weights = [scores[a] for a in common]
            chosen = rng.choices(common, k=1, weights=weights)[0] if sum(weights) > 0 else rng.choice(common)
            return i, j, chosen
    return None


def merged_values(
    pool: Sequence[Candidate], rng: random.Random, i: int, j: int, ancestor: int
) -> tuple[FrozenMap[str, Any], tuple[int, ...], tuple[str, ...]]:
    """The merge of `i` and `j` over `ancestor`: its values, which candidate gave each component, and
    the components that differ from `i`'s."""
    scores = averages(pool)
    a, x, y = pool[ancestor].values, pool[i].values, pool[j].values
    values, sources = dict(a), []
    for n in a:
        if (a[n] == x[n] or a[n] == y[n]) and x[n] != y[n]:
            source = j if a[n] == x[n] else i
        elif a[n] != x[n] and a[n] != y[n]:
            source = i if scores[i] > scores[j] else (j if scores[j] > scores[i] else rng.choice([i, j]))
        else:
            source = i
        values[n] = pool[source].values[n]
        sources.append(source)
    return FrozenMap(values), tuple(sources), tuple(n for n in a if values[n] != x[n])


def subsample(a: Sequence[float], b: Sequence[float], rng: random.Random, size: int = _SUBSAMPLE) -> tuple[int, ...]:
    """GEPA's merge subsample: up to ``ceil(size / 3)`` instances where `a` wins, as many where `b` wins,
    then ties, then any others, each group drawn from `rng`.

    Examples:
        >>> sorted(subsample((1.0, 0.0, 1.0, 0.0, 1.0, 1.0), (0.0, 1.0, 1.0, 1.0, 0.0, 1.0), random.Random(0)))
        [0, 1, 3, 4, 5]
        >>> len(subsample((1.0, 0.0), (0.0, 1.0), random.Random(0)))  # fewer instances: drawn again
        5
    """
    ids = list(range(min(len(a), len(b))))
    wins_a = [k for k in ids if a[k] > b[k]]
    wins_b = [k for k in ids if b[k] > a[k]]
    ties = [k for k in ids if k not in wins_a and k not in wins_b]
    each = max(1, math.ceil(size / 3))
    chosen: list[int] = []
    for bucket in (wins_a, wins_b, ties):
        if len(chosen) >= size:
            break
        available = [k for k in bucket if k not in chosen]
        take = min(len(available), each, size - len(chosen))
        if take > 0:
            chosen += rng.sample(available, k=take)
    remaining = size - len(chosen)
    if remaining > 0:
        unused = [k for k in ids if k not in chosen]
        if len(unused) >= remaining:
            chosen += rng.sample(unused, k=remaining)
        elif ids:
            chosen += rng.choices(ids, k=remaining)
    return tuple(chosen[:size])


def merge_attempt(
    pool: Sequence[Candidate], merge: MergeState, rng: random.Random, overlap: int
) -> tuple[tuple[FrozenMap[str, Any], int, int, int, tuple[str, ...]] | None, MergeState]:
    """GEPA's ``sample_and_attempt_merge_programs_by_common_predictors``: the merge to try, as
    ``(values, id1, id2, ancestor, components changed from id1's)``, or None; and the merge state
    with it recorded (two candidates scored on fewer than `overlap` common instances are never merged)."""
    ids = merge_candidates(pool)
    if len(ids) < 2 or len(pool) < 3:
        return None, merge
    descriptions = merge.descriptions
    for _ in range(_ATTEMPTS):
        found = _common_ancestor(pool, rng, ids, merge.triplets)
        if found is None or found in merge.triplets:
            continue
        i, j, ancestor = found
        values, sources, changed = merged_values(pool, rng, i, j, ancestor)
        if (i, j, sources) in descriptions:
            continue
        if min(len(pool[i].scores), len(pool[j].scores)) < overlap:
            continue
        descriptions = (*descriptions, (i, j, sources))
        merge = attrs.evolve(merge, descriptions=descriptions, triplets=(*merge.triplets, (i, j, ancestor)))
        return (values, i, j, ancestor, changed), merge
    return None, merge
