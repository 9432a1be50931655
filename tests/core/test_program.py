"""Program laws, checked by observation under pure fakes."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from semgrad.backends.fake import HashLLM, RecordingLLM
from semgrad.core import LLMRequest, Message, ProtocolError, ask, bind, gather, map_, program, pure
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
