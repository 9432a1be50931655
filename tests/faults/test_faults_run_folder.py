"""A run folder's files read back as hostile: wrong types, impossible values, special files and scores changed by
hand are refused in one line naming the file, or scored again; nothing hangs, and nothing looks like a result."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import attrs
import pytest

from semgrad.backends.fake import HashLLM
from semgrad.core import LLMRequest, LLMResponse, Message
from semgrad.effects import CheckpointError, Runner
from semgrad.experiments import RunConfig, SetupError, run_experiment
from semgrad.experiments._ledger import Ledger
from semgrad.experiments._resume import load_saved_config

from ._servers import DATA

SMALL_RUN = {"train": 3, "test": 4, "iterations": 1}
ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("field", "value", "says"),
    [
        ("iterations", 2.5, "iterations must be an integer"),
        ("iterations", True, "iterations must be an integer"),
        ("test", 4.0, "test must be an integer or null"),
        ("timeout", "abc", "timeout must be a number"),
        ("task", ["x"], "task must be text"),
        ("timeout", math.nan, "--timeout must be a number above 0"),
        ("temperature", -1.0, "--temperature must be a number at least 0"),
        ("iterations", 10**100, "--iterations must be from 0 to 1000"),
    ],
)
def test_a_config_json_field_of_the_wrong_type_or_value_is_refused_naming_the_file(tmp_path, field, value, says):
    """Every config.json field is checked to be of its type and in range before a run resumes from it."""
    (tmp_path / "config.json").write_text(json.dumps({"task": "gsm8k", field: value}))
    with pytest.raises(SetupError) as caught:
        load_saved_config(tmp_path)
    assert "config.json" in str(caught.value) and says in str(caught.value)


_LOAD_BOTH = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (2**31, 2**31))  # a regression fails here, not the machine
from pathlib import Path
from semgrad.effects import CheckpointError
from semgrad.experiments import SetupError
from semgrad.experiments._ledger import Ledger
from semgrad.experiments._resume import load_saved_config
folder = Path(sys.argv[1])
try:
    load_saved_config(folder)
except SetupError as error:
    print("config:", error)
try:
    Ledger.load(folder)
except CheckpointError as error:
    print("ledger:", error)
"""


@pytest.mark.parametrize("kind", ["fifo", "device", "nested"])
def test_a_special_or_absurd_file_in_a_run_folder_is_refused_without_hanging(tmp_path, kind):
    """A FIFO or /dev/zero in config.json's or ledger.json's place, or JSON nested beyond recursion, is refused in
    one line each: the read neither blocks on the FIFO nor fills memory (checked in a child process, with a
    deadline and a memory cap)."""
    for name in ("config.json", "ledger.json"):
        path = tmp_path / name
        if kind == "fifo":
            os.mkfifo(path)
        elif kind == "device":
            path.symlink_to("/dev/zero")
        else:
            path.write_text("[" * 100_000 + "]" * 100_000)
    done = subprocess.run(
        [sys.executable, "-c", _LOAD_BOTH, str(tmp_path)], capture_output=True, text=True, timeout=60, cwd=ROOT
    )
    lines = done.stdout.splitlines()
    assert done.returncode == 0, done.stderr
    assert [line.split(":")[0] for line in lines] == ["config", "ledger"], done.stdout
    assert "config.json" in lines[0] and "ledger.json" in lines[1]


def test_a_runner_refuses_a_nan_timeout():
    """A NaN timeout is refused when the runner is made: each call would otherwise fail before it started, unseen
    by the run's counting."""
    with pytest.raises(ValueError, match="timeout must be positive"):
        Runner(HashLLM(), timeout=math.nan)


