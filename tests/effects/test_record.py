"""The recorder: ctx.llm / ctx.tool / ctx.param become a core Graph and Trace of the nodes that ran."""

from __future__ import annotations

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import semgrad
from semgrad.backends.fake import FunctionLLM, HashLLM
from semgrad.core import Example, FrozenMap, InputError, LLMError, LLMFailure, Params, forward
from semgrad.effects import NodeFailed, RecordingError, Runner, ToolCache, record
from semgrad.effects._accounting import Accounts
from semgrad.testing import python_systems


def lookup_invoice(query):
    """Find the invoice a query is about."""
    return f"invoice for {query}"


@semgrad.system
async def support(ctx, question):
    topic = await ctx.llm("classify", instruction="Name the topic of the question.", inputs={"question": question})
    facts = ""
    if "billing" in topic:
        facts = await ctx.tool("lookup", lookup_invoice, query=topic)
    return await ctx.llm(
        "answer", instruction="Answer the customer.", inputs={"question": question, "topic": topic, "facts": facts}
    )


def _topic_llm(request):
    """Classifies a question about money as billing; answers everything else with 'ok'."""
    if request.node == "classify":
        return "<result>billing</result>" if "refund" in request.prompt.lower() else "<result>shipping</result>"
    return "<result>ok</result>"


def _record(system, example, llm=None, params=None, **kwargs):
    return anyio.run(lambda: record(system, params, example, llm=llm or FunctionLLM(_topic_llm), **kwargs))


def test_the_issue_example_records_only_the_branch_each_sample_took():
    """A sample whose topic is billing records the tool node and its data edges; another records no tool,
    and the constant it passed instead is an input node named by its key."""
    billing = _record(support, Example({"question": "A refund?"}, id="a"))
    assert billing.graph.topological_order == ("question", "classify", "lookup", "answer")
    assert billing.graph["lookup"].kind == "tool" and billing.graph["lookup"].inputs == ("classify",)
    assert billing.graph["lookup"].arguments == ("query",)
    assert billing.graph["lookup"].description == "Find the invoice a query is about."
    assert billing.graph["answer"].inputs == ("question", "classify", "lookup")
    assert billing.trace.value("lookup") == "invoice for billing" and billing.trace.sample == "a"
    shipping = _record(support, Example({"question": "Where is it?"}, id="b"))
    assert shipping.graph.topological_order == ("question", "classify", "facts", "answer")
    assert shipping.graph["facts"].kind == "input" and shipping.trace.value("facts") == ""
    assert list(billing.params) == list(shipping.params) == ["classify.instruction", "answer.instruction"]


def test_values_are_traced_by_node_not_by_equal_text():
    """Two nodes that return equal text are told apart: each edge comes from the node whose value was passed."""

    @semgrad.system
    async def twins(ctx, question):
        a = await ctx.llm("a", instruction="A.", inputs={"question": question})
        await ctx.llm("b", instruction="B.", inputs={"question": question})
        return await ctx.llm("c", instruction="C.", inputs={"a": a})

    got = _record(twins, {"question": "q"}, llm=FunctionLLM(lambda r: "<result>same</result>"))
    assert got.graph["c"].inputs == ("a",)


def test_a_loop_records_occurrences_sharing_one_instruction():
    """A component called three times becomes act#1..act#3, each sharing act.instruction, chained by data edges;
    a component called once keeps its own name."""

    @semgrad.system
    async def agent(ctx, question):
        note = question
        for _ in range(3):
            note = await ctx.llm("act", instruction="Act.", inputs={"question": question, "note": note})
        return await ctx.llm("final", instruction="Conclude.", inputs={"note": note})

    got = _record(agent, {"question": "q"}, llm=HashLLM())
    assert got.graph.of_kind("llm") == ("act#1", "act#2", "act#3", "final")
    assert {got.graph[f"act#{k}"].instruction for k in (1, 2, 3)} == {"act.instruction"}
    assert got.graph["act#2"].occurrence_of == "act" and got.graph["final"].occurrence_of == ""
    assert got.graph["act#3"].inputs == ("question", "act#2") and got.graph["act#1"].inputs == ("question",)
    assert list(got.params) == ["act.instruction", "final.instruction"]
    assert {got.trace[f"act#{k}"].request.node for k in (1, 2, 3)} == {"act"}


