"""Interpreting programs: a call's outcome as a reply, combinators taken apart, the sync driver.

What both runners share. A call's outcome becomes a reply (`reply_of` for a
returned value, `error_of` for a raised exception), so one failed call never
cancels its siblings and the core decides what it means. The combinators are
taken apart through the core's public hook (`semgrad.core.programs.combinator`): a
`bind`'s program runs before its continuation, a `gather`'s children one after
another, instead of every reply being fed through the combinators' states -- the
same calls and the same value (property tests compare them), without rebuilding
a combinator's state per reply.

`drive_sync` answers a program with a sync LLM, one call at a time and depth
first: the requests a reply makes ready are answered before older ones, so a
batch holds about one sample's state at a time -- less memory, and far less work
for CPython's cyclic collector, whose full passes traverse everything alive. Its
programs travel on a stack (``taken``), not as arguments: no frame keeps a
program it has handed on, so a sample that is done holds nothing of its run.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, Protocol

from returns.result import Failure

from ..core import LLMError, LLMFailure, LLMRequest, Program, ProtocolError, Reply
from ..core._requests import _response, _success
from ..core.calls import as_reply
from ..core.programs import Bound, Gathered, SystemCall, combinator

__all__ = ["Driven", "drive_sync", "error_of", "innermost", "not_a_program", "reply_of"]


class Driven(Protocol):
    """What a driver reads and counts of the runner it drives (`Runner` has it).

    Named here, below the drivers, so that they need not import the runner that
    imports them.
    """

    llm: Callable[[LLMRequest], Any]
    max_concurrency: int | None
    systems: Any
    timeout: float | None
    _in_flight: int
    _peak: int

    def _finished(self, request: LLMRequest, reply: Reply) -> None: ...


def reply_of(result: Any) -> Reply:
    """What a sync LLM call returned, as a reply (callers test for text, the usual case, first)."""
    if type(result) is str:
        return _success(_response(result))
    if inspect.isawaitable(result):
        if inspect.iscoroutine(result):
            result.close()  # never awaited: close it rather than leak a warning
        raise TypeError("the LLM returned an awaitable from a call the runner took as sync")
    return as_reply(result)


def error_of(exc: Exception, timeout: float | None = None) -> LLMError:
    """The error a call that raised `exc` replies with: an `LLMFailure`'s own, a timeout (the
    runner's `timeout` when one was set, which is then what a `TimeoutError` means), or the
    exception's type and message."""
    if isinstance(exc, LLMFailure):
        return exc.error
    if isinstance(exc, TimeoutError):
        if timeout is not None:
            return LLMError("timeout", f"no reply within {timeout} s", retryable=True)
        return LLMError("timeout", str(exc) or "the call timed out", retryable=True)
    return LLMError("exception", f"{type(exc).__name__}: {exc}")


def not_a_program(value: Any) -> TypeError:
    """The error for running what is not a program (a function that builds one, left uncalled, say)."""
    hint = " (a function that builds one: call it)" if callable(value) else ""
    return TypeError(f"run needs a Program, such as forward(graph, params, inputs), got {type(value).__name__}{hint}")


def innermost(program: Program[Any], conts: list[Any], index: int) -> Program[Any]:
    """`program` (child `index` of a gather) with its binds taken apart: each bind's
    continuation pushed on ``conts[index]`` (made when first needed) and its program in its
    place; and while what is left is done, the next continuation run."""
    while True:
        shape = combinator(program)
        if type(shape) is Bound:
            stack = conts[index]
            if stack is None:
                stack = conts[index] = []
            stack.append(shape.then)
            program = shape.program
        elif program.done and conts[index]:
            program = conts[index].pop()(program.value)
        else:
            return program


def drive_sync(runner: Driven, taken: list[Program[Any]]) -> Any:
    """Run the program on top of `taken` (taking it off) with `runner`'s sync LLM; its value.

    A `gather`'s children are answered one after another, in order, each to its end (a
    child's requests are all emitted above the next child's, and only its own replies make
    it emit more), and a `bind`'s program before its continuation: the order depth first
    gives anyway.
    """
    while True:
        shape = combinator(taken[-1])
        if type(shape) is Bound:
            taken[-1] = shape.program
            then = shape.then
            del shape
            taken.append(then(drive_sync(runner, taken)))
        elif type(shape) is Gathered:
            taken.pop()
            children = list(shape.children)
            del shape
            children.reverse()
            values = []
            while children:
                taken.append(children.pop())
                values.append(drive_sync(runner, taken))
            return tuple(values)
        else:
            return _drive_machine(runner, taken)


def _drive_machine(runner: Driven, taken: list[Program[Any]]) -> Any:
    """`drive_sync` for any program: every reply is fed to its states, depth first."""
    program = taken.pop()
    queue = list(reversed(program.emitted))
    pop, extend = queue.pop, queue.extend
    llm: Callable[[LLMRequest], Any] = runner.llm
    finished = runner._finished
    if queue:
        runner._peak = max(runner._peak, runner._in_flight + 1)  # one call at a time
    while not program.done:
        if not queue:
            raise ProtocolError("the program is waiting for replies but has asked for none")
        token, request = pop()
        if type(request) is SystemCall:  # a system's run: the runner takes the async path for those
            raise ProtocolError(
                f"the program asks to run a system ({request!r}); run it with a Runner given systems= (fit does)"
            )
        runner._in_flight += 1
        try:
            result = llm(request)
            reply = _success(_response(result)) if type(result) is str else reply_of(result)
        except Exception as exc:  # cancellation is a BaseException: it propagates
            reply = Failure(error_of(exc))
        finally:
            runner._in_flight -= 1
        finished(request, reply)
        program = program.feed(token, reply)
        emitted = program.emitted
        if emitted:
            extend(reversed(emitted))
    return program.value
