"""The async runner's worker pool: long-lived workers that answer queued requests and feed the replies.

Theory of operation
-------------------
`WorkerPool` holds the program's current state and one FIFO queue of requests
ready to go. A worker takes a request off the queue, makes the call inline, feeds
the reply to the program itself -- a program step is pure and synchronous, and
only one task runs at a time -- queues what that made ready and takes the next
request, often the one it just queued. So a request starts the moment its last
input's reply is fed, not after every other reply of the same event-loop pass.

Starting a task costs far more than the library's work per call, so the pool does
not start one per request. It keeps workers *pending* (started, or woken from
parked, not yet run): as many as the queue holds, but no more than the workers in
a call (at least one). When calls suspend, calls in flight about double per
event-loop pass up to the full width; when they return without suspending, one
worker drains the queue. A worker with nothing to do parks only once some reply
has made several requests ready at once, and only while fewer workers are parked
than are in a call; otherwise it returns. When the program is done every worker
sees it and returns (a plain return costs less than a cancellation). Never more
than `max_concurrency` workers exist.

A top `gather` (a batch) is fed child by child, each child at its innermost
program with its binds' continuations kept aside (`innermost`); its children are
asked for their first requests one at a time, when the queue runs dry, so a lazy
`forward`'s first call goes out before the other samples are rendered.

An exception from feeding (a combinator's function) or from ``on_reply`` ends the
run as itself; so does a stray cancellation (`cancelled_outside`). How workers are
started -- an anyio task group here (`in_task_group`), asyncio's own tasks in
`_loop_tasks` -- is given to the pool as `spawn`, `cancel` and `park`. The figures
behind these choices are in ``benchmarks/README.md`` ("The runner's shape, measured").
"""

from __future__ import annotations

import asyncio
import inspect
from collections import deque
from collections.abc import Callable
from types import CoroutineType
from typing import Any

import anyio
from returns.result import Failure, Success

from ..core import LLMRequest, Program, ProtocolError, Reply
from ..core._requests import _response, _success
from ..core.calls import as_reply
from ..core.programs import Done, Gathered, SystemCall, combinator
from ._interpret import Driven, error_of, innermost

__all__ = ["WorkerPool", "cancel_requested", "cancelled_outside", "in_task_group"]


class Queued:
    """A request ready to go: its token, and for a top gather's child the child's position
    (`child`; None when the program is not such a gather)."""

    __slots__ = ("child", "token", "request")

    def __init__(self, child: int | None, token: Any, request: LLMRequest) -> None:
        self.child = child
        self.token = token
        self.request = request


