"""Programs: computations that may need LLM replies, as plain values (sans-I/O).

Theory of operation
-------------------
A `Program[T]` is a small state machine that eventually yields a value of type T.
At any moment it is either `Done` (it holds its value) or waiting. A waiting
program exposes `emitted`: the requests that *became ready in the transition that
produced this state*, each paired with a token. An interpreter (``semgrad.effects``)
starts those requests, and whenever one reply arrives it calls
``program.feed(token, reply)``, which returns the next state and, in that state's
`emitted`, whatever became ready because of that reply. Nothing else is ever
started, so each request goes out the moment its inputs exist -- per reply, not
per batch or per level.

Tokens are tuples. `gather` prefixes each child's tokens with the child's
position, so tokens of requests in flight are always distinct; an engine such as
the forward machine uses ``(node_name,)``.

Programs never perform I/O: they can be driven by a pure function (tests,
doctests, dry runs that count calls) or by the concurrent anyio runner, and the
results are the same.

An interpreter may also take the two combinators apart instead of feeding every
reply through their states: `combinator` says whether a state is a `bind`
(`Bound`: a program, then a continuation of its value) or a `gather`
(`Gathered`: the children's current states and how many are not done), and
anything else is stepped with `emitted` and `feed`. Running a `Bound`'s program
to its value and then ``then(value)``, or each of a `Gathered`'s children to its
value and collecting the values in order, makes the same calls and gives the same
value as feeding the whole program (the runners' property tests compare them);
what an interpreter saves is rebuilding the combinators' states per reply.

Examples:
    >>> from semgrad.core import LLMRequest, Message
    >>> req = LLMRequest((Message("user", "2+2?"),))
    >>> p = map_(ask(req), lambda reply: reply.unwrap().text + "!")
    >>> [r.prompt for _, r in p.emitted]
    ['2+2?']
    >>> from returns.result import Success
    >>> from semgrad.core import LLMResponse
    >>> token, _ = p.emitted[0]
    >>> p.feed(token, Success(LLMResponse("4"))).value
    '4!'
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Generator, Hashable, Iterable
from typing import Any, Generic, NamedTuple, TypeVar

from ._errors import ProtocolError
from ._persistent import PVec
from ._requests import LLMRequest, Reply

__all__ = [
    "Bound",
    "Done",
    "Gathered",
    "Program",
    "Token",
    "ask",
    "bind",
    "combinator",
    "gather",
    "map_",
    "program",
    "pure",
    "traverse",
]

T = TypeVar("T")
U = TypeVar("U")
#: A program only ever yields its value, so a ``Program[bool]`` is a ``Program[int]``, and a program of a
#: tuple is one of a sequence (``run_sync(evaluate(...))`` passes to a function of a ``Sequence``).
T_co = TypeVar("T_co", covariant=True)
Token = tuple[Hashable, ...]
Emitted = tuple[tuple[Token, LLMRequest], ...]


class Program(Generic[T_co]):
    """A computation that may need LLM replies; see the module's theory of operation."""

    __slots__ = ()
    #: True once the program holds its value.
    done: bool = False

    @property
    def emitted(self) -> Emitted:
        """Requests that became ready in the transition that produced this state."""
        raise NotImplementedError

    def feed(self, token: Token, reply: Reply) -> Program[T_co]:
        """Deliver the reply for the request emitted under `token`; return the next state."""
        raise NotImplementedError

    @property
    def value(self) -> T_co:
        """The result; only a `Done` program has one."""
        raise ProtocolError("this program is not finished; feed it replies first")


class Done(Program[T_co]):
    """A finished program holding `value`."""

    __slots__ = ("_value",)
    done = True

    def __init__(self, value: T_co) -> None:
        self._value = value

    @property
    def value(self) -> T_co:
        return self._value

    @property
    def emitted(self) -> Emitted:
        return ()

    def feed(self, token: Token, reply: Reply) -> Program[T_co]:
        raise ProtocolError(f"a finished program was fed a reply for token {token!r}")

    def __repr__(self) -> str:
        return f"Done({self._value!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Done) and other._value == self._value

    def __hash__(self) -> int:
        return hash(("Done", self._value))


class _Ask(Program[Reply]):
    __slots__ = ("request", "emitted")

    def __init__(self, request: LLMRequest) -> None:
        self.request = request
        self.emitted: Emitted = (((), request),)  # type: ignore[misc]

    def feed(self, token: Token, reply: Reply) -> Program[Reply]:
        if token != ():
            raise ProtocolError(f"unknown token {token!r} for a single request")
        return Done(reply)

    def __repr__(self) -> str:
        return f"ask(node={self.request.node!r}, purpose={self.request.purpose!r})"


class _Bind(Program[U]):
    # What a bind has emitted is what its program has, read when asked (its program may be
    # lazy, as `forward`'s is).
    __slots__ = ("inner", "then")

    def __init__(self, inner: Program[Any], then: Callable[[Any], Program[U]]) -> None:
        self.inner = inner
        self.then = then

    @property
    def emitted(self) -> Emitted:
        return self.inner.emitted

    def feed(self, token: Token, reply: Reply) -> Program[U]:
        inner = self.inner.feed(token, reply)
        if inner.done:
            return self.then(inner.value)
        return _Bind(inner, self.then)


