"""The gate's noise-aware rule ("lcb"): the paired lower bound, its laws, its state and its report."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from semgrad.backends.fake import FunctionLLM, RecordingLLM, reply_forward
from semgrad.core import Example, GraphBuilder, Score, optim
from semgrad.core._frozen import FrozenMap
from semgrad.core.optim import GateState, Step
from semgrad.core.optim._bounds import MIN_ALPHA, paired_lower_bound, t_quantile
from semgrad.core.programs import pure
from semgrad.effects import run_sync

CANDIDATE = "Candidate instruction."


def _graph():
    b = GraphBuilder()
    b.llm("answer", inputs=[b.input("item")], instruction="Best instruction.")
    return b.build(output="answer")


def _loss(example, trace):
    """The output read as the item's score."""
    return pure(Score(float(trace["answer"].value), "feedback"))


def _llm(best, candidate):
    """Forward answers each item's score: `candidate`'s under the candidate instruction, else `best`'s."""

    def answer(request):
        table = candidate if CANDIDATE in request.system else best
        return reply_forward(request, repr(table[request.sample]))

    return FunctionLLM(answer)


def _gate(best, candidate, *, on_train=False, state=None, **options):
    """One gate decision on items scored `best` by the current params and `candidate` by the candidate:
    (step, state, requests)."""
    graph, params = _graph()
    items = tuple(Example({"item": str(i)}, None, id=i) for i in range(len(best)))
    updates = FrozenMap({"answer.instruction": CANDIDATE})
    if on_train:  # the official protocol: the current params' scores come with the step
        step = Step(graph, train=items, scores=tuple(Score(v, "") for v in best), loss=_loss, updates=updates)
    else:
        step = Step(graph, train=items, validation=items, loss=_loss, updates=updates)
    gate = optim.validation_gate(**options)
    rec = RecordingLLM(_llm(best, candidate))
    new, new_state = run_sync(gate.update(step, state or gate.init(params), params), rec)
    return new, new_state, rec.requests


def _accepts(best, candidate, **options):
    return _gate(best, candidate, **options)[0].accepted


eighths = st.integers(0, 8).map(lambda k: k / 8)
unit = st.floats(0.0, 1.0)
alphas = st.floats(MIN_ALPHA, 0.5)
pairs = st.lists(st.tuples(unit, unit), min_size=1, max_size=12)


@given(st.floats(0.5, 1 - MIN_ALPHA))
def test_the_t_quantile_matches_the_closed_forms_of_one_and_two_degrees_of_freedom(p):
    """t_quantile agrees with tan(pi (p - 1/2)) (1 df) and (2p - 1) / sqrt(2p(1 - p)) (2 df)."""
    assert t_quantile(p, 1) == pytest.approx(math.tan(math.pi * (p - 0.5)), rel=1e-6, abs=1e-9)
    assert t_quantile(p, 2) == pytest.approx((2 * p - 1) / math.sqrt(2 * p * (1 - p)), rel=1e-6, abs=1e-9)


@pytest.mark.parametrize(
    ("p", "df", "table"),
    [(0.95, 5, 2.0150), (0.95, 10, 1.8125), (0.99, 5, 3.3649), (0.975, 30, 2.0423), (0.95, 49, 1.6766)],
)
def test_the_t_quantile_matches_the_tables(p, df, table):
    """t_quantile gives the printed t-tables' values to their four decimals."""
    assert round(t_quantile(p, df), 4) == table


@given(st.floats(0.5, 1 - MIN_ALPHA), st.floats(0.5, 1 - MIN_ALPHA), st.integers(1, 60))
def test_the_t_quantile_never_decreases_with_the_level(p, q, df):
    """A higher level never gets a lower quantile (so a smaller alpha is never more lenient)."""
    low, high = sorted((p, q))
    assert t_quantile(low, df) <= t_quantile(high, df)


@given(st.lists(st.floats(-1, 1), max_size=12), alphas)
def test_the_bound_never_exceeds_the_mean_gain(gains, alpha):
    """The lower bound is at most the mean gain, and is -inf with fewer than two gains."""
    bound = paired_lower_bound(gains, alpha)
    assert bound.bound <= bound.mean + 1e-12
    assert (bound.bound == -math.inf) == (len(gains) < 2)


@given(st.lists(st.tuples(unit, unit), min_size=1, max_size=12), alphas, st.booleans())
def test_lcb_never_accepts_when_no_item_gains(pairs_, alpha, on_train):
    """Under rule="lcb", a candidate that scores no item higher than the best params never passes the gate."""
    best = [max(a, b) for a, b in pairs_]
    candidate = [min(a, b) for a, b in pairs_]
    assert _accepts(best, candidate, rule="lcb", alpha=alpha, on_train=on_train) is False


