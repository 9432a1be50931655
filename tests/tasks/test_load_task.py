"""`load_task`, `load_tasks`, `task_names` and `sample_task`: names, errors, and disjoint splits."""

from __future__ import annotations

import shutil

import pytest

from semgrad.tasks import (
    BBH_TASKS,
    DataError,
    Task,
    expand_task_names,
    load_samples,
    load_task,
    load_tasks,
    sample_names,
    sample_task,
    task_names,
)
from semgrad.topologies import liar_graph, paper_graph

SEEDS = (0, 1, 2024)


def assert_disjoint(task: Task) -> None:
    """No example id is in two parts of the task's split."""
    parts = [{e.id for e in part} for part in (task.split.train, task.split.validation, task.split.test)]
    assert sum(map(len, parts)) == len(set().union(*parts)), task.name


def test_task_names_are_the_27_bbh_tasks_then_gsm8k_and_liar():
    """task_names lists bbh:<task> for each BBH task, then gsm8k and liar; groups=True adds bbh:all first."""
    assert task_names() == (*(f"bbh:{t}" for t in BBH_TASKS), "gsm8k", "liar")
    assert task_names(groups=True) == ("bbh:all", *task_names())


def test_every_name_with_groups_expands_to_loadable_names():
    """Each name of task_names(groups=True) expands to names of task_names()."""
    for name in task_names(groups=True):
        assert set(expand_task_names(name)) <= set(task_names())


def test_bbh_all_expands_to_the_27_tasks_without_duplicates():
    """bbh:all becomes the 27 BBH task names, in order, and repeated names appear once."""
    assert expand_task_names("bbh:all") == task_names()[:27]
    assert expand_task_names("liar", "bbh:navigate", "bbh:all", "liar")[:2] == ("liar", "bbh:navigate")
    assert len(expand_task_names("liar", "bbh:navigate", "bbh:all", "liar")) == 28


@pytest.mark.parametrize("name", ["bbh:navigation", "GSM8K", "bbh", "liar:train", ""])
def test_unknown_task_is_a_one_line_error_listing_every_valid_name(name):
    """An unknown name raises a one-line DataError that lists bbh:all and every task name."""
    with pytest.raises(DataError) as info:
        load_task(name, "anywhere")
    message = str(info.value)
    assert message.startswith(f"unknown task {name!r}") and "\n" not in message
    assert all(valid in message for valid in ("bbh:all", *task_names()))


def test_bbh_all_is_loaded_with_load_tasks_not_load_task():
    """load_task('bbh:all') says to use load_tasks instead."""
    with pytest.raises(DataError, match=r"'bbh:all' names 27 tasks; load them with load_tasks"):
        load_task("bbh:all", "anywhere")


@pytest.mark.parametrize("name", ["bbh:navigate", "gsm8k", "liar"])
def test_missing_data_directory_names_the_path_and_what_to_pass(tmp_path, name):
    """A missing data directory is a one-line DataError naming the path and --data-dir."""
    missing = tmp_path / "nowhere"
    with pytest.raises(DataError) as info:
        load_task(name, missing)
    message = str(info.value)
    assert str(missing) in message and "--data-dir" in message and "\n" not in message


@pytest.mark.parametrize(("name", "file"), [("bbh:snarks", "bbh/snarks.json"), ("gsm8k", "gsm8k/train.jsonl")])
def test_missing_data_file_names_the_file(tmp_path, name, file):
    """A data directory without the needed file is a DataError naming the full path and --data-dir."""
    with pytest.raises(DataError) as info:
        load_task(name, tmp_path)
    assert str(tmp_path / file) in str(info.value) and "--data-dir" in str(info.value)


