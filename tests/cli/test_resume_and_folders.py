"""`semgrad run --resume --out DIR` continues from config.json; flags may only extend; each run gets a new folder."""

from __future__ import annotations

import json

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from semgrad.experiments import RunConfig, SetupError
from semgrad.experiments._resume import resumed_config
from semgrad.experiments._run_folder import new_run_dir

from .._data import data_dir
from .conftest import one_line_error, semgrad

DATA = data_dir()
SAVED = RunConfig("bbh:navigate", data_dir="d", iterations=3, seed=2, train=6, max_calls=100)
FIXED = [f.name for f in attrs.fields(RunConfig) if f.name not in (*RunConfig.RESUMABLE_CHANGES, "data", "task")]


@given(st.integers(3, 50), st.integers(100, 10_000), st.integers(1, 64))
def test_flags_that_extend_the_run_are_applied(iterations, max_calls, concurrency):
    """More iterations, a larger budget and another concurrency are taken; everything else stays as saved."""
    given_flags = {"iterations": iterations, "max_calls": max_calls, "concurrency": concurrency}
    resumed = resumed_config(SAVED, given_flags, "DIR")
    assert resumed == attrs.evolve(SAVED, **given_flags)


@given(st.integers(0, 2))
def test_fewer_iterations_are_refused(iterations):
    """--iterations below the saved number is refused: resuming may only extend a run."""
    with pytest.raises(SetupError, match="--iterations may only grow"):
        resumed_config(SAVED, {"iterations": iterations}, "DIR")


@given(st.sampled_from(FIXED), st.data())
def test_any_other_changed_flag_is_refused_and_the_same_value_is_fine(name, data):
    """A flag that changes what the run computes is refused when its value differs, accepted when equal."""
    before = getattr(SAVED, name)
    assert resumed_config(SAVED, {name: before}, "DIR") == SAVED
    other = {
        "backend": "anthropic", "optimizer": "tgd", "metric": "numeric",
        "timeout": 1.0, "simulated_latency": 1.0,
    }.get(name, data.draw(st.integers(1, 99).filter(lambda v: v != before)))  # fmt: skip
    if name in (
        "data_dir",
        "base_url",
        "model",
        "forward_model",
        "backward_model",
        "optimizer_model",
        "criteria",
        "llm",
    ):
        other = "something else"
    with pytest.raises(SetupError, match="cannot resume DIR"):
        resumed_config(SAVED, {name: other}, "DIR")


def test_another_task_typed_on_resume_is_refused():
    """Typing another task than the saved one is refused."""
    with pytest.raises(SetupError, match="run of bbh:navigate, not gsm8k"):
        resumed_config(SAVED, {"task": "gsm8k"}, "DIR")


@given(st.integers(0, 3))
def test_a_new_run_folder_never_reuses_an_existing_one(tmp_path_factory, taken):
    """The default folder is new: numbered when a folder of the same name and second exists."""
    root = tmp_path_factory.mktemp("runs")
    config = RunConfig("bbh:navigate")
    for _ in range(taken):
        new_run_dir(config, root, now=0).mkdir()
    path = new_run_dir(config, root, now=0)
    assert not path.exists() and path.parent == root and path.name.startswith("bbh-navigate-")


