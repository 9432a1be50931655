"""Shared fixtures for the effects tests."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from semgrad.effects import _runner


@pytest.fixture(scope="module", params=["loop tasks", "task group"])
def worker_tasks(request: pytest.FixtureRequest) -> Iterator[str]:
    """Run the module's tests once with the pool's workers as asyncio's own tasks (the default on
    asyncio and uvloop) and once as an anyio task group's children (what trio gets)."""
    with pytest.MonkeyPatch.context() as patch:
        if request.param == "task group":
            patch.setattr(_runner, "_asyncio_loop", lambda: None)
        yield request.param


@pytest.fixture
def special_paths(tmp_path):
    """Paths that are not regular files: an empty directory, a FIFO and a link to /dev/zero."""
    directory = tmp_path / "a-directory"
    directory.mkdir()
    fifo = tmp_path / "a-fifo"
    os.mkfifo(fifo)
    zero = tmp_path / "a-link-to-dev-zero"
    zero.symlink_to("/dev/zero")
    return directory, fifo, zero