def test_missing_liar_valid_file_is_reported(data_dir, tmp_path):
    """LIAR needs all three files: without valid.tsv the error names it."""
    (tmp_path / "liar").mkdir()
    for file in ("train.tsv", "test.tsv"):
        shutil.copy(data_dir / "liar" / file, tmp_path / "liar" / file)
    with pytest.raises(DataError, match="valid.tsv is missing"):
        load_task("liar", tmp_path, protocol="heldout")


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("name", ["bbh:navigate", "bbh:snarks", "gsm8k", "liar"])
def test_loaded_tasks_are_disjoint_and_deterministic(data_dir, name, seed):
    """For several seeds, train / validation / test share no id and the same seed gives the same task."""
    task = load_task(name, data_dir, seed=seed)
    assert_disjoint(task)
    assert task == load_task(name, data_dir, seed=seed)
    assert task.seed == seed


def test_different_seeds_give_different_training_sets(data_dir):
    """Two seeds draw different BBH training items."""
    first, second = (load_task("bbh:navigate", data_dir, seed=seed) for seed in (0, 1))
    assert first.split.train != second.split.train


def test_every_bbh_task_loads_disjointly_with_its_category(data_dir):
    """load_tasks(['bbh:all']) gives 27 disjoint 20/20/rest tasks with the paper graph and a category."""
    tasks = load_tasks(["bbh:all"], data_dir, seed=3, protocol="heldout")
    assert [t.name for t in tasks] == list(task_names()[:27])
    for task in tasks:
        assert_disjoint(task)
        assert task.split.sizes[:2] == (20, 20)
        assert task.dataset == "bbh" and task.topology is paper_graph
        assert task.category in ("nlp", "algorithmic") and task.scoring in ("choice", "exact")
    assert sum(len(t.split.test) for t in tasks) == 6511 - 27 * 40


def test_task_descriptions_per_dataset(data_dir):
    """GSM8K scores numbers on the paper graph; LIAR scores yes/no on the LIAR graph; neither has a category."""
    gsm8k, liar = (load_task(name, data_dir, protocol="heldout") for name in ("gsm8k", "liar"))
    assert (gsm8k.dataset, gsm8k.scoring, gsm8k.topology, gsm8k.category) == ("gsm8k", "numeric", paper_graph, None)
    assert (liar.dataset, liar.scoring, liar.topology, liar.category) == ("liar", "yes_no", liar_graph, None)
    assert gsm8k.split.sizes == (128, 128, 1319) and liar.split.sizes == (50, 50, 296)


def test_sizes_can_be_overridden(data_dir):
    """train, validation and test sizes override the protocol's defaults."""
    assert load_task("gsm8k", data_dir, train=10, validation=5, test=7).split.sizes == (10, 5, 7)
    assert load_task("bbh:navigate", data_dir, train=3, validation=2, test=4).split.sizes == (3, 2, 4)
    assert load_task("liar", data_dir, train=1, validation=2, test=3).split.sizes == (1, 2, 3)


def test_liar_can_keep_incomplete_rows(data_dir):
    """drop_incomplete=False keeps all 461 true-or-false rows of the test file."""
    assert len(load_task("liar", data_dir, drop_incomplete=False, protocol="heldout").split.test) == 461


def test_task_inputs_fit_its_graph(data_dir):
    """Every example's input fields are exactly its task graph's inputs."""
    for name in ("bbh:navigate", "gsm8k", "liar"):
        task = load_task(name, data_dir, test=5)
        graph, _ = task.build()
        examples = task.split.train + task.split.validation + task.split.test
        assert all(set(e.inputs) == set(graph.inputs) for e in examples)


@pytest.mark.parametrize("name", sample_names())
def test_sample_tasks_work_without_a_data_directory(name):
    """Each bundled task splits disjointly and deterministically with no data directory."""
    task = sample_task(name, seed=5)
    assert_disjoint(task)
    assert task == sample_task(name, seed=5)
    assert len(task.split.train) + len(task.split.validation) + len(task.split.test) == len(load_samples(name))


def test_task_repr_is_short():
    """A Task's repr shows split sizes and the topology's name, not every example."""
    text = repr(sample_task("bbh:navigate"))
    assert "Split(sizes=(4, 2, 4))" in text and "topology=paper_graph" in text and "question" not in text
