"""Kills at every phase: a run killed in its preflight, its training or its evaluation resumes without repeating
paid calls beyond what the cache and the checkpoints promise, without losing an accepted update, and with
counters that add up over its processes."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from semgrad.backends.fake import HashLLM
from semgrad.core import LLMRequest
from semgrad.experiments import RunConfig, run_experiment

from ._servers import DATA, SMALL, results, run_args, semgrad, server, start, wait_for  # noqa: F401


class _Killed(BaseException):
    """Stands for SIGKILL in-process: nothing catches it, nothing after it runs."""


class Counting:
    """A sync LLM answering like `HashLLM` that counts its calls, and can die at a given call."""

    def __init__(self, die_at: int | None = None) -> None:
        self.inner, self.calls, self.die_at = HashLLM(), 0, die_at
        self.evaluating = False

    def __call__(self, request: LLMRequest) -> str:
        if self.die_at is not None and self.evaluating and self.calls >= self.die_at:
            raise _Killed()
        self.calls += 1
        return self.inner(request)


def _total(summary: dict) -> int:
    return sum(summary["calls"]["by_purpose"].values())


def test_a_run_killed_in_its_evaluation_repeats_no_finished_split_and_counts_both_processes(tmp_path):
    """Killed during the validation split (the train split done): the resumed process calls only for what is left
    (the journal answers the killed process's finished calls), reaches the uninterrupted run's results, and
    results.json counts every finished call of both processes."""
    config = RunConfig("bbh:navigate", data_dir=str(DATA), train=4, validation=4, test=4, iterations=2)
    whole = Counting()
    expected = run_experiment(config, tmp_path / "whole", llm=whole)
    training = sum(sum(r["calls"].values()) for r in expected["tasks"][0]["iterations"])
    evaluation = whole.calls - training
    train_split = 3 * 4  # the paper's graph: three calls per item

    dying = Counting(die_at=training + train_split + 5)

    def progress(task: str, event) -> None:
        dying.evaluating = dying.evaluating or event.phase == "evaluating"

    with pytest.raises(BaseException) as caught:
        run_experiment(config, tmp_path / "cut", llm=dying, on_progress=progress)
    assert caught.group_contains(_Killed) if isinstance(caught.value, BaseExceptionGroup) else caught.type is _Killed
    assert not (tmp_path / "cut" / "results.json").exists()

    resumed = Counting()
    summary = run_experiment(config, tmp_path / "cut", llm=resumed, resume=True)
    # the 5 validation calls the killed process finished are answered by its journal (as may be requests
    # identical to ones its training made), never asked again
    assert resumed.calls <= evaluation - train_split - 5
    for key in ("params", "iterations", "accuracy"):
        assert summary["tasks"][0][key] == expected["tasks"][0][key]
    # cumulative: every call the first process finished (its journal has the 5 after its last record), then the
    # second's
    assert _total(summary) == training + train_split + 5 + resumed.calls == dying.calls + resumed.calls


def _same_results(a: Path, b: Path) -> None:
    x, y = results(a)["tasks"][0], results(b)["tasks"][0]
    for key in ("params", "iterations", "accuracy"):
        assert x[key] == y[key], key


def _ledger_has_a_split(out: Path) -> bool:
    path = out / "ledger.json"
    return path.exists() and '"train"' in path.read_text("utf-8")


def _checkpointed_then_calls(server, out: Path, more: int):  # noqa: F811
    seen: list[int] = []

    def condition() -> bool:
        if not seen and (out / "checkpoint.json").exists():
            seen.append(server.count)
        return bool(seen) and server.count >= seen[0] + more

    return condition


@pytest.mark.slow
@pytest.mark.parametrize("phase", ["preflight", "fit", "evaluation"])
def test_a_run_killed_at_any_phase_resumes_without_repeating_paid_calls(tmp_path, server, phase):  # noqa: F811
    """SIGKILL of `semgrad run --cache` in its preflight, mid-training or mid-evaluation, then --resume: the results
    equal an uninterrupted run's, and the server receives no request body twice beyond what the uninterrupted run
    repeats plus the calls in flight at the kill (--concurrency 2)."""
    server.delay = 0.02
    whole = tmp_path / "whole"
    first = semgrad(*run_args(server.url, whole, "--cache", str(tmp_path / "whole.sqlite"), "--concurrency", "2"))
    assert first.returncode == 0, first.stderr
    baseline = server.repeats()
    before = server.count

    out = tmp_path / "cut"
    args = run_args(server.url, out, "--cache", str(tmp_path / "cut.sqlite"), "--concurrency", "2", "-q")
    proc = start(*args)
    try:
        if phase == "preflight":
            wait_for(lambda: server.count > before)
        elif phase == "fit":
            wait_for(_checkpointed_then_calls(server, out, 3))
        else:
            wait_for(lambda: _ledger_has_a_split(out))
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == -signal.SIGKILL
    assert not (out / "results.json").exists()
    resumed = semgrad(*args, "--resume")
    assert resumed.returncode == 0, resumed.stderr
    _same_results(whole, out)
    requests = server.requests[before:]
    server.requests = requests
    assert server.repeats() <= baseline + 2
    assert not list(out.glob(".*.tmp"))


@pytest.mark.slow
def test_a_run_killed_after_an_accepted_update_keeps_it(tmp_path):
    """SIGKILL of a simulated run once its checkpoint holds an accepted update, then --resume: the final history
    (with that update) and params equal an uninterrupted run's."""
    args = ["run", "bbh:navigate", "--data-dir", str(DATA), *SMALL[:-1], "3", "-q"]
    whole = tmp_path / "whole"
    assert semgrad(*args, "--out", str(whole)).returncode == 0
    assert any(r["accepted"] for r in results(whole)["tasks"][0]["iterations"]), "the test needs an accepted update"

    out = tmp_path / "cut"
    proc = start(*args, "--out", str(out), "--simulated-latency", "0.02")
    checkpoint = out / "checkpoint.json"
    try:
        wait_for(lambda: checkpoint.exists() and '"accepted": true' in checkpoint.read_text("utf-8"))
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    kept = json.loads(checkpoint.read_text("utf-8"))
    assert '"accepted": true' in json.dumps(kept)
    resumed = semgrad(*args, "--out", str(out), "--resume")
    assert resumed.returncode == 0, resumed.stderr
    _same_results(whole, out)


def _truncated(data: dict, text: str) -> str:
    return text[: len(text) // 2]


def _negative(data: dict, text: str) -> str:
    data["ledger"]["$dict"][0][1]["$dict"][0][1] = -5  # the preflight's "calls"
    return json.dumps(data)


def _wrong_shape(data: dict, text: str) -> str:
    return json.dumps({"format": data["format"], "ledger": {"$dict": [["tasks", []]]}})


def _odd_prediction(data: dict, text: str) -> str:
    assert '"answer"' in text  # the test split's predictions are kept with its score
    return text.replace('"answer"', '"module"', 1)


@pytest.mark.parametrize("damage", [_truncated, _negative, _wrong_shape, _odd_prediction])
def test_a_damaged_ledger_is_refused_with_one_line_naming_it(tmp_path, damage):
    """A truncated or tampered ledger.json stops --resume with one line naming the file, not a bare KeyError."""
    from semgrad.effects import CheckpointError
    from semgrad.experiments._ledger import Ledger

    config = RunConfig("bbh:navigate", data_dir=str(DATA), train=4, validation=4, test=4, iterations=1)
    run_experiment(config, tmp_path / "run", llm=HashLLM())
    path = tmp_path / "run" / "ledger.json"
    text = path.read_text("utf-8")
    path.write_text(damage(json.loads(text), text), "utf-8")
    with pytest.raises(CheckpointError) as caught:
        Ledger.load(tmp_path / "run")
    assert str(path) in str(caught.value) and "\n" not in str(caught.value)
    with pytest.raises(CheckpointError, match="ledger.json"):
        run_experiment(config, tmp_path / "run", llm=HashLLM(), resume=True)


_KEYS = st.sampled_from(["$dict", "$tuple", "$attrs", "$map", "ledger", "tasks", "preflight", "calls", "fields"])
_json = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.floats() | st.sampled_from(["$dict", "calls", "semgrad.x:y"]),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_KEYS, inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=60, deadline=None)
@given(content=_json)
def test_any_ledger_content_loads_or_is_refused_in_one_line(tmp_path_factory, content):
    """Whatever JSON a ledger.json holds, loading it gives a valid ledger or one CheckpointError naming the file."""
    from semgrad.effects import CheckpointError
    from semgrad.effects._checkpoint import FORMAT
    from semgrad.experiments._ledger import Ledger

    run_dir = tmp_path_factory.mktemp("run")
    path = run_dir / "ledger.json"
    path.write_text(json.dumps({"format": FORMAT, "ledger": content}), "utf-8")
    try:
        ledger = Ledger.load(run_dir)
    except CheckpointError as error:
        assert str(path) in str(error) and "\n" not in str(error)
    else:
        assert ledger.total()["calls"] >= 0
