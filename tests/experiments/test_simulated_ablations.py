"""The README's table of simulated ablation outcomes is reproducible, and each ablation changes the outcome."""

from __future__ import annotations

from pathlib import Path

import pytest

from .._data import data_dir, needs_real_data
from .simulated_ablations import table

README = Path(__file__).parents[2] / "README.md"


@pytest.fixture(scope="module")
def rows() -> str:
    """The table, computed now from the data directory (the real data sets, or the tests' synthetic copy)."""
    return table(data_dir())


@needs_real_data
def test_readme_holds_the_table_the_script_prints(rows):
    """README.md shows exactly what `python -m tests.experiments.simulated_ablations` prints."""
    regenerate = "regenerate the README table: python -m tests.experiments.simulated_ablations"
    assert rows in README.read_text("utf-8"), regenerate


def test_removing_information_changes_the_simulated_outcome(rows):
    """Every ablation ends with other scores or other instructions than the full method."""
    lines = [line.split(" | ") for line in rows.splitlines()[2:]]
    full = lines[0]
    assert full[0] == "| neighbor-sgd"
    for other in lines[1:]:
        assert other[3:] != full[3:], f"{other[0]} ends like the full method"


@pytest.fixture(scope="module")
def liar_rows() -> str:
    """The LIAR table, computed now from the data directory (the real data sets, or the tests' synthetic copy)."""
    return table(data_dir(), "liar")


@needs_real_data
def test_readme_holds_the_liar_table_the_script_prints(liar_rows):
    """README.md shows exactly the LIAR table `python -m tests.experiments.simulated_ablations` prints."""
    regenerate = "regenerate the README table: python -m tests.experiments.simulated_ablations"
    assert liar_rows in README.read_text("utf-8"), regenerate


def test_liar_without_neighbours_every_analysis_gets_the_same_guess(liar_rows):
    """Issue 31 point 9: on LIAR a per-edge backward call shows no question, so all five analyses end with the
    same guessed steps and the no-neighbours run ends below the full method (the guess no longer hashes roles)."""
    lines = {line.split(" | ")[0].removeprefix("| "): line.split(" | ") for line in liar_rows.splitlines()[2:]}
    full, alone = lines["neighbor-sgd"], lines["no-neighbors"]
    analyses = alone[-1].removesuffix(" |").split(" / ")[:5]
    assert len(set(analyses)) == 1 and analyses[0] != "-"
    assert float(alone[3]) < float(full[3])
    for name in ("no-gradients", "no-neighbors", "one-parameter"):
        assert lines[name][3:] != full[3:], f"{name} ends like the full method"
