"""The run journal: every finished call of a run, kept in its folder, so a killed run pays for no reply twice.

``journal.jsonl`` gets one JSON line per call that finished below it -- the reply
(its text, usage and model) or the failure's kind -- appended and flushed the moment
the call returns, with or without ``--cache``. It does two things for a resumed run:

* **Replies are not paid twice.** The calls a killed process finished after its last
  checkpoint are asked again, identically, by the resumed process (the same params,
  seeds and items); the journal answers them from the file, as a cache hit. Only the
  replies of earlier processes answer: within one process an identical request is
  called as it always was (a run without a cache keeps its behaviour).
* **Paid calls reach the totals.** The ledger records how many journal lines its
  counters already hold (``journal``); on resume the lines past that mark (the calls
  made after the last checkpoint) are added to the ledger's counters, under the task
  each line names. So a killed process loses from the totals at most the calls that
  were in flight when it died (they never finished; the provider may have been paid).

The file is hostile input on resume: it is opened as a regular file only, at most
`MAX_BYTES` bytes; every line is checked -- at most `MAX_LINE` bytes, JSON of exactly
the expected fields and types (a 64-hex key, strings, token counts as whole numbers),
anything else is skipped with one line on stderr naming the file and the line.
Nothing in it is imported or called; a reply read from it is plain text. Writing
stops (with one line) once the file reaches `MAX_BYTES`: the run goes on, without
the journal's protection for its later calls.
"""

from __future__ import annotations

import json
import os
import re
import stat
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TextIO

import anyio

from .._files import open_regular
from ..core import LLMFailure, LLMRequest, LLMResponse
from ..effects import Accounts, Amount, Line, mark_answered
from ..effects._accounting import answered_by
from ..effects._cache import cache_key
from ..effects._routing import Middleware, call
from ._errors import SetupError

__all__ = ["MAX_BYTES", "MAX_LINE", "Journal"]

#: The journal's size limit: reading refuses a larger file, writing stops there.
MAX_BYTES = 128 * 2**20

#: A line longer than this is skipped on reading (and a reply that long is not written).
MAX_LINE = 2**20

_KEY = re.compile(r"[0-9a-f]{64}")
_COMMON = {"v", "key", "task", "engine", "purpose", "model"}
_REPLY = _COMMON | {"text", "usage"}
_FAILURE = _COMMON | {"error"}
_SHORT = 1000  # the longest engine, purpose, model, task or error kind a line may name


def _short(value: Any) -> bool:
    return isinstance(value, str) and len(value) <= _SHORT


def _check(entry: Any) -> str | None:
    """What is wrong with a journal entry, or None."""
    if not isinstance(entry, dict) or set(entry) not in (_REPLY, _FAILURE):
        return "not a journal entry (wrong fields)"
    if entry["v"] != 1 or type(entry["v"]) is not int:
        return "an unknown journal version"
    if not (isinstance(entry["key"], str) and _KEY.fullmatch(entry["key"])):
        return "its key is not a 64-digit hex digest"
    if not (entry["task"] is None or _short(entry["task"])):
        return "its task is not a string"
    if not all(_short(entry[k]) for k in ("engine", "purpose", "model")):
        return "its engine, purpose or model is not a short string"
    if "error" in entry:
        return None if _short(entry["error"]) and entry["error"] else "its error kind is not a string"
    if not isinstance(entry["text"], str):
        return "its reply text is not a string"
    usage = entry["usage"]
    if not (
        isinstance(usage, dict)
        and all(isinstance(k, str) and type(n) is int and 0 <= n < 2**63 for k, n in usage.items())
    ):
        return "its usage is not token counts"
    return None


def _say(message: str) -> None:
    print(f"semgrad: {message}", file=sys.stderr)


