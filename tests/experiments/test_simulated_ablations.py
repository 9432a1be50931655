"""The README's table of simulated ablation outcomes is reproducible, and each ablation changes the outcome."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from .._data import data_dir, needs_real_data
from .simulated_ablations import outcome, table

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


@needs_real_data
def test_liar_without_the_gate_ends_as_the_method_because_every_update_helps_and_then_none_is_made():
    """The README's reason LIAR's no-gate row ends as the full method's: each update the method makes raises the
    training score (so the gate accepts it too), and once no training item is wrong the official protocol makes no
    backward call and no rewrite -- an empty candidate, which the gate declines and no-gate takes, changing nothing."""
    with tempfile.TemporaryDirectory() as tmp:  # as the table's runs: scratch folders, not test outputs
        full = outcome("neighbor-sgd", data_dir(), Path(tmp) / "full", "liar")
        free = outcome("no-gate", data_dir(), Path(tmp) / "free", "liar")
    assert "r" in full["decisions"] and set(free["decisions"]) == {"A"}  # the gate did decline something
    scores = [r["train_score"] for r in full["iterations"]] + [full["train"]]
    for i, (gated, ungated) in enumerate(zip(full["iterations"], free["iterations"], strict=True)):
        assert gated["updates"] == ungated["updates"] and gated["train_score"] == ungated["train_score"]
        if gated["accepted"]:
            assert scores[i + 1] > scores[i], f"iteration {gated['iteration']}: an update that did not help"
        else:  # declined by the gate, taken without it: nothing wrong, so nothing was asked and nothing changes
            assert gated["train_score"] == 1.0 and not gated["updates"], gated
            assert not gated["calls"].get("backward") and not gated["calls"].get("rewrite"), gated["calls"]
    assert full["final"] == free["final"] and (full["train"], full["test"]) == (free["train"], free["test"])