def test_params_given_replace_the_literals_and_new_ones_are_added():
    """A parameter the params hold is used instead of the literal in every occurrence's request; one met for
    the first time starts from its literal; the trace carries the digest of the recording's params."""

    @semgrad.system
    async def agent(ctx, question):
        style = ctx.param("style", "Be brief.")
        first = await ctx.llm("act", instruction="Act.", inputs={"question": question, "style": style})
        return await ctx.llm("act", instruction="Act.", inputs={"first": first})

    start = _record(agent, {"question": "q"}, llm=HashLLM()).params
    trained = start.with_values({"act.instruction": "Act carefully."})
    got = _record(agent, {"question": "q"}, llm=HashLLM(), params=trained)
    assert got.params == trained and got.trace.params == trained.digest
    assert all("Act carefully." in got.trace[n].request.messages[0].content for n in ("act#1", "act#2"))
    assert got.trace.value("style") == "Be brief." and got.graph["style"].kind == "param"


def test_the_same_name_with_two_instructions_in_one_run_is_refused():
    """Occurrences share one instruction: two different literals for one name fail clearly."""

    @semgrad.system
    async def confused(ctx, question):
        a = await ctx.llm("act", instruction="One.", inputs={"question": question})
        return await ctx.llm("act", instruction="Two.", inputs={"a": a})

    with pytest.raises(RecordingError, match="two different instructions"):
        _record(confused, {"question": "q"}, llm=HashLLM())


def test_a_run_past_max_nodes_fails_clearly_even_when_the_function_catches_everything():
    """An unbounded loop fails with RecordingError at max_nodes, even inside a bare except Exception."""

    @semgrad.system(max_nodes=20)
    async def forever(ctx, question):
        note = question
        while True:
            try:
                note = await ctx.llm("act", instruction="Act.", inputs={"note": note})
            except Exception:
                pass

    with pytest.raises(RecordingError, match="more than 20 nodes"):
        _record(forever, {"question": "q"}, llm=HashLLM())


def test_a_raising_tool_records_its_message_and_ends_the_run_unless_caught():
    """A tool that raises after its retries is a failed node whose error holds the message; uncaught, it is
    the trace's output; caught, the run goes on."""

    def broken(query):
        raise KeyError("no invoice numbered 7")

    @semgrad.system
    async def uncaught(ctx, question):
        return await ctx.tool("lookup", broken, query=question)

    @semgrad.system
    async def caught(ctx, question):
        try:
            found = await ctx.tool("lookup", broken, query=question)
        except NodeFailed as failed:
            found = failed.error
        return await ctx.llm("answer", instruction="Answer.", inputs={"found": found})

    got = _record(uncaught, {"question": "q"})
    assert got.trace.output == "lookup" and got.trace.output_value is None
    assert "KeyError" in got.trace["lookup"].error and "no invoice numbered 7" in got.trace["lookup"].error
    went_on = _record(caught, {"question": "q"})
    assert went_on.trace.output == "answer" and "no invoice" in went_on.trace.value("found")
    assert not went_on.trace["lookup"].ok


def test_a_failed_llm_call_raises_node_failed_in_the_function():
    """An LLM call that fails is recorded with its error and raised as NodeFailed naming the node."""

    def failing(request):
        raise LLMFailure(LLMError("server", "HTTP 500"))

    @semgrad.system
    async def one(ctx, question):
        return await ctx.llm("answer", instruction="Answer.", inputs={"question": question})

    got = _record(one, {"question": "q"}, llm=FunctionLLM(failing))
    assert got.trace.output == "answer" and got.trace["answer"].error.kind == "server"

    @semgrad.system
    async def catching(ctx, question):
        try:
            return await ctx.llm("answer", instruction="Answer.", inputs={"question": question})
        except NodeFailed as failed:
            assert (failed.node, failed.error) == ("answer", "server: HTTP 500")
            raise

    assert _record(catching, {"question": "q"}, llm=FunctionLLM(failing)).trace.output == "answer"


@pytest.mark.parametrize("name", ["act#2", "", 3])
def test_a_name_that_is_not_text_or_holds_a_hash_is_refused(name):
    """ctx names are non-empty text without '#', which the occurrences of a repeated step use."""

    @semgrad.system
    async def named(ctx, question):
        return await ctx.llm(name, instruction="Answer.", inputs={"question": question})

    with pytest.raises(RecordingError, match="name|'#'"):
        _record(named, {"question": "q"})


def test_tools_retry_time_out_and_are_counted_apart_from_llm_calls():
    """A tool retried succeeds within its retries; a slow one fails as a timeout; each ctx.tool call counts once
    as a tool call, never an LLM call."""
    attempts = []

    def shaky(query):
        attempts.append(query)
        if len(attempts) < 3:
            raise ConnectionError("try again")
        return "found"

    async def slow(query):
        await anyio.sleep(30)

    @semgrad.system
    async def agent(ctx, question):
        first = await ctx.tool("shaky", shaky, retries=2, query=question)
        try:
            await ctx.tool("slow", slow, timeout=0.01, query=first)
        except NodeFailed as failed:
            assert "no result within" in failed.error
        return await ctx.llm("answer", instruction="Answer.", inputs={"first": first})

    runner = Runner(FunctionLLM(_topic_llm))
    got = _record(agent, {"question": "q"}, llm=runner)
    assert got.trace.value("shaky") == "found" and len(attempts) == 3
    statistics = runner.statistics()
    assert (statistics.calls, statistics.tool_calls, statistics.tool_errors) == (1, 2, 1)
    assert runner.accounts().by("error")["timeout"].tool_errors == 1


