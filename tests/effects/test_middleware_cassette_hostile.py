"""replayed: a cassette is hostile input; every malformed one is a ValueError naming the file (and line)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import anyio
import pytest

from semgrad.core import LLMRequest, LLMResponse, Message
from semgrad.effects import recorded, replayed

ROOT = Path(__file__).resolve().parents[2]
GOOD = json.dumps({"key": "k", "response": {"text": "x", "usage": {"input_tokens": 1}, "model": "m"}}) + "\n"


def line_with_usage(usage):
    return json.dumps({"key": "k2", "response": {"text": "x", "usage": usage, "model": "m"}}) + "\n"


@pytest.mark.parametrize(
    ("second_line", "why"),
    [
        (b"[" * 100_000 + b"]" * 100_000 + b"\n", "JSON nested too deeply"),
        ('{"key": "k2", "response": {"text": "caf\u00e9"}}\n'.encode("latin-1"), "not UTF-8"),
        (b"\xff\xfe\n", "not UTF-8"),
    ],
    ids=["deep nesting", "latin-1", "bytes"],
)
def test_a_deeply_nested_or_non_utf8_line_names_the_file_and_line(tmp_path, second_line, why):
    """A line nested too deeply for the JSON parser or not UTF-8 raises ValueError naming its file and line."""
    path = tmp_path / "run.jsonl"
    path.write_bytes(GOOD.encode() + second_line)
    with pytest.raises(ValueError, match=f"{path}:2: not a cassette record \\({why}"):
        replayed(path)


@pytest.mark.parametrize("usage", [{"input_tokens": True}, {"input_tokens": -(10**18)}, {"input_tokens": 2**63}])
def test_usage_values_must_be_token_counts(tmp_path, usage):
    """A recorded usage that is a bool, negative or beyond 2**63 - 1 raises ValueError naming file, line and entry."""
    path = tmp_path / "run.jsonl"
    path.write_text(GOOD + line_with_usage(usage))
    with pytest.raises(ValueError, match=f"{path}:2: not a cassette record \\(usage 'input_tokens' is not a token"):
        replayed(path)


def test_usage_entries_that_are_not_token_counts_are_not_recorded(tmp_path):
    """A reply's non-count usage (a float cost) is left out of the record, so the cassette replays."""
    path = tmp_path / "run.jsonl"
    request = LLMRequest((Message("user", "hi"),))
    live = anyio.run(recorded(lambda r: LLMResponse("x", {"input_tokens": 3, "cost": 0.5}, "m"), path), request)
    assert live.usage == {"input_tokens": 3, "cost": 0.5}
    assert replayed(path)(request) == LLMResponse("x", {"input_tokens": 3}, "m")


def test_a_path_that_is_not_a_regular_file_is_refused(special_paths):
    """A directory, FIFO or device given to replayed or recorded raises ValueError naming it, without blocking."""
    directory, fifo, zero = special_paths
    for path in (directory, fifo, zero):
        with pytest.raises(ValueError, match=f"cannot record to {path}: it is not a regular file"):
            recorded(lambda r: "x", path)
    with pytest.raises(ValueError, match=f"cannot replay {directory}: it is not a regular file"):
        replayed(directory)


CHILD = textwrap.dedent(
    """
    import resource, sys
    from semgrad.effects import replayed

    resource.setrlimit(resource.RLIMIT_AS, (2 * 1024**3, 2 * 1024**3))  # a runaway read fails, not the machine
    try:
        replayed(sys.argv[1])
    except ValueError as exc:
        print(type(exc).__name__, exc)
    """
)


@pytest.mark.slow
@pytest.mark.parametrize("make", ["fifo", "dev zero"])
def test_replaying_a_fifo_or_a_device_neither_hangs_nor_exhausts_memory(tmp_path, make):
    """In a child process with bounded memory, replaying a FIFO or /dev/zero ends at once with ValueError naming it."""
    path = tmp_path / "run.jsonl"
    os.mkfifo(path) if make == "fifo" else path.symlink_to("/dev/zero")
    try:
        done = subprocess.run(
            [sys.executable, "-c", CHILD, str(path)], cwd=ROOT, capture_output=True, text=True, timeout=30
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"replaying {make} did not end in 30 seconds")
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith(f"ValueError cannot replay {path}: it is not a regular file")
