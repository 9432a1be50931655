"""The Pareto machinery of `optim.gepa` (semgrad/core/optim/_pareto.py, _merge.py): properties, and GEPA's own
functions (the `gepa` package, when installed) as the reference for pruning, the parent draw, the minibatch
sampler and the merge subsample."""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from semgrad.core import FrozenMap
from semgrad.core.optim._merge import ancestors, merged_values, subsample
from semgrad.core.optim._pareto import (
    Candidate,
    SamplerState,
    averages,
    best_candidate,
    dominates,
    front,
    front_counts,
    generator,
    generator_state,
    next_minibatch,
    prune_dominated,
    sample_parent,
    sampling_list,
)

SCORES = st.sampled_from((0.0, 0.5, 1.0))


@st.composite
def pools(draw: Any, min_size: int = 1, max_size: int = 7) -> tuple[Candidate, ...]:
    """A pool: candidates with scores in {0, 0.5, 1} on the same instances (few values, so ties are common)."""
    instances = draw(st.integers(1, 6))
    size = draw(st.integers(min_size, max_size))
    rows = draw(st.lists(st.lists(SCORES, min_size=instances, max_size=instances), min_size=size, max_size=size))
    return tuple(Candidate(FrozenMap({"a": str(k)}), scores=tuple(r)) for k, r in enumerate(rows))


def _gepa_utils() -> Any:
    return pytest.importorskip("gepa.gepa_utils")


@given(pools())
def test_the_front_holds_exactly_each_instances_best(pool):
    """Per instance, the front is every candidate with the best score there, and no other."""
    for i, on_front in enumerate(front(pool)):
        best = max(c.scores[i] for c in pool)
        assert on_front == tuple(k for k, c in enumerate(pool) if c.scores[i] == best)


@given(pools())
def test_a_candidate_on_the_pruned_front_is_never_dominated(pool):
    """No candidate left on the pruned front is dominated (>= everywhere, > somewhere) by any candidate of the pool."""
    kept = {k for f in prune_dominated(front(pool), averages(pool)) for k in f}
    for k in kept:
        assert not any(dominates(other.scores, pool[k].scores) for other in pool)


@given(pools())
def test_pruning_keeps_every_instances_best(pool):
    """After pruning, every instance still has a candidate on its front, one of its best."""
    fronts = front(pool)
    for before, after in zip(fronts, prune_dominated(fronts, averages(pool)), strict=True):
        assert after and set(after) <= set(before)


@given(pools())
def test_the_parent_distribution_matches_the_front_counts(pool):
    """The parent is one uniform draw from the sampling list, in which each candidate appears once per instance of
    the pruned front it is on: its chance is that count over the total."""
    fronts = prune_dominated(front(pool), averages(pool))
    counts = dict(front_counts(fronts))

    class Spy(random.Random):
        def choice(self, seq):  # type: ignore[override]
            self.seen = list(seq)
            return super().choice(seq)

    spy = Spy(0)
    sample_parent(pool, spy)
    assert Counter(spy.seen) == Counter(counts)
    assert sum(counts.values()) == sum(len(f) for f in fronts) == len(sampling_list(fronts))


@given(pools())
def test_the_best_candidate_has_the_highest_mean_first_among_equals(pool):
    """`best_candidate` is the first candidate with the highest mean score (GEPA's idxmax)."""
    means = averages(pool)
    assert best_candidate(pool) == min(k for k, m in enumerate(means) if m == max(means))


@given(st.integers(0, 2**32), st.integers(0, 50))
def test_the_generator_state_round_trips(seed, draws):
    """A generator rebuilt from its saved state draws what the original would have drawn next."""
    rng = random.Random(seed)
    for _ in range(draws):
        rng.random()
    again = generator(generator_state(rng), 99)
    assert [again.random() for _ in range(5)] == [rng.random() for _ in range(5)]


def test_a_damaged_generator_state_is_refused():
    """A checkpoint's generator state that is no Mersenne state is a clear error, not a crash later."""
    with pytest.raises(ValueError, match="generator state is damaged"):
        generator((1, 2, 3), 0)


@given(pools())
def test_pruning_is_gepas(pool):
    """Our pruning gives GEPA's ``remove_dominated_programs`` fronts (its sets as our ascending tuples)."""
    utils = _gepa_utils()
    fronts = front(pool)
    theirs = utils.remove_dominated_programs(
        {i: set(f) for i, f in enumerate(fronts)}, scores=dict(enumerate(averages(pool)))
    )
    assert prune_dominated(fronts, averages(pool)) == tuple(tuple(sorted(theirs[i])) for i in range(len(fronts)))


@given(pools(), st.integers(0, 1000))
def test_the_parent_draw_is_gepas(pool, seed):
    """With the same seeded generator, our parent is GEPA's ``select_program_candidate_from_pareto_front``'s."""
    utils = _gepa_utils()
    mapping = {i: set(f) for i, f in enumerate(front(pool))}
    assert sample_parent(pool, random.Random(seed)) == utils.select_program_candidate_from_pareto_front(
        mapping, list(averages(pool)), random.Random(seed)
    )


@settings(max_examples=50)
@given(st.integers(1, 9), st.integers(1, 4), st.integers(0, 1000))
def test_the_minibatches_are_gepas(items, size, seed):
    """Iteration after iteration, our minibatches are GEPA's ``EpochShuffledBatchSampler``'s from the same seed."""
    pytest.importorskip("gepa")
    from gepa.strategies.batch_sampler import EpochShuffledBatchSampler

    class Loader:
        def all_ids(self) -> list[int]:
            return list(range(items))

        def __len__(self) -> int:
            return items

    class State:
        i = 0

    theirs = EpochShuffledBatchSampler(size, random.Random(seed))
    rng, sampler, state = random.Random(seed), SamplerState(), State()
    for iteration in range(12):
        state.i = iteration
        batch, sampler = next_minibatch(sampler, rng, items, size, iteration)
        assert list(batch) == theirs.next_minibatch_ids(Loader(), state)


@given(st.lists(st.tuples(SCORES, SCORES), min_size=1, max_size=9), st.integers(0, 1000))
def test_the_merge_subsample_is_gepas(pairs, seed):
    """The merge's subsample is GEPA's ``select_eval_subsample_for_merged_program``'s from the same seed."""
    pytest.importorskip("gepa")
    from gepa.proposer.merge import MergeProposer

    a, b = tuple(x for x, _ in pairs), tuple(y for _, y in pairs)
    proposer = MergeProposer.__new__(MergeProposer)
    proposer.rng = random.Random(seed)
    theirs = proposer.select_eval_subsample_for_merged_program(dict(enumerate(a)), dict(enumerate(b)))
    assert list(subsample(a, b, random.Random(seed))) == theirs


def test_a_merge_takes_from_each_parent_the_component_it_changed():
    """Two children of one ancestor, each having changed another component: the merge takes each changed one."""
    seed = Candidate(FrozenMap({"a": "a0", "b": "b0"}), (), (0.0, 0.0))
    left = Candidate(FrozenMap({"a": "a1", "b": "b0"}), (0,), (1.0, 0.0))
    right = Candidate(FrozenMap({"a": "a0", "b": "b1"}), (0,), (0.0, 1.0))
    values, sources, changed = merged_values((seed, left, right), random.Random(0), 1, 2, 0)
    assert dict(values) == {"a": "a1", "b": "b1"} and sources == (1, 2) and changed == ("b",)
    assert ancestors((seed, left, right), 2) == (0,)
