"""`--cache` works with the simulated backend: the first run fills the file, a second identical run reads it."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from semgrad.experiments import RunConfig, build_llm, load_run_tasks, run_experiment

from .._data import data_dir

ROOT = Path(__file__).resolve().parents[2]
DATA = data_dir()


def _rows(path: Path) -> int:
    with sqlite3.connect(path) as db:
        return int(db.execute("SELECT COUNT(*) FROM replies").fetchone()[0])


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


def test_tokens_and_cost_count_only_replies_the_provider_gave_not_cache_hits(tmp_path):
    """results.json's tokens and cost_usd are those of calls that reached the provider: a rerun served
    wholly from --cache costs 0, and a run's own repeated requests (hits) are not priced again."""
    from semgrad.core import LLMResponse

    config = RunConfig(
        "bbh:navigate",
        data_dir=str(DATA),
        iterations=1,
        train=3,
        test=2,
        backend="openai-compatible",
        model="gpt-4o",
        cache=str(tmp_path / "cache.sqlite"),
    )
    inner = build_llm(RunConfig("bbh:navigate", data_dir=str(DATA), train=3, test=2), load_run_tasks(config))
    sent = []

    def provider(request):
        sent.append(request)
        text = inner(request)
        return LLMResponse(getattr(text, "text", text), {"input_tokens": 1000, "output_tokens": 100}, "gpt-4o")

    prices = {"gpt-4o": (2.5, 10.0)}
    first = run_experiment(config, tmp_path / "a", llm=provider, check_backend=False, prices=prices)
    # calls are the billed ones; the run's repeated requests are hits, counted apart
    assert first["counters"]["calls"] == len(sent) > 0 and first["counters"]["hits"]["cache"] > 0
    assert first["tokens"]["input"] == 1000 * len(sent) and first["tokens"]["output"] == 100 * len(sent)
    assert first["cost_usd"] == pytest.approx(len(sent) * (1000 * 2.5 + 100 * 10.0) / 1e6)
    paid = len(sent)
    second = run_experiment(config, tmp_path / "b", llm=provider, check_backend=False, prices=prices)
    assert len(sent) == paid and second["counters"]["calls"] == 0
    assert second["counters"]["hits"]["cache"] == first["counters"]["calls"] + first["counters"]["hits"]["cache"]
    assert second["tokens"]["input"] == second["tokens"]["output"] == 0 and second["cost_usd"] == 0.0
