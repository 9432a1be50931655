"""Your data's split: said at the start, no validation split under the official protocol unless asked, `.json`
arrays read, and a split that does not fit says which sizes add up to what."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from semgrad.experiments import RunConfig
from semgrad.experiments._custom import SystemSpecError, read_items, split_sizes

from .conftest import items, semgrad


@given(st.integers(2, 500), st.sampled_from(["official", "heldout"]))
def test_default_sizes_cover_the_items_and_official_carves_no_validation(n, protocol):
    """The default split uses every item, trains on at most 20, and carves validation items only when held out."""
    train, validation, test = split_sizes(n, None, None, None, protocol)
    assert train + validation + test == n and 1 <= train <= 20 and test >= 1
    assert (validation == 0) is (protocol == "official" or n < 3)


@given(st.integers(1, 40), st.integers(1, 40), st.integers(0, 40), st.integers(1, 40))
def test_sizes_asked_for_are_kept_or_refused_naming_their_sum(n, train, validation, test):
    """Sizes that fit are kept as asked; sizes that do not are one error naming each size, the sum and the items."""
    if train + validation + test <= n:
        assert split_sizes(n, train, validation, test) == (train, validation, test)
        return
    with pytest.raises(SystemSpecError) as error:
        split_sizes(n, train, validation, test)
    assert f"train {train} + validation {validation} + test {test} = {train + validation + test} items" in str(
        error.value
    )
    assert f"there are {n}" in str(error.value)


def test_validation_zero_is_accepted_and_keeps_the_official_protocol():
    """--validation 0 is a valid size (not refused as below 1) and asks for no held-out protocol."""
    config = RunConfig("/s.py:build", data="/i.jsonl", validation=0)
    assert config.validation == 0 and config.protocol == "official"
    assert RunConfig("gsm8k", validation=0).protocol == "official"
    with pytest.raises(ValueError, match="must be 0 or more"):
        RunConfig("gsm8k", validation=-1)


def test_a_json_array_reads_as_the_same_items_as_json_lines(tmp_path):
    """A .json file holding an array of items reads back as the same examples as the .jsonl of those items."""
    rows = items(5)
    (tmp_path / "items.json").write_text(json.dumps(rows, indent=1))
    (tmp_path / "items.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert read_items(tmp_path / "items.json") == read_items(tmp_path / "items.jsonl")
    (tmp_path / "bad.json").write_text('{"inputs": {}}')
    with pytest.raises(SystemSpecError, match="expected a JSON array"):
        read_items(tmp_path / "bad.json")


def test_the_run_says_its_split_and_refuses_one_that_does_not_fit(tmp_path, system_file):
    """`semgrad run` prints train/validation/test sizes at start; a split too large for the items is one line."""
    (tmp_path / "items.json").write_text(json.dumps(items(16)))
    result = semgrad(
        "run", "my_system.py:build", "--data", "items.json", "--iterations", "1", "--out", "r", cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    assert "Split: train 5, validation 0, test 11 (official protocol" in result.stdout
    too_many = semgrad(
        "run", "my_system.py:build", "--data", "items.json", "--train", "10", "--validation", "5", "--test", "6",
        "--out", "r2", cwd=tmp_path,
    )  # fmt: skip
    assert too_many.returncode == 1
    assert "train 10 + validation 5 + test 6 = 21 items, and there are 16" in too_many.stderr
    assert not (tmp_path / "r2").exists()
