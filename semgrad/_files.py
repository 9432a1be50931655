"""Small file helpers shared by the parts of semgrad that read and write files (never the core)."""

from __future__ import annotations

import errno
import os
import stat
import sys
import tempfile
from pathlib import Path
from typing import BinaryIO

__all__ = [
    "WriteFailed",
    "write_failed",
    "lone_surrogate",
    "open_regular",
    "read_regular_text",
    "remove_stale_temporaries",
    "temporary_path",
    "unreadable",
    "write_text_atomically",
]


class WriteFailed(OSError):
    """Writing a file failed (a full disk, a read-only folder...): the message names the file.

    It keeps the `errno` of the error it replaces, so ``exc.errno == errno.ENOSPC`` still tells a full disk.
    """

    def __str__(self) -> str:
        return str(self.strerror)


def write_failed(path: str | os.PathLike[str], exc: OSError) -> WriteFailed:
    """`exc`, raised while writing `path`, as a `WriteFailed` whose message names the file.

    Examples:
        >>> str(write_failed("run/results.json", OSError(28, "No space left on device")))
        'cannot write run/results.json: No space left on device (errno 28: is the disk full?)'
    """
    if isinstance(exc, WriteFailed):
        return exc
    why = exc.strerror or " ".join(str(exc).split()) or type(exc).__name__
    hint = f" (errno {exc.errno}: is the disk full?)" if exc.errno == errno.ENOSPC else ""
    return WriteFailed(exc.errno, f"cannot write {path}: {why}{hint}")


def unreadable(exc: BaseException) -> str:
    """Why a file could not be read, in a few words, for a message that names the file.

    Examples:
        >>> unreadable(OSError("larger than 1,024 bytes")), unreadable(UnicodeDecodeError("utf-8", b"x", 3, 4, "bad"))
        ('larger than 1,024 bytes', 'not UTF-8 text (byte 3)')
        >>> unreadable(RecursionError()), unreadable(FileNotFoundError(2, "No such file or directory"))
        ('nested too deeply', 'No such file or directory')
        >>> try:
        ...     int("9" * 5000)
        ... except ValueError as exc:
        ...     unreadable(exc)
        'an integer of more than 4,300 digits'
    """
    if isinstance(exc, UnicodeDecodeError):
        return f"not UTF-8 text (byte {exc.start})"
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    if isinstance(exc, OSError):
        return exc.strerror or " ".join(str(exc).split()) or type(exc).__name__
    if isinstance(exc, ValueError) and "integer string conversion" in str(exc):
        return f"an integer of more than {sys.get_int_max_str_digits():,} digits"
    return " ".join(str(exc).split()) or type(exc).__name__


def lone_surrogate(value: object) -> str | None:
    """The first string in `value` (a parsed JSON value) that UTF-8 cannot hold, or None.

    JSON's ``\\ud800`` escape decodes to a lone surrogate: a string that no file, request body or
    database can encode. A reader refuses it where it reads the file, naming the file, rather than
    letting it fail later without a name.

    Examples:
        >>> lone_surrogate({"inputs": {"q": ["ok", "bad\\ud800"]}}), lone_surrogate({"q": "ok"})
        ('bad\\ud800', None)
    """
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return item
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
    return None


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

    Nothing past `limit` is read: a FIFO, ``/dev/zero``, a directory or a file of gigabytes in the place
    of a small file fails at once, in one line, and never hangs or fills the memory.

    Raises:
        FileNotFoundError: There is no such file.
        OSError: It is not a regular file, or larger than `limit` (the message says which, and the
            limit, without the path: the caller names the file).
        UnicodeDecodeError: It is not UTF-8.
    """
    with open_regular(path) as file:
        if os.fstat(file.fileno()).st_size > limit:
            raise OSError(f"larger than {limit:,} bytes, the most semgrad reads from such a file")
        data = file.read(limit + 1)
    if len(data) > limit:
        raise OSError(f"larger than {limit:,} bytes, the most semgrad reads from such a file")
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

    Raises:
        WriteFailed: The file could not be written (the message names it; a full disk says so).
    """
    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        remove_stale_temporaries(target)
        handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=_prefix(target, os.getpid()), suffix=".tmp")
    except OSError as exc:
        raise write_failed(target, exc) from None
    try:
        os.chmod(temporary, 0o644)  # mkstemp makes it private; these files are for reading
        with os.fdopen(handle, "wb") as file:
            file.write(text.encode("utf-8", "replace"))
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, target)
    except OSError as exc:
        Path(temporary).unlink(missing_ok=True)
        raise write_failed(target, exc) from None
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return target
