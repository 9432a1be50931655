"""Kills without the cache: a run's journal keeps every finished reply, so a killed run pays for none twice and its
results count every call that finished; the journal is read back as hostile input."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

from semgrad.experiments import RunConfig, run_experiment
from semgrad.experiments._errors import SetupError
from semgrad.experiments._journal import MAX_LINE, Journal

from ._servers import DATA, results, run_args, semgrad, server, start, wait_for  # noqa: F401

#: Calls in flight at most (the run's --concurrency): what a kill may cut before they finish.
CONCURRENCY = 2


def _kill_after(server, out: Path, more: int, *extra: str) -> None:  # noqa: F811
    """Start (or resume) the run, SIGKILL it once the provider has received `more` requests more."""
    before = server.count
    proc = start(*run_args(server.url, out, "--concurrency", str(CONCURRENCY), "-q", *extra))
    try:
        wait_for(lambda: server.count >= before + more or proc.poll() is not None, timeout=120)
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == -signal.SIGKILL, "the run ended before the kill: kill it earlier"


@pytest.mark.slow
def test_a_run_killed_three_times_without_the_cache_pays_no_finished_call_twice_and_counts_them_all(
    tmp_path,
    server,  # noqa: F811
):
    """`semgrad run` without --cache (--concurrency 2) SIGKILLed three times (in training, mid-way, in evaluation),
    then resumed to the end: the results equal an uninterrupted run's; the provider receives no request body twice
    beyond what the uninterrupted run itself repeats plus the calls in flight at each kill; and results.json's calls
    equal the requests the provider received, minus at most the calls in flight at each kill (2 per kill here: a
    call cut by a kill never finished, so it is neither journaled nor counted, though the provider received it)."""
    server.delay = 0.01
    whole = tmp_path / "whole"
    first = semgrad(*run_args(server.url, whole, "--concurrency", str(CONCURRENCY), "-q"))
    assert first.returncode == 0, first.stderr
    baseline_repeats = server.repeats()
    uninterrupted = server.count
    server.requests = []

    out = tmp_path / "cut"
    kills = 0
    for more, extra in (
        (uninterrupted // 6, ()),
        (uninterrupted // 6, ("--resume",)),
        (uninterrupted // 6, ("--resume",)),
    ):
        _kill_after(server, out, more, *extra)
        kills += 1
    assert not (out / "results.json").exists()
    resumed = semgrad(*run_args(server.url, out, "--concurrency", str(CONCURRENCY), "-q", "--resume"))
    assert resumed.returncode == 0, resumed.stderr

    for key in ("params", "iterations", "accuracy"):
        assert results(out)["tasks"][0][key] == results(whole)["tasks"][0][key], key
    in_flight = CONCURRENCY * kills
    assert server.repeats() <= baseline_repeats + in_flight
    received = server.count
    counted = results(out)["counters"]["calls"]
    assert received - in_flight <= counted <= received, (counted, received)
    assert sum(results(out)["calls"]["by_purpose"].values()) == counted


def test_the_journal_answers_a_resumed_run_and_counts_what_the_ledger_missed(tmp_path):
    """A run whose ledger lost its counts (as a kill after the last save would): on resume the journal answers
    every request again for free and its lines reach the totals, which equal the first process's calls."""
    config = RunConfig("bbh:navigate", data_dir=str(DATA), train=3, validation=2, test=2, iterations=1)
    calls: list[object] = []

    from semgrad.backends.fake import HashLLM

    inner = HashLLM()

    def llm(request):
        calls.append(request)
        return inner(request)

    first = run_experiment(config, tmp_path, llm=llm)
    made = len(calls)
    assert first["counters"]["calls"] == made
    lines = (tmp_path / "journal.jsonl").read_text("ascii").splitlines()
    assert len(lines) == made  # every finished call, one line each
    (tmp_path / "ledger.json").unlink()  # the counts of the first process are gone
    (tmp_path / "results.json").unlink()
    for ckpt in tmp_path.glob("checkpoint*.json"):
        ckpt.unlink()
    again = run_experiment(config, tmp_path, llm=llm, resume=True)
    assert len(calls) == made  # every request answered by the journal
    assert again["counters"]["calls"] == made  # and the first process's calls counted once
    assert again["counters"]["hits"]["cache"] == made


def _journal(tmp_path: Path, text: bytes) -> tuple[Journal, list[str]]:
    (tmp_path / Journal.FILE).write_bytes(text)
    said: list[str] = []
    return Journal.open(tmp_path, resume=True, say=said.append), said


GOOD = {"v": 1, "key": "a" * 64, "task": "t", "engine": "forward", "purpose": "forward", "model": "m",
        "text": "ok", "usage": {"input_tokens": 3}}  # fmt: skip


