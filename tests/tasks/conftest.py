"""Fixtures for the dataset tests: the data directory (the real data sets, or the tests' own synthetic copy)."""

from __future__ import annotations

from pathlib import Path

import pytest

from semgrad.core import Example
from semgrad.tasks import load_gsm8k, load_liar

from .._data import data_dir as _data_dir


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The directory that holds bbh/, gsm8k/ and liar/: ../shared/data when present, else a synthetic copy."""
    return _data_dir()


@pytest.fixture(scope="session")
def gsm8k_files(data_dir: Path) -> tuple[tuple[Example, ...], tuple[Example, ...]]:
    """The GSM8K train and test files, loaded once."""
    return load_gsm8k(data_dir, "train"), load_gsm8k(data_dir, "test")


@pytest.fixture(scope="session")
def liar_files(data_dir: Path) -> tuple[tuple[Example, ...], ...]:
    """The LIAR train, valid and test files (incomplete rows dropped), loaded once."""
    return tuple(load_liar(data_dir, file) for file in ("train", "valid", "test"))
