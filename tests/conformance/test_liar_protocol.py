"""Conformance with the official code on LIAR: its items, and each ablation's calls, decisions and prompts."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from semgrad.core import Example, optim
from semgrad.tasks import liar_official_keep, load_liar, official_split_liar
from semgrad.topologies import liar_graph

from ._compare import assert_same_information, calls_per_iteration
from ._official import DATA, hub_liar_rows, official, official_datasets, run_official_liar, skip_module_without_official
from ._semgrad import run_semgrad
from ._world import Item, World

skip_module_without_official()

#: The official task keys and semgrad's nodes, in the same order.
NODES = {
    "Statement": "statement_analysis",
    "Party": "party_analysis",
    "Job title": "job_title_analysis",
    "Source": "source_analysis",
    "State": "state_analysis",
    "Final": "answer",
}


def official_samples(rows: list[dict]) -> list[dict]:
    """The official loader's LIAR samples for hub-shaped `rows` (its own filter and record text)."""
    mods = official()
    with official_datasets(lambda name: {"train": rows}):
        return mods.liar_data.get_samples()


@pytest.fixture(scope="module")
def liar_rows() -> list[dict]:
    """The LIAR train file as the datasets hub would give it."""
    return hub_liar_rows("train")


def test_official_protocol_draws_the_official_runs_50_items(liar_rows):
    """With seed 0, semgrad's official LIAR split holds exactly the 50 statements the official script used."""
    samples = official_samples(liar_rows)
    random.seed(0)
    random.shuffle(samples)
    theirs = [s["Statement"] for s in samples[:50]]
    ours = official_split_liar(load_liar(DATA, "train", drop_incomplete=False), (), seed=0)
    assert [e.inputs["statement"].split(":")[0] for e in ours.train] == [t.split(":")[0] for t in theirs]
    assert [e.target for e in ours.train] == [s["expected_output"] for s in samples[:50]]


_field = st.text(st.sampled_from('ab :none."N'), max_size=8)


@given(st.fixed_dictionaries({k: _field for k in ("statement", "job_title", "state", "party", "source")}))
def test_liar_filter_keeps_what_the_official_loader_keeps(fields):
    """`liar_official_keep` keeps a row exactly when the official loader does."""
    row = {
        "label": 0,
        "statement": fields["statement"],
        "job_title": fields["job_title"],
        "state_info": fields["state"],
        "party_affiliation": fields["party"],
        "context": fields["source"],
    }
    kept = bool(official_samples([row]))
    assert liar_official_keep(Example(fields, "Yes")) == kept


def liar_items(rows: list[dict], n: int = 4) -> list[Item]:
    """`n` official LIAR samples (with at least one of each label), as both sides see them."""
    samples = official_samples(rows)
    chosen = [s for s in samples if s["label"] == 1][:2] + [s for s in samples if s["label"] == 0][: n - 2]
    ours = {e.inputs["statement"]: e for e in load_liar(DATA, "train", drop_incomplete=False)}
    items = []
    for s in chosen:
        example = next(e for text, e in ours.items() if text.split(":")[0] == s["Statement"])
        items.append(Item(str(example.id), s["text"], s["expected_output"], dict(example.inputs), s["Statement"]))
    return items


WORLD = World(
    needs={"first": 1, "second": 3},  # keys replaced below by the chosen items'
    hints=5,
)
ITERATIONS = 2


def semgrad_optimizer(variant: str) -> optim.Transform:
    """The semgrad ablation that corresponds to an official variant."""
    if variant.startswith("one-parameter:"):
        node = NODES[variant.split(":", 1)[1]]
        return optim.ablation("one-parameter", 2, param=f"{node}.instruction")
    return optim.ablation(variant, 2)


VARIANTS = ["full", "no-gradients", "no-neighbors", "no-gate", "one-parameter:Statement", "one-parameter:Final"]


@pytest.fixture(scope="module")
def items(liar_rows) -> list[Item]:
    """Four LIAR items: two lies, two true statements."""
    return liar_items(liar_rows)


def world_for(items: list[Item]) -> World:
    """Items 0 and 1 need a skill each; item 2 is fragile."""
    return World(needs={items[0].key: 1, items[1].key: 3}, fragile=frozenset({items[2].key}), hints=5)


_RUNS: dict[str, tuple] = {}


def both(variant: str, items: list[Item]) -> tuple:
    """The official loop and semgrad for one variant (cached per module)."""
    if variant not in _RUNS:
        world = world_for(items)
        theirs = run_official_liar(world, items, ITERATIONS, variant)
        graph, params = liar_graph()
        ours, side = run_semgrad(world, items, graph, params, semgrad_optimizer(variant), ITERATIONS)
        _RUNS[variant] = (theirs, ours, side)
    return _RUNS[variant]


@pytest.mark.parametrize("variant", VARIANTS)
def test_same_gate_decisions(variant, items):
    """For each ablation, semgrad accepts and rejects the same candidates as the official code."""
    theirs, ours, _ = both(variant, items)
    assert tuple(r.accepted is not False for r in ours.history) == theirs.accepted


@pytest.mark.parametrize("variant", VARIANTS)
def test_same_calls_per_phase(variant, items):
    """For each ablation, semgrad makes the official code's forward, backward and rewrite calls per iteration."""
    theirs, ours, _ = both(variant, items)
    assert [Counter(dict(r.calls)) for r in ours.history] == calls_per_iteration(theirs.calls)


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_piece_the_official_prompts_show_is_in_ours(variant, items):
    """For each ablation, every record field, analysis, answer and expected answer an official prompt shows
    is shown by a semgrad prompt of the same phase, purpose and item."""
    theirs, _, side = both(variant, items)
    assert_same_information(theirs.calls, side.calls)


@pytest.mark.parametrize("variant", VARIANTS)
def test_the_official_liar_calls_per_phase_follow_the_formula(variant, items):
    """The official LIAR loop spends 6N forward once, then per iteration 6N forward, one backward call per
    error sample (five without neighbours, none without gradients) and one rewrite per trained parameter."""
    theirs = run_official_liar(world_for(items), items, ITERATIONS, variant)
    n = len(items)
    errors, best = [], theirs.initial_score  # error samples: the current solution's wrong items, at most k = 2
    for score, accepted in zip(theirs.scores, theirs.accepted):
        errors.append(min(2, round((1 - best) * n)))
        best = score if accepted else best
    per_error = {"no-gradients": 0, "no-neighbors": 5}.get(variant, 1)
    rewrites = 1 if variant.startswith("one-parameter") else 6
    expected = [Counter({"forward": 6 * n * (2 if i == 0 else 1), "rewrite": rewrites}) for i in range(ITERATIONS)]
    for i, counter in enumerate(expected):
        if per_error * errors[i]:
            counter["backward"] = per_error * errors[i]
    assert calls_per_iteration(theirs.calls) == expected
