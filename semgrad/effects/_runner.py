"""Interpreting programs: answer every emitted request, concurrently, with anyio.

The core hands out requests the moment they become ready (see
`semgrad.core.Program`); the runner starts each one at once -- on a pool of
long-lived worker tasks, at most `max_concurrency` of them -- and feeds each reply
back as soon as it arrives. One
failed call never cancels its siblings: every exception a backend raises becomes
a `Failure(LLMError)` reply, and the core decides what it means.

Theory of operation
-------------------
`Runner.run` hands the program to a `_Pool` and becomes the pool's first worker
itself (its first call goes out without a task start); it returns when every
worker has, once the program is done (or has failed). On asyncio's loop and
uvloop's, the other workers are the loop's own tasks, kept as a task group keeps
its children (`_LoopTasks`: a start costs a fifth of anyio's or less); elsewhere (trio)
they are an anyio task group's. The pool's workers do everything else: a worker makes a
call, feeds the reply to the program itself -- `Program.feed` is a pure,
synchronous step, and only one task runs at a time -- and queues the requests
that made ready, then takes the next request off the queue, often the one it
just queued. So a request starts the moment its last input's reply is fed, not
after every other reply that arrived in the same event-loop pass (a runner
task fed by an inbox waited for the whole pass, and in a deep graph each
layer's wait added up along the critical path).

The pool's workers take requests off one FIFO queue and make each call inline.
Starting a task costs far more than the library's own work per call, and at
zero latency one worker answers a whole wave without ever suspending; so the
pool does not start a worker per request. It keeps workers *pending* (started,
or woken from parked, but not yet run): as many as the queue holds, but no more
than the workers in a call (at least one; a worker about to make its call
counts). Submitting tops pending workers up to that number, waking parked
workers before starting new ones; so does a worker that takes a request off the
queue, leaves more behind and sees none pending, before it makes its call.
When calls suspend, the pending workers run in turn, each taking a request, and
the last of them tops up again to the number now in a call: calls in flight
about double per event-loop pass, so a wave of N requests is all in flight
after about log2(N) passes. When calls return without suspending, no other
worker is ever in a call, so one worker drains the queue while the one it made
pending waits its turn, finds the queue empty and returns -- two tasks in all,
not one per request. Never more than `max_concurrency` workers exist.

A worker that finds nothing queued parks only once some reply has made several
requests ready at once (parked workers are there for such replies: the reply's
own worker takes one request, the others need workers), and only while fewer
workers are parked than are in a call. Otherwise it returns (a later wave starts
new ones), and wakes the parked workers its call's end left in surplus, which
return in turn: parked workers never outnumber the calls in flight, so as a wave
ends they go while its last calls are still out. In a run where no reply has
made more than one request ready (W1: a sample's second hint makes its answer
ready, and nothing else), a parked worker would only ever be woken to return:
W1@0.02 parked 32, and each park cost a wake-up, a task step and a task end on
the replies' path (about 0.01 of its ratio). When the program is done, only
pending workers and at most one parked one are left: the pool wakes it, every
worker then sees the run is over and returns, and the run ends with its last
worker -- a plain return per worker, which costs less than cancelling each one.
(On a slow VM, cancelling 64 parked workers took about 1.4 ms at the end of a
run, waking them 0.8-1.0 ms.) On asyncio's loop and uvloop's a parked worker
waits on a plain future of the loop, which is one object and is set in C;
elsewhere on an anyio event.

A run holds each program's current state only: the runners' entry points and
the pool let go of the program they were given, and a batch's `gather` with it
(it holds every sample's first state, and a lazy `forward` keeps its started
state); the sync driver passes programs on a stack, not as arguments. So the
objects a run keeps alive grow with what is in flight, not with what is done,
and CPython's cyclic collector, which runs whenever more objects have been made
than freed since its last pass, runs less often on a run's critical path: W1's
32 samples made it run three times per run, now twice.

An exception from feeding the program (a function given to `map_` or `bind`,
say) or from `on_reply` ends the run: the pool keeps it, every worker is
cancelled (calls still in flight with them), and `Runner.run` raises it as it was.
So does a cancellation from outside, which `Runner.run` then lets through. A call
or a worker task that ends cancelled when neither the run nor anything outside it
cancelled the run (the LLM awaited a future another task cancelled; a task
cancelled a worker) ends the run the same way, with a `ProtocolError` naming the
call (`_cancelled_outside`): its reply would never come. That is noticed where a
task ends (a worker task's done callback, the task group's exit, the run's own
task's exception), never per call.

`Runner.run_sync` with a sync LLM needs no event loop: one call at a time, depth
first -- the requests a reply makes ready are answered before older ones -- so a
batch holds about one sample's state at a time.

Both runners take the usual combinators apart rather than feed every reply
through their states: the sync runner runs a `gather`'s children one after
another and a `bind`'s program before its continuation (the order depth first
gives anyway); the pool feeds a `gather` at the top child by child, each child at
its innermost program with its binds' continuations kept aside. The calls and
the value are those of feeding the whole program (property tests compare them);
what is saved is rebuilding the combinators' states per reply.

The pool asks that gather's children for their first requests one child at a
time, whenever its queue runs dry (`_Pool._pull`), and counts each child not yet
asked as work when it tops up pending workers. With `forward`'s lazy first step
(its requests are rendered when first read), a batch's first call goes out once
the first sample is rendered, and the others are rendered while calls are out
(rendering W1's 32 samples up front put about a millisecond before the first
call).
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
from collections import deque
from collections.abc import Callable
from types import CoroutineType
from typing import Any, TypeVar

import anyio
import attrs
from returns.result import Failure, Success

from ..core import FrozenMap, LLMError, LLMFailure, LLMRequest, ProtocolError, Reply, as_reply
from ..core._program import Done, Program, _Bind, _Gather
from ..core._requests import _response, _success
from ._loop import run_loop
from ._protocol import is_async_llm

__all__ = ["RunStatistics", "Runner", "run", "run_sync"]

T = TypeVar("T")
OnReply = Callable[[LLMRequest, Reply], None]


@attrs.frozen
class RunStatistics:
    """What a `Runner` has done so far.

    Attributes:
        calls: Calls made (each counted once, failed or not): every request the
            runner handed its LLM, whatever the LLM's middleware did with it -- a
            call retried inside it counts once, a cache hit counts, and a call a
            budget refused (`fit`'s `Budget`, or a ``budgeted`` layer) counts as a
            failed call of kind ``"budget"``.
        calls_by_purpose: Calls per request purpose, in first-seen order.
        calls_by_engine: Calls per request engine (logical role), in first-seen order.
        tokens_by_engine: ``(input_tokens, output_tokens)`` per engine, in first-seen order.
        errors: Calls that ended in an `LLMError`, the calls a budget refused included.
        errors_by_kind: Failed calls per error kind (``"budget"`` for the refused ones).
        peak_in_flight: The most calls that were in flight at once.
        input_tokens: Sum of the ``input_tokens`` usage the replies reported.
        output_tokens: Sum of the ``output_tokens`` usage the replies reported.
    """

    calls: int = 0
    calls_by_purpose: FrozenMap[str, int] = FrozenMap()
    errors: int = 0
    errors_by_kind: FrozenMap[str, int] = FrozenMap()
    peak_in_flight: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    calls_by_engine: FrozenMap[str, int] = FrozenMap()
    tokens_by_engine: FrozenMap[str, tuple[int, int]] = FrozenMap()


class Runner:
    """Runs programs against one LLM, keeping statistics across runs.

    Args:
        llm: A sync or async callable from `LLMRequest` to `LLMResponse` or text.
            A plain (sync) LLM -- or one that middleware wraps -- is called inline, on
            the event loop, by `run` too: its calls are not concurrent, each blocks the
            loop (and every other task on it) until it returns, and `timeout` cannot
            cut one short. For a blocking client, write the LLM as ``async def`` and
            make the call with ``await anyio.to_thread.run_sync(client_call, request)``,
            or use an async client.
        max_concurrency: At most this many calls in flight at once in each `run`
            (None: no limit). It bounds one run, not the Runner: concurrent `run`
            calls on one Runner each get this many. To bound the calls to an LLM
            that several runs share, wrap it in ``limited(llm, max_concurrency=N)``.
        timeout: Seconds one call of an async LLM may take before it becomes a
            retryable ``LLMError(kind="timeout")`` reply (None: no limit).
        on_reply: Called with each request and its reply, in arrival order
            (progress bars, logs).

    Examples:
        >>> from semgrad.backends import fake
        >>> from semgrad.core import GraphBuilder, forward
        >>> b = GraphBuilder(); q = b.input("question")
        >>> _ = b.llm("answer", inputs=[q], instruction="Solve the problem.")
        >>> graph, params = b.build(output="answer")
        >>> runner = Runner(fake.FunctionLLM(lambda request: "4"))
        >>> runner.run_sync(forward(graph, params, {"question": "2+2?"})).output_value
        '4'
        >>> runner.statistics().calls_by_purpose
        FrozenMap({'forward': 1})
    """

    def __init__(
        self,
        llm: Any,
        *,
        max_concurrency: int | None = None,
        timeout: float | None = None,
        on_reply: OnReply | None = None,
    ) -> None:
        if not callable(llm):  # a typo would otherwise fail every call, and look like a weak model
            raise TypeError(f"Runner needs an LLM (a callable), got {type(llm).__name__}")
        if max_concurrency is not None and max_concurrency < 1:
            raise ValueError(f"max_concurrency must be at least 1, got {max_concurrency}")
        if timeout is not None and not timeout > 0:  # NaN too: every call would fail before it started
            raise ValueError(f"timeout must be positive, got {timeout}")
        self.llm = llm
        self.max_concurrency = max_concurrency
        self.timeout = timeout
        self.on_reply = on_reply
        self._async = is_async_llm(llm)
        # Plain dicts (first-seen order), not Counters: `d[k] = d.get(k, 0) + 1` is twice as fast.
        self._purposes: dict[str, int] = {}
        self._engines: dict[str, int] = {}
        self._kinds: dict[str, int] = {}
        self._calls = self._errors = self._in_flight = self._peak = 0
        self._tokens_in = self._tokens_out = 0
        self._engine_tokens: dict[str, tuple[int, int]] = {}

    def statistics(self) -> RunStatistics:
        """A frozen snapshot of the counts so far."""
        return RunStatistics(
            self._calls,
            FrozenMap(self._purposes),
            self._errors,
            FrozenMap(self._kinds),
            self._peak,
            self._tokens_in,
            self._tokens_out,
            FrozenMap(self._engines),
            FrozenMap(self._engine_tokens),
        )

    async def run(self, program: Program[T]) -> T:
        """Run `program` to completion and return its value.

        Raises:
            TypeError: When `program` is not a `Program` (``forward`` left uncalled, say).
            ProtocolError: When a call, or a worker task, was cancelled by something other
                than the run or a cancellation of it (a ``CancelledError`` no cancel scope
                raised: the LLM awaited a future another task cancelled, say); it names the
                call. A cancellation of the run from outside propagates as it is.
        """
        if not isinstance(program, Program):
            raise _not_a_program(program)
        if program.done:
            return program.value
        # The run holds each program's current state only: this frame lets go of the program
        # (its first state), and so do the pool (see `_Pool`) and the sync driver.
        if not self._async:
            taken = [program]
            del program
            return self._drive_sync(taken)
        loop = _asyncio_loop()
        running = self._in_task_group(program) if loop is None else _LoopTasks(loop).run(self, program)
        del program
        pool = await running
        if pool.error is not None:
            raise pool.error
        if not pool.over:  # every worker has ended, and the program is neither done nor failed
            raise _cancelled_outside(pool)
        return pool.program.value

    async def _in_task_group(self, program: Program[Any]) -> _Pool:
        """Run the pool's workers in an anyio task group (trio, or asyncio with a task factory)."""
        pool: _Pool | None = None
        try:
            async with anyio.create_task_group() as tg:
                pool = _Pool(self, program, tg.start_soon, tg.cancel_scope.cancel)
                del program
                if pool.start():
                    # This task is the first worker: the first call goes out now, not after a
                    # task start and an event-loop pass. Every worker, this one too, returns
                    # once the program is done (see `_Pool._finish`).
                    await pool._work()
        except asyncio.CancelledError as exc:  # asyncio's only (a task factory): trio has no stray ones
            if pool is None or _cancel_requested():
                raise
            raise _cancelled_outside(pool) from exc  # this task's own call's, as `_LoopTasks.run` says
        return pool  # type: ignore[return-value]  # made before the group can end

    def run_sync(self, program: Program[T], *, use_uvloop: bool | None = None) -> T:
        """Run `program` without an event loop of your own.

        A sync LLM is called in a plain loop, depth first (what a reply makes
        ready is answered before older requests; see `_drive_sync`); an async LLM is
        run by starting an event loop with `run_loop`: uvloop's when it is
        installed, unless `use_uvloop` is False (see `semgrad.effects.run_loop`).
        """
        taken = [program]  # handed over: the run holds each program's current state only
        del program
        return self._run_sync(taken, use_uvloop)

    def _run_sync(self, taken: list[Program[T]], use_uvloop: bool | None) -> T:
        """`run_sync` of the one program in `taken`, which it takes out of the list."""
        if not isinstance(taken[-1], Program):
            raise _not_a_program(taken.pop())
        if self._async:
            return run_loop(self._run_taken, taken, use_uvloop=use_uvloop)
        return self._drive_sync(taken)

    async def _run_taken(self, taken: list[Program[T]]) -> T:
        return await self.run(taken.pop())

    def _drive_sync(self, taken: list[Program[T]]) -> T:
        """Run the program on top of `taken` (taking it off) with the sync LLM; its value."""
        # Depth first: the requests a reply makes ready are answered before older ones (in
        # the order they were emitted), so a batch of samples holds about one sample's state
        # at a time instead of every sample's -- less memory, and far less work for
        # CPython's cyclic collector, whose full passes traverse everything alive.
        #
        # So a `gather`'s children are answered one after another, in order, each to its end
        # (a child's requests are all emitted above the next child's, and only its own replies
        # make it emit more), and a `bind`'s program before its continuation. The driver runs
        # them so, instead of feeding each reply through the combinators' states: the same
        # calls in the same order and the same value (a property test compares them with
        # feeding the whole program), for about 7 % fewer instructions per call in W6, whose
        # program is a gather of binds.
        #
        # The programs are passed on `taken`, a stack, not as arguments: no frame keeps a
        # program it has handed on, so the run holds each program's current state only, and
        # a sample that is done holds nothing of its run (a lazy `forward`'s first state
        # keeps its started state, with the requests it rendered).
        while True:
            kind = type(taken[-1])
            if kind is _Bind:
                bound: Any = taken.pop()
                then = bound.then
                taken.append(bound.inner)
                del bound
                taken.append(then(self._drive_sync(taken)))
            elif kind is _Gather:
                children = taken.pop().children.tolist()  # type: ignore[attr-defined]
                children.reverse()
                values = []
                while children:
                    taken.append(children.pop())
                    values.append(self._drive_sync(taken))
                return tuple(values)  # type: ignore[return-value]
            else:
                return self._drive_machine(taken)

    def _drive_machine(self, taken: list[Program[T]]) -> T:
        """`_drive_sync` for any program: every reply is fed to its states, depth first."""
        program = taken.pop()
        queue = list(reversed(program.emitted))
        pop, extend = queue.pop, queue.extend
        llm, finished = self.llm, self._finished
        if queue:
            self._peak = max(self._peak, self._in_flight + 1)  # one call at a time
        while not program.done:
            if not queue:
                raise ProtocolError("the program is waiting for replies but has asked for none")
            token, request = pop()
            self._in_flight += 1
            try:
                result = llm(request)
                reply = _success(_response(result)) if type(result) is str else self._sync_reply(result)
            except LLMFailure as failure:
                reply = Failure(failure.error)
            except Exception as exc:
                reply = Failure(_error_from(exc))
            finally:
                self._in_flight -= 1
            finished(request, reply)
            program = program.feed(token, reply)
            emitted = program.emitted
            if emitted:
                extend(reversed(emitted))
        return program.value

    def _sync_reply(self, result: Any) -> Reply:
        if inspect.isawaitable(result):
            if inspect.iscoroutine(result):
                result.close()  # never awaited: close it rather than leak a warning
            raise TypeError("the LLM returned an awaitable from a call the runner took as sync")
        return as_reply(result)

    def _finished(self, request: LLMRequest, reply: Reply) -> None:
        self._calls += 1
        purposes, engines, engine = self._purposes, self._engines, request.engine
        purposes[request.purpose] = purposes.get(request.purpose, 0) + 1
        engines[engine] = engines.get(engine, 0) + 1
        if type(reply) is Success:  # `Success` is final: no isinstance (an ABC check) per call
            usage = reply.unwrap().usage
            if usage._data if type(usage) is FrozenMap else usage:  # usually empty: skip the look-ups
                used_in, used_out = int(usage.get("input_tokens", 0)), int(usage.get("output_tokens", 0))
                if used_in or used_out:
                    self._tokens_in += used_in
                    self._tokens_out += used_out
                    before_in, before_out = self._engine_tokens.get(engine, (0, 0))
                    self._engine_tokens[engine] = (before_in + used_in, before_out + used_out)
        else:
            self._errors += 1
            kind = reply.failure().kind
            self._kinds[kind] = self._kinds.get(kind, 0) + 1
        if self.on_reply is not None:
            self.on_reply(request, reply)


class _Pool:
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
        runner: Runner,
        program: Program[Any],
        spawn: Callable[..., Any],
        cancel: Callable[[], Any],
        park: Callable[[], Any] | None = None,
    ) -> None:
        self.runner = runner
        self.spawn = spawn  # starts a worker: ``spawn(self._work, name=...)``
        self.cancel = cancel  # cancels every worker, the first one (the caller's task) too
        # The program's current state; for a top `gather`, None until its value is built (the
        # pool holds its children's states, and the gather's would hold their first states).
        self.program: Program[Any] | None = program
        self.queue: deque[tuple[Any, ...]] = deque()  # entries end with their request
        # A parked worker awaits a wake-up made by `park`, kept in `idle` until it is woken
        # (`_wake`): an asyncio future on asyncio's loop and uvloop's (`_LoopTasks`), one
        # object a park, set without a call into Python code; elsewhere an `_EventPark`.
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
        # A `gather` at the top (a batch, usually) is fed child by child, and each child's binds
        # as the sync runner runs them: the program, then its continuation. Its children (at
        # their innermost program), their continuations waiting (None until a child has
        # some), and how many are not done. Their requests are queued as ``(child, token,
        # request)``; the program's own, when it is not such a gather, as ``(token, request)``.
        # The children are asked for their first requests one at a time, when the queue runs
        # dry (`_pull`): a child may be lazy (`forward`'s first step renders its requests when
        # first asked), so the first sample's calls go out before the others are rendered.
        # `unpulled` counts the children not asked yet: the last ones, ``parts[-unpulled:]``.
        self.parts: list[Program[Any]] = []
        self.conts: list[list[Callable[[Any], Program[Any]]] | None] = []
        self.left = 0
        self.unpulled = 0
        if type(program) is _Gather:
            self.parts = program.children.tolist()  # type: ignore[attr-defined]
            self.conts = [None] * len(self.parts)
            self.left = program.waiting  # type: ignore[attr-defined]
            self.unpulled = len(self.parts)
            self._deliver = self._deliver_part  # type: ignore[method-assign]
            self.program = None

    def start(self) -> bool:
        """Queue the program's first requests (there must be some); True when the caller's
        task is then to run `_work` as the first worker (counted as pending until it does)."""
        if self.parts:
            self._pull()
        else:
            try:
                emitted = self.program.emitted
            except Exception as exc:  # a lazy program's first step failed: it ends the run
                self._fail(exc)
            else:
                self._emitted(emitted)
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
                child = parts[index] = _innermost(child, conts, index)
                emitted = child.emitted
            except Exception as exc:  # from a lazy program's first step: it ends the run, unwrapped
                self._fail(exc)
                return False
            if emitted:
                queue.extend((index, token, request) for token, request in emitted)
                self.outstanding += len(emitted)
                return True
        if not queue and not self.outstanding and not self.over:
            self._fail(ProtocolError("the program is waiting for replies but has asked for none"))
        return bool(queue)

    def _emitted(self, requests: tuple[tuple[Any, ...], ...]) -> None:
        """Queue `requests` (queue entries); a `ProtocolError` ends the run when there are none
        and nothing else is in flight or left to ask."""
        if requests:
            self.queue.extend(requests)
            self.outstanding += len(requests)
        elif not self.outstanding and not self.unpulled:
            self._fail(ProtocolError("the program is waiting for replies but has asked for none"))

    def _deliver(self, entry: tuple[Any, ...], reply: Reply) -> None:
        """Feed the reply to the queue entry `entry`'s request to the program, and queue what
        that made ready."""
        if self.over:
            return  # the program failed: later replies have nowhere to go
        self.outstanding -= 1
        try:
            self.program = program = self.program.feed(entry[0], reply)
        except Exception as exc:  # from a combinator's function: it ends the run, unwrapped
            self._fail(exc)
            return
        if program.done:
            self._finish()
        else:
            emitted = program.emitted
            if len(emitted) > 1:
                self.fanned_out = True
            self._emitted(emitted)

    def _deliver_part(self, entry: tuple[Any, ...], reply: Reply) -> None:
        """`_deliver` for a gather's child: the entry is ``(child, the child's token, request)``;
        the gather's value is built when the last child is done (as `gather` builds it)."""
        if self.over:
            return
        self.outstanding -= 1
        index, inner, _ = entry
        try:
            child = _innermost(self.parts[index].feed(inner, reply), self.conts, index)
        except Exception as exc:  # from a combinator's function: it ends the run, unwrapped
            self._fail(exc)
            return
        self.parts[index] = child
        if not child.done:
            emitted = child.emitted
            if len(emitted) == 1:
                ((sub, request),) = emitted
                self.queue.append((index, sub, request))
                self.outstanding += 1
            elif emitted:
                self.fanned_out = True
                self._emitted(tuple((index, sub, request) for sub, request in emitted))
            else:
                self._emitted(())  # a ProtocolError if nothing is left in flight
            return
        self.left -= 1
        if self.left:
            self._emitted(())  # a ProtocolError if nothing is left in flight
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
                self.spawn(self._work, name="semgrad-llm-worker")
            else:
                return
            self.pending += 1

    async def _work(self) -> None:
        runner, queue = self.runner, self.queue
        llm, timeout = runner.llm, runner.timeout
        while True:
            self.pending -= 1  # running now: started, or woken from `idle`
            while (queue or (self.unpulled and self._pull())) and not self.over:
                entry = queue.popleft()
                request = entry[-1]
                if (queue or self.unpulled) and not self.pending:
                    self._fill()  # the next request gets a worker of its own if this call suspends
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
                except LLMFailure as failure:
                    reply = Failure(failure.error)
                except TimeoutError as exc:
                    if timeout is None:
                        reply = Failure(_error_from(exc))
                    else:
                        reply = Failure(LLMError("timeout", f"no reply within {timeout} s", retryable=True))
                except Exception as exc:  # cancellation is a BaseException on every backend: it propagates
                    reply = Failure(_error_from(exc))
                except BaseException:  # a cancellation (the run's, or a stray one: `_cancelled_outside`) and the like
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
                # Fed here, by the worker that holds the reply, not handed to the runner's task:
                # what it makes ready starts at once -- often on this very worker -- instead of
                # after every other reply of the same event-loop pass has been fed too.
                self._deliver(entry, reply)
                result = reply = None  # not held through the next call: the state keeps what it needs
            if self.over:
                return
            calling = self.workers - len(self.idle) - self.pending - 1  # this worker runs: it is not calling
            if not self.fanned_out or len(self.idle) >= calling:
                # Parked workers serve a reply that makes several requests ready at once (its
                # own worker takes one): until one has, a worker with nothing to do returns.
                # No more parked workers than calls in flight (whose replies are what wakes a
                # parked worker): a surplus one returns now, while calls are out, rather than
                # being woken to return when the run ends, on its critical path. So do the
                # parked ones this call's end left in surplus: they are woken (as pending
                # workers, which take work if some is queued by then) and return in turn.
                self.workers -= 1
                while len(self.idle) > calling:
                    _wake(self.idle.pop())
                    self.pending += 1
                return
            # What this worker holds goes now: a parked worker may wait for the rest of the run.
            entry = request = None  # type: ignore[assignment]
            wake = self.park()
            self.idle.append(wake)
            await wake
            if self.over:
                return  # woken by `_finish`, not by `_fill`: not counted as pending


