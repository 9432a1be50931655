"""The persistent structures behind the machines behave exactly like immutable copies."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from returns.result import Success

from semgrad.backends.fake import HashLLM
from semgrad.core import LLMResponse, backward, forward
from semgrad.core._persistent import Chain, PVec
from semgrad.effects import run_sync
from semgrad.testing import graphs, inputs_for

# An operation picks an existing version (by index, modulo how many exist) and either
# reads it whole, reads one cell, writes one cell, or writes a few cells at once (adding a new version).
operations = st.lists(
    st.tuples(
        st.integers(0, 10**6), st.sampled_from(["read", "get", "set", "many"]), st.integers(0, 10**6), st.integers()
    ),
    max_size=60,
)


# Small arrays are one leaf; long ones have two levels (the radix is 32).
starts = st.one_of(st.lists(st.integers(), min_size=1, max_size=8), st.lists(st.integers(), min_size=30, max_size=1100))


@given(starts, operations)
def test_every_pvec_version_reads_like_its_own_list_whatever_order_versions_are_used(start, ops):
    """Reads and writes on any version, newest or old, in any order, match a model of immutable list copies."""
    versions = [PVec(start)]
    models = [list(start)]
    for which, op, index, value in ops:
        k = which % len(versions)
        i = index % len(start)
        if op == "read":
            assert versions[k].tolist() == models[k]
        elif op == "get":
            assert versions[k].get(i) == models[k][i]
        elif op == "many":  # up to three cells, spread over the leaves
            changes = {(i + 37 * j * (index % 29 + 1)) % len(start): value + j for j in range(index % 3 + 1)}
            versions.append(versions[k].set_many(changes))
            models.append([changes.get(n, item) for n, item in enumerate(models[k])])
        else:
            versions.append(versions[k].set(i, value))
            models.append(models[k][:i] + [value] + models[k][i + 1 :])
    assert [v.tolist() for v in versions] == models
    assert all(len(v) == len(start) for v in versions)


@given(st.integers(0, 1100), st.integers())
def test_pvec_rejects_indices_outside_it(size, index):
    """Reading or writing outside the array raises IndexError, like a list (no negative indexing)."""
    vec = PVec(range(size))
    if 0 <= index < size:
        assert vec.get(index) == index and vec.set(index, -1).get(index) == -1
    else:
        with pytest.raises(IndexError):
            vec.get(index)
        with pytest.raises(IndexError):
            vec.set(index, 0)
        with pytest.raises(IndexError):
            vec.set_many({0: 0, index: 0} if size else {index: 0})
        with pytest.raises(IndexError):
            vec.set_many({index: 0})


@given(st.lists(st.lists(st.integers(), max_size=5), max_size=6))
def test_chain_versions_share_tails_and_keep_their_own_items(batches):
    """Each appended version lists exactly the items appended up to it, in order, and older versions never change."""
    versions = [Chain()]
    expected: list[tuple[int, ...]] = [()]
    for i, batch in enumerate(batches):
        base = versions[len(versions) // 2]
        if i % 2:  # item by item
            for item in batch:
                base = base.append(item)
            versions.append(base)
        else:  # all at once (from a list or a tuple)
            versions.append(base.extend(batch if i % 4 else tuple(batch)))
        expected.append(expected[len(expected) // 2] + tuple(batch))
    assert [v.items() for v in versions] == expected
    assert [len(v) for v in versions] == [len(e) for e in expected]


def drive(state, pending, llm, take):
    """Feed `state` until done, answering the pending request at index `take`; return the value."""
    pending = list(pending)
    while not state.done:
        token, request = pending.pop(take)
        state = state.feed(token, Success(LLMResponse(llm(request))))
        pending.extend(state.emitted)
    return state.value


def first_then_branch(start, llm, data):
    """Run `start` first-in-first-out, keeping every state; then run one earlier state again, last-in-first-out.

    Returns both values. The second run feeds a state whose successors were already made, so
    it checks that an old state still behaves as the value it was.
    """
    history = []
    state, pending = start, list(start.emitted)
    while not state.done:
        history.append((state, list(pending)))
        token, request = pending.pop(0)
        state = state.feed(token, Success(LLMResponse(llm(request))))
        pending.extend(state.emitted)
    if not history:
        return state.value, state.value
    old, old_pending = history[data.draw(st.integers(0, len(history) - 1))]
    return state.value, drive(old, old_pending, llm, -1)


@given(graphs(), st.data())
def test_feeding_an_old_forward_state_again_gives_the_same_trace(gp, data):
    """A forward state stays a value: feeding an earlier state a second time (a branch) ends in the same trace."""
    graph, params = gp
    inputs = data.draw(inputs_for(graph))
    llm = HashLLM()
    reference = run_sync(forward(graph, params, inputs), llm)
    assert first_then_branch(forward(graph, params, inputs), llm, data) == (reference, reference)


@given(graphs(), st.data())
def test_feeding_an_old_backward_state_again_gives_the_same_gradients(gp, data):
    """A backward state stays a value: feeding an earlier state a second time (a branch) ends in the same gradients."""
    graph, params = gp
    inputs = data.draw(inputs_for(graph))
    llm = HashLLM()
    trace = run_sync(forward(graph, params, inputs), llm)
    reference = run_sync(backward(graph, params, trace, "Be more precise."), llm)
    assert first_then_branch(backward(graph, params, trace, "Be more precise."), llm, data) == (reference, reference)
