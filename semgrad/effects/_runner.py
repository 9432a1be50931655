"""Interpreting programs: answer every emitted request, concurrently, with anyio.

The core hands out requests the moment they become ready (see
`semgrad.core.Program`); the runner starts each one at once -- on a pool of
long-lived worker tasks, at most `max_concurrency` of them -- and feeds each reply
back as soon as it arrives. One
failed call never cancels its siblings: every exception a backend raises becomes
a `Failure(LLMError)` reply, and the core decides what it means.
"""

from __future__ import annotations

import inspect
from collections import Counter, deque
from collections.abc import Callable
from typing import Any, TypeVar

import anyio
import attrs
from returns.result import Failure, Success

from ..core import FrozenMap, LLMError, LLMFailure, LLMRequest, ProtocolError, Reply, as_reply
from ..core._program import Program, Token
from ._protocol import is_async_llm

__all__ = ["RunStatistics", "Runner", "run", "run_sync"]

T = TypeVar("T")
OnReply = Callable[[LLMRequest, Reply], None]


@attrs.frozen
class RunStatistics:
    """What a `Runner` has done so far.

    Attributes:
        calls: Calls made (each counted once, failed or not).
        calls_by_purpose: Calls per request purpose, in first-seen order.
        calls_by_engine: Calls per request engine (logical role), in first-seen order.
        tokens_by_engine: ``(input_tokens, output_tokens)`` per engine, in first-seen order.
        errors: Calls that ended in an `LLMError`.
        errors_by_kind: Failed calls per error kind.
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
        max_concurrency: At most this many calls in flight at once (None: no limit).
        timeout: Seconds one call may take before it becomes a retryable
            ``LLMError(kind="timeout")`` reply (None: no limit).
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
        if max_concurrency is not None and max_concurrency < 1:
            raise ValueError(f"max_concurrency must be at least 1, got {max_concurrency}")
        if timeout is not None and timeout <= 0:
            raise ValueError(f"timeout must be positive, got {timeout}")
        self.llm = llm
        self.max_concurrency = max_concurrency
        self.timeout = timeout
        self.on_reply = on_reply
        self._async = is_async_llm(llm)
        self._purposes: Counter[str] = Counter()
        self._engines: Counter[str] = Counter()
        self._kinds: Counter[str] = Counter()
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
        """Run `program` to completion and return its value."""
        if program.done:
            return program.value
        if not self._async:
            return self._drive_sync(program)
        inbox = _Inbox()
        async with anyio.create_task_group() as tg:
            pool = _Pool(self, tg, inbox)
            in_flight = 0
            emitted: list[tuple[Token, LLMRequest]] = list(program.emitted)
            while True:
                for token, request in emitted:
                    pool.submit(token, request)
                in_flight += len(emitted)
                emitted = []
                if program.done:
                    break
                if in_flight == 0:
                    raise ProtocolError("the program is waiting for replies but has asked for none")
                await inbox.wait()
                while inbox.replies and not program.done:
                    token, reply = inbox.replies.popleft()
                    in_flight -= 1
                    program = program.feed(token, reply)
                    emitted.extend(program.emitted)
            tg.cancel_scope.cancel()  # only idle workers are left
        return program.value

    def run_sync(self, program: Program[T]) -> T:
        """Run `program` without an event loop of your own.

        A sync LLM is called in a plain loop, in request order; an async LLM is
        run by starting an event loop with `anyio.run`.
        """
        if self._async:
            return anyio.run(self.run, program)
        return self._drive_sync(program)

    def _drive_sync(self, program: Program[T]) -> T:
        queue = deque(program.emitted)
        while not program.done:
            if not queue:
                raise ProtocolError("the program is waiting for replies but has asked for none")
            token, request = queue.popleft()
            self._started()
            try:
                reply = self._call_sync(request)
            finally:
                self._in_flight -= 1
            self._finished(request, reply)
            program = program.feed(token, reply)
            queue.extend(program.emitted)
        return program.value

    def _call_sync(self, request: LLMRequest) -> Reply:
        try:
            result = self.llm(request)
            if inspect.isawaitable(result):
                raise TypeError("the LLM returned an awaitable from a call the runner took as sync")
            return as_reply(result)
        except LLMFailure as failure:
            return Failure(failure.error)
        except Exception as exc:
            return Failure(_error_from(exc))

    async def _attempt(self, request: LLMRequest) -> Reply:
        self._started()
        try:
            if self.timeout is None:
                return await self._invoke(request)
            with anyio.fail_after(self.timeout):
                return await self._invoke(request)
        except TimeoutError:
            return Failure(LLMError("timeout", f"no reply within {self.timeout} s", retryable=True))
        finally:
            self._in_flight -= 1

    async def _invoke(self, request: LLMRequest) -> Reply:
        try:
            result = self.llm(request)
            if inspect.isawaitable(result):
                result = await result
            return as_reply(result)
        except LLMFailure as failure:
            return Failure(failure.error)
        except anyio.get_cancelled_exc_class():
            raise
        except TimeoutError:
            raise
        except Exception as exc:
            return Failure(_error_from(exc))

    def _started(self) -> None:
        self._in_flight += 1
        if self._in_flight > self._peak:
            self._peak = self._in_flight

    def _finished(self, request: LLMRequest, reply: Reply) -> None:
        self._calls += 1
        self._purposes[request.purpose] += 1
        self._engines[request.engine] += 1
        if isinstance(reply, Success):
            usage = reply.unwrap().usage
            used_in, used_out = int(usage.get("input_tokens", 0)), int(usage.get("output_tokens", 0))
            if used_in or used_out:
                self._tokens_in += used_in
                self._tokens_out += used_out
                before_in, before_out = self._engine_tokens.get(request.engine, (0, 0))
                self._engine_tokens[request.engine] = (before_in + used_in, before_out + used_out)
        else:
            self._errors += 1
            self._kinds[reply.failure().kind] += 1
        if self.on_reply is not None:
            self.on_reply(request, reply)


class _Pool:
    """Long-lived worker tasks that answer queued requests (spawning a task per request costs
    far more than the library's own work per call).

    A request goes to an idle worker if there is one; otherwise a new worker starts, up to
    the runner's `max_concurrency` (no limit: as many as there are requests in flight).
    """

    def __init__(self, runner: Runner, tg: Any, inbox: _Inbox) -> None:
        self.runner, self.tg, self.inbox = runner, tg, inbox
        self.queue: deque[tuple[Token, LLMRequest]] = deque()
        self.idle: deque[anyio.Event] = deque()
        self.workers = 0

    def submit(self, token: Token, request: LLMRequest) -> None:
        self.queue.append((token, request))
        if self.idle:
            self.idle.popleft().set()
        elif self.runner.max_concurrency is None or self.workers < self.runner.max_concurrency:
            self.workers += 1
            self.tg.start_soon(self._work, name="semgrad-llm-worker")

    async def _work(self) -> None:
        runner, queue = self.runner, self.queue
        while True:
            while queue:
                token, request = queue.popleft()
                reply = await runner._attempt(request)
                runner._finished(request, reply)
                self.inbox.put(token, reply)
            wake = anyio.Event()
            self.idle.append(wake)
            await wake.wait()


class _Inbox:
    """Replies waiting for the runner loop, and the event that wakes it."""

    def __init__(self) -> None:
        self.replies: deque[tuple[Token, Reply]] = deque()
        self._event: anyio.Event | None = None

    def put(self, token: Token, reply: Reply) -> None:
        self.replies.append((token, reply))
        if self._event is not None:
            self._event.set()

    async def wait(self) -> None:
        """Return once at least one reply is waiting."""
        while not self.replies:
            self._event = anyio.Event()
            await self._event.wait()
        self._event = None


def _error_from(exc: Exception) -> LLMError:
    if isinstance(exc, TimeoutError):
        return LLMError("timeout", str(exc) or "the call timed out", retryable=True)
    return LLMError("exception", f"{type(exc).__name__}: {exc}")


async def run(
    program: Program[T],
    llm: Any,
    *,
    max_concurrency: int | None = None,
    timeout: float | None = None,
    on_reply: OnReply | None = None,
) -> T:
    """Run `program` against `llm` and return its value (async).

    See `Runner` for the arguments; use a `Runner` to read statistics afterwards.
    """
    return await Runner(llm, max_concurrency=max_concurrency, timeout=timeout, on_reply=on_reply).run(program)


def run_sync(program: Program[T], llm: Any, *, max_concurrency: int | None = None, timeout: float | None = None) -> T:
    """Run `program` against a sync or async `llm` and return its value.

    Examples:
        >>> from semgrad.core import pure
        >>> run_sync(pure(42), lambda request: "unused")
        42
    """
    return Runner(llm, max_concurrency=max_concurrency, timeout=timeout).run_sync(program)