@pytest.mark.parametrize(
    "bad",
    [
        b"not json",
        b'{"v": 1',  # a line cut by a kill
        json.dumps({**GOOD, "key": "../../etc"}).encode(),
        json.dumps({**GOOD, "text": 5}).encode(),
        json.dumps({**GOOD, "usage": {"input_tokens": -1}}).encode(),
        json.dumps({**GOOD, "usage": {"input_tokens": True}}).encode(),
        json.dumps({**GOOD, "v": True}).encode(),
        json.dumps({**GOOD, "extra": {"$attrs": "os:system"}}).encode(),
        json.dumps({**GOOD, "model": "x" * 5000}).encode(),
        json.dumps([GOOD]).encode(),
        b"[" * 100_000 + b"]" * 100_000,
        b"1" * 6000,
        b'"' + b"x" * (MAX_LINE + 10) + b'"',
        b"\xff\xfe",
    ],
    ids=range(14),
)
def test_every_bad_journal_line_is_skipped_with_a_line_naming_the_file(tmp_path, bad):
    """A line that is not exactly a journal entry (not JSON, cut, wrong types, extra fields, too long, too deep) is
    skipped with one message naming the file and the line; the good lines around it still answer."""
    good = json.dumps(GOOD).encode()
    journal, said = _journal(tmp_path, good + b"\n" + bad + b"\n" + good + b"\n")
    assert len(said) == 1 and str(tmp_path / Journal.FILE) in said[0] and "line 2" in said[0]
    assert journal.lines == 3 and journal.entries[1] is None
    assert list(journal.replies) == ["a" * 64]
    assert journal.replies["a" * 64].text == "ok"


def test_a_journal_that_is_not_a_regular_file_is_refused(tmp_path):
    """A FIFO, a link to /dev/zero or a link to a regular file in the journal's place is refused on resume in one
    line, without a hang, and the link's target is never written."""
    import os

    os.mkfifo(tmp_path / Journal.FILE)
    with pytest.raises(SetupError, match="journal.jsonl"):
        Journal.open(tmp_path, resume=True)
    (tmp_path / Journal.FILE).unlink()
    (tmp_path / Journal.FILE).symlink_to("/dev/zero")
    with pytest.raises(SetupError, match="journal.jsonl"):
        Journal.open(tmp_path, resume=True)
    (tmp_path / Journal.FILE).unlink()
    target = tmp_path / "elsewhere.txt"
    target.write_text("mine\n")
    (tmp_path / Journal.FILE).symlink_to(target)
    with pytest.raises(SetupError, match="symbolic link"):
        Journal.open(tmp_path, resume=True)
    fresh = Journal.open(tmp_path, resume=False)  # a fresh run replaces the link with a file of its own
    fresh.start()
    fresh.close()
    assert target.read_text() == "mine\n" and not (tmp_path / Journal.FILE).is_symlink()


def test_a_line_cut_by_a_kill_gets_no_line_glued_to_it(tmp_path):
    """After a line cut by a kill (no newline), the next process's first line starts a line of its own."""
    from semgrad.core import LLMRequest, LLMResponse, Message

    journal, _ = _journal(tmp_path, json.dumps(GOOD).encode() + b"\n" + b'{"v": 1, "ke')
    journal.record("b" * 64, LLMRequest((Message("user", "hi"),)), LLMResponse("yes", {}, "m"))
    journal.close()
    again, said = _journal(tmp_path, (tmp_path / Journal.FILE).read_bytes())
    assert sorted(again.replies) == ["a" * 64, "b" * 64] and len(said) == 1


def test_the_journal_is_bounded_when_written_and_when_read(tmp_path, monkeypatch):
    """Writing stops at the size limit with one line saying so (the run goes on); a larger file is refused on
    resume in one line naming the file and the limit."""
    from semgrad.core import LLMRequest, LLMResponse, Message
    from semgrad.experiments import _journal

    monkeypatch.setattr(_journal, "MAX_BYTES", 1000)
    said: list[str] = []
    journal = Journal.open(tmp_path, resume=False, say=said.append)
    for i in range(50):
        journal.record(f"{i:064x}", LLMRequest((Message("user", "hi"),)), LLMResponse("yes " * 10, {}, "m"))
    journal.close()
    size = (tmp_path / Journal.FILE).stat().st_size
    assert 0 < size <= 1000 and len(said) == 1 and "1,000 bytes" in said[0]
    assert journal.lines == len((tmp_path / Journal.FILE).read_bytes().splitlines())
    with (tmp_path / Journal.FILE).open("a") as file:
        file.write("x" * 1000 + "\n")
    with pytest.raises(SetupError, match=r"journal\.jsonl is larger than 1,000 bytes"):
        Journal.open(tmp_path, resume=True)
