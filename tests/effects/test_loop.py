"""Choosing the event loop: uvloop where installed, asyncio's own loop when asked or when uvloop is absent."""

from __future__ import annotations

import asyncio
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import semgrad.cli as cli
from semgrad.backends.fake import FunctionLLM, reply_forward
from semgrad.core import as_examples, forward, gather, optim
from semgrad.effects import Runner, fit_sync, run_loop, run_sync, uvloop_available, uvloop_enabled
from semgrad.effects._loop import UVLOOP_ENV
from semgrad.testing import graphs, inputs_for, pure_llms
from semgrad.topologies import paper_graph

uvloop = pytest.importorskip("uvloop", reason="uvloop is in the test extra; not on Windows")


def _loop_kind() -> str:
    return "uvloop" if isinstance(asyncio.get_running_loop(), uvloop.Loop) else "asyncio"


async def _kind() -> str:
    return _loop_kind()


class LoopSpy:
    """An async fake LLM that notes which event loop each call ran on."""

    def __init__(self) -> None:
        self.kinds: set[str] = set()

    async def __call__(self, request):
        self.kinds.add(_loop_kind())
        return reply_forward(request, "4") if request.purpose == "forward" else "4"


@pytest.fixture
def no_env(monkeypatch):
    """No ``SEMGRAD_UVLOOP`` in the environment."""
    monkeypatch.delenv(UVLOOP_ENV, raising=False)


@pytest.fixture
def uvloop_absent(monkeypatch):
    """uvloop cannot be imported (a ``None`` entry in ``sys.modules`` makes both find_spec and import fail)."""
    monkeypatch.setitem(sys.modules, "uvloop", None)


def test_default_is_uvloop_when_installed(no_env):
    """With uvloop installed and no setting, run_loop runs on uvloop's loop."""
    assert uvloop_available() and uvloop_enabled()
    assert run_loop(_kind) == "uvloop"


def test_the_switch_works_both_ways(no_env):
    """use_uvloop=False runs asyncio's own loop, True uvloop's, whatever the default."""
    assert run_loop(_kind, use_uvloop=False) == "asyncio"
    assert run_loop(_kind, use_uvloop=True) == "uvloop"


@given(st.sampled_from(["0", "false", "FALSE", " no ", "Off"]))
def test_environment_turns_uvloop_off(value):
    """SEMGRAD_UVLOOP=0 (false, no, off, any case) keeps asyncio's loop by default; an explicit True still wins."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(UVLOOP_ENV, value)
        assert not uvloop_enabled()
        assert run_loop(_kind) == "asyncio"
        assert run_loop(_kind, use_uvloop=True) == "uvloop"


@given(st.sampled_from(["", "1", "yes", "true", "on"]))
def test_other_environment_values_leave_uvloop_on(value):
    """Any other SEMGRAD_UVLOOP value leaves the default (uvloop where installed)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(UVLOOP_ENV, value)
        assert uvloop_enabled()


def test_absent_uvloop_falls_back_silently(no_env, uvloop_absent):
    """Without uvloop the default is asyncio's loop, with no error and no warning (warnings are errors here)."""
    assert not uvloop_available() and not uvloop_enabled()
    assert run_loop(_kind) == "asyncio"
    spy = LoopSpy()
    assert run_sync(pure_forward(), spy).output_value == "4"
    assert spy.kinds == {"asyncio"}


def test_asking_for_absent_uvloop_is_a_clear_error(uvloop_absent):
    """use_uvloop=True without uvloop installed raises a one-line ImportError naming the extra."""
    with pytest.raises(ImportError, match=r"pip install -e '\.\[fast\]'"):
        run_loop(_kind, use_uvloop=True)


def pure_forward():
    graph, params = paper_graph()
    return forward(graph, params, {"question": "2+2?"})


@pytest.mark.parametrize("use_uvloop", [None, True, False])
def test_run_sync_and_runner_pick_the_loop(no_env, use_uvloop):
    """run_sync and Runner.run_sync on an async LLM run on the chosen loop (None: uvloop)."""
    expected = {"uvloop"} if use_uvloop is not False else {"asyncio"}
    spy = LoopSpy()
    assert run_sync(pure_forward(), spy, use_uvloop=use_uvloop).output_value == "4"
    assert spy.kinds == expected
    spy = LoopSpy()
    Runner(spy).run_sync(pure_forward(), use_uvloop=use_uvloop)
    assert spy.kinds == expected


@pytest.mark.parametrize("use_uvloop", [True, False])
def test_fit_sync_picks_the_loop(no_env, use_uvloop):
    """fit_sync runs fit on the chosen loop."""
    graph, params = paper_graph()
    train = as_examples([{"inputs": {"question": "2+2?"}, "target": "4"}])
    spy = LoopSpy()
    result = fit_sync(
        graph, params, optim.neighbor_sgd(k=1), train=train, validation=train, llm=spy, iterations=1,
        use_uvloop=use_uvloop,
    )  # fmt: skip
    assert result.history and spy.kinds == ({"uvloop"} if use_uvloop else {"asyncio"})


@settings(max_examples=15)
@given(graphs(), st.data(), pure_llms())
def test_both_loops_give_equal_traces(gp, data, llm):
    """For random DAGs and a pure async fake, uvloop and asyncio's loop give the same traces."""
    graph, params = gp
    samples = [data.draw(inputs_for(graph)) for _ in range(2)]
    program = lambda: gather(*(forward(graph, params, x, sample=i) for i, x in enumerate(samples)))  # noqa: E731

    async def async_llm(request):
        await asyncio.sleep(0)
        return llm(request)

    on_uvloop = run_sync(program(), FunctionLLM(async_llm), use_uvloop=True)
    assert on_uvloop == run_sync(program(), FunctionLLM(async_llm), use_uvloop=False) == run_sync(program(), llm)


@pytest.mark.parametrize("flag", [True, False])
def test_cli_flag_turns_uvloop_off_for_the_command_only(no_env, monkeypatch, flag):
    """`semgrad --no-uvloop CMD` runs CMD with uvloop off and restores the environment afterwards."""
    seen = []
    monkeypatch.setattr(cli._demo, "command", lambda args: seen.append((uvloop_enabled(), run_loop(_kind))) or 0)
    assert cli.main([*(["--no-uvloop"] if flag else []), "demo"]) == 0
    assert seen == ([(False, "asyncio")] if flag else [(True, "uvloop")])
    assert uvloop_enabled()


class _Counted:
    """A value that counts how often it is formatted."""

    formatted = 0

    def __repr__(self) -> str:
        type(self).formatted += 1
        return "_Counted()"


@pytest.mark.parametrize("use_uvloop", [False, True])
def test_run_loop_never_formats_the_value_it_returns(use_uvloop):
    """run_loop hands back its value unformatted (asyncio's runner, ending, formats its main task and its result)."""

    async def value() -> _Counted:
        return _Counted()

    _Counted.formatted = 0
    assert type(run_loop(value, use_uvloop=use_uvloop)) is _Counted
    assert _Counted.formatted == 0
