"""The official and held-out split protocols of `load_task`."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from semgrad.core import Example
from semgrad.tasks import (
    PROTOCOLS,
    liar_official_keep,
    load_bbh,
    load_task,
    load_tasks,
    official_split_bbh,
    sample_task,
)


@given(st.integers(0, 30), st.integers(0, 30), st.integers(0, 2**16))
def test_official_bbh_split_is_disjoint_and_covers_the_task(n, train, seed):
    """The official BBH split has no validation set and its train and test parts partition the task file."""
    items = [Example({"question": f"q{i}"}, "Yes", id=i) for i in range(n)]
    if train > n:
        return
    parts = official_split_bbh(items, train=train, seed=seed)
    assert parts.sizes == (train, 0, n - train)
    assert sorted(e.id for e in parts.train + parts.test) == list(range(n))
    assert parts == official_split_bbh(items, train=train, seed=seed)


@pytest.mark.parametrize(
    ("name", "sizes"),
    [("bbh:navigate", (20, 0, 230)), ("gsm8k", (128, 0, 1319))],
)
def test_official_protocol_sizes(data_dir, name, sizes):
    """The official protocol splits BBH 20 / rest and GSM8K 128 / 1,319, with no validation set."""
    task = load_task(name, data_dir, protocol="official")
    assert task.split.sizes == sizes
    assert task.protocol == "official" and task.scored_on == "test"


def test_official_bbh_is_the_heldout_train_plus_validation_in_the_test_part(data_dir):
    """Under both protocols the same seed draws the same 20 training items; official tests on all the rest."""
    official = load_task("bbh:navigate", data_dir, protocol="official")
    heldout = load_task("bbh:navigate", data_dir, protocol="heldout")
    assert official.split.train == heldout.split.train
    assert set(official.split.test) == set(heldout.split.validation + heldout.split.test)
    assert len(load_bbh(data_dir, "navigate")) == sum(official.split.sizes)


def test_official_liar_scores_on_its_50_filtered_training_items(data_dir):
    """Official LIAR: 50 items from the filtered train file, scored on themselves, the test file beside them."""
    task = load_task("liar", data_dir, protocol="official")
    assert task.split.sizes[:2] == (50, 0)
    assert task.scored_on == "train"
    assert all(liar_official_keep(e) for e in task.split.train + task.split.test)
    assert all(str(e.id).startswith("liar/train/") for e in task.split.train)
    assert all(str(e.id).startswith("liar/test/") for e in task.split.test)
    assert load_task("liar", data_dir).scored_on == "test"


def test_bbh_all_official_has_20_training_items_per_task(data_dir):
    """`load_tasks(["bbh:all"], protocol="official")` gives 27 tasks of 20 training items each."""
    tasks = load_tasks(["bbh:all"], data_dir, protocol="official")
    assert len(tasks) == 27 and {t.split.sizes[0] for t in tasks} == {20}
    assert {t.split.sizes[1] for t in tasks} == {0}


def test_official_protocol_refuses_a_validation_set(data_dir):
    """Asking the official protocol for validation items is a one-line error, not a silent change."""
    with pytest.raises(ValueError, match="no validation set"):
        load_task("bbh:navigate", data_dir, protocol="official", validation=5)
    with pytest.raises(ValueError, match="no validation set"):
        sample_task("bbh:navigate", protocol="official", validation=2)


def test_unknown_protocol_lists_the_valid_ones():
    """An unknown protocol names the valid ones."""
    assert PROTOCOLS == ("official", "heldout")
    with pytest.raises(ValueError, match="choose one of: official, heldout"):
        sample_task("bbh:navigate", protocol="paper")  # type: ignore[arg-type]


@pytest.mark.parametrize(("task", "iterations"), [("liar", 8), ("bbh:navigate", 4), ("gsm8k", 4), ("liar", 2)])
def test_run_defaults_to_the_papers_iterations_per_task(task, iterations):
    """`semgrad run` without --iterations runs the paper's iterations (LIAR 8, others 4); --iterations wins."""
    from semgrad.cli import _config, build_parser

    argv = ["run", task] + (["--iterations", "2"] if iterations == 2 else [])
    assert _config(build_parser().parse_args(argv)).iterations == iterations
