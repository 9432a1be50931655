"""Small file helpers shared by the parts of semgrad that read and write files (never the core)."""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path
from typing import BinaryIO

__all__ = ["open_regular", "read_regular_text", "remove_stale_temporaries", "temporary_path", "write_text_atomically"]


def open_regular(path: str | os.PathLike[str]) -> BinaryIO:
    """`path` opened for reading bytes, if it is a regular file.

    What a run folder holds is read as hostile: a FIFO in a file's place would hang the
    read, ``/dev/zero`` linked there would never end. So the file is opened without
    blocking and checked to be a regular file once open (the path may have been
    replaced since any check before).

    Raises:
        FileNotFoundError: There is no such file.
        OSError: It is not a regular file (the message says so, without the path: the caller names the file).
    """
    file = open(path, "rb", opener=lambda name, flags: os.open(name, flags | os.O_NONBLOCK))  # noqa: SIM115
    if not stat.S_ISREG(os.fstat(file.fileno()).st_mode):
        file.close()
        raise OSError("not a regular file")
    return file


def read_regular_text(path: str | os.PathLike[str], *, limit: int) -> str:
    """The UTF-8 text of `path`, a regular file (see `open_regular`) of at most `limit` bytes.

    Raises:
        FileNotFoundError: There is no such file.
        OSError: It is not a regular file, or larger than `limit` (the message says which, without the
            path: the caller names the file).
        UnicodeDecodeError: It is not UTF-8.
    """
    with open_regular(path) as file:
        data = file.read(limit + 1)
    if len(data) > limit:
        raise OSError(f"larger than {limit:,} bytes")
    return data.decode("utf-8")


def _prefix(target: Path, pid: int) -> str:
    return f".{target.name}.{pid}."


def temporary_path(target: Path) -> Path:
    """A fresh name beside `target` for this process's temporary copy (the file is not created).

    Examples:
        >>> temporary_path(Path("run/results.json")).name.startswith(f".results.json.{os.getpid()}.")
        True
    """
    return target.parent / f"{_prefix(target, os.getpid())}{os.urandom(4).hex()}.tmp"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True  # another user's process, or one we cannot ask about: keep its file
    return True


def remove_stale_temporaries(target: str | os.PathLike[str]) -> list[Path]:
    """Remove the temporary files beside `target` left by writers that died (a SIGKILL between write and rename).

    A temporary file names its writer's process id; it is stale when that
    process is gone. Files of live writers, this process included, are kept.

    Returns:
        The files removed.
    """
    path = Path(target)
    removed = []
    try:
        candidates = list(path.parent.glob(f".{path.name}.*.tmp"))
    except OSError:
        return removed
    for candidate in candidates:
        pid_text = candidate.name[len(path.name) + 2 :].split(".", 1)[0]
        if not pid_text.isdigit() or not _alive(int(pid_text)):
            candidate.unlink(missing_ok=True)
            removed.append(candidate)
    return removed


def write_text_atomically(path: str | os.PathLike[str], text: str) -> Path:
    """Write `text` (UTF-8) to a temporary file beside `path`, then rename it into place.

    A reader sees the old file or the new one, never a partial one; an error
    leaves no temporary file behind, and the temporary file a killed writer
    left is removed by the next write beside it. Parent directories are created.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(target)
    handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=_prefix(target, os.getpid()), suffix=".tmp")
    try:
        os.chmod(temporary, 0o644)  # mkstemp makes it private; these files are for reading
        with os.fdopen(handle, "wb") as file:
            file.write(text.encode("utf-8", "replace"))
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return target