def test_a_deterministic_tool_is_replayed_from_the_cache():
    """A tool marked deterministic is called once per distinct arguments across recordings and then answered
    from the cache (a cache hit, not a tool call); one not marked is called every time."""
    calls = []

    def search(query):
        calls.append(query)
        return {"hits": [query, 1]}

    def make(deterministic):
        @semgrad.system
        async def agent(ctx, question):
            found = await ctx.tool("search", search, deterministic=deterministic, query=question)
            return await ctx.llm("answer", instruction="Answer.", inputs={"found": found})

        return agent

    cache, runner = ToolCache(), Runner(HashLLM())
    first = _record(make(True), {"question": "q"}, llm=runner, tool_cache=cache)
    again = _record(make(True), {"question": "q"}, llm=runner, tool_cache=cache)
    assert calls == ["q"] and first.trace == again.trace
    assert (runner.statistics().tool_calls, runner.accounts().total().cache_hits) == (1, 1)
    _record(make(False), {"question": "q"}, llm=runner, tool_cache=cache)
    assert calls == ["q", "q"]


def test_a_tools_description_is_its_docstring_or_the_text_given():
    """A tool's description is its function's docstring (through a partial), or description= when given."""
    import functools

    @semgrad.system
    async def agent(ctx, question):
        a = await ctx.tool("lookup", functools.partial(lookup_invoice), query=question)
        b = await ctx.tool("other", lambda query: query, description="Echo the query.", query=a)
        return await ctx.tool("bare", lambda query: query, query=b)

    got = _record(agent, {"question": "q"})
    assert got.graph["lookup"].description == "Find the invoice a query is about."
    assert (got.graph["other"].description, got.graph["bare"].description) == ("Echo the query.", "")


def test_a_trainable_description_is_a_parameter_shared_by_the_tools_calls():
    """With trainable_description, the description is the parameter '<tool>.description' all calls share."""

    @semgrad.system
    async def agent(ctx, question):
        a = await ctx.tool("lookup", lookup_invoice, trainable_description=True, query=question)
        b = await ctx.tool("lookup", lookup_invoice, trainable_description=True, query=a)
        return await ctx.llm("answer", instruction="Answer.", inputs={"b": b})

    got = _record(agent, {"question": "q"}, llm=HashLLM())
    assert got.params.value("lookup.description") == "Find the invoice a query is about."
    assert {got.graph[n].description_parameter for n in ("lookup#1", "lookup#2")} == {"lookup.description"}
    assert got.graph["lookup#1"].description == ""


def test_a_recorded_graph_with_a_tool_is_refused_by_forward():
    """The core never runs a tool: forward on a recorded graph with a tool node raises InputError."""
    got = _record(support, {"question": "A refund?"})
    with pytest.raises(InputError, match="tool node"):
        forward(got.graph, got.params, {"question": "x"})


def test_an_output_no_node_produced_is_refused_but_an_equal_one_is_traced():
    """Returning the text of a node's value (a copy) finds that node; returning built text fails clearly."""

    @semgrad.system
    async def copying(ctx, question):
        answer = await ctx.llm("answer", instruction="Answer.", inputs={"question": question})
        return str(answer).strip()

    @semgrad.system
    async def building(ctx, question):
        answer = await ctx.llm("answer", instruction="Answer.", inputs={"question": question})
        return f"{answer}!"

    assert _record(copying, {"question": "q"}).trace.output == "answer"
    with pytest.raises(RecordingError, match="no ctx.llm, ctx.tool or ctx.param call produced"):
        _record(building, {"question": "q"})


def test_an_example_whose_fields_are_not_the_inputs_is_refused():
    """An example lacking an input of the function, or with an extra one, raises InputError naming them;
    params that are not Params are refused before anything runs."""
    with pytest.raises(InputError, match="lacks \\['question'\\]"):
        _record(support, {"q": "x"})
    with pytest.raises(TypeError, match="record needs Params"):
        _record(support, {"question": "x"}, params={"answer.instruction": "A."})


