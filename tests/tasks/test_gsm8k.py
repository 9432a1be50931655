"""GSM8K: answer extraction, loading and the train / validation / test protocol."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from semgrad.tasks import DataError, gsm8k_answer, gsm8k_examples, load_gsm8k, load_samples, split_gsm8k

from .._data import needs_real_data

NUMBER = re.compile(r"-?\d+(\.\d+)?")


@pytest.mark.parametrize(
    ("solution", "answer"),
    [
        ("2 + 2 = <<2+2=4>>4\n#### 4", "4"),
        ("So 70,000 dollars.\n#### 70,000", "70000"),
        ("#### 1,234,567", "1234567"),
        ("He owes #### nothing\n#### -3", "-3"),
        ("####   12.5  ", "12.5"),
    ],
)
def test_the_answer_is_the_text_after_the_last_marker_without_commas(solution, answer):
    """The final answer is the stripped text after the last '####', with thousands commas removed."""
    assert gsm8k_answer(solution) == answer


@given(st.integers(-(10**12), 10**12), st.text(st.characters(exclude_characters="#"), max_size=40))
def test_comma_grouped_integers_come_back_as_plain_integers(number, work):
    """Any integer written with thousands separators after '####' is extracted as its plain digits."""
    assert gsm8k_answer(f"{work}\n#### {number:,}") == str(number)


def test_a_solution_without_a_marker_has_no_answer():
    """Without '####' there is no final answer (None), and loading such a line is a DataError."""
    assert gsm8k_answer("The answer is 4.") is None
    with pytest.raises(DataError, match=r"x.jsonl:1: the answer has no final '#### <number>' line"):
        gsm8k_examples(json.dumps({"question": "q", "answer": "4"}), "train", "x.jsonl")


def test_both_files_load_with_numeric_targets(gsm8k_files):
    """train.jsonl has 7,473 items and test.jsonl 1,319; every target is a plain number; ids count from 0."""
    train, test = gsm8k_files
    assert (len(train), len(test)) == (7473, 1319)
    assert all(NUMBER.fullmatch(e.target) for e in train + test)
    assert train[17].id == "gsm8k/train/17" and test[-1].id == "gsm8k/test/1318"
    assert all(set(e.inputs) == {"question"} for e in train + test)


@needs_real_data
def test_bundled_samples_are_the_first_test_items(gsm8k_files):
    """The bundled GSM8K items equal the first items of test.jsonl, ids included."""
    sample = load_samples("gsm8k")
    assert sample == gsm8k_files[1][: len(sample)]


@settings(max_examples=25)
@given(st.integers(0, 2**32))
def test_gsm8k_split_is_disjoint_and_follows_the_protocol(gsm8k_files, seed):
    """128 train + 128 validation from the train file, disjoint; the whole test file as test."""
    train_file, test_file = gsm8k_files
    s = split_gsm8k(train_file, test_file, seed=seed)
    assert s.sizes == (128, 128, 1319)
    assert {e.id for e in s.train}.isdisjoint(e.id for e in s.validation)
    assert all(e.id.startswith("gsm8k/train/") for e in s.train + s.validation)
    assert s.test == test_file


@settings(max_examples=25)
@given(st.integers(0, 2**32), st.integers(0, 200))
def test_gsm8k_split_is_deterministic_and_samples_the_test_file(gsm8k_files, seed, n_test):
    """The same seed gives the same split; a test size draws that many test-file items."""
    s = split_gsm8k(*gsm8k_files, seed=seed, test=n_test)
    assert s == split_gsm8k(*gsm8k_files, seed=seed, test=n_test)
    assert len(s.test) == n_test and all(e.id.startswith("gsm8k/test/") for e in s.test)


def test_malformed_line_names_the_file_and_line_number(tmp_path):
    """A broken JSON line is a one-line DataError with the file path and the line number."""
    (tmp_path / "gsm8k").mkdir()
    path = tmp_path / "gsm8k" / "train.jsonl"
    good = json.dumps({"question": "1+1?", "answer": "#### 2"})
    path.write_text(f'{good}\n{good}\n{{"question": "oops\n', "utf-8")
    with pytest.raises(DataError, match=rf"^{re.escape(str(path))}:3: malformed JSON line") as info:
        load_gsm8k(tmp_path, "train")
    assert "\n" not in str(info.value)


def test_a_line_with_missing_fields_is_a_data_error(tmp_path):
    """A JSON line without a question or answer, or not an object, names its line."""
    with pytest.raises(DataError, match="f.jsonl:2: expected string fields"):
        gsm8k_examples('{"question": "a", "answer": "#### 1"}\n{"question": "b"}', "test", "f.jsonl")
    with pytest.raises(DataError, match="f.jsonl:1: expected a JSON object, got list"):
        gsm8k_examples("[1, 2]", "test", "f.jsonl")


def test_unknown_file_name_is_a_data_error(data_dir):
    """Only the train and test files exist; anything else is a DataError listing them."""
    with pytest.raises(DataError, match="valid files: train, test"):
        load_gsm8k(data_dir, "validation")  # type: ignore[arg-type]
