"""`semgrad data get`: checksummed, resumable downloads, tested against a local HTTP server (never the network)."""

from __future__ import annotations

import hashlib
import re
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from semgrad.cli import _data, main
from semgrad.cli._data import DownloadError, FileSource, get
from semgrad.tasks import BBH_TASKS, load_gsm8k

from .._data import REAL_DATA, needs_real_data, synthetic_data


class FileServer(ThreadingHTTPServer):
    """Serves `files` by path on 127.0.0.1, honouring `Range: bytes=N-`; a path in `cut` is cut halfway once."""

    daemon_threads = True

    def __init__(self, files: dict[str, bytes]) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.files = files
        self.cut: set[str] = set()
        self.ignore_range = False
        self.requests: list[tuple[str, str | None]] = []

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}{path}"


class _Handler(BaseHTTPRequestHandler):
    server: FileServer

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        wanted = self.headers.get("Range")
        self.server.requests.append((self.path, wanted))
        body = self.server.files.get(self.path)
        if body is None:
            self.send_error(404)
            return
        start = 0
        match = re.fullmatch(r"bytes=(\d+)-", wanted or "")
        if match and not self.server.ignore_range:
            start = int(match.group(1))
            if start >= len(body):
                self.send_response(416)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
        else:
            self.send_response(200)
        self.send_header("Content-Length", str(len(body) - start))
        self.end_headers()
        if self.path in self.server.cut:
            self.server.cut.discard(self.path)
            self.wfile.write(body[start : start + (len(body) - start) // 2])
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
            self.close_connection = True
            return
        self.wfile.write(body[start:])


@pytest.fixture
def server() -> Iterator[FileServer]:
    """A file server on 127.0.0.1 for the test's fake data files."""
    srv = FileServer({})
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


def _table(server: FileServer, files: dict[str, bytes], name: str = "gsm8k") -> dict[str, tuple[FileSource, ...]]:
    """Serve `files` (data-directory path -> bytes) and the source table that lists them with their sha256."""
    server.files.update({f"/{path}": body for path, body in files.items()})
    sources = tuple(FileSource(server.url(f"/{p}"), p, hashlib.sha256(b).hexdigest()) for p, b in files.items())
    return {name: sources}


@pytest.fixture
def gsm8k_files() -> dict[str, bytes]:
    """GSM8K-format train and test files (the tests' synthetic copy, about 1 MB)."""
    data = synthetic_data()
    return {f"gsm8k/{f}.jsonl": (data / "gsm8k" / f"{f}.jsonl").read_bytes() for f in ("train", "test")}


def test_data_get_downloads_checks_and_lays_out_the_files_with_progress(
    server, gsm8k_files, tmp_path, monkeypatch, capsys
):
    """`semgrad data get gsm8k --dir DIR` writes DIR/gsm8k/{train,test}.jsonl byte for byte (the loaders read
    them), leaves no .part file, shows a progress line per file on stderr, and a second run downloads nothing."""
    monkeypatch.setattr(_data, "SOURCES", _table(server, gsm8k_files))
    target = tmp_path / "data"
    assert main(["data", "get", "gsm8k", "--dir", str(target)]) == 0
    for path, body in gsm8k_files.items():
        assert (target / path).read_bytes() == body
    assert not list(target.rglob("*.part"))
    assert len(load_gsm8k(target, "train")) == 7473
    out, err = capsys.readouterr()
    assert re.search(r"gsm8k/train\.jsonl: \[#{20}\] \d+\.\d\d MB of \d+\.\d\d MB \(100%\)", err), err
    assert "gsm8k/test.jsonl" in err and "gsm8k: 2 files in" in out
    server.requests.clear()
    assert main(["data", "get", "gsm8k", "--dir", str(target)]) == 0
    assert server.requests == [] and "already there, checksum ok" in capsys.readouterr().err


def test_a_cut_connection_is_resumed_with_a_range_request(server, gsm8k_files, tmp_path):
    """A download cut halfway keeps its bytes in `<file>.part` (no final file) and says how to resume; the next
    run asks only for the rest (Range: bytes=N-) and ends with the whole, checked file."""
    table = _table(server, gsm8k_files)
    server.cut.add("/gsm8k/train.jsonl")
    with pytest.raises(DownloadError, match=r"bytes kept in .*train\.jsonl\.part; run the same command again"):
        get("gsm8k", tmp_path, sources=table, attempts=1)
    part = tmp_path / "gsm8k" / "train.jsonl.part"
    half = len(gsm8k_files["gsm8k/train.jsonl"]) // 2
    assert part.stat().st_size == half and not (tmp_path / "gsm8k" / "train.jsonl").exists()
    get("gsm8k", tmp_path, sources=table, attempts=1)
    assert ("/gsm8k/train.jsonl", f"bytes={half}-") in server.requests
    assert (tmp_path / "gsm8k" / "train.jsonl").read_bytes() == gsm8k_files["gsm8k/train.jsonl"]
    assert not part.exists()


def test_one_run_retries_a_cut_download_from_where_it_stopped(server, gsm8k_files, tmp_path):
    """Within one run, a cut connection is retried with a Range request for the missing bytes only."""
    table = _table(server, gsm8k_files)
    server.cut.add("/gsm8k/test.jsonl")
    get("gsm8k", tmp_path, sources=table)
    tests = [r for r in server.requests if r[0] == "/gsm8k/test.jsonl"]
    assert tests == [
        ("/gsm8k/test.jsonl", None),
        ("/gsm8k/test.jsonl", f"bytes={len(gsm8k_files['gsm8k/test.jsonl']) // 2}-"),
    ]
    assert (tmp_path / "gsm8k" / "test.jsonl").read_bytes() == gsm8k_files["gsm8k/test.jsonl"]


def test_a_server_that_ignores_the_range_gives_the_whole_file_again(server, gsm8k_files, tmp_path):
    """When the server answers a Range request with the whole file (200), the partial bytes are replaced, not
    appended to."""
    table = _table(server, gsm8k_files)
    server.cut.add("/gsm8k/train.jsonl")
    server.ignore_range = True
    get("gsm8k", tmp_path, sources=table)
    assert (tmp_path / "gsm8k" / "train.jsonl").read_bytes() == gsm8k_files["gsm8k/train.jsonl"]


def test_a_checksum_mismatch_is_refused_and_leaves_no_file(server, gsm8k_files, tmp_path, monkeypatch, capsys):
    """A file whose sha256 is not the listed one is deleted (no final file, no .part) and the command exits 1
    with one line naming the mismatch; the files before it stay."""
    table = _table(server, gsm8k_files)
    server.files["/gsm8k/test.jsonl"] = b"not the listed file\n"
    monkeypatch.setattr(_data, "SOURCES", table)
    assert main(["data", "get", "gsm8k", "--dir", str(tmp_path)]) == 1
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("semgrad: error: ") and "test.jsonl: checksum mismatch" in err
    assert "the download was deleted" in err
    assert sorted(p.name for p in (tmp_path / "gsm8k").iterdir()) == ["train.jsonl"]


def test_a_different_file_in_the_way_is_not_overwritten(server, gsm8k_files, tmp_path):
    """A file already at the final name with another checksum is left as it is, and the error says so."""
    table = _table(server, gsm8k_files)
    (tmp_path / "gsm8k").mkdir()
    (tmp_path / "gsm8k" / "train.jsonl").write_text("mine\n")
    with pytest.raises(DownloadError, match="exists but is not the listed file"):
        get("gsm8k", tmp_path, sources=table)
    assert (tmp_path / "gsm8k" / "train.jsonl").read_text() == "mine\n" and server.requests == []


def test_the_source_table_pins_each_file_to_a_commit_with_its_checksum():
    """Every data set's files come over https from a pinned commit (40 hex digits) and carry a sha256; the table
    holds the 27 BBH tasks, GSM8K's two files and LIAR's three, at the paths the loaders read."""
    paths = {name: [s.path for s in files] for name, files in _data.SOURCES.items()}
    assert paths == {
        "bbh": [f"bbh/{task}.json" for task in BBH_TASKS],
        "gsm8k": ["gsm8k/train.jsonl", "gsm8k/test.jsonl"],
        "liar": ["liar/train.tsv", "liar/valid.tsv", "liar/test.tsv"],
    }
    for files in _data.SOURCES.values():
        for source in files:
            assert re.match(r"https://raw\.githubusercontent\.com/[\w.-]+/[\w.-]+/[0-9a-f]{40}/", source.url)
            assert source.url.endswith("/" + source.path.split("/")[-1]) and re.fullmatch(
                r"[0-9a-f]{64}", source.sha256
            )


@needs_real_data
def test_the_listed_checksums_are_those_of_the_real_data_sets():
    """The sha256 listed for each file is that of the real data set's file."""
    for files in _data.SOURCES.values():
        for source in files:
            assert hashlib.sha256((REAL_DATA / source.path).read_bytes()).hexdigest() == source.sha256, source.path


def test_the_readme_says_where_each_data_set_comes_from_and_its_layout():
    """The README's data section names `semgrad data get`, each source repository with the commit the table pins,
    and each folder's files."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text("utf-8")
    section = readme[readme.index("## The data sets") :].split("\n## ", 1)[0]
    assert "semgrad data get bbh gsm8k liar --dir data" in section
    for files in _data.SOURCES.values():
        owner, repo, commit = re.match(
            r"https://raw\.githubusercontent\.com/([^/]+)/([^/]+)/(\w+)/", files[0].url
        ).groups()
        assert f"https://github.com/{owner}/{repo}" in section and f"({commit[:7]})" in section, repo
        for source in files:
            assert source.path.split("/")[-1] in section or source.path.startswith("bbh/"), source.path


def test_data_get_takes_no_abbreviated_option(capsys):
    """`semgrad data get bbh --di DIR` is refused, not read as --dir."""
    with pytest.raises(SystemExit) as exit:
        main(["data", "get", "bbh", "--di", "somewhere"])
    assert exit.value.code == 2 and "unrecognized arguments: --di" in capsys.readouterr().err


def test_the_progress_line_is_rewritten_in_place_on_a_terminal():
    """On a terminal the progress line is redrawn with a carriage return as bytes arrive, with a bar that fills;
    elsewhere one line per file is printed when it is done."""
    import io

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    screen = Terminal()
    line = _data._Progress("bbh/navigate.json", 0, 4_000_000, screen)
    line.advance(1_000_000)
    line.shown = 0.0
    line.advance(1_000_000)
    line.done()
    frames = screen.getvalue().split("\r")[1:]
    assert frames[0] == "bbh/navigate.json: [#####---------------] 1.00 MB of 4.00 MB (25%)"
    assert frames[1].startswith("bbh/navigate.json: [##########----------] 2.00 MB") and frames[-1].endswith("(50%)\n")
    plain = io.StringIO()
    quiet = _data._Progress("liar/test.tsv", 0, None, plain)
    quiet.advance(500_000)
    quiet.done()
    assert plain.getvalue() == "liar/test.tsv: 0.50 MB\n"