def _wake(wake: Any) -> None:
    """Wake a parked worker (a no-op if its wait has ended already: it was cancelled)."""
    if not wake.done():
        wake.set_result(None)


class _EventPark:
    """A parked worker's wake-up on any anyio backend: an `anyio.Event` with a future's
    ``done``, ``set_result`` and ``await``, as `_Pool` uses them."""

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
    `anyio.Event`'s look-up of the backend (sniffio), a few microseconds a park."""
    new_event = type(anyio.Event())
    return lambda: _EventPark(new_event())


def _innermost(program: Program[Any], conts: list[Any], index: int) -> Program[Any]:
    """`program` (child `index` of a gather) with its binds taken apart: each bind's
    continuation pushed on ``conts[index]`` (made when first needed) and its program in its
    place; and while what is left is done, the next continuation run."""
    while True:
        if type(program) is _Bind:
            stack = conts[index]
            if stack is None:
                stack = conts[index] = []
            stack.append(program.then)  # type: ignore[attr-defined]
            program = program.inner  # type: ignore[attr-defined]
        elif program.done and conts[index]:
            program = conts[index].pop()(program.value)
        else:
            return program


def _asyncio_loop() -> asyncio.AbstractEventLoop | None:
    """The running asyncio loop (uvloop's too) if the current task is its task and no task
    factory is installed; else None, and the run uses an anyio task group (trio, say)."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return None
    if asyncio.current_task(loop) is None or loop.get_task_factory() is not None:
        return None
    return loop


class _LoopTasks:
    """The pool's workers as the asyncio loop's own tasks: `_Pool`'s `spawn` and `cancel`.

    A task group's structure, kept by hand: the task that calls `run` is the first
    worker, `run` returns only once every other worker has, and an exception or a
    cancellation -- from the pool, a worker or outside -- cancels them all. What differs
    is the cost of a start: anyio 4.16's `start_soon` wraps each task in a handle, a
    cancel scope and an event (18-31 us a start on this 2-core VM, against 3-4 us for
    `loop.create_task`), and a wave of N calls starts N - 1 workers on its critical path.
    An installed task factory is left alone: with one, `_asyncio_loop` says None.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.tasks: dict[asyncio.Task[None], None] = {}  # strong references: the loop keeps weak ones
        self.scope = anyio.CancelScope()  # around the first worker, which runs in the caller's task
        self.failure: BaseException | None = None  # the first exception a worker task ended with
        self.cancelling = False  # set once the run cancels its workers (then a cancelled one is no news)
        self.pool: _Pool | None = None
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
                self._failed(_cancelled_outside(self.pool))
        else:
            exc = task.exception()
            if exc is not None:  # what `_work` lets through (not a call's `Exception`): it ends the run
                self._failed(exc)
        if not self.tasks and self.ended is not None and not self.ended.done():
            self.ended.set_result(None)

    def _failed(self, exc: BaseException) -> None:
        if self.failure is None:
            self.failure = exc
        self.cancel()

    async def run(self, runner: Runner, program: Program[Any]) -> _Pool:
        self.pool = pool = _Pool(runner, program, self.spawn, self.cancel, self.loop.create_future)
        del program  # the run holds each sample's current state only (see `Runner.run`)
        try:
            with self.scope:
                if pool.start():
                    await pool._work()
            if self.tasks:
                self.ended = self.loop.create_future()
                await self.ended
        except BaseException as exc:
            self.cancelling = True
            for task in self.tasks:
                task.cancel()
            if self.tasks:
                with anyio.CancelScope(shield=True):
                    await asyncio.wait(tuple(self.tasks))
            if isinstance(exc, asyncio.CancelledError) and not _cancel_requested():
                # The caller's task's own call ended in a CancelledError that nobody asked this task
                # for (no cancel scope, no task.cancel()): a stray one, not a cancellation of the run.
                raise _cancelled_outside(pool) from exc
            raise
        if self.failure is not None:
            raise self.failure
        return pool


