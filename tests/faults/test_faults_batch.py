"""`semgrad run --batch`: a run SIGKILLed while its batch runs, resumed, pays for no batch twice (counted by a local
server that implements OpenAI's batch protocol); the batch ids are in the ledger the moment they exist; a backend
without a batch API is refused clearly."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

from semgrad.experiments import RunConfig, run_experiment
from semgrad.experiments._errors import SetupError
from tests.backends.batch_server import BatchProvider, batch_provider  # noqa: F401

from ._servers import DATA, results, run_args, semgrad, server, start, wait_for  # noqa: F401

BATCH = ("--batch", "eval", "--batch-poll", "0.05", "-q")


def _kill_during_a_batch(server: BatchProvider, out: Path, nth: int) -> None:  # noqa: F811
    """Start the run with the server holding its `nth` batch (and later ones) in progress; SIGKILL it once that
    batch exists."""
    server.hold, server.hold_from = True, nth
    proc = start(*run_args(server.url + "/v1", out, *BATCH))
    try:
        wait_for(lambda: server.created >= nth or proc.poll() is not None, timeout=120)
        held = list(server.batches)[nth - 1].encode()
        wait_for(lambda: (out / "ledger.json").exists() and held in (out / "ledger.json").read_bytes(), 30)
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        server.hold = False
    assert proc.returncode == -signal.SIGKILL, "the run ended before the kill"


@pytest.mark.slow
def test_a_run_killed_during_a_batch_and_resumed_pays_for_no_batch_twice(tmp_path, batch_provider):  # noqa: F811
    """`semgrad run --batch eval` SIGKILLed while its test split's first batch runs, then resumed: the resumed run
    picks that batch up (no later batch holds its lines), the server runs every line once, the run makes no more
    batches than an uninterrupted one, and its results equal the uninterrupted run's, its batch calls counted."""
    whole = tmp_path / "whole"
    first = semgrad(*run_args(batch_provider.url + "/v1", whole, *BATCH))
    assert first.returncode == 0, first.stderr
    uninterrupted = batch_provider.created
    sizes = [len(b["lines"]) for b in batch_provider.batches.values()]
    batch_provider.batches.clear()
    batch_provider.billed.clear()

    out = tmp_path / "cut"
    # the fifth batch, killed while it runs: the test split's first level (train and validation came first, two
    # levels each; their final forwards were asked in training too, so a resumed run's journal answers them)
    _kill_during_a_batch(batch_provider, out, 5)
    batches = list(batch_provider.batches.values())
    assert len(batches) == 5 and not any(batch_provider.billed[line] for line, _ in batches[4]["lines"])
    ledger = json.loads((out / "ledger.json").read_text("utf-8"))
    assert all(f'"{b["id"]}"' in json.dumps(ledger) for b in batches)  # each id, written when it was created
    resumed = semgrad(*run_args(batch_provider.url + "/v1", out, *BATCH, "--resume"))
    assert resumed.returncode == 0, resumed.stderr

    batches = list(batch_provider.batches.values())
    cut_lines = {line for line, _ in batches[4]["lines"]}
    assert all(not cut_lines & {line for line, _ in b["lines"]} for b in batches[5:])  # picked up, not sent again
    assert all(batch_provider.billed[line] == 1 for line in cut_lines)
    assert set(batch_provider.billed.values()) == {1}  # no line of any batch ran twice
    # no more batches or lines than the uninterrupted run (the journal answers what training already asked)
    assert len(batches) <= uninterrupted and sum(batch_provider.billed.values()) <= sum(sizes)
    for key in ("params", "accuracy"):
        assert results(out)["tasks"][0][key] == results(whole)["tasks"][0][key], key
    assert results(whole)["counters"]["batch_calls"] == sum(sizes)
    assert results(out)["counters"]["batch_calls"] == sum(batch_provider.billed.values())


def test_batch_on_a_backend_without_a_batch_api_is_refused_clearly(tmp_path):
    """--batch with the simulated backend is refused before anything runs, and a run given a fake LLM (no batch
    API) stops with a SetupError naming --batch."""
    from semgrad.backends import fake

    with pytest.raises(ValueError, match="--batch needs a provider with a batch API"):
        RunConfig("bbh:navigate", batch="eval")
    config = RunConfig(
        "bbh:navigate", data_dir=str(DATA), backend="openai-compatible", model="m", batch="eval", train=2, test=2
    )
    with pytest.raises(SetupError, match="--batch needs a provider with a batch API.*FunctionLLM has none"):
        run_experiment(config, tmp_path / "run", llm=fake.FunctionLLM(lambda request: "x"), check_backend=False)
    shown = semgrad(
        "run", "bbh:navigate", "--data-dir", str(DATA), "--batch", "eval", "--yes", "--out", str(tmp_path / "s")
    )
    assert shown.returncode != 0 and "--batch needs a provider with a batch API" in shown.stderr
    assert not (tmp_path / "s").exists()


def test_batch_against_a_server_without_a_batch_api_stops_before_training(tmp_path, server):  # noqa: F811
    """--batch against an OpenAI-compatible server without /batches (a local vLLM, say) stops at the preflight with
    one line naming --batch, exit 1, before any training call is paid for."""
    result = semgrad(*run_args(server.url, tmp_path / "run", "--batch", "eval", "-q"))
    assert result.returncode == 1, result.stderr
    assert "--batch: the provider's batch API cannot be reached" in result.stderr
    assert all(body.get("messages") for _, _, body in server.requests)
    assert len(server.requests) <= 3  # the preflight's forward only