class WorkerPool:
    """Long-lived worker tasks that answer queued requests and feed the replies to the
    program; see the module's theory of operation.

    A worker is always in one of four states: parked (its wake-up is in `idle`),
    pending (started or woken, not yet run), running (the one task the event loop
    is executing), or calling (suspended in its LLM call). Invariant, whenever the
    running task suspends: if the queue is not empty, a worker is pending, or every
    one of `max_concurrency` workers is calling.
    """

    def __init__(
        self,
        runner: Driven,
        program: Program[Any],
        spawn: Callable[..., Any],
        cancel: Callable[[], Any],
        park: Callable[[], Any] | None = None,
    ) -> None:
        self.runner = runner
        self.spawn = spawn  # starts a worker: ``spawn(self.work, name=...)``
        self.cancel = cancel  # cancels every worker, the first one (the caller's task) too
        # The program's current state; for a top `gather`, None until its value is built (the
        # pool holds its children's states, and the gather's would hold their first states).
        self.program: Program[Any] | None = program
        self.queue: deque[Queued] = deque()
        # A parked worker awaits a wake-up made by `park`, kept in `idle` until it is woken
        # (`_wake`): an asyncio future on asyncio's loop and uvloop's, one object a park, set
        # without a call into Python code; elsewhere an `_EventPark`.
        self.idle: list[Any] = []
        self.park: Callable[[], Any] = park if park is not None else _event_parks()
        self.workers = 0
        self.pending = 0
        self.limit = runner.max_concurrency
        self.outstanding = 0  # requests emitted and not yet answered
        self.fanned_out = False  # set once a reply has made more than one request ready
        self.over = False  # set once the program is done or has failed
        self.error: BaseException | None = None
        self.cut: LLMRequest | None = None  # the request of the first call a cancellation cut short
        # A top `gather`'s children (at their innermost program), their continuations waiting
        # (None until a child has some), and how many are not done; `unpulled` counts the
        # children not asked for their first requests yet: the last ones, ``parts[-unpulled:]``.
        self.parts: list[Program[Any]] = []
        self.conts: list[list[Callable[[Any], Program[Any]]] | None] = []
        self.left = 0
        self.unpulled = 0
        shape = combinator(program)
        if type(shape) is Gathered:
            self.parts = list(shape.children)
            self.conts = [None] * len(self.parts)
            self.left = shape.waiting
            self.unpulled = len(self.parts)
            self._deliver = self._deliver_part  # type: ignore[method-assign]
            self.program = None

    def start(self) -> bool:
        """Queue the program's first requests (there must be some); True when the caller's
        task is then to run `work` as the first worker (counted as pending until it does)."""
        if self.parts:
            self._pull()
        else:
            try:
                emitted = self.program.emitted  # type: ignore[union-attr]
            except Exception as exc:  # a lazy program's first step failed: it ends the run
                self._fail(exc)
            else:
                self._emitted([Queued(None, token, request) for token, request in emitted])
        if self.over:
            return False
        self.workers = self.pending = 1
        return True

    def _pull(self) -> bool:
        """Ask the next children of a top `gather` for their first requests, until some are
        queued or none is left to ask; True when some are queued."""
        parts, conts, queue = self.parts, self.conts, self.queue
        while self.unpulled and not self.over:
            index = len(parts) - self.unpulled
            self.unpulled -= 1
            child = parts[index]
            if child.done:
                continue
            try:
                child = parts[index] = innermost(child, conts, index)
                emitted = child.emitted
            except Exception as exc:  # from a lazy program's first step: it ends the run, unwrapped
                self._fail(exc)
                return False
            if emitted:
                queue.extend(Queued(index, token, request) for token, request in emitted)
                self.outstanding += len(emitted)
                return True
        if not queue and not self.outstanding and not self.over:
            self._fail(ProtocolError("the program is waiting for replies but has asked for none"))
        return bool(queue)

    def _emitted(self, ready: list[Queued]) -> None:
        """Queue `ready`; a `ProtocolError` ends the run when there is none and nothing else is
        in flight or left to ask."""
        if ready:
            self.queue.extend(ready)
            self.outstanding += len(ready)
        elif not self.outstanding and not self.unpulled:
            self._fail(ProtocolError("the program is waiting for replies but has asked for none"))

    def _deliver(self, queued: Queued, reply: Reply) -> None:
        """Feed the reply to `queued`'s request to the program, and queue what that made ready."""
        if self.over:
            return  # the program failed: later replies have nowhere to go
        self.outstanding -= 1
        try:
            self.program = program = self.program.feed(queued.token, reply)  # type: ignore[union-attr]
        except Exception as exc:  # from a combinator's function: it ends the run, unwrapped
            self._fail(exc)
            return
        if program.done:
            self._finish()
        else:
            emitted = program.emitted
            if len(emitted) > 1:
                self.fanned_out = True
            self._emitted([Queued(None, token, request) for token, request in emitted])

    def _deliver_part(self, queued: Queued, reply: Reply) -> None:
        """`_deliver` for a gather's child; the gather's value is built when the last child is
        done (as `gather` builds it)."""
        if self.over:
            return
        self.outstanding -= 1
        index: int = queued.child  # type: ignore[assignment]
        try:
            child = innermost(self.parts[index].feed(queued.token, reply), self.conts, index)
        except Exception as exc:  # from a combinator's function: it ends the run, unwrapped
            self._fail(exc)
            return
        self.parts[index] = child
        if not child.done:
            emitted = child.emitted
            if len(emitted) == 1:
                ((token, request),) = emitted
                self.queue.append(Queued(index, token, request))
                self.outstanding += 1
            else:
                if emitted:
                    self.fanned_out = True
                self._emitted([Queued(index, token, request) for token, request in emitted])
            return
        self.left -= 1
        if self.left:
            self._emitted([])  # a ProtocolError if nothing is left in flight
        else:
            self.program = Done(tuple([part.value for part in self.parts]))
            self._finish()

    def _fail(self, error: BaseException) -> None:
        self.error = error
        self.cancel()  # calls still in flight have nowhere to deliver
        self._finish()

    def _finish(self) -> None:
        """End the run: wake every parked worker, so that each returns (pending ones return when they run)."""
        self.over = True
        if self.outstanding:  # done with calls in flight (a program that needs fewer replies than it asked for)
            self.cancel()
        for wake in self.idle:
            _wake(wake)
        self.idle.clear()

    def _fill(self) -> None:
        """Wake parked workers, or else start new ones within `max_concurrency`, until the pending
        ones number the queue's length (a child not yet asked counting as one request) or the
        workers in a call (at least one), whichever is less."""
        calling = self.workers - len(self.idle) - self.pending  # a running worker is about to call: it counts
        want = min(len(self.queue) + self.unpulled, calling or 1)
        while self.pending < want:
            if self.idle:
                _wake(self.idle.pop())
            elif self.limit is None or self.workers < self.limit:
                self.workers += 1
                self.spawn(self.work, name="semgrad-llm-worker")
            else:
                return
            self.pending += 1

    async def work(self) -> None:
        """One worker: answer queued requests until none is left, then park or return."""
        runner, queue = self.runner, self.queue
        llm, timeout = runner.llm, runner.timeout
        while True:
            self.pending -= 1  # running now: started, or woken from `idle`
            while (queue or (self.unpulled and self._pull())) and not self.over:
                queued = queue.popleft()
                request = queued.request
                if (queue or self.unpulled) and not self.pending:
                    self._fill()  # the next request gets a worker of its own if this call suspends
                if type(request) is SystemCall:  # a system's run, recorded in the effects layer: not a call
                    try:
                        trace = await runner.run_system(request)
                    except Exception as exc:  # the user's code failed, or the run grew past its bound
                        self._fail(exc)
                        break
                    self._deliver(queued, Success(trace))
                    trace = None
                    continue
                # The call, inline (a coroutine per call costs more than the bookkeeping).
                runner._in_flight += 1
                if runner._in_flight > runner._peak:
                    runner._peak = runner._in_flight
                try:
                    result = llm(request)
                    if type(result) is CoroutineType or (type(result) is not str and inspect.isawaitable(result)):
                        if timeout is None:
                            result = await result
                        else:
                            with anyio.fail_after(timeout):
                                result = await result
                    reply = _success(_response(result)) if type(result) is str else as_reply(result)
                except Exception as exc:  # cancellation is a BaseException on every backend: it propagates
                    reply = Failure(error_of(exc, timeout))
                except BaseException:  # a cancellation (the run's, or a stray one: `cancelled_outside`) and the like
                    if self.cut is None:  # the first: the run's own cancellations of the others follow it
                        self.cut = request
                    raise
                finally:
                    runner._in_flight -= 1
                try:
                    runner._finished(request, reply)
                except Exception as exc:  # an `on_reply` hook that raised ends the run, unwrapped
                    self._fail(exc)
                    break
                # Fed by the worker that holds the reply: what it makes ready starts at once.
                self._deliver(queued, reply)
                result = reply = None  # not held through the next call: the state keeps what it needs
            if self.over:
                return
            wake = self._rest()
            if wake is None:
                return
            queued = request = None  # type: ignore[assignment]  # a parked worker may wait for the rest of the run
            await wake
            if self.over:
                return  # woken by `_finish`, not by `_fill`: not counted as pending

    def _rest(self) -> Any:
        """A worker that found nothing queued: park it (its wake-up, to await) or let it return (None).

        Parked workers serve a reply that makes several requests ready at once (its own worker
        takes one): until one has, a worker with nothing to do returns. No more parked workers
        than calls in flight (whose replies are what wakes a parked worker): a surplus one
        returns now, while calls are out, rather than being woken to return when the run ends,
        on its critical path; so do the parked ones this call's end left in surplus: they are
        woken (as pending workers, which take work if some is queued by then) and return in turn.
        """
        calling = self.workers - len(self.idle) - self.pending - 1  # this worker runs: it is not calling
        if not self.fanned_out or len(self.idle) >= calling:
            self.workers -= 1
            while len(self.idle) > calling:
                _wake(self.idle.pop())
                self.pending += 1
            return None
        wake = self.park()
        self.idle.append(wake)
        return wake


