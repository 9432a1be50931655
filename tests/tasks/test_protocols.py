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
    assert load_task("liar", data_dir, protocol="heldout").scored_on == "test"


def test_load_task_defaults_to_the_official_protocol_unless_a_validation_size_is_given(data_dir):
    """Issue 31 point 7: load_task and load_tasks split by the paper's protocol by default, as `semgrad run`
    does; a validation size asks for the held-out protocol."""
    assert load_task("bbh:navigate", data_dir) == load_task("bbh:navigate", data_dir, protocol="official")
    assert load_task("liar", data_dir).scored_on == "train"
    (gsm8k,) = load_tasks(["gsm8k"], data_dir)
    assert (gsm8k.protocol, gsm8k.split.sizes[:2], gsm8k.metric) == ("official", (128, 0), "exact")
    held = load_task("gsm8k", data_dir, validation=5)
    assert (held.protocol, held.split.sizes[1]) == ("heldout", 5)


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


@pytest.mark.parametrize(
    ("flags", "models"),
    [
        ([], {"forward": "gpt-4o-mini", "backward": "gpt-4-turbo", "optimizer": "gpt-4-turbo"}),
        (["--optimizer-model", "o"], {"forward": "gpt-4o-mini", "backward": "o", "optimizer": "o"}),
        (["--backward-model", "b"], {"forward": "gpt-4o-mini", "backward": "b", "optimizer": "gpt-4-turbo"}),
        (["--forward-model", "f"], {"forward": "f", "backward": "gpt-4-turbo", "optimizer": "gpt-4-turbo"}),
        (["--model", "m"], {}),
        (["--protocol", "heldout"], {}),
    ],
)
def test_official_runs_default_to_the_papers_models(flags, models):
    """Issue 31 point 7: under the official protocol on an OpenAI-compatible server, `semgrad run` runs forward
    calls on gpt-4o-mini and backward and rewrite calls on gpt-4-turbo unless a model flag says otherwise."""
    from semgrad.cli import _config, build_parser
    from semgrad.experiments._prices import model_for

    argv = ["run", "bbh:navigate", "--backend", "openai-compatible", *flags]
    config = _config(build_parser().parse_args(argv))
    assert config.models() == models
    if not models:
        assert {model_for(config, role) for role in ("forward", "backward", "optimizer")} <= {"m", "gpt-4o-mini"}
    anthropic = _config(build_parser().parse_args(["run", "bbh:navigate", "--backend", "anthropic"]))
    assert anthropic.models() == {}


def test_official_tasks_name_the_papers_models():
    """A Task under the official protocol names the paper's model per role; a held-out one names none."""
    from semgrad.tasks import PAPER_MODELS

    assert dict(sample_task("gsm8k", protocol="official").models) == dict(PAPER_MODELS)
    assert dict(PAPER_MODELS) == {"forward": "gpt-4o-mini", "backward": "gpt-4-turbo", "optimizer": "gpt-4-turbo"}
    assert dict(sample_task("gsm8k", protocol="heldout").models) == {}
