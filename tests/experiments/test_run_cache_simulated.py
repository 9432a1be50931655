"""`--cache` works with the simulated backend: the first run fills the file, a second identical run reads it."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from semgrad.experiments import RunConfig, build_llm, load_run_tasks, run_experiment

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT.parent / "shared" / "data"
needs_data = pytest.mark.skipif(not DATA.is_dir(), reason="the shared data folder is not next to the repo")


def _rows(path: Path) -> int:
    with sqlite3.connect(path) as db:
        return int(db.execute("SELECT COUNT(*) FROM replies").fetchone()[0])


@needs_data
def test_a_simulated_run_with_a_cache_stores_its_replies_and_a_rerun_adds_none(tmp_path):
    """A simulated run with --cache writes its replies to the file; the same run again gets the same results
    from it and stores nothing new; another seed (another simulated LLM) does not reuse them."""
    cache = tmp_path / "cache.sqlite"
    config = RunConfig(
        "bbh:navigate", data_dir=str(DATA), iterations=1, train=4, validation=4, test=4, cache=str(cache)
    )
    first = run_experiment(config, tmp_path / "a")
    stored = _rows(cache)
    assert stored > 0
    second = run_experiment(config, tmp_path / "b")
    assert _rows(cache) == stored
    assert first["tasks"][0]["accuracy"] == second["tasks"][0]["accuracy"]
    other = RunConfig("bbh:navigate", data_dir=str(DATA), seed=1, iterations=1, train=4, validation=4, test=4)
    assert build_llm(config, load_run_tasks(config)).identity != build_llm(other, load_run_tasks(other)).identity
