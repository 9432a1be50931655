"""The README's side-by-side table of the baselines (simulated) is reproducible, and the methods differ."""

from __future__ import annotations

from pathlib import Path

import pytest

from .._data import data_dir, needs_real_data
from .simulated_baselines import table

README = Path(__file__).parents[2] / "README.md"


@pytest.fixture(scope="module")
def rows() -> str:
    """The table, computed now from the data directory (the real data sets, or the tests' synthetic copy)."""
    return table(data_dir())


@needs_real_data
def test_readme_holds_the_table_the_script_prints(rows):
    """README.md shows exactly what `python -m tests.experiments.simulated_baselines` prints."""
    regenerate = "regenerate the README table: python -m tests.experiments.simulated_baselines"
    assert rows in README.read_text("utf-8"), regenerate


def test_each_method_makes_its_own_calls(rows):
    """Only TextGrad and the paper's method make backward calls; OptoPrime one rewrite per iteration."""
    calls = {line.split(" | ")[0].strip("| "): line.split(" | ")[3] for line in rows.splitlines()[2:]}
    assert calls["optoprime"].endswith(" / 0 / 4") and calls["copro"].split(" / ")[1] == "0"
    textgrad, paper = (int(calls[m].split(" / ")[1]) for m in ("textgrad", "neighbor-sgd"))
    assert textgrad == 6 * paper  # 6 backward calls per error sample against the paper's 1