def _wake(wake: Any) -> None:
    """Wake a parked worker (a no-op if its wait has ended already: it was cancelled)."""
    if not wake.done():
        wake.set_result(None)


class _EventPark:
    """A parked worker's wake-up on any anyio backend: an `anyio.Event` with a future's
    ``done``, ``set_result`` and ``await``, as `WorkerPool` uses them."""

    __slots__ = ("event",)

    def __init__(self, event: anyio.Event) -> None:
        self.event = event

    def done(self) -> bool:
        return self.event.is_set()

    def set_result(self, _: None) -> None:
        self.event.set()

    def __await__(self) -> Any:
        return self.event.wait().__await__()


def _event_parks() -> Callable[[], _EventPark]:
    """Makes `_EventPark`s with the running backend's own event class: calling it skips
    `anyio.Event`'s look-up of the backend (sniffio) per park."""
    new_event = type(anyio.Event())
    return lambda: _EventPark(new_event())


async def in_task_group(runner: Driven, program: Program[Any]) -> WorkerPool:
    """Run the pool's workers in an anyio task group (trio, or asyncio with a task factory)."""
    pool: WorkerPool | None = None
    try:
        async with anyio.create_task_group() as tg:
            pool = WorkerPool(runner, program, tg.start_soon, tg.cancel_scope.cancel)
            del program
            if pool.start():
                # This task is the first worker: the first call goes out now, not after a
                # task start and an event-loop pass. Every worker, this one too, returns
                # once the program is done (see `WorkerPool._finish`).
                await pool.work()
    except asyncio.CancelledError as exc:  # asyncio's only (a task factory): trio has no stray ones
        if pool is None or cancel_requested():
            raise
        raise cancelled_outside(pool) from exc  # this task's own call's, as `LoopTasks.run` says
    return pool  # type: ignore[return-value]  # made before the group can end


