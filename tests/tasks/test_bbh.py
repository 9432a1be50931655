"""BIG-Bench Hard: task list, categories, scoring kinds, loading and splits."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from semgrad.tasks import (
    BBH_ALGORITHMIC,
    BBH_CHOICE_TASKS,
    BBH_NLP,
    BBH_TASKS,
    DataError,
    bbh_category,
    bbh_scoring,
    load_bbh,
    load_samples,
    split_bbh,
)

from .._data import needs_real_data

OPTION = re.compile(r"\([A-R]\)")


def test_categories_partition_the_27_tasks():
    """NLP (12) and algorithmic (15) tasks are disjoint and together are the 27 tasks."""
    assert len(BBH_TASKS) == len(set(BBH_TASKS)) == 27
    assert (len(BBH_NLP), len(BBH_ALGORITHMIC)) == (12, 15)
    assert set(BBH_NLP).isdisjoint(BBH_ALGORITHMIC)
    assert set(BBH_NLP) | set(BBH_ALGORITHMIC) == set(BBH_TASKS)
    assert BBH_TASKS == tuple(sorted(BBH_TASKS))


def test_every_task_has_one_category_and_scoring_kind():
    """bbh_category and bbh_scoring answer for each of the 27 tasks and agree with the constants."""
    for task in BBH_TASKS:
        assert bbh_category(task) == ("nlp" if task in BBH_NLP else "algorithmic")
        assert bbh_scoring(task) == ("choice" if task in BBH_CHOICE_TASKS else "exact")
    assert set(BBH_CHOICE_TASKS) < set(BBH_TASKS)


def test_unknown_bbh_task_lists_the_valid_ones():
    """An unknown BBH task name is a one-line DataError listing all 27 tasks."""
    with pytest.raises(DataError) as info:
        bbh_category("navigation")
    message = str(info.value)
    assert "\n" not in message and all(task in message for task in BBH_TASKS)


def test_the_data_directory_holds_exactly_the_27_task_files(data_dir):
    """The task files in bbh/ are exactly BBH_TASKS."""
    assert tuple(sorted(p.stem for p in (data_dir / "bbh").glob("*.json"))) == BBH_TASKS


def test_all_task_files_load_with_the_documented_counts(data_dir):
    """The 27 files hold 6,511 examples, with ids task/index and a question input."""
    loaded = {task: load_bbh(data_dir, task) for task in BBH_TASKS}
    assert sum(map(len, loaded.values())) == 6511
    assert {t: len(v) for t, v in loaded.items() if len(v) != 250} == {
        "causal_judgement": 187,
        "penguins_in_a_table": 146,
        "snarks": 178,
    }
    for task, examples in loaded.items():
        assert [e.id for e in examples] == [f"{task}/{i}" for i in range(len(examples))]
        assert all(set(e.inputs) == {"question"} and e.target for e in examples)


def test_scoring_kind_matches_the_targets(data_dir):
    """Choice tasks' targets are (almost all) option letters; exact tasks' targets never are."""
    for task in BBH_TASKS:
        targets = [e.target for e in load_bbh(data_dir, task)]
        letters = sum(bool(OPTION.fullmatch(t)) for t in targets)
        if task in BBH_CHOICE_TASKS:
            assert letters >= 0.95 * len(targets), task
        else:
            assert letters == 0, task


@needs_real_data
def test_bundled_samples_are_the_first_items_of_the_real_files(data_dir):
    """The bundled BBH items equal the first examples loaded from the data directory, ids included."""
    for task in ("boolean_expressions", "navigate", "sports_understanding"):
        sample = load_samples(f"bbh:{task}")
        assert sample == load_bbh(data_dir, task)[: len(sample)]


@pytest.fixture(scope="module")
def penguins(data_dir):
    """The smallest BBH task file (146 items)."""
    return load_bbh(data_dir, "penguins_in_a_table")


@given(st.integers(0, 2**32))
def test_bbh_split_is_disjoint_and_uses_the_paper_sizes(penguins, seed):
    """20 train, 20 validation, the rest test; no id in two parts; every item used once."""
    s = split_bbh(penguins, seed=seed)
    assert s.sizes == (20, 20, 106)
    parts = [{e.id for e in part} for part in (s.train, s.validation, s.test)]
    assert set().union(*parts) == {e.id for e in penguins} and sum(map(len, parts)) == 146


@given(st.integers(0, 2**32))
def test_bbh_split_is_deterministic(penguins, seed):
    """The same seed gives the same BBH split."""
    assert split_bbh(penguins, seed=seed) == split_bbh(penguins, seed=seed)


def test_malformed_task_file_names_the_file_and_line(tmp_path):
    """A task file that is not valid JSON is a one-line DataError with its path and line number."""
    (tmp_path / "bbh").mkdir()
    path = tmp_path / "bbh" / "navigate.json"
    path.write_text('{"canary": "x",\n "examples": [\n {"input": "a" "target": "b"}]}', "utf-8")
    with pytest.raises(DataError, match=rf"^{re.escape(str(path))}:3: malformed JSON") as info:
        load_bbh(tmp_path, "navigate")
    assert "\n" not in str(info.value)


def test_task_file_without_examples_is_a_data_error(tmp_path):
    """A JSON file without the examples list, or with an incomplete example, is a DataError."""
    (tmp_path / "bbh").mkdir()
    path = tmp_path / "bbh" / "snarks.json"
    path.write_text(json.dumps({"canary": "x"}), "utf-8")
    with pytest.raises(DataError, match="'examples' list"):
        load_bbh(tmp_path, "snarks")
    path.write_text(json.dumps({"examples": [{"input": "a", "target": "b"}, {"input": "c"}]}), "utf-8")
    with pytest.raises(DataError, match="example 1 needs string fields"):
        load_bbh(tmp_path, "snarks")


def test_the_default_loss_tells_apart_every_two_targets_of_a_bbh_task(data_dir):
    """No two different targets of one BBH task are equal after `normalize`, and none becomes empty: a bracket
    sequence (dyck_languages) or a negative number (multistep_arithmetic_two) is the answer itself."""
    from semgrad.core.scoring import normalize

    for task in BBH_TASKS:
        targets = {str(example.target) for example in load_bbh(data_dir, task)}
        folded = {normalize(t) for t in targets}
        assert len(folded) == len(targets) and "" not in folded, task


@pytest.mark.parametrize(
    ("output", "target", "right"),
    [
        ("50", "-50", False),
        (")", "] ] >", False),
        ("", "}", False),
        ("] ] >", "] ] >", True),
        ("Answer: **-50**.", "-50", True),
        ('"Yes".', "Yes", True),
        ("b)", "(B)", True),
    ],
)
def test_the_default_loss_on_bbh_style_answers(output, target, right):
    """normalized_match keeps signs and brackets, and folds case, quotes, emphasis and a choice's parentheses."""
    from semgrad.core import Example, NodeRun, Trace
    from semgrad.core.scoring import normalized_match
    from semgrad.effects import run_sync

    trace = Trace(0, "g", "out", {"out": NodeRun("out", "llm", value=output)})
    assert run_sync(normalized_match()(Example({}, target), trace), lambda r: "").correct is right
