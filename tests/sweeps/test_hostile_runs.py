"""A re-run sweep trusts nothing its run folders hold: a symlinked run folder fails its run alone."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from semgrad.sweeps import run_sweep

from ._helpers import grid_spec, needs_data

pytestmark = needs_data

GRID = {"tasks": ["gsm8k"], "seeds": [0], "optimizers": ["neighbor-sgd", "tgd"]}
TAMPERED = "gsm8k__seed0__tgd"


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished two-run sweep (``out``) and its spec (``s.toml``); tests work on copies of ``out``."""
    root = tmp_path_factory.mktemp("finished")
    spec = grid_spec(root / "s.toml", GRID, iterations=1, train=2, validation=2, test=2)
    result = run_sweep(spec, root / "out", local=True)
    assert not result.failed and (root / "out" / TAMPERED / "results.json").is_file()
    return root


@pytest.fixture
def sweep(finished: Path, tmp_path: Path) -> Path:
    """A copy of the finished sweep directory."""
    return Path(shutil.copytree(finished / "out", tmp_path / "out", symlinks=True))


def _strict_json(path: Path) -> Any:
    def refuse(constant: str) -> None:
        raise AssertionError(f"{path} holds {constant}, which is not JSON")

    return json.loads(path.read_text("utf-8"), parse_constant=refuse)


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_a_run_folder_symlinked_outside_the_sweep_fails_and_nothing_is_written_there(finished, sweep, tmp_path):
    """A run folder replaced by a symlink to a folder outside the sweep fails that run with one line; the outside
    folder is left as it was, the other run is skipped, and sweep.json is written."""
    outside = tmp_path / "outside"
    shutil.move(sweep / TAMPERED, outside)
    (outside / "results.json").unlink()
    os.symlink(outside, sweep / TAMPERED)
    before = _snapshot(outside)
    result = run_sweep(finished / "s.toml", sweep, local=True)
    assert [o.status for o in result.outcomes] == ["skipped", "failed"]
    error = result.failed[0].error
    assert "\n" not in error and str(sweep / TAMPERED) in error and "symbolic link" in error
    assert _snapshot(outside) == before and "results.json" not in before
    summary = _strict_json(sweep / "sweep.json")
    assert summary["totals"]["failed"] == 1 and summary["runs"][1]["accuracy"]["test"] is None
