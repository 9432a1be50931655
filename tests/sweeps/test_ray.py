"""Sweeps on Ray: a local Ray (2 CPUs) runs the grid like --local, survives a dead worker, shares one call limit."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from semgrad.cli import main
from semgrad.sweeps import run_sweep

from . import _helpers
from ._helpers import CallLog, chat_server, grid_spec, logged_calls, sweep_json

if importlib.util.find_spec("ray") is None:  # pragma: no cover - depends on the environment
    if os.environ.get("CI"):
        pytest.fail("Ray is not installed, but CI must run the Ray tests (it is in the `test` extra)", pytrace=False)
    pytest.skip(
        "Ray is not installed (pip install -e '.[ray]'); the --local tests cover the rest", allow_module_level=True
    )


@pytest.fixture(scope="module", autouse=True)
def ray_session() -> Iterator[Any]:
    """One local Ray (2 CPUs, listening on 127.0.0.1 only, no dashboard, no usage statistics) for this module."""
    from semgrad.sweeps._ray import init_ray

    names = ("RAY_USAGE_STATS_ENABLED", "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER")
    saved = {name: os.environ.get(name) for name in names}
    threads = set(threading.enumerate())
    try:
        started = init_ray(num_cpus=2)
        import ray

        ray.cloudpickle.register_pickle_by_value(_helpers)  # workers need not import the tests package
        try:
            assert started, "Ray was already initialised in this process"
            assert ray.cluster_resources()["CPU"] == 2
            assert {node["NodeManagerAddress"] for node in ray.nodes()} == {"127.0.0.1"}
            yield ray
        finally:
            ray.cloudpickle.unregister_pickle_by_value(_helpers)
            ray.shutdown()
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    leaked = [t for t in set(threading.enumerate()) - threads if t.is_alive() and not t.daemon]
    assert not leaked, leaked


def test_the_grid_on_ray_equals_the_local_run(ray_session, local_sweep, tmp_path, capsys):
    """`semgrad sweep` on Ray runs 3 tasks x 2 seeds x 2 optimizers; its report lists 12 runs equal to --local's."""
    out = tmp_path / "ray"
    assert main(["sweep", str(local_sweep / "grid.toml"), "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert len(re.findall(r"^\[\d+/12\] \S+: started, test ", err, re.M)) == 12, err
    summary = sweep_json(out)
    assert len(summary["runs"]) == 12
    assert summary == sweep_json(local_sweep / "out")
    for run in summary["runs"]:
        ours = json.loads((out / run["name"] / "results.json").read_text())
        theirs = json.loads((local_sweep / "out" / run["name"] / "results.json").read_text())
        assert ours == theirs, run["name"]
    assert "<svg" in (out / "sweep.html").read_text()
    assert ray_session.is_initialized()  # the CLI joined this session and left it running


def uninterrupted_hits(run_dir) -> int:
    """Requests of a run answered without a call (none in a run without a cache that was never killed)."""
    return sum(json.loads((run_dir / "results.json").read_text())["counters"]["hits"].values())


def test_a_killed_worker_is_retried_and_resumes_from_its_checkpoint(local_sweep, tmp_path):
    """A worker killed after its run's first checkpoint is retried by Ray; the retry makes no call for iteration 1."""
    victim = "bbh-navigate__seed0__tgd"
    marker = tmp_path / "killed"
    grid = {"tasks": ["bbh:navigate"], "seeds": [0, 1], "optimizers": ["neighbor-sgd", "tgd"]}
    # the dead worker held call slots: they are freed 2 s after its last heartbeat (and by its retry)
    spec = grid_spec(tmp_path / "s.toml", grid, max_concurrent_calls=2, resources={"lease_seconds": 2.0})
    result = run_sweep(spec, tmp_path / "out", instrument=CallLog(crash=victim, marker=marker))
    assert marker.exists(), "the victim's worker was never killed"
    assert not result.failed, result.failed
    assert {o.name: o.status for o in result.outcomes}[victim] == "resumed"
    assert len(sweep_json(tmp_path / "out")["runs"]) == 4

    run_dir = tmp_path / "out" / victim
    dead = int(marker.read_text())
    calls = logged_calls(run_dir)
    by_dead = [purpose for pid, purpose in calls if pid == dead]
    by_retry = [purpose for pid, purpose in calls if pid != dead]
    assert len({pid for pid, _ in calls}) == 2
    results = json.loads((run_dir / "results.json").read_text())
    history = results["tasks"][0]["iterations"]
    assert not uninterrupted_hits(local_sweep / "out" / victim)
    # the dead worker scored the initial params and finished iteration 1 (fit counts both in history[0]) ...
    assert len(by_dead) == sum(history[0]["calls"].values())
    # ... and the retry asked every other request of an uninterrupted run, and paid for none twice: those identical
    # to one the dead worker made are answered by the run's journal (hits, not calls)
    uninterrupted = json.loads((local_sweep / "out" / victim / "results.json").read_text())
    replayed = results["counters"]["hits"].get("cache", 0)
    assert len(by_retry) + replayed == sum(uninterrupted["calls"]["by_purpose"].values()) - len(by_dead)
    assert sum(results["calls"]["by_purpose"].values()) == len(calls)  # cumulative over both workers
    assert history == uninterrupted["tasks"][0]["iterations"]
    assert results["tasks"][0]["accuracy"] == uninterrupted["tasks"][0]["accuracy"]


def test_the_call_limit_holds_across_ray_workers(tmp_path):
    """Four runs in four Ray workers against one loopback server never have more than 2 calls in flight."""
    grid = {"tasks": ["bbh:navigate"], "seeds": [0, 1], "optimizers": ["neighbor-sgd", "tgd"]}
    with chat_server(delay=0.03) as server:
        spec = grid_spec(
            tmp_path / "s.toml",
            grid,
            backend="openai-compatible",
            base_url=server.base_url,
            models={"model": "m"},
            iterations=1,
            train=2,
            validation=2,
            test=2,
            max_concurrent_calls=2,
            timeout=30.0,
            resources={"cpus_per_run": 0.5},
        )  # all four runs at once on 2 CPUs
        result = run_sweep(spec, tmp_path / "out", instrument=CallLog())
    assert not result.failed, result.failed
    assert server.requests >= 4 * 20, server.requests
    assert server.peak == 2
    pids = {pid for run in result.outcomes for pid, _ in logged_calls(tmp_path / "out" / run.name)}
    assert len(pids) == 4  # four worker processes shared the limit


def test_results_are_stable_when_the_sweep_is_run_again_on_ray(local_sweep, tmp_path):
    """Re-running a finished sweep on Ray skips every run and rewrites an equal report."""
    grid = {"tasks": ["gsm8k"], "seeds": [0], "optimizers": ["neighbor-sgd", "tgd"]}
    spec = grid_spec(tmp_path / "s.toml", grid)
    first = run_sweep(spec, tmp_path / "out")
    again = run_sweep(spec, tmp_path / "out")
    assert [o.status for o in first.outcomes] == ["started", "started"]
    assert [o.status for o in again.outcomes] == ["skipped", "skipped"]
    assert sweep_json(tmp_path / "out")["runs"] == [
        r for r in sweep_json(local_sweep / "out")["runs"] if r["task"] == "gsm8k" and r["seed"] == 0
    ]