def test_two_runs_without_out_get_two_folders_printed_at_start(tmp_path, system_file, items_file):
    """Without --out each run writes a new folder under runs/ and says which at the start."""
    folders = []
    for _ in range(2):
        result = semgrad("run", str(system_file), "--data", str(items_file), "--iterations", "1", cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        first = result.stdout.splitlines()[0]
        assert first.startswith("Writing the run in runs/my_system-build-")
        folders.append(tmp_path / first.removeprefix("Writing the run in "))
    assert folders[0] != folders[1] and all((f / "results.json").is_file() for f in folders)


def test_resume_with_only_out_continues_from_config_json(tmp_path):
    """`--resume --out DIR` alone continues a paper task with its saved settings; more iterations extend it;
    another seed is refused in one line."""
    out = tmp_path / "run"
    sizes = ["--train", "4", "--validation", "4", "--test", "4", "--seed", "3"]
    first = semgrad("run", "bbh:navigate", "--data-dir", str(DATA), "--iterations", "1", *sizes, "--out", str(out))
    assert first.returncode == 0, first.stderr
    one_line_error(semgrad("run", "--resume", "--out", str(out), "--seed", "4"), "seed 3, not 4")
    resumed = semgrad("run", "--resume", "--out", str(out), "--iterations", "2")
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.startswith(f"Continuing the run in {out}")
    (task,) = json.loads((out / "results.json").read_text())["tasks"]
    assert len(task["iterations"]) == 2 and task["sizes"] == {"train": 4, "validation": 4, "test": 4}
    assert json.loads((out / "config.json").read_text())["iterations"] == 2


REAL = RunConfig("gsm8k", backend="openai-compatible", base_url="https://models.example.com/v1", cache="/tmp/n/c.db")


@pytest.mark.parametrize(
    ("typed", "missing"),
    [
        ({}, ["--base-url URL", "--cache FILE"]),
        ({"cache": ""}, ["--base-url URL"]),
        ({"base_url": "https://models.example.com/v1"}, ["--cache FILE"]),
    ],
)
def test_a_remote_server_or_a_new_cache_file_is_taken_only_from_what_is_typed(typed, missing):
    """A saved remote base URL, or a cache file still to be created outside the run folder, is used on resume
    only when typed again (config.json alone could send the API key to any server, or create a file anywhere);
    the error says which flags to type, never with the file's values in them. Nothing else needs typing."""
    with pytest.raises(SetupError) as caught:
        resumed_config(REAL, typed, "DIR")
    message = str(caught.value)
    assert all(flag in message for flag in missing) and "semgrad run --resume --out DIR" in message
    assert "--base-url https" not in message and "--cache /tmp" not in message
    typed_all = {"base_url": "https://models.example.com/v1", "cache": ""}
    assert resumed_config(REAL, typed_all, "DIR") == attrs.evolve(REAL, cache="")
    assert resumed_config(SAVED, {}, "DIR") == SAVED  # a simulated run without a cache needs nothing typed


def test_a_server_on_this_machine_an_official_api_or_an_existing_cache_needs_nothing_typed(tmp_path):
    """`--resume --out DIR` alone resumes a run against a loopback server or a provider's own API, with a cache
    file that exists already or lies in the run folder: the key stays on this machine or goes to its provider."""
    existing = tmp_path / "cache.sqlite"
    existing.write_bytes(b"")
    for base_url in ("http://127.0.0.1:8000/v1", "http://localhost:11434/v1", "http://[::1]:8000/v1", None):
        for cache in (str(existing), str(tmp_path / "run" / "c.sqlite"), None):
            saved = RunConfig("gsm8k", backend="openai-compatible", base_url=base_url, cache=cache)
            assert resumed_config(saved, {}, tmp_path / "run") == saved


def test_a_config_json_pointed_at_a_server_sends_nothing_on_resume(tmp_path):
    """A run folder whose config.json was edited to name a real backend and server stops --resume in one line,
    before any request, and an escape sequence in it reaches the terminal escaped."""
    out = tmp_path / "run"
    sizes = ["--train", "2", "--test", "2", "--iterations", "1"]
    first = semgrad("run", "bbh:navigate", "--data-dir", str(DATA), *sizes, "--out", str(out))
    assert first.returncode == 0, first.stderr
    config = json.loads((out / "config.json").read_text())
    config.update(backend="openai-compatible", base_url="http://models.example.com/v1\x1b]52;c;ZWNobw==\x07")
    (out / "config.json").write_text(json.dumps(config))
    line = one_line_error(
        semgrad("run", "--resume", "--out", str(out), env={"OPENAI_API_KEY": "sk-test"}), "--base-url"
    )
    assert "\x1b" not in line and "\\x1b]52" in line


def test_resume_without_out_or_without_a_run_is_a_one_line_error(tmp_path):
    """--resume needs --out, and a folder with a config.json."""
    one_line_error(semgrad("run", "--resume"), "--out")
    one_line_error(semgrad("run", "--resume", "--out", str(tmp_path)), "no config.json")


@given(st.sets(st.sampled_from(["--seed", "--iterations", "--k", "--concurrency"])), st.integers(1, 9))
def test_only_the_flags_typed_count_as_given(flags, value):
    """On --resume, a flag left at its default is not taken as typed; a typed one is, even at its default value."""
    from semgrad.cli import _typed

    argv = ["run", "--resume", "--out", "d"] + [part for flag in sorted(flags) for part in (flag, str(value))]
    typed = _typed(argv)
    assert typed == {"resume": True, "out": "d", **{f.removeprefix("--"): value for f in flags}}


def test_a_resumed_run_whose_test_split_was_scored_still_reports_its_predictions(tmp_path):
    """Resuming a finished run takes the test score from the ledger, and its per-sample predictions with it."""
    out = tmp_path / "run"
    sizes = ["--train", "3", "--validation", "3", "--test", "4", "--seed", "5"]
    first = semgrad("run", "bbh:navigate", "--data-dir", str(DATA), "--iterations", "1", *sizes, "--out", str(out))
    assert first.returncode == 0, first.stderr
    (before,) = json.loads((out / "results.json").read_text())["tasks"]
    assert len(before["predictions"]) == 4
    resumed = semgrad("run", "--resume", "--out", str(out))
    assert resumed.returncode == 0, resumed.stderr
    (after,) = json.loads((out / "results.json").read_text())["tasks"]
    assert after["accuracy"] == before["accuracy"] and after["predictions"] == before["predictions"]