def _cancel_requested() -> bool:
    """Whether a cancellation of the current asyncio task was asked for (by a cancel scope, or a
    ``task.cancel()``) and not yet withdrawn: an outside cancellation of the run in progress."""
    task = asyncio.current_task()
    return task is None or task.cancelling() > 0


def _cancelled_outside(pool: _Pool) -> ProtocolError:
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


def _error_from(exc: Exception) -> LLMError:
    if isinstance(exc, TimeoutError):
        return LLMError("timeout", str(exc) or "the call timed out", retryable=True)
    return LLMError("exception", f"{type(exc).__name__}: {exc}")


def _not_a_program(value: Any) -> TypeError:
    """The error for running what is not a program (a function that builds one, left uncalled, say)."""
    hint = " (a function that builds one: call it)" if callable(value) else ""
    return TypeError(f"run needs a Program, such as forward(graph, params, inputs), got {type(value).__name__}{hint}")


async def run(
    program: Program[T],
    llm: Any,
    *,
    max_concurrency: int | None = None,
    timeout: float | None = None,
    on_reply: OnReply | None = None,
) -> T:
    """Run `program` against `llm` and return its value (async).

    See `Runner` for the arguments (a plain LLM is called inline on the event loop:
    one call at a time, blocking it, out of `timeout`'s reach); use a `Runner` to
    read statistics afterwards.
    """
    running = Runner(llm, max_concurrency=max_concurrency, timeout=timeout, on_reply=on_reply).run(program)
    del program  # the run holds each program's current state only
    return await running


def run_sync(
    program: Program[T],
    llm: Any,
    *,
    max_concurrency: int | None = None,
    timeout: float | None = None,
    use_uvloop: bool | None = None,
) -> T:
    """Run `program` against a sync or async `llm` and return its value.

    An async `llm` runs in a new event loop, uvloop's when it is installed unless
    `use_uvloop` is False (see `semgrad.effects.run_loop`). A plain `llm` is called
    one call at a time, and `timeout` cannot cut its calls short (see `Runner`).

    Examples:
        >>> from semgrad.core import pure
        >>> run_sync(pure(42), lambda request: "unused")
        42
    """
    taken = [program]  # handed over: the run holds each program's current state only
    del program
    return Runner(llm, max_concurrency=max_concurrency, timeout=timeout)._run_sync(taken, use_uvloop)