def test_accounts_written_before_tools_were_counted_still_read():
    """An accounts line without the tool counts reads back with zero tool calls."""
    old = [{"engine": "forward", "purpose": "forward", "model": "m", "error": ""}]
    old[0].update(calls=2, errors=0, input_tokens=1, output_tokens=1, cache_hits=0, memo_hits=0)
    assert Accounts.from_json(old).total().calls == 2 and Accounts.from_json(old).total().tool_calls == 0


@settings(max_examples=40, deadline=None)
@given(python_systems(), st.lists(st.text(min_size=1, max_size=12), min_size=2, max_size=2), st.text(max_size=4))
def test_random_systems_record_valid_graphs_and_replay_exactly(made, texts, salt):
    """For random systems with branches, loops and tools and a pure fake, a recording is a valid core graph
    whose trace has a run per node with the graph's inputs, every LLM node's instruction is its component's,
    and recording again gives the very same graph, trace and params."""
    target, spec = made
    example = dict(zip(spec.inputs, texts))
    first = _record(target, example, llm=HashLLM(salt))
    again = _record(target, example, llm=HashLLM(salt))
    assert (first.graph, first.trace, first.params) == (again.graph, again.trace, again.params)
    assert first.graph.fingerprint == again.graph.fingerprint
    graph, trace = first.graph, first.trace
    assert tuple(trace.runs) == graph.topological_order and trace.graph == graph.fingerprint
    for name, node in graph.nodes.items():
        assert tuple(source for source, _ in trace[name].inputs) == node.inputs
        if node.kind == "llm":
            assert node.instruction == f"{name.split('#')[0]}.instruction" and node.instruction in first.params
    assert len(graph.nodes) <= target.max_nodes and trace.params == first.params.digest
    output = trace[trace.output]
    if not output.ok:  # an uncaught failure ends the run at the node that failed
        assert graph[trace.output].kind == "tool" and "raised ValueError" in output.error and not spec.catch
    assert isinstance(first.params, Params) and isinstance(trace.runs, FrozenMap)


def test_calls_made_concurrently_in_a_task_group_are_recorded_in_the_order_they_started():
    """Two LLM calls run in a task group are both recorded, in the order they were started, and a
    failure inside the group ends the run at the failed node."""

    @semgrad.system
    async def parallel(ctx, question):
        found = {}

        async def one(name):
            found[name] = await ctx.llm(name, instruction=f"{name}.", inputs={"question": question})

        async with anyio.create_task_group() as group:
            group.start_soon(one, "hint_1")
            group.start_soon(one, "hint_2")
        return await ctx.llm(
            "answer", instruction="Answer.", inputs={"hint_1": found["hint_1"], "hint_2": found["hint_2"]}
        )

    async def slow_first(request):
        await anyio.sleep(0.01 if request.node == "hint_1" else 0)
        return f"<result>{request.node}</result>"

    got = _record(parallel, {"question": "q"}, llm=FunctionLLM(slow_first))
    assert got.graph.topological_order == ("question", "hint_1", "hint_2", "answer")
    assert got.graph["answer"].inputs == ("hint_1", "hint_2") and got.trace.value("hint_1") == "hint_1"

    def failing_second(request):
        if request.node == "hint_2":
            raise LLMFailure(LLMError("server", "HTTP 500"))
        return "<result>x</result>"

    failed = _record(parallel, {"question": "q"}, llm=FunctionLLM(failing_second))
    assert failed.trace.output == "hint_2" and not failed.trace["hint_2"].ok


def test_a_ctx_used_after_its_run_ended_refuses_calls():
    """A ctx kept past the end of its run raises RecordingError on any call."""
    kept = []

    @semgrad.system
    async def leaking(ctx, question):
        kept.append(ctx)
        return ctx.param("p", "v")

    _record(leaking, {"question": "q"})
    with pytest.raises(RecordingError, match="is over"):
        kept[0].param("p", "v")


def test_a_tools_value_of_any_type_is_traced_to_it_and_keeps_its_type():
    """A dict or a str subclass a tool returns reaches the function as it is (same object, same type) and the
    LLM node it is passed to reads it from the tool."""
    import enum

    class Topic(enum.StrEnum):
        BILLING = "billing"

    @semgrad.system
    async def agent(ctx, question):
        record_ = await ctx.tool("fetch", lambda query: {"query": query}, query=question)
        topic = await ctx.tool("topic", lambda query: Topic.BILLING, query=question)
        assert type(topic) is Topic and isinstance(record_, dict)
        return await ctx.llm("answer", instruction="Answer.", inputs={"record": record_, "topic": topic})

    got = _record(agent, {"question": "q"})
    assert got.graph["answer"].inputs == ("fetch", "topic") and got.trace.value("fetch") == {"query": "q"}
