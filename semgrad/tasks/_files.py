"""Finding and reading data files, with one-line `DataError`s that say what to pass."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .._files import lone_surrogate, read_regular_text, unreadable
from ._errors import DataError

__all__ = ["MAX_BYTES", "MAX_ITEMS", "DataDir", "check_items", "data_file", "json_lines", "read_json", "read_text"]

DataDir = str | os.PathLike[str]

#: The most items semgrad reads from one data file (``--max-items`` on the command line, ``max_items`` in a
#: sweep spec's settings, raises it): a run splits, plans and holds every item, so a file of a hundred
#: million lines would take the machine's memory before the run could say anything.
MAX_ITEMS = 1_000_000

#: The most a data file may hold (the paper's files are a few megabytes): a FIFO, a device or a file of
#: gigabytes in a data file's place -- under a data directory a resumed run's config.json names, say --
#: is refused in one line naming the file and this limit, never read whole.
MAX_BYTES = 512 * 2**20

_HINT = "pass the directory that holds bbh/, gsm8k/ and liar/ (--data-dir on the command line)"


def data_file(data_dir: DataDir, *parts: str) -> Path:
    """The path ``data_dir/parts...``, after checking the directory and the file exist.

    Examples:
        >>> data_file("/no/such/dir", "gsm8k", "train.jsonl")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        semgrad.tasks._errors.DataError: data directory /no/such/dir does not exist; pass the directory ... bbh/, ...
    """
    root = Path(data_dir)
    if not root.is_dir():
        raise DataError(f"data directory {root} does not exist; {_HINT}")
    path = root.joinpath(*parts)
    if path.exists() and not path.is_file():  # a FIFO would block the read, /dev/zero never end it
        raise DataError(f"data file {path} is not a regular file; {_HINT}, with the file {Path(*parts)} inside it")
    if not path.is_file():
        raise DataError(f"data file {path} is missing; {_HINT}, with {Path(*parts)} inside it")
    return path


def check_items(count: int, source: str, max_items: int) -> None:
    """Refuse a data file once it has shown more than `max_items` items (`count` so far), in one line that
    names the file, the limit and the flag that raises it.

    Examples:
        >>> check_items(3, "items.jsonl", 2)
        Traceback (most recent call last):
        ...
        semgrad.tasks._errors.DataError: items.jsonl holds more than 2 items, the limit of one data file; \
pass --max-items N (max_items in a sweep spec's settings) to read more
    """
    if count > max_items:
        raise DataError(
            f"{source} holds more than {max_items:,} items, the limit of one data file; "
            "pass --max-items N (max_items in a sweep spec's settings) to read more"
        )


def read_text(path: Path) -> str:
    """The file's UTF-8 text, a regular file of at most `MAX_BYTES`; a `DataError` naming it if it cannot be read.

    Examples:
        >>> read_text(Path("/dev/zero"))
        Traceback (most recent call last):
        ...
        semgrad.tasks._errors.DataError: /dev/zero: cannot be read (not a regular file)
    """
    try:
        return read_regular_text(path, limit=MAX_BYTES)
    except UnicodeDecodeError as error:
        raise DataError(f"{path}: not UTF-8 text (byte {error.start})") from None
    except OSError as error:
        raise DataError(f"{path}: cannot be read ({unreadable(error)})") from None


def _checked(value: Any, where: str) -> Any:
    text = lone_surrogate(value)
    if text is not None:
        raise DataError(f"{where}: a string holds a lone surrogate (an unpaired \\uD800-\\uDFFF escape), not text")
    return value


def read_json(text: str, source: str) -> Any:
    """Parse one JSON document; a `DataError` naming `source` and the line on failure.

    Examples:
        >>> read_json("[" * 100000, "x.json")
        Traceback (most recent call last):
        ...
        semgrad.tasks._errors.DataError: x.json: malformed JSON (nested too deeply)
    """
    try:
        return _checked(json.loads(text), source)
    except json.JSONDecodeError as error:
        raise DataError(f"{source}:{error.lineno}: malformed JSON ({error.msg})") from None
    except (ValueError, RecursionError) as error:  # a 5,000-digit integer; arrays nested thousands deep
        raise DataError(f"{source}: malformed JSON ({unreadable(error)})") from None


def json_lines(text: str, source: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, object)`` for each non-blank line of a JSON Lines text.

    Examples:
        >>> list(json_lines('{"a": 1}\\n\\n{"a": 2}\\n', "x.jsonl"))
        [(1, {'a': 1}), (3, {'a': 2})]
        >>> list(json_lines('{"a": 1}\\n{"a": \\n', "x.jsonl"))
        Traceback (most recent call last):
        ...
        semgrad.tasks._errors.DataError: x.jsonl:2: malformed JSON line (Expecting value)
    """
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = _checked(json.loads(line), f"{source}:{number}")
        except json.JSONDecodeError as error:
            raise DataError(f"{source}:{number}: malformed JSON line ({error.msg})") from None
        except (ValueError, RecursionError) as error:  # DataError included: it is a ValueError
            if isinstance(error, DataError):
                raise
            raise DataError(f"{source}:{number}: malformed JSON line ({unreadable(error)})") from None
        if not isinstance(row, dict):
            raise DataError(f"{source}:{number}: expected a JSON object, got {type(row).__name__}")
        yield number, row
