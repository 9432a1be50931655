"""`write_report`: read a run directory, write its ``report.html`` atomically."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .._files import read_regular_text, unreadable, write_text_atomically
from ._html import check_results, render_report

__all__ = ["REPORT_NAME", "read_json", "write_report"]

#: The report's file name inside a run directory.
REPORT_NAME = "report.html"
#: The most a run's ``results.json`` or ``config.json`` may hold, as a sweep reads them.
MAX_BYTES = 512 * 2**20


def read_json(path: Path) -> Any:
    """The parsed JSON document at `path`, a regular file of at most `MAX_BYTES` (it arrives
    with a run folder: a FIFO or a device is refused, never read).

    Raises:
        FileNotFoundError: There is no such file.
        ValueError: It is not a regular file, is too large, or is not UTF-8 JSON (the message
            names the file and the place).
    """
    try:
        text = read_regular_text(path, limit=MAX_BYTES)
    except UnicodeDecodeError as error:
        raise ValueError(f"{path}: not UTF-8 text (byte {error.start})") from None
    except FileNotFoundError:
        raise
    except OSError as error:
        raise ValueError(f"{path}: cannot be read ({unreadable(error)})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"{path}: not valid JSON ({error.msg} at line {error.lineno} column {error.colno})") from None
    except RecursionError:
        raise ValueError(f"{path}: JSON nested too deeply") from None
    except ValueError as error:  # a 5,000-digit integer
        raise ValueError(f"{path}: not valid JSON ({unreadable(error)})") from None


def write_report(run_dir: str | os.PathLike[str]) -> Path:
    """Render ``run_dir/results.json`` (and ``config.json`` if present) to ``run_dir/report.html``.

    The report replaces any earlier one atomically: a reader sees the old file or
    the new one, never a partial one.

    Args:
        run_dir: A directory written by ``semgrad run TASK --out DIR``.

    Returns:
        The path of the report.

    Raises:
        FileNotFoundError: `run_dir` or its ``results.json`` does not exist.
        ValueError: ``results.json`` or ``config.json`` is not valid JSON or not shaped
            like one (a one-line message naming the file).

    Examples:
        >>> import json, pathlib, tempfile
        >>> run = pathlib.Path(tempfile.mkdtemp())
        >>> _ = (run / "results.json").write_text(json.dumps({"task": "gsm8k", "tasks": []}))
        >>> write_report(run).name
        'report.html'
        >>> import shutil; shutil.rmtree(run)

    .. versionadded:: 0.1.0
    """
    directory = Path(run_dir)
    results_path = directory / "results.json"
    if not results_path.exists() and not results_path.is_symlink():
        where = "no such directory" if not directory.is_dir() else "no results.json in it"
        raise FileNotFoundError(f"{directory}: {where}; write one with `semgrad run TASK --out {directory}`")
    results = read_json(results_path)
    try:
        check_results(results)
    except ValueError as error:
        raise ValueError(f"{results_path}: {error}") from None
    target = directory / REPORT_NAME
    write_text_atomically(target, render_report(results, _read_config(directory / "config.json")))
    return target


def _read_config(path: Path) -> Mapping[str, Any] | None:
    """The run's configuration, or None when the run has no ``config.json``."""
    if not path.exists() and not path.is_symlink():
        return None
    config = read_json(path)  # a FIFO or a device in its place is an error, not "no config"
    if not isinstance(config, Mapping):
        raise ValueError(f"{path}: must be a JSON object, got {type(config).__name__}")
    return config