def cancel_requested() -> bool:
    """Whether a cancellation of the current asyncio task was asked for (by a cancel scope, or a
    ``task.cancel()``) and not yet withdrawn: an outside cancellation of the run in progress."""
    task = asyncio.current_task()
    return task is None or task.cancelling() > 0


def cancelled_outside(pool: WorkerPool) -> ProtocolError:
    """The error that ends a run whose call (or worker) was cancelled by something other than the run.

    A stray ``CancelledError`` -- the LLM awaited a future another task cancelled, or some task
    cancelled a ``semgrad-llm-worker`` -- is not a cancellation of the run under anyio's rules,
    where only a cancel scope cancels, and it would be swallowed as one by an enclosing task group
    (or leave the run waiting for a reply that never comes); so the run raises this instead.
    """
    request = pool.cut
    if request is None:
        what = "one of its worker tasks"
    else:
        sample = f", sample {request.sample!r}" if request.sample is not None else ""
        what = f"its {request.purpose} call for node {request.node!r}{sample}"
    return ProtocolError(
        f"the run cannot finish: {what} was cancelled outside the run (a CancelledError no cancel scope of "
        "the run raised: the LLM awaited something another task cancelled, or a task cancelled a "
        "semgrad-llm-worker); let the LLM turn such a cancellation into an error, or cancel the whole run"
    )