@given(st.lists(st.integers(0, 7), min_size=2, max_size=12), st.integers(1, 8), alphas, st.booleans())
def test_lcb_accepts_an_equal_positive_gain_on_every_item(base, gain, alpha, on_train):
    """Every item gaining the same positive amount (two items or more) passes the gate at any alpha."""
    best = [min(k, 8 - gain) / 8 for k in base]
    candidate = [b + gain / 8 for b in best]
    new, state, _ = _gate(best, candidate, rule="lcb", alpha=alpha, on_train=on_train)
    assert new.accepted is True
    assert "rule lcb: paired gain" in new.report[-1].notes[0] and new.report[-1].notes[0].endswith("accepted")


def test_lcb_refuses_a_gain_on_a_single_item_which_gives_no_bound():
    """With one item there is no spread to bound the gain with: refused, and the report says so."""
    new, _, _ = _gate([0.0], [1.0], rule="lcb")
    assert new.accepted is False
    assert "no lower 95% bound from 1 item(s)" in new.report[-1].notes[0]


@given(pairs, alphas, st.floats(-0.1, 0.1), st.booleans())
def test_lcb_is_never_more_lenient_than_the_sum_rule(pairs_, alpha, min_gain, on_train):
    """Whatever the scores, a candidate the lcb rule accepts, the default sum rule accepts too."""
    best, candidate = [a for a, _ in pairs_], [b for _, b in pairs_]
    if _accepts(best, candidate, rule="lcb", alpha=alpha, min_gain=min_gain, on_train=on_train):
        assert _accepts(best, candidate, min_gain=min_gain, on_train=on_train)


@given(pairs, alphas, alphas)
def test_a_smaller_alpha_is_never_more_lenient(pairs_, a, b):
    """A candidate accepted at some alpha is accepted at every larger alpha."""
    best, candidate = [x for x, _ in pairs_], [y for _, y in pairs_]
    strict, lenient = sorted((a, b))
    if _accepts(best, candidate, rule="lcb", alpha=strict):
        assert _accepts(best, candidate, rule="lcb", alpha=lenient)


def test_lcb_rejects_a_lucky_win_the_sum_rule_accepts():
    """One item won and the rest tied out of ten: the sum rule accepts, the lcb rule does not, and says why."""
    best, candidate = [0.0] * 10, [1.0] + [0.0] * 9
    assert _accepts(best, candidate) is True
    new, _, _ = _gate(best, candidate, rule="lcb", alpha=0.05)
    assert new.accepted is False
    note = new.report[-1].notes[0]
    assert note.startswith("candidate 0.100 vs best 0.000 on validation; rule lcb: paired gain +0.100, lower 95% bound")
    assert "(10 items, t with 9 df): rejected" in note


def test_on_validation_the_best_items_are_scored_once_then_kept_in_the_state():
    """The first lcb decision scores the current params too; an accepted candidate's item scores become the
    state's, so the next decision makes the candidate's calls only, paired with them."""
    best, candidate = [0.0, 0.5, 0.5, 1.0], [1.0, 1.0, 1.0, 1.0]
    new, state, requests = _gate(best, candidate, rule="lcb")
    assert new.accepted is True and len(requests) == 8
    assert state == GateState(1.0, (1.0, 1.0, 1.0, 1.0))
    again, kept, requests = _gate(best, candidate, rule="lcb", state=state)
    assert again.accepted is False and len(requests) == 4  # no gain over the kept items; no rescoring
    assert kept == state


def test_the_sum_rule_keeps_its_calls_and_its_state():
    """The default rule, with the best score known, scores the candidate only and keeps no item scores."""
    best, candidate = [0.0, 0.0], [1.0, 0.0]
    new, state, requests = _gate(best, candidate, state=GateState(0.0))
    assert new.accepted is True and len(requests) == 2 and state == GateState(0.5)
    assert new.report[-1].notes == ("candidate 0.500 vs best 0.000 on validation: accepted",)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"rule": "mean"}, "unknown rule 'mean'; choose one of: sum, lcb"),
        ({"rule": "lcb", "alpha": 0.0}, "alpha <= 0.5, got 0.0"),
        ({"rule": "lcb", "alpha": 0.7}, "alpha <= 0.5, got 0.7"),
        ({"rule": "lcb", "alpha": float("nan")}, "alpha <= 0.5, got nan"),
    ],
)
def test_an_unknown_rule_or_an_alpha_out_of_range_is_refused_when_the_gate_is_made(options, message):
    """validation_gate refuses a rule it does not know and an alpha outside [1e-9, 0.5] at once."""
    with pytest.raises(ValueError, match=message):
        optim.validation_gate(**options)
