"""Fixtures shared by the sweep tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from semgrad.sweeps import run_sweep

from ._helpers import CallLog, grid_spec


@pytest.fixture(scope="session")
def local_sweep(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The acceptance grid (3 tasks x 2 seeds x 2 optimizers), run once with --local and a call log.

    Returns the folder holding ``grid.toml`` and the sweep directory ``out``.
    """
    root = tmp_path_factory.mktemp("local")
    result = run_sweep(
        grid_spec(root / "grid.toml", max_concurrent_calls=3), root / "out", local=True, instrument=CallLog()
    )
    assert not result.failed, result.failed
    assert {o.status for o in result.outcomes} == {"started"}
    return root
