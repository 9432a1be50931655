"""`semgrad run`: end to end on the simulated backend, bad inputs, interruption and resume, dry runs."""

from __future__ import annotations

import contextlib
import http.server
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import attrs
import pytest

from semgrad.backends.fake import HashLLM, RecordingLLM
from semgrad.experiments import RunConfig, dry_run, run_experiment

from .._data import data_dir

ROOT = Path(__file__).resolve().parents[2]
DATA = data_dir()


def semgrad(*args: str, timeout: float = 300, env: dict | None = None) -> subprocess.CompletedProcess:
    """Run the command line in a subprocess."""
    return subprocess.run(
        [sys.executable, "-m", "semgrad", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
        cwd=ROOT,
    )


def test_run_bbh_navigate_offline_writes_every_output(tmp_path):
    """`semgrad run bbh:navigate --backend simulated` writes config, checkpoint, results and report offline."""
    out = tmp_path / "run"
    result = semgrad(
        "run", "bbh:navigate", "--backend", "simulated", "--data-dir", str(DATA), "--iterations", "2", "--out", str(out)
    )
    assert result.returncode == 0, result.stderr
    assert {"config.json", "checkpoint.json", "results.json", "report.html"} <= {p.name for p in out.iterdir()}
    results = json.loads((out / "results.json").read_text())
    (task,) = results["tasks"]
    assert task["task"] == "bbh:navigate" and task["category"] == "algorithmic"
    # The official protocol by default: BBH 20 training items and the rest as test, no validation split.
    assert len(task["iterations"]) == 2 and task["sizes"] == {"train": 20, "validation": 0, "test": 230}
    assert results["simulated"] is True and "SIMULATED" in result.stderr
    assert set(task["accuracy"]) == {"train", "validation", "test", "initial_test"}


def openai_run(base_url: str, *args: str) -> subprocess.CompletedProcess:
    """`semgrad run bbh:navigate` on the shared data with the OpenAI-compatible backend at `base_url`."""
    return semgrad(
        "run", "bbh:navigate", "--data-dir", str(DATA), "--backend", "openai-compatible",
        "--base-url", base_url, "--model", "m", *args,
    )  # fmt: skip


def _one_line_error(result: subprocess.CompletedProcess, fragment: str) -> None:
    assert result.returncode != 0
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("semgrad: error: ") and fragment in lines[0], lines[0]
    assert "Traceback" not in result.stderr


def test_a_missing_data_dir_is_a_one_line_error(tmp_path):
    """A data directory that does not exist gives one line naming it, and a non-zero exit."""
    _one_line_error(
        semgrad("run", "gsm8k", "--data-dir", str(tmp_path / "nope"), "--out", str(tmp_path / "o")), "does not exist"
    )


def test_an_unknown_task_is_a_one_line_error_listing_valid_names(tmp_path):
    """An unknown task name gives one line listing the valid names."""
    _one_line_error(
        semgrad("run", "bbh:navigation", "--data-dir", str(tmp_path), "--out", str(tmp_path / "o")), "bbh:navigate"
    )


def test_a_malformed_json_line_is_a_one_line_error(tmp_path):
    """A malformed JSON line in GSM8K gives one line naming the file and line."""
    (tmp_path / "gsm8k").mkdir()
    (tmp_path / "gsm8k" / "train.jsonl").write_text('{"question": "q", "answer": "#### 1"}\n{"question": oops\n')
    (tmp_path / "gsm8k" / "test.jsonl").write_text('{"question": "q", "answer": "#### 1"}\n')
    _one_line_error(semgrad("run", "gsm8k", "--data-dir", str(tmp_path), "--out", str(tmp_path / "o")), "train.jsonl:2")


def test_a_base_url_with_credentials_is_refused_before_anything_is_written(tmp_path):
    """--base-url https://user:password@host is a one-line error that never shows the password, and no run folder
    (whose config.json would keep the URL) is made; RunConfig refuses it too."""
    url = "https://u:s3cret-pass@127.0.0.1:9/v1"
    result = semgrad(
        "run", "gsm8k", "--data-dir", str(DATA), "--backend", "openai-compatible", "--base-url", url,
        "--model", "m", "--dry-run", "--out", str(tmp_path / "o"),
    )  # fmt: skip
    _one_line_error(result, "--base-url must not hold credentials")
    assert "s3cret-pass" not in result.stdout + result.stderr and not (tmp_path / "o").exists()
    with pytest.raises(ValueError, match="must not hold credentials") as error:
        RunConfig("gsm8k", base_url=url)
    assert "s3cret-pass" not in str(error.value)
    assert RunConfig("gsm8k", base_url="http://127.0.0.1:8000/v1").base_url == "http://127.0.0.1:8000/v1"


def test_a_missing_api_key_is_a_one_line_error(tmp_path):
    """The OpenAI backend without OPENAI_API_KEY (and no local base URL) gives one line saying what to set."""
    result = semgrad(
        "run",
        "bbh:navigate",
        "--data-dir",
        str(DATA),
        "--backend",
        "openai-compatible",
        "--yes",
        "--out",
        str(tmp_path / "o"),
        env={"OPENAI_API_KEY": "", "OPENAI_BASE_URL": ""},
    )
    _one_line_error(result, "OPENAI_API_KEY")
    result = semgrad(
        "run",
        "bbh:navigate",
        "--data-dir",
        str(DATA),
        "--backend",
        "anthropic",
        "--yes",
        "--out",
        str(tmp_path / "o"),
        env={"ANTHROPIC_API_KEY": ""},
    )
    _one_line_error(result, "ANTHROPIC_API_KEY")


class _Counting(http.server.BaseHTTPRequestHandler):
    hits = 0

    def do_POST(self):  # noqa: N802
        type(self).hits += 1
        self.send_response(500)
        self.end_headers()

    def log_message(self, *args):
        pass


@contextlib.contextmanager
def _loopback(handler: type[http.server.BaseHTTPRequestHandler]):
    """An HTTP server on 127.0.0.1 that answers with `handler` for the block; yields its API root."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@pytest.fixture
def counting_server():
    """A loopback HTTP server that counts requests."""
    _Counting.hits = 0
    with _loopback(_Counting) as url:
        yield url


def _complete(handler: http.server.BaseHTTPRequestHandler, text: str) -> None:
    """Read the request and answer it as a chat completion whose message is `text`."""
    handler.rfile.read(int(handler.headers["Content-Length"]))
    message = {"role": "assistant", "content": text}
    data = json.dumps({"model": "m", "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]})
    handler.send_response(200)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data.encode())


class _Unformatted(http.server.BaseHTTPRequestHandler):
    """Answers every chat completion in prose, never in the <result> block the parsers read."""

    def do_POST(self):  # noqa: N802
        _complete(self, "I think the answer is yes.")

    def log_message(self, *args):
        pass


def test_a_run_whose_replies_are_all_unreadable_says_no_sample_was_answered(tmp_path):
    """A run whose model never answers in the readable form ends by saying how many test samples have no answer,
    instead of a bare score of 0 and no errors."""
    args = ("--yes", "--iterations", "1", "--train", "2", "--test", "3", "--out", str(tmp_path / "o"))
    with _loopback(_Unformatted) as url:
        result = openai_run(url, *args)
    assert result.returncode == 0, result.stderr
    assert "test 0.000" in result.stdout and "3 of 3 test samples have no answer" in result.stdout, result.stdout


class _KeepAlive(http.server.BaseHTTPRequestHandler):
    """Answers every chat completion readably over kept-alive HTTP/1.1 connections, and counts the connections."""

    protocol_version = "HTTP/1.1"
    connections = 0
    requests = 0

    def setup(self):
        super().setup()
        type(self).connections += 1

    def do_POST(self):  # noqa: N802
        type(self).requests += 1
        _complete(self, "Step by step. <result>Yes</result>")

    def log_message(self, *args):
        pass


def _http_config(base_url: str) -> RunConfig:
    """A small bbh:navigate run on an OpenAI-compatible server, two calls in flight."""
    return RunConfig(
        "bbh:navigate", data_dir=str(DATA), backend="openai-compatible", model="m", train=3, test=4, iterations=1,
        base_url=base_url, concurrency=2,
    )  # fmt: skip


def test_a_run_on_its_own_http_backend_reuses_connections(tmp_path):
    """The backend a run builds shares one connection pool over all its calls: at most a connection per call in
    flight (--concurrency 2), not one (with its TLS handshake) per call."""
    _KeepAlive.connections = _KeepAlive.requests = 0
    with _loopback(_KeepAlive) as base_url:
        run_experiment(_http_config(base_url), tmp_path / "run")
    assert _KeepAlive.requests > 10 and _KeepAlive.connections <= 3  # the preflight's, then two in flight


def test_an_unreachable_base_url_is_a_one_line_error(tmp_path):
    """A base URL where nothing listens gives one line saying the backend cannot be used."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    result = openai_run(f"http://127.0.0.1:{port}/v1", "--yes", "--iterations", "1", "--out", str(tmp_path / "o"))
    _one_line_error(result, "cannot be used: connection")


def test_dry_run_counts_equal_a_real_run_and_call_nothing(tmp_path, counting_server):
    """--dry-run on the paper's BBH protocol prints per-purpose counts a run then makes with no errors (a
    recording fake) at most -- under the official protocol its memo answers an identical request again without a
    call, and a redrawn item keeps its feedback, so the plan is an upper bound -- and makes no call itself."""
    config = RunConfig("bbh:navigate", data_dir=str(DATA), iterations=2)
    report = dry_run(config)
    rec = RecordingLLM(HashLLM())
    run_experiment(config, tmp_path / "real", llm=rec)
    made, planned = dict(rec.counts()), report.by_purpose()
    assert set(made) == set(planned) and all(made[p] <= planned[p] for p in planned), (made, planned)
    result = openai_run(counting_server, "--iterations", "2", "--dry-run", "--out", str(tmp_path / "dry"))
    assert result.returncode == 0, result.stderr
    for purpose, n in report.by_purpose().items():
        assert f" {purpose} " in result.stdout and str(n) in result.stdout
    assert _Counting.hits == 0
    assert not (tmp_path / "dry").exists()


@pytest.mark.slow
def test_a_sigint_interrupted_run_resumes_to_the_same_result(tmp_path):
    """A run interrupted with SIGINT exits cleanly, keeps its checkpoint, and --resume reaches the same final
    result as an uninterrupted run."""
    args = [
        "run",
        "bbh:navigate",
        "--data-dir",
        str(DATA),
        "--iterations",
        "3",
        "--train",
        "6",
        "--validation",
        "6",
        "--test",
        "6",
        "--quiet",
    ]
    whole = tmp_path / "whole"
    assert semgrad(*args, "--out", str(whole)).returncode == 0
    cut = tmp_path / "cut"
    proc = subprocess.Popen(
        [sys.executable, "-m", "semgrad", *args, "--out", str(cut), "--simulated-latency", "0.05"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # A test runner started in the background by a shell without job control (`(cmd &)`) ignores SIGINT,
        # and its children inherit that: the run would rightly carry on. The run is given SIGINT's default.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.monotonic() + 60
    while not (cut / "checkpoint.json").exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert (cut / "checkpoint.json").exists()
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "--resume" in err
    json.loads((cut / "checkpoint.json").read_text())
    resumed = semgrad(*args, "--out", str(cut), "--resume")
    assert resumed.returncode == 0, resumed.stderr
    a = json.loads((whole / "results.json").read_text())["tasks"][0]
    b = json.loads((cut / "results.json").read_text())["tasks"][0]
    assert (a["params"], a["iterations"], a["accuracy"]) == (b["params"], b["iterations"], b["accuracy"])


def test_resuming_with_a_different_config_is_refused(tmp_path):
    """--resume refuses a run directory whose config differs in a field that changes results."""
    from semgrad.experiments import SetupError
    from semgrad.experiments._run import check_run_dir

    RunConfig("gsm8k", data_dir="d", seed=1).save(tmp_path)
    with pytest.raises(SetupError, match="differs in seed"):
        check_run_dir(RunConfig("gsm8k", data_dir="d", seed=2), tmp_path, resume=True)


def test_results_carry_tokens_by_role_and_a_cost_estimate_from_a_price_table(tmp_path):
    """With a price table, results.json's cost is the tokens each role used at its model's price."""
    from semgrad.backends.fake import FunctionLLM
    from semgrad.core import LLMResponse

    inner = HashLLM()
    llm = FunctionLLM(lambda r: LLMResponse(inner(r), {"input_tokens": 100, "output_tokens": 10}, "m"))
    config = RunConfig("bbh:navigate", data_dir=str(DATA), iterations=1, train=4, validation=4, test=4, model="m")
    summary = run_experiment(config, tmp_path / "run", llm=llm, prices={"m": (1.0, 10.0)})
    calls = summary["calls"]["by_role"]
    by_role = summary["tokens"]["by_role"]
    assert {role: used["input"] for role, used in by_role.items()} == {role: 100 * n for role, n in calls.items()}
    expected = sum(n * (100 * 1.0 + 10 * 10.0) / 1e6 for n in calls.values())
    assert summary["cost_usd"] == pytest.approx(expected)


def test_a_run_above_the_confirmation_threshold_needs_yes(tmp_path, counting_server):
    """A real-backend run estimated above the threshold prints the estimate, and without --yes (no terminal)
    refuses in one line before making any call."""
    result = openai_run(counting_server, "--iterations", "1", "--confirm-calls", "10", "--out", str(tmp_path / "o"))
    _one_line_error(result, "--yes")
    assert "This run will make at most" in result.stdout
    # "at most" counts no repair, and not the preflight's call per LLM node (three on the paper's graph)
    assert "the preflight's 3 calls, retries, and repair requests after unreadable replies come on top" in result.stdout
    assert f"(bbh:navigate, openai-compatible at {counting_server}):" in result.stdout  # where the key goes
    assert _Counting.hits == 0 and not (tmp_path / "o").exists()


def test_a_new_run_is_never_written_into_a_folder_of_other_files(tmp_path):
    """A new run refuses an --out that holds files it would not write (or a foreign config.json), and leaves them."""
    from semgrad.experiments import SetupError
    from semgrad.experiments._run import check_run_dir

    config = RunConfig("gsm8k", data_dir="d")
    mine = tmp_path / "project"
    mine.mkdir()
    (mine / "notes.txt").write_text("mine")
    with pytest.raises(SetupError, match=r"project is not empty \(notes.txt\) and holds no run"):
        check_run_dir(config, mine, resume=False)
    (mine / "notes.txt").unlink()
    (mine / "config.json").write_text('{"my": "app"}')
    with pytest.raises(SetupError, match="config.json is not a semgrad run's config"):
        check_run_dir(config, mine, resume=False)
    assert (mine / "config.json").read_text() == '{"my": "app"}'
    a_file = tmp_path / "a_file"
    a_file.write_text("x")
    with pytest.raises(SetupError, match="is not a folder"):
        check_run_dir(config, a_file, resume=False)


def test_a_new_run_may_go_into_an_empty_folder_or_one_an_unfinished_start_left(tmp_path):
    """An empty folder, hidden files, the run's own cache and what a run that never checkpointed wrote are fine."""
    from semgrad.experiments._run import check_run_dir

    out = tmp_path / "run"
    out.mkdir()
    (out / ".gitkeep").write_text("")
    config = RunConfig("gsm8k", data_dir="d", cache=str(out / "calls.sqlite"))
    (out / "calls.sqlite").write_bytes(b"")
    (out / "calls.sqlite-wal").write_bytes(b"")
    check_run_dir(config, out, resume=False)
    config.save(out)
    (out / "ledger.json").write_text("{}")
    check_run_dir(config, out, resume=False)
    check_run_dir(config, tmp_path / "new", resume=False)


def test_the_command_line_refuses_a_run_into_a_folder_of_other_files(tmp_path):
    """`semgrad run --out DIR` into a folder of other files exits 1 before starting, and writes nothing there."""
    mine = tmp_path / "project"
    mine.mkdir()
    (mine / "main.py").write_text("print('mine')\n")
    result = semgrad("run", "gsm8k", "--backend", "simulated", "--data-dir", str(DATA), "--out", str(mine))
    assert result.returncode == 1 and "Writing the run" not in result.stdout
    assert "is not empty (main.py) and holds no run" in result.stderr
    assert sorted(p.name for p in mine.iterdir()) == ["main.py"]


def test_a_comparison_on_its_own_http_backend_reuses_connections(tmp_path):
    """Each run of a comparison shares one connection pool over its calls, as a run does: a few connections per
    optimizer, not one (with its TLS handshake) per call."""
    from semgrad.experiments import compare

    _KeepAlive.connections = _KeepAlive.requests = 0
    with _loopback(_KeepAlive) as base_url:
        compare(_http_config(base_url), ["neighbor-sgd", "tgd"], tmp_path / "cmp")
    assert _KeepAlive.requests > 20 and _KeepAlive.connections <= 2 * 3  # per run: the preflight's, two in flight


def test_a_copro_run_resumed_with_more_iterations_goes_on_as_one_started_with_them(tmp_path):
    """COPRO resumed with --iterations grown (which --resume allows) is accepted and ends as a run started with them
    (the same params, decisions and scores; not the same calls: the in-run memo is not checkpointed, so the
    resumed process asks again what the whole run's memo answered)."""
    from semgrad.experiments._resume import resumed_config

    config = RunConfig("bbh:navigate", data_dir=str(DATA), optimizer="copro", breadth=2, iterations=1, train=2, test=2)
    run_experiment(config, tmp_path / "cut")
    grown = resumed_config(config, {"iterations": 2}, tmp_path / "cut")
    resumed = run_experiment(grown, tmp_path / "cut", resume=True)["tasks"][0]
    whole = run_experiment(attrs.evolve(config, iterations=2), tmp_path / "whole")["tasks"][0]
    assert resumed["params"] == whole["params"]
    uncounted = [{k: v for k, v in r.items() if k != "calls"} for r in (*resumed["iterations"], *whole["iterations"])]
    assert uncounted[: len(resumed["iterations"])] == uncounted[len(resumed["iterations"]) :]
    assert resumed["accuracy"] == whole["accuracy"]