class Journal:
    """A run folder's ``journal.jsonl``: the replies of earlier processes (to answer), and a file to append to.

    Use `open`; wrap the run's LLM with `wrap`; set `task` to the task being run (None: the preflight).
    """

    FILE = "journal.jsonl"

    def __init__(self, path: Path, entries: list[dict[str, Any] | None], say: Callable[[str], None] = _say) -> None:
        self.path = path
        self.say = say
        self.entries = entries  # every line read, None for a line skipped (so line numbers stay the file's)
        self.replies: dict[str, LLMResponse] = {}
        for entry in entries:
            if entry is not None and "text" in entry and entry["key"] not in self.replies:
                self.replies[entry["key"]] = LLMResponse(entry["text"], entry["usage"], entry["model"])
        self.lines = len(entries)
        self.task: str | None = None
        self.replayed = 0
        self._size = 0
        self._file: TextIO | None = None
        self._full = False

    @classmethod
    def open(cls, run_dir: Path, *, resume: bool, say: Callable[[str], None] = _say) -> Journal:
        """The journal of `run_dir`: read (as hostile input) when resuming, else started afresh.

        Raises:
            SetupError: The journal is not a regular file, or larger than `MAX_BYTES`.
        """
        path = run_dir / cls.FILE
        if resume and path.is_symlink():
            raise SetupError(f"{path} is a symbolic link, not a run's journal; remove it to resume without it")
        entries = list(_read(path, say)) if resume and os.path.lexists(path) else []
        return cls(path, entries, say)

    def _append(self, entry: dict[str, Any]) -> None:
        if self._full:
            return
        text = json.dumps(entry, ensure_ascii=True, allow_nan=False) + "\n"
        if len(text) > MAX_LINE:
            return
        if self._file is None:
            self._file = self._start()
        if self._size + len(text) > MAX_BYTES:
            self._full = True
            self.say(f"{self.path} reached its limit of {MAX_BYTES:,} bytes; later replies are not journaled")
            return
        self._file.write(text)
        self._file.flush()  # the OS has the line: a SIGKILL after this keeps it
        self._size += len(text)
        self.lines += 1

    def _start(self) -> TextIO:
        """The file opened for appending: a fresh run's truncated; a resumed one's ends with a newline (a line
        cut by a kill stays a line of its own, skipped on reading, and no later line is glued to it). A link in
        its place is never written through."""
        if self.path.is_symlink() and not self.entries:
            self.path.unlink()  # a fresh run's folder may hold anything: the link goes, its target is untouched
        flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | (os.O_APPEND if self.entries else os.O_TRUNC)
        try:
            fd = os.open(self.path, flags | os.O_NONBLOCK, 0o644)
        except OSError as exc:
            raise SetupError(f"cannot write {self.path}: {exc.strerror or exc}") from None
        file = os.fdopen(fd, "a", encoding="ascii", newline="\n")
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            file.close()
            raise SetupError(f"cannot write {self.path}: not a regular file; remove it")
        self._size = os.fstat(fd).st_size
        if self._size and not self._ends_with_newline():
            file.write("\n")
            self._size += 1
        return file

    def _ends_with_newline(self) -> bool:
        with open_regular(self.path) as file:
            file.seek(-1, os.SEEK_END)
            return file.read(1) == b"\n"

    def start(self) -> None:
        """Create (or truncate, for a fresh run) the file now."""
        if self._file is None:
            self._file = self._start()

    def close(self) -> None:
        """Close the file."""
        if self._file is not None:
            self._file.close()
            self._file = None

    def record(self, key: str, request: LLMRequest, response: LLMResponse | None, error: str = "") -> None:
        """Append one finished call: its reply, or its error kind."""
        entry: dict[str, Any] = {
            "v": 1,
            "key": key,
            "task": self.task,
            "engine": str(request.engine),
            "purpose": str(request.purpose),
        }
        if response is None:
            entry.update(model="", error=error)
        else:
            usage = {k: v for k, v in dict(response.usage).items() if type(v) is int and 0 <= v < 2**63}
            entry.update(model=response.model, text=response.text, usage=usage)
        self._append(entry)

    def unledgered(self, mark: int) -> Iterator[tuple[str | None, Accounts]]:
        """The accounts, by task, of the calls journaled at or after line `mark` (those no ledger counted)."""
        by_task: dict[str | None, Accounts] = {}
        for entry in self.entries[mark:]:
            if entry is None:
                continue
            error = entry.get("error", "")
            usage = entry.get("usage", {})
            used = usage.get("input_tokens", 0), usage.get("output_tokens", 0)
            batch = usage.get("batch") == 1  # a provider's batch answered it: its tokens are priced at half
            batched = used if batch else (0, 0)
            amount = Amount(
                calls=1,
                errors=1 if error else 0,
                input_tokens=used[0],
                output_tokens=used[1],
                batch_calls=int(batch),
                batch_input_tokens=batched[0],
                batch_output_tokens=batched[1],
            )
            line = Line(entry["engine"], entry["purpose"], entry["model"], error)
            by_task[entry["task"]] = by_task.get(entry["task"], Accounts()).add(line, amount)
        yield from by_task.items()

    def wrap(self, llm: Any) -> Any:
        """`llm` with this journal: replies of earlier processes answer, every finished call is appended."""
        return _Journaled(llm, self)


