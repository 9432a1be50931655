"""Running programs against an LLM: `Runner`, `run` and `run_sync`.

Theory of operation
-------------------
The core hands out requests the moment they become ready (see
`semgrad.core.Program`); a runner starts each one at once and feeds each reply
back as soon as it arrives. One failed call never cancels its siblings: every
exception a backend raises becomes a `Failure(LLMError)` reply, and the core
decides what it means. The work is split by concern:

* `_interpret`: a call's outcome as a reply, the combinators taken apart through
  the core's public hook (`semgrad.core.programs.combinator`), and `drive_sync`, which
  answers a sync LLM one call at a time, depth first, with no event loop;
* `_pool`: the async `WorkerPool` -- long-lived workers, at most
  `max_concurrency`, each making its call inline and feeding the reply itself --
  and its anyio task group (trio, or asyncio with a task factory);
* `_loop_tasks`: the asyncio fast path, the pool's workers as the loop's own tasks;
* this module: the entry points and the statistics every call is counted in.

A run holds each program's current state only: the entry points, the pool and
the sync driver let go of the program they were given, so the objects a run keeps
alive grow with what is in flight, not with what is done.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import anyio
import attrs
from returns.result import Failure, Success

from ..core import FrozenMap, LLMRequest, Program, Reply, Trace
from ..core.calls import as_reply
from ..core.programs import SystemCall
from ._accounting import CACHE_WRITE, CACHED_INPUT, Accounts, Amount, Line
from ._interpret import drive_sync, error_of, not_a_program
from ._loop import run_loop
from ._loop_tasks import LoopTasks
from ._loop_tasks import asyncio_loop as _asyncio_loop  # a module global: tests run the task-group path through it
from ._pool import cancelled_outside, in_task_group
from ._protocol import is_async_llm

__all__ = ["RunStatistics", "Runner", "run", "run_sync"]

T = TypeVar("T")
OnReply = Callable[[LLMRequest, Reply], None]
#: How a runner answers a `SystemCall`: ``await systems(call, runner)`` records the system's run on the
#: call's item and returns its `Trace`, making its LLM calls through `runner` (``await runner.ask(request)``,
#: or ``await runner.run(program)``), so that the runner counts them as it counts its own.
Systems = Callable[[SystemCall, "Runner"], Awaitable[Trace]]


@attrs.frozen
class RunStatistics:
    """What a `Runner` has done so far: a snapshot read from its `Accounts` (`from_accounts`).

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
        memo_hits: Requests an in-run memo (``memoized``) answered from memory: no
            call, so counted here and in none of the counts above (nor told to
            ``on_reply``).
        tool_calls: Tool calls of systems written as Python (``ctx.tool``), apart from
            the LLM calls above: in none of their counts.
        tool_errors: Of those, the tool calls that failed.
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
    memo_hits: int = 0
    tool_calls: int = 0
    tool_errors: int = 0

    @classmethod
    def from_accounts(cls, accounts: Accounts, peak_in_flight: int = 0) -> RunStatistics:
        """The statistics of `accounts` (first-seen order): billed calls, by purpose and engine, errors by
        kind, tokens, and memo hits apart -- what `Runner.statistics` gives of the runner's `accounts`."""
        purposes: dict[str, int] = {}
        engines: dict[str, int] = {}
        kinds: dict[str, int] = {}
        engine_tokens: dict[str, tuple[int, int]] = {}
        calls = errors = tokens_in = tokens_out = memo_hits = tool_calls = tool_errors = 0
        for line, amount in accounts.lines.items():
            memo_hits += amount.memo_hits
            tool_calls += amount.tool_calls
            tool_errors += amount.tool_errors
            if amount.calls:
                calls += amount.calls
                purposes[line.purpose] = purposes.get(line.purpose, 0) + amount.calls
                engines[line.engine] = engines.get(line.engine, 0) + amount.calls
            if amount.errors:
                errors += amount.errors
                kinds[line.error] = kinds.get(line.error, 0) + amount.errors
            if amount.input_tokens or amount.output_tokens:
                tokens_in += amount.input_tokens
                tokens_out += amount.output_tokens
                before_in, before_out = engine_tokens.get(line.engine, (0, 0))
                engine_tokens[line.engine] = (before_in + amount.input_tokens, before_out + amount.output_tokens)
        return cls(
            calls,
            FrozenMap(purposes),
            errors,
            FrozenMap(kinds),
            peak_in_flight,
            tokens_in,
            tokens_out,
            FrozenMap(engines),
            FrozenMap(engine_tokens),
            memo_hits,
            tool_calls,
            tool_errors,
        )


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
        systems: How to answer the `SystemCall` of a program that runs a system recorded
            per sample (`Systems`; `fit` gives it for a system). A runner given one runs every
            program on the async path, a plain LLM's calls inline as always.

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
        systems: Systems | None = None,
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
        self.systems = systems
        self._async = is_async_llm(llm) or systems is not None
        # The one count: a row per `Line` -- (engine, purpose, model, error kind) -> [calls, errors, input
        # tokens, output tokens, cached input tokens, cache-write tokens] -- in the order of their first
        # calls, and the memo hits per line apart;
        # `accounts` and `statistics` are read from it. A plain dict of lists, not `Accounts.add` per call:
        # that builds a frozen map per call (~4 us against ~0.4 us here, measured), and every call is counted.
        self._lines: dict[tuple[str, str, str, str], list[int]] = {}
        self._memo_hits: dict[tuple[str, str, str, str], int] = {}
        # Tool calls of systems written as Python (`count_tool`): (tool, error kind) -> [calls, errors, cache hits].
        self._tools: dict[tuple[str, str], list[int]] = {}
        self._in_flight = self._peak = 0

    def accounts(self) -> Accounts:
        """The calls, errors, tokens and memo hits so far, by engine, purpose, model and error kind."""
        lines = {
            Line(*key): Amount(
                calls=row[0],
                errors=row[1],
                input_tokens=row[2],
                output_tokens=row[3],
                cached_input_tokens=row[4],
                cache_write_tokens=row[5],
            )
            for key, row in self._lines.items()
        }
        for key, hits in self._memo_hits.items():  # after the calls' lines: their order is that of the first calls
            line = Line(*key)
            lines[line] = attrs.evolve(lines[line], memo_hits=hits) if line in lines else Amount(memo_hits=hits)
        for (tool, error), (calls, errors, hits) in self._tools.items():
            lines[Line("tool", "tool", tool, error)] = Amount(cache_hits=hits, tool_calls=calls, tool_errors=errors)
        return Accounts(FrozenMap(lines))

    def count_tool(self, tool: str, *, error: str = "", cache_hit: bool = False) -> None:
        """Count one tool call of a system written as Python (see `semgrad.effects.record`): on the
        line ``Line("tool", "tool", tool, error)``, a tool call (failed when `error` names its kind),
        or a cache hit when a cache answered it -- never an LLM call.

        Examples:
            >>> runner = Runner(lambda request: "unused")
            >>> runner.count_tool("lookup"); runner.count_tool("lookup", error="timeout")
            >>> s = runner.statistics(); (s.calls, s.tool_calls, s.tool_errors)
            (0, 2, 1)
        """
        forward = getattr(self.llm, "count_tool", None)  # a run's tally (semgrad run) keeps tool calls too
        if callable(forward):
            forward(tool, error=error, cache_hit=cache_hit)
        row = self._tools.get((tool, error))
        if row is None:
            row = self._tools[(tool, error)] = [0, 0, 0]
        if cache_hit:
            row[2] += 1
            return
        row[0] += 1
        row[1] += 1 if error else 0

    def statistics(self) -> RunStatistics:
        """A frozen snapshot of the counts so far (read from `accounts`)."""
        return RunStatistics.from_accounts(self.accounts(), self._peak)

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
            raise not_a_program(program)
        if program.done:
            return program.value
        # The run holds each program's current state only: this frame lets go of the program
        # (its first state), and so do the pool (see `WorkerPool`) and the sync driver.
        if not self._async:
            taken = [program]
            del program
            return drive_sync(self, taken)  # type: ignore[no-any-return]
        loop = _asyncio_loop()
        running = in_task_group(self, program) if loop is None else LoopTasks(loop).run(self, program)
        del program
        pool = await running
        if pool.error is not None:
            raise pool.error
        if not pool.over:  # every worker has ended, and the program is neither done nor failed
            raise cancelled_outside(pool)
        return pool.program.value

    def run_sync(self, program: Program[T], *, use_uvloop: bool | None = None) -> T:
        """Run `program` without an event loop of your own.

        A sync LLM is called in a plain loop, depth first (what a reply makes
        ready is answered before older requests; see `_interpret.drive_sync`); an async LLM is
        run by starting an event loop with `run_loop`: uvloop's when it is
        installed, unless `use_uvloop` is False (see `semgrad.effects.run_loop`).
        """
        taken = [program]  # handed over: the run holds each program's current state only
        del program
        return self._run_sync(taken, use_uvloop)

    def _run_sync(self, taken: list[Program[T]], use_uvloop: bool | None) -> T:
        """`run_sync` of the one program in `taken`, which it takes out of the list."""
        if not isinstance(taken[-1], Program):
            raise not_a_program(taken.pop())
        if self._async:
            return run_loop(self._run_taken, taken, use_uvloop=use_uvloop)
        return drive_sync(self, taken)  # type: ignore[no-any-return]

    async def _run_taken(self, taken: list[Program[T]]) -> T:
        return await self.run(taken.pop())

    async def run_system(self, call: SystemCall) -> Trace:
        """The recorded trace of `call` (what a worker does with a `SystemCall`): the runner's `systems`
        records it, each LLM call made through `ask`."""
        if self.systems is None:
            raise TypeError(
                f"the program runs system {call.system.name!r}; give the Runner systems= (fit does for a system)"
            )
        return await self.systems(call, self)

    async def ask(self, request: LLMRequest) -> Reply:
        """One call of the runner's LLM, counted, deadlined and told to `on_reply` as a worker's call is
        (a failure is a `Failure` reply, never an exception)."""
        self._in_flight += 1
        if self._in_flight > self._peak:
            self._peak = self._in_flight
        try:
            result = self.llm(request)
            if inspect.isawaitable(result):
                if self.timeout is None:
                    result = await result
                else:
                    with anyio.fail_after(self.timeout):
                        result = await result
            reply: Reply = as_reply(result)
        except Exception as exc:  # cancellation is a BaseException: it propagates
            reply = Failure(error_of(exc, self.timeout))
        finally:
            self._in_flight -= 1
        self._finished(request, reply)
        return reply

    def _finished(self, request: LLMRequest, reply: Reply) -> None:
        lines = self._lines
        if type(reply) is Success:  # `Success` is final: no isinstance (an ABC check) per call
            response = reply.unwrap()
            key = (request.engine, request.purpose, response.model, "")
            if response.memo_hit:  # answered from memory: no call (its tokens were counted when it was made)
                self._memo_hits[key] = self._memo_hits.get(key, 0) + 1
                return
            row = lines.get(key)
            if row is None:
                row = lines[key] = [0, 0, 0, 0, 0, 0]
            row[0] += 1
            usage = response.usage
            if usage.view if type(usage) is FrozenMap else usage:  # usually empty: skip the look-ups
                row[2] += int(usage.get("input_tokens", 0))
                row[3] += int(usage.get("output_tokens", 0))
                row[4] += int(usage.get(CACHED_INPUT, 0))
                row[5] += int(usage.get(CACHE_WRITE, 0))
        else:
            key = (request.engine, request.purpose, "", reply.failure().kind)
            row = lines.get(key)
            if row is None:
                row = lines[key] = [0, 0, 0, 0, 0, 0]
            row[0] += 1
            row[1] += 1
        if self.on_reply is not None:
            self.on_reply(request, reply)


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
        >>> from semgrad.core.programs import pure
        >>> run_sync(pure(42), lambda request: "unused")
        42
    """
    taken = [program]  # handed over: the run holds each program's current state only
    del program
    return Runner(llm, max_concurrency=max_concurrency, timeout=timeout)._run_sync(taken, use_uvloop)
