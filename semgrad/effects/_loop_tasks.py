"""The asyncio fast path: the worker pool's workers as the running asyncio loop's own tasks.

On asyncio's loop and uvloop's (with no task factory installed) the runner starts
its workers with ``loop.create_task`` and keeps a task group's structure by hand
(`LoopTasks`): a start costs a fraction of anyio's ``start_soon``, and a wave of N
calls starts up to N - 1 workers on its critical path. A parked worker waits on a
plain future of the loop, which is one object and is set in C. Elsewhere (trio, or
a task factory) the pool runs in an anyio task group (`_pool.in_task_group`).
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import anyio

from ._interpret import Driven
from ._pool import WorkerPool, cancel_requested, cancelled_outside

if TYPE_CHECKING:
    from ..core import Program

__all__ = ["LoopTasks", "asyncio_loop"]


def asyncio_loop() -> asyncio.AbstractEventLoop | None:
    """The running asyncio loop (uvloop's too) if the current task is its task and no task
    factory is installed; else None, and the run uses an anyio task group (trio, say)."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return None
    if asyncio.current_task(loop) is None or loop.get_task_factory() is not None:
        return None
    return loop


class LoopTasks:
    """The pool's workers as the asyncio loop's own tasks: `WorkerPool`'s `spawn` and `cancel`.

    A task group's structure, kept by hand: the task that calls `run` is the first
    worker, `run` returns only once every other worker has, and an exception or a
    cancellation -- from the pool, a worker or outside -- cancels them all. What differs
    is the cost of a start (anyio's `start_soon` wraps each task in a handle, a cancel
    scope and an event). An installed task factory is left alone: with one,
    `asyncio_loop` says None.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.tasks: dict[asyncio.Task[None], None] = {}  # strong references: the loop keeps weak ones
        self.scope = anyio.CancelScope()  # around the first worker, which runs in the caller's task
        self.failure: BaseException | None = None  # the first exception a worker task ended with
        self.cancelling = False  # set once the run cancels its workers (then a cancelled one is no news)
        self.pool: WorkerPool | None = None
        self.ended: asyncio.Future[None] | None = None
        # Each task's end is reported to `_done`, run in one context made here: a done callback
        # given no context copies the current one, an object per task. (Each task still runs
        # in its own copy, as a task group's do: a call's context variables stay its own.)
        self.on_done = self._done
        self.context = contextvars.copy_context()

    def spawn(self, work: Callable[[], Any], *, name: str) -> None:
        task = self.loop.create_task(work(), name=name)
        self.tasks[task] = None
        task.add_done_callback(self.on_done, context=self.context)

    def cancel(self) -> None:
        self.cancelling = True
        self.scope.cancel()
        for task in self.tasks:
            task.cancel()

    def _done(self, task: asyncio.Task[None]) -> None:
        del self.tasks[task]
        if task.cancelled():
            # Cancelled, and not by the run (which has not cancelled its workers): a stray cancellation
            # (a future the LLM awaited was cancelled by another task, or a task cancelled this worker).
            # Its call's reply will never come, so the run ends, as a task group ends on a child's error;
            # unless the program is over already (done, or failed with an error of its own).
            if not self.cancelling and self.pool is not None and not self.pool.over:
                self._failed(cancelled_outside(self.pool))
        else:
            exc = task.exception()
            if exc is not None:  # what `work` lets through (not a call's `Exception`): it ends the run
                self._failed(exc)
        if not self.tasks and self.ended is not None and not self.ended.done():
            self.ended.set_result(None)

    def _failed(self, exc: BaseException) -> None:
        if self.failure is None:
            self.failure = exc
        self.cancel()

    async def run(self, runner: Driven, program: Program[Any]) -> WorkerPool:
        """Run `program`'s pool with this task as its first worker; the pool once every worker has ended."""
        self.pool = pool = WorkerPool(runner, program, self.spawn, self.cancel, self.loop.create_future)
        del program  # the run holds each sample's current state only (see `Runner.run`)
        try:
            with self.scope:
                if pool.start():
                    await pool.work()
            if self.tasks:
                self.ended = self.loop.create_future()
                await self.ended
        except BaseException as exc:
            await self._end_all()
            if isinstance(exc, asyncio.CancelledError) and not cancel_requested():
                # The caller's task's own call ended in a CancelledError that nobody asked this task
                # for (no cancel scope, no task.cancel()): a stray one, not a cancellation of the run.
                raise cancelled_outside(pool) from exc
            raise
        if self.failure is not None:
            raise self.failure
        return pool

    async def _end_all(self) -> None:
        """Cancel every worker task left and wait for them all, shielded (the run is ending)."""
        self.cancelling = True
        for task in self.tasks:
            task.cancel()
        if self.tasks:
            with anyio.CancelScope(shield=True):
                await asyncio.wait(tuple(self.tasks))