def _read(path: Path, say: Callable[[str], None]) -> Iterator[dict[str, Any] | None]:
    try:
        file = open_regular(path)
    except OSError as exc:
        raise SetupError(f"cannot read {path}: {exc}; remove it to resume without its replies") from None
    with file:
        size = os.fstat(file.fileno()).st_size
        if size > MAX_BYTES:
            raise SetupError(f"{path} is larger than {MAX_BYTES:,} bytes; remove it to resume without its replies")
        skipped: list[str] = []
        number = 0
        while True:
            raw = file.readline(MAX_LINE + 1)
            if not raw:
                break
            number += 1
            problem = None
            if len(raw) > MAX_LINE:
                problem = f"longer than {MAX_LINE:,} bytes"
                while raw and not raw.endswith(b"\n"):  # the rest of the long line
                    raw = file.readline(MAX_LINE + 1)
            entry = None
            if problem is None:
                try:
                    entry = json.loads(raw.decode("utf-8"))
                    problem = _check(entry)
                except (ValueError, RecursionError):
                    problem = "not a JSON line (cut by a kill, or changed)"
            if problem is not None:
                skipped.append(f"line {number}: {problem}")
                yield None
            else:
                yield entry
        if skipped:
            more = f" (and {len(skipped) - 3} more)" if len(skipped) > 3 else ""
            say(f"{path}: skipped {len(skipped)} line(s) that are not journal entries: {'; '.join(skipped[:3])}{more}")


class _Journaled(Middleware):
    """An async LLM that answers from the journal's earlier replies and appends each finished call."""

    def __init__(self, inner: Any, journal: Journal) -> None:
        self.inner, self.journal = inner, journal

    async def __call__(self, request: LLMRequest) -> LLMResponse:
        key = cache_key(request, self.inner)
        known = self.journal.replies.get(key)
        if known is not None:
            self.journal.replayed += 1
            return mark_answered(known, "cache")
        try:
            response: LLMResponse = await call(self.inner, request)
        except LLMFailure as failure:
            self.journal.record(key, request, None, failure.error.kind)
            raise
        except TimeoutError:
            self.journal.record(key, request, None, "timeout")
            raise
        except anyio.get_cancelled_exc_class():
            raise  # not finished: the provider may have it, the journal does not
        except Exception:
            self.journal.record(key, request, None, "exception")
            raise
        if answered_by(response) is None:  # a cache below answered it: it is kept there, and cost nothing
            self.journal.record(key, request, response)
        return response

    def __repr__(self) -> str:
        return f"journaled({self.inner!r})"


def check_entry(entry: Any) -> str | None:
    """What is wrong with `entry` as a journal entry, or None (for tests).

    Examples:
        >>> check_entry({"v": 1})
        'not a journal entry (wrong fields)'
    """
    return _check(entry)
