"""One process at a time in a run or sweep folder: `hold_folder`, an OS lock held for the life of the block.

Two processes writing one folder pay for every call twice, and the last one to write its results replaces
the other's. So whatever writes a folder -- ``semgrad run``, `run_experiment`, ``semgrad sweep`` and each run
of a sweep, on Ray workers too -- first takes ``<folder>/.semgrad.lock`` with ``fcntl.flock`` and writes its
process id there. A second process finds the lock taken and stops with `FolderInUse`, one line naming the
holder's process id, before it calls anything.

The lock is the kernel's, not the file's: it dies with its process, so a holder killed by SIGKILL leaves no
stale lock (the file may stay, with a dead process id in it; the next process takes it). A holder that ends
normally removes the file, while still holding the lock; a process that opened the old file meanwhile sees,
once it holds that lock, that the path no longer names it, and opens the new one. A folder the lock had to
create is removed again at the end when nothing was written into it, so a run refused before it starts
leaves nothing behind.

Within one process the lock is re-entrant: ``semgrad run`` holds the folder and `run_experiment` takes it
again. Which folders the current code holds is a context variable (a tuple, by device and inode), as
`semgrad._loaded_systems` keeps its systems: no process-wide registry. Another thread starts with its own context,
so two threads of one process running the same folder are refused like two processes (flock locks belong
to open files, not processes, and each `hold_folder` opens its own).

Examples:
    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> with hold_folder(folder):
    ...     (folder / LOCK_NAME).read_text().strip() == str(os.getpid())
    ...     with hold_folder(folder):  # the same folder again in this context: already held
    ...         pass
    True
    >>> (folder / LOCK_NAME).exists(), folder.exists()  # released, and the folder was not made by the lock
    (False, True)
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
import time
from collections.abc import Iterator
from contextvars import ContextVar
from pathlib import Path

from .core import SemgradError

__all__ = ["LOCK_NAME", "FolderInUse", "hold_folder"]

#: The lock file in a held folder (hidden: a run folder's own checks pass over hidden entries).
LOCK_NAME = ".semgrad.lock"

#: The folders the current context holds, by (device, inode).
_HELD: ContextVar[tuple[tuple[int, int], ...]] = ContextVar("semgrad_held_folders", default=())

#: How long a refused process waits for the holder to write its process id (it locks first, then writes).
_PID_WAIT = 0.5
#: How many times the lock is taken again when its file was replaced between the open and the lock.
_ATTEMPTS = 20


class FolderInUse(SemgradError, RuntimeError):
    """Another process holds the folder (`pid`, when its lock file says which): nothing was done.

    Examples:
        >>> str(FolderInUse(Path("runs/a"), 4242))  # doctest: +ELLIPSIS
        'runs/a is in use by process 4242 (a semgrad run or sweep writing there); wait for it to end, or ...'
    """

    def __init__(self, folder: Path, pid: int | None) -> None:
        self.folder = folder
        self.pid = pid
        holder = f"process {pid}" if pid is not None else "another process"
        super().__init__(
            f"{folder} is in use by {holder} (a semgrad run or sweep writing there); wait for it to end, "
            "or choose another --out"
        )


@contextlib.contextmanager
def hold_folder(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Hold the folder `path` (created if missing) against other processes for the block.

    A path that exists and is not a folder is not locked: the caller's own check of the folder refuses it.

    Raises:
        FolderInUse: Another process (or another thread's block) holds it.
        OSError: The lock file cannot be made: a symbolic link or something else than a regular file in
            its place (the message names it), or a folder that cannot be written.
    """
    folder = Path(path)
    created = _make(folder)
    try:
        key = _identity(folder)
        if key is None or key in _HELD.get():
            yield folder
            return
        fd = _acquire(folder)
        token = _HELD.set((*_HELD.get(), key))
        try:
            yield folder
        finally:
            _HELD.reset(token)
            _release(folder / LOCK_NAME, fd)
    finally:
        for made in created:  # deepest first; a folder that holds anything stays
            try:
                made.rmdir()
            except OSError:
                break


def _make(folder: Path) -> list[Path]:
    """Create `folder` when it is missing; the folders created, deepest first."""
    missing = []
    parent = folder
    while not os.path.lexists(parent) and parent != parent.parent:
        missing.append(parent)
        parent = parent.parent
    if missing:
        folder.mkdir(parents=True, exist_ok=True)
    return missing


def _identity(folder: Path) -> tuple[int, int] | None:
    """The folder's (device, inode); None when it is not a folder."""
    try:
        info = folder.stat()
    except OSError:
        return None
    return (info.st_dev, info.st_ino) if stat.S_ISDIR(info.st_mode) else None


def _acquire(folder: Path) -> int:
    """Open and lock the folder's lock file, then write this process's id in it; the open descriptor."""
    lock = folder / LOCK_NAME
    for _ in range(_ATTEMPTS):
        fd = _open(lock)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pid = _holder(fd)
            os.close(fd)
            raise FolderInUse(folder, pid) from None
        except BaseException:
            os.close(fd)
            raise
        if _names(lock, fd):
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
            return fd
        os.close(fd)  # the holder removed it as we opened it: the lock is the file now at the path
    raise FolderInUse(folder, None)


def _open(lock: Path) -> int:
    """The lock file, opened for reading and writing, created if missing; never through a symbolic link,
    and never anything but a regular file (a FIFO would block, a device is no lock)."""
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(lock, flags, 0o644)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise OSError(f"{lock} is a symbolic link, not semgrad's lock file: remove it") from None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(f"{lock} is not a regular file, not semgrad's lock file: remove it")
    return fd


def _names(lock: Path, fd: int) -> bool:
    """Whether the path `lock` still names the open file `fd`."""
    try:
        there = os.stat(lock, follow_symlinks=False)
    except OSError:
        return False
    held = os.fstat(fd)
    return (there.st_dev, there.st_ino) == (held.st_dev, held.st_ino)


def _holder(fd: int) -> int | None:
    """The process id the holder wrote in its lock file; None when it wrote none (or not a number)."""
    deadline = time.monotonic() + _PID_WAIT
    while True:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
        if text.isascii() and text.isdigit() and len(text) <= 10:  # isdigit alone takes other scripts' digits
            return int(text)
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.01)


def _release(lock: Path, fd: int) -> None:
    """Remove the lock file while still holding it (when the path still names it), then let it go."""
    try:
        if _names(lock, fd):
            os.unlink(lock)
    except OSError:
        pass  # a folder made read-only meanwhile: the file stays, and its lock ends with the descriptor
    finally:
        os.close(fd)
