"""Small file helpers shared by the parts of semgrad that write files (never the core)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

__all__ = ["write_text_atomically"]


def write_text_atomically(path: str | os.PathLike[str], text: str) -> Path:
    """Write `text` (UTF-8) to a temporary file beside `path`, then rename it into place.

    A reader sees the old file or the new one, never a partial one; a crash
    leaves no temporary file behind. Parent directories are created.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
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
