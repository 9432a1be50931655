"""Program laws, checked by observation under pure fakes."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from semgrad.backends.fake import HashLLM, RecordingLLM
from semgrad.core import LLMRequest, Message, ProtocolError, gather
from semgrad.core.calls import as_reply
from semgrad.core.programs import Bound, Gathered, ask, bind, combinator, map_, program, pure
from semgrad.effects import run_sync

texts = st.text(min_size=1, max_size=10)


def req(text: str) -> LLMRequest:
    return LLMRequest((Message("user", text),), node=text)


def asks(text: str):
    """A program asking once, then once more with the reply, yielding both texts."""
    return bind(
        ask(req(text)), lambda r1: map_(ask(req(r1.unwrap().text)), lambda r2: (r1.unwrap().text, r2.unwrap().text))
    )


def observe(prog_factory, salt: str):
    """Run a fresh program under a recording pure fake: (value, prompts asked in order)."""
    llm = RecordingLLM(HashLLM(salt))
    value = run_sync(prog_factory(), llm)
    return value, [r.prompt for r in llm.requests]


@given(texts, st.text(max_size=4))
def test_left_identity(x, salt):
    """bind(pure(x), f) behaves like f(x)."""
    assert observe(lambda: bind(pure(x), asks), salt) == observe(lambda: asks(x), salt)


@given(texts, st.text(max_size=4))
def test_right_identity(x, salt):
    """bind(p, pure) behaves like p."""
    assert observe(lambda: bind(asks(x), pure), salt) == observe(lambda: asks(x), salt)


@given(texts, st.text(max_size=4))
def test_associativity(x, salt):
    """bind(bind(p, f), g) behaves like bind(p, lambda v: bind(f(v), g))."""
    f = lambda v: asks(v[1])  # noqa: E731
    g = lambda v: map_(ask(req(v[0] + v[1])), lambda r: r.unwrap().text)  # noqa: E731
    left = lambda: bind(bind(asks(x), f), g)  # noqa: E731
    right = lambda: bind(asks(x), lambda v: bind(f(v), g))  # noqa: E731
    assert observe(left, salt) == observe(right, salt)


@given(st.lists(texts, max_size=6), st.text(max_size=4))
def test_gather_preserves_order_and_answers_every_program(xs, salt):
    """gather yields each sub-program's value at its own position."""
    together, _ = observe(lambda: gather(*(asks(x) for x in xs)), salt)
    alone = tuple(observe(lambda x=x: asks(x), salt)[0] for x in xs)
    assert together == alone


@given(st.lists(texts, min_size=1, max_size=5))
def test_gather_emits_every_first_request_at_once(xs):
    """gather's first state emits the first request of every sub-program, in order."""
    prog = gather(*(asks(x) for x in xs))
    assert [r.prompt for _, r in prog.emitted] == xs
    assert len({t for t, _ in prog.emitted}) == len(xs)


def test_feeding_a_finished_or_unknown_token_is_a_protocol_error():
    """Replies for tokens a program is not waiting for raise ProtocolError."""
    from returns.result import Success

    from semgrad.core import LLMResponse

    prog = gather(ask(req("a")), ask(req("b")))
    with pytest.raises(ProtocolError):
        prog.feed((7,), Success(LLMResponse("x")))
    with pytest.raises(ProtocolError):
        pure(1).feed((), Success(LLMResponse("x")))


def test_generator_programs_match_bind_and_refuse_double_resume():
    """@program reads like bind, and a generator-backed state may be fed only once."""
    from returns.result import Success

    from semgrad.core import LLMResponse

    @program
    def two_asks(x):
        r1 = yield ask(req(x))
        r2 = yield ask(req(r1.unwrap().text))
        return r1.unwrap().text, r2.unwrap().text

    assert observe(lambda: two_asks("q"), "s") == observe(lambda: asks("q"), "s")
    state = two_asks("q")
    state.feed((), Success(LLMResponse("once")))
    with pytest.raises(ProtocolError, match="resumed twice"):
        state.feed((), Success(LLMResponse("twice")))


def _fed(prog, llm, asked):
    """The value of feeding `prog` (the whole state, combinators and all) its replies, oldest request first."""
    queue = list(prog.emitted)
    while not prog.done:
        token, request = queue.pop(0)
        asked.append(request.prompt)
        prog = prog.feed(token, as_reply(llm(request)))
        queue.extend(prog.emitted)
    return prog.value


def _taken_apart(prog, llm, asked):
    """The value of running `prog` through `combinator`: a bind's program then its continuation,
    a gather's children one by one, anything else fed."""
    shape = combinator(prog)
    if isinstance(shape, Bound):
        return _taken_apart(shape.then(_taken_apart(shape.program, llm, asked)), llm, asked)
    if isinstance(shape, Gathered):
        assert shape.waiting == sum(1 for child in shape.children if not child.done)
        return tuple(_taken_apart(child, llm, asked) for child in shape.children)
    return _fed(prog, llm, asked)


@given(st.lists(st.one_of(texts, st.integers()), max_size=5), st.text(max_size=4), st.booleans())
def test_running_the_combinators_taken_apart_asks_and_gives_what_feeding_them_does(items, salt, bound):
    """A program run through `combinator` (bind: program then continuation; gather: each child) makes the
    same requests and gives the same value as feeding the whole program."""

    def build():
        children = [asks(x) if isinstance(x, str) else pure(x) for x in items]
        batch = gather(*children)
        return (
            bind(batch, lambda values: map_(ask(req(repr(values))), lambda r: (values, r.unwrap().text)))
            if bound
            else batch
        )

    llm = HashLLM(salt)
    fed, apart = [], []
    assert _taken_apart(build(), llm, apart) == _fed(build(), llm, fed)
    assert sorted(apart) == sorted(fed)


def test_combinator_names_a_bind_and_a_gather_and_nothing_else():
    """combinator gives a bind's program and continuation, a gather's children and count waiting, else None."""
    asked = ask(req("q"))
    then = pure
    assert combinator(bind(asked, then)) == Bound(asked, then)
    assert combinator(gather(asked, pure(1), asked)) == Gathered((asked, pure(1), asked), 2)
    assert combinator(asked) is None and combinator(pure(1)) is None
