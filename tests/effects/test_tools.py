"""Tool calls as effects: retries, timeouts, and the cache of deterministic tools (exact replays, hostile entries)."""

from __future__ import annotations

import anyio
from hypothesis import given
from hypothesis import strategies as st

from semgrad.core import LLMRequest, LLMResponse, Message
from semgrad.effects import ToolCache
from semgrad.effects._cache import SqliteStore
from semgrad.effects._tools import call_tool

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3) | st.tuples(inner, inner)
    ),
    max_leaves=8,
)


@given(_JSON)
def test_a_cached_result_replays_exactly_or_is_not_kept(result):
    """A deterministic tool's result is kept only when JSON gives it back equal and of the same types (no
    tuple turned list, no NaN), so a replay is the very value; otherwise the tool is called again."""
    cache, calls = ToolCache(), []

    def tool(x):
        calls.append(x)
        return result

    first = anyio.run(call_tool, "t", tool, {"x": 1}, None, 0, cache)
    second = anyio.run(call_tool, "t", tool, {"x": 1}, None, 0, cache)
    assert first.value is result
    if second.cache_hit:
        assert second.value == result and type(second.value) is type(result) and len(calls) == 1
    else:
        assert len(calls) == 2


def test_arguments_that_do_not_survive_json_are_never_cached():
    """A call whose arguments JSON cannot give back exactly (a tuple, an object) is made every time."""
    cache, calls = ToolCache(), []

    def tool(x):
        calls.append(x)
        return "r"

    for _ in range(2):
        anyio.run(call_tool, "t", tool, {"x": (1, 2)}, None, 0, cache)
    assert len(calls) == 2


def test_a_damaged_cache_entry_is_a_miss(tmp_path):
    """An entry of a cache file that is not JSON is read as a miss: the tool is called, and its result kept."""
    store = SqliteStore(tmp_path / "tools.sqlite")
    cache = ToolCache(store)
    key, _ = ToolCache.key("t", {"x": 1})
    store.put_sync(key, LLMRequest((Message("user", "x"),), engine="tool"), LLMResponse("{not json"))
    got = anyio.run(call_tool, "t", lambda x: [x], {"x": 1}, None, 0, cache)
    assert got.value == [1] and not got.cache_hit
    assert anyio.run(call_tool, "t", lambda x: "other", {"x": 1}, None, 0, cache).value == [1]


def test_retries_end_at_the_first_success_and_a_last_failure_is_reported():
    """A tool is tried at most retries + 1 times; the outcome is its first success or its last failure."""
    tries = []

    def flaky(x):
        tries.append(x)
        raise RuntimeError(f"attempt {len(tries)}")

    outcome = anyio.run(call_tool, "t", flaky, {"x": 1}, None, 2)
    assert len(tries) == 3 and outcome.kind == "exception" and "attempt 3" in outcome.error


def test_an_async_tool_and_a_sync_one_under_a_timeout_both_answer():
    """An async tool is awaited; a sync one under a timeout runs in a worker thread and answers the same."""

    async def slow_echo(x):
        await anyio.sleep(0)
        return x

    assert anyio.run(call_tool, "a", slow_echo, {"x": 3}, 5.0, 0).value == 3
    assert anyio.run(call_tool, "s", lambda x: x + 1, {"x": 3}, 5.0, 0).value == 4
