"""The README's table of simulated ablation outcomes is reproducible, and each ablation changes the outcome."""

from __future__ import annotations

from pathlib import Path

import pytest

from .simulated_ablations import DATA, table

README = Path(__file__).parents[2] / "README.md"


@pytest.fixture(scope="module")
def rows() -> str:
    """The table, computed now from the shared data (skipped when it is absent)."""
    if not (DATA / "bbh" / "navigate.json").is_file():
        pytest.skip(f"BBH data is absent: {DATA}")
    return table(DATA)


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