def test_odd_token_counts_in_a_reply_neither_stop_nor_skew_the_run_s_counting():
    """A reply whose usage holds text, NaN, a negative or a fractional count is counted as a call with 0 tokens."""
    import anyio

    from semgrad.experiments._run_stack import _Tally

    usages = [{"input_tokens": "abc"}, {"input_tokens": math.nan}, {"output_tokens": -5}, {"input_tokens": 2.5}]
    replies = iter([LLMResponse("x", usage, "m") for usage in usages] + [LLMResponse("x", {"input_tokens": 7.0})])
    tally = _Tally(lambda request: next(replies), fail_fast=20)
    request = LLMRequest((Message("user", "hi"),))
    for _ in range(5):
        anyio.run(tally, request)
    assert tally.counters["calls"] == 5 and tally.counters["errors"] == 0
    assert (tally.counters["input_tokens"], tally.counters["output_tokens"]) == (7, 0)


def _finished_run(tmp_path: Path) -> tuple[RunConfig, Path]:
    config = RunConfig("bbh:navigate", data_dir=str(DATA), **SMALL_RUN)
    run_experiment(config, tmp_path / "run", llm=HashLLM())
    return config, tmp_path / "run"


def test_a_test_score_changed_by_hand_in_the_ledger_is_refused(tmp_path):
    """The ledger keeps the test split's predictions with its score, which must be their mean: a score changed
    alone stops --resume in one line naming ledger.json, instead of being reported."""
    config, run = _finished_run(tmp_path)
    path = run / "ledger.json"
    data = json.loads(path.read_text())
    entry = _find_split(data, "test")
    entry[1] = 0.99 if entry[1] != 0.99 else 0.98
    path.write_text(json.dumps(data))
    with pytest.raises(CheckpointError, match="ledger.json"):
        run_experiment(config, run, llm=HashLLM(), resume=True)


def _find_split(node, split):
    """The ``["score", value]`` pair of `split`'s entry in a checkpoint-encoded ledger."""
    if isinstance(node, list):
        if len(node) == 2 and node[0] == split and isinstance(node[1], dict):
            return next(pair for pair in node[1]["$dict"] if pair[0] == "score")
        for item in node:
            found = _find_split(item, split)
            if found is not None:
                return found
    elif isinstance(node, dict):
        for item in node.values():
            found = _find_split(item, split)
            if found is not None:
                return found
    return None


def test_a_resumed_run_says_which_scores_it_carried_over_and_rescores_changed_items(tmp_path):
    """A resumed run reports which splits an earlier process scored; the same params on other items (a changed
    data file) are scored again, not read back."""
    config, run = _finished_run(tmp_path)
    again = run_experiment(config, run, llm=HashLLM(), resume=True)
    assert again["tasks"][0]["carried_over"] == ["train", "test", "initial_test"]
    ledger = Ledger.load(run)
    task = next(iter(ledger.tasks))
    from semgrad.experiments import load_run_tasks

    (loaded,) = load_run_tasks(config)
    params = loaded.build()[1]
    assert ledger.evaluation(task, "initial_test", params, loaded.split.test) is not None
    assert ledger.evaluation(task, "initial_test", params, loaded.split.test[:-1]) is None


@pytest.mark.parametrize("score", [7.5, math.nan, math.inf])
def test_a_checkpoint_score_changed_by_hand_is_refused(tmp_path, score):
    """A checkpoint whose best score is outside 0..1 (the run's metrics give nothing else) or not finite stops the
    resumed run in one line naming it, instead of a report of 750 % or a results.json holding NaN."""
    config, run = _finished_run(tmp_path)
    path = run / "checkpoint.json"
    data = json.loads(path.read_text())
    assert _set_field(data, "best_score", score)
    path.write_text(json.dumps(data))
    with pytest.raises(CheckpointError, match="checkpoint.json"):
        run_experiment(attrs.evolve(config, iterations=2), run, llm=HashLLM(), resume=True)


def _set_field(node, name, value) -> bool:
    """Set every field `name` in a checkpoint-encoded value (its attrs values are objects of fields)."""
    found = False
    if isinstance(node, dict):
        if name in node:
            node[name] = value
            found = True
        for item in node.values():
            found = _set_field(item, name, value) or found
    elif isinstance(node, list):
        for item in node:
            found = _set_field(item, name, value) or found
    return found