class _Gather(Program[tuple[Any, ...]]):
    # `children` is a persistent array (`PVec`), so feeding one child is O(1), not O(children).
    # A new gather's `emitted` (None in `_emitted`) is its children's, read when first asked
    # (see `gather`).
    __slots__ = ("children", "size", "waiting", "_emitted")

    def __init__(self, children: PVec[Program[Any]], size: int, waiting: int, emitted: Emitted | None) -> None:
        self.children = children
        self.size = size
        self.waiting = waiting
        self._emitted = emitted

    @property
    def emitted(self) -> Emitted:
        emitted = self._emitted
        if emitted is None:
            emitted = self._emitted = tuple(
                ((i, *t), r) for i, p in enumerate(self.children.tolist()) for t, r in p.emitted
            )
        return emitted

    def feed(self, token: Token, reply: Reply) -> Program[tuple[Any, ...]]:
        index = token[0] if token else None
        if type(index) is not int or not 0 <= index < self.size:
            raise ProtocolError(f"unknown token {token!r} for a gather of {self.size}")
        child = self.children.get(index).feed(token[1:], reply)
        children = self.children.set(index, child)
        if child.done:
            waiting = self.waiting - 1
            if waiting == 0:
                return Done(tuple(c.value for c in children.tolist()))
            return _Gather(children, self.size, waiting, ())
        emitted = child.emitted
        if len(emitted) == 1:  # the usual case: no generator
            ((sub, request),) = emitted
            emitted = (((index, *sub), request),)
        elif emitted:
            emitted = tuple(((index, *t), r) for t, r in emitted)
        return _Gather(children, self.size, self.waiting, emitted)


class Bound(NamedTuple):
    """A `bind` state taken apart (see `combinator`): run `program`, then the program
    `then` builds from its value."""

    program: Program[Any]
    then: Callable[[Any], Program[Any]]


class Gathered(NamedTuple):
    """A `gather` state taken apart (see `combinator`): its children's current states, in
    argument order, and how many of them are not done yet."""

    children: tuple[Program[Any], ...]
    waiting: int


def combinator(program: Program[Any]) -> Bound | Gathered | None:
    """The combinator `program`'s current state is made of, taken apart for an interpreter:
    a `Bound` for a `bind`, a `Gathered` for a `gather`, else None (a machine, `ask`, or
    `Done`: step it with `emitted` and `feed`). See the module's theory of operation.

    Examples:
        >>> from semgrad.core import LLMRequest, Message
        >>> asked = ask(LLMRequest((Message("user", "2+2?"),)))
        >>> combinator(bind(asked, pure)).program is asked
        True
        >>> combinator(gather(asked, pure(1)))
        Gathered(children=(ask(node=None, purpose='forward'), Done(1)), waiting=1)
        >>> combinator(asked) is None
        True
    """
    kind = type(program)
    if kind is _Bind:
        return Bound(program.inner, program.then)  # type: ignore[attr-defined]
    if kind is _Gather:
        return Gathered(tuple(program.children.tolist()), program.waiting)  # type: ignore[attr-defined]
    return None


def pure(value: T) -> Program[T]:
    """A program that needs nothing and yields `value`."""
    return Done(value)


def ask(request: LLMRequest) -> Program[Reply]:
    """A program that asks for one reply and yields it (`Success` or `Failure`)."""
    return _Ask(request)


def bind(program: Program[T], then: Callable[[T], Program[U]]) -> Program[U]:
    """Run `program`, then the program `then(value)` builds from its value.

    Examples:
        >>> bind(pure(2), lambda x: pure(x * 10)).value
        20
    """
    if program.done:
        return then(program.value)
    return _Bind(program, then)


def map_(program: Program[T], f: Callable[[T], U]) -> Program[U]:
    """Apply a pure function to a program's value.

    Examples:
        >>> map_(pure(2), str).value
        '2'
    """
    return bind(program, lambda value: Done(f(value)))


def gather(*programs: Program[Any]) -> Program[tuple[Any, ...]]:
    """Run programs concurrently; yield their values as a tuple, in argument order.

    The gather's first `emitted` is every child's, read when first asked for (so
    lazy children, such as `forward`'s, are not started by building the gather);
    the async runner asks the children one at a time instead.

    Examples:
        >>> gather(pure(1), pure(2)).value
        (1, 2)
        >>> gather().value
        ()
    """
    waiting = sum(1 for p in programs if not p.done)
    if waiting == 0:
        return Done(tuple(p.value for p in programs))
    return _Gather(PVec(programs), len(programs), waiting, None)


def traverse(f: Callable[[T], Program[U]], items: Iterable[T]) -> Program[tuple[U, ...]]:
    """`gather(*(f(x) for x in items))`."""
    return gather(*(f(item) for item in items))


def program(fn: Callable[..., Generator[Program[Any], Any, T]]) -> Callable[..., Program[T]]:
    """Write a program as a generator: ``value = yield some_program``.

    Each call of the decorated function starts a fresh generator. A generator can
    only move forward, so a state of such a program may be fed once; feeding the
    same state twice raises `ProtocolError` (start the program again instead).

    Examples:
        >>> @program
        ... def twice(x):
        ...     a = yield pure(x)
        ...     b = yield pure(a * 2)
        ...     return a + b
        >>> twice(3).value
        9
    """

    @functools.wraps(fn)
    def start(*args: Any, **kwargs: Any) -> Program[T]:
        return _step(fn(*args, **kwargs), None, [False])

    return start


def _step(gen: Generator[Program[Any], Any, T], sent: Any, used: list[bool]) -> Program[T]:
    if used[0]:
        raise ProtocolError("a generator-backed program state was resumed twice; start it again")
    used[0] = True
    try:
        yielded = gen.send(sent)
    except StopIteration as stop:
        return Done(stop.value)
    if not isinstance(yielded, Program):
        gen.close()
        raise ProtocolError(f"a @program generator must yield programs, got {type(yielded).__name__}")
    fresh = [False]
    return bind(yielded, lambda value: _step(gen, value, fresh))
