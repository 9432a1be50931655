"""The recorder: one call of a system written as Python becomes a core `Graph` and `Trace`.

Theory of operation
-------------------
`record(system, params, example, llm=...)` calls the system's function with a
`Context` (``ctx``) and the example's inputs. Each input is an input node. Each
``await ctx.llm(name, instruction=..., inputs={...})`` is an LLM node: its request is
the one the core's forward pass would make for that node (`core.programs.llm_call`),
answered through a `Runner`, and its data edges come from the `inputs` given. Each
``await ctx.tool(name, fn, **arguments)`` is a tool node, called in this layer
(`_tools.call_tool`: a timeout, retries, a cache when deterministic) and counted as a
tool call, never an LLM call. ``ctx.param(name, value)`` is a free trainable text.

A value is traced back to the node that produced it: what ``ctx.llm`` returns, and
the inputs, params and text results of tools, are ``str`` values that carry the node
(a subclass of ``str``); other values a tool returns are known by identity. A value
that came from no node (a literal, an f-string, text the function built) is a
constant: an input node of its own, named by its key (or ``"<node>.<key>"`` when that
name is taken). A value from a node is shown to the LLM under that node's name.

Loops: a name called several times in one run becomes one node per call, ``act#1``,
``act#2``, ... (the first call is renamed when the second is made), all sharing the
parameter ``act.instruction``; a request keeps the component's name (``node="act"``)
and the names it was sent with. A run has at most ``system.max_nodes`` nodes, past
which recording fails with `RecordingError`.

Failures: a call that fails (an LLM error, a reply unreadable after a repair, a tool
that raised or ran out of time after its retries) is recorded as that node's error
and raised in the function as `NodeFailed`; when the function lets it through, the
run ends there and the failed node is the trace's output, so its message reaches the
feedback. The output is otherwise the node that produced the returned value.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Mapping
from typing import Any, NamedTuple

import attrs

from ..core import Example, FrozenMap, Graph, GraphBuilder, InputError, Node, NodeRun, Params, SemgradError, Trace
from ..core._graph import Parameter, description_name, instruction_name
from ..core.programs import llm_call
from ._runner import Runner
from ._system import PythonSystem, system
from ._tools import ToolCache, call_tool

__all__ = ["Context", "NodeFailed", "Recording", "RecordingError", "record"]


class RecordingError(SemgradError):
    """A run that cannot be recorded: more nodes than ``max_nodes``, an output no node produced, a misuse of ctx."""


class _Stopped(BaseException):
    """Ends a run past ``max_nodes`` through the user's function: a `BaseException`, as a cancellation
    is, so that an ``except Exception`` in a loop cannot swallow it; `record` raises its `RecordingError`."""

    def __init__(self, error: RecordingError) -> None:
        super().__init__(str(error))
        self.error = error


class NodeFailed(Exception):
    """Raised in a system's function when one of its calls failed (see the module's theory of operation):
    catch it to go on (``failed.error`` is the message), or let it through to end the run at that node.

    Attributes:
        node: The node's name when it failed (``"lookup"``, ``"act#3"``).
        error: Why: the tool's exception and its message, or the LLM call's error.
    """

    def __init__(self, node: str, error: str, *, owner: Any = None, index: int = -1) -> None:
        super().__init__(f"node {node!r} failed: {error}")
        self.node = node
        self.error = error
        self._owner = owner
        self._index = index


class Recording(NamedTuple):
    """One recorded run: its `Graph`, its `Trace`, and the `Params` it ran with.

    `params` are the params given, followed by the parameters the run met for the first
    time with their starting values (the literals in the code); ``trace.params`` is their
    digest, so ``backward(graph, params, trace, ...)`` accepts them.
    """

    graph: Graph
    trace: Trace
    params: Params


class _Traced(str):
    """Text that remembers the recorded node that produced it (which recorder, which node)."""

    _semgrad_owner: Any
    _semgrad_node: int


@attrs.define
class _Rec:
    """A node as the recorder keeps it until the run ends."""

    kind: str  # "input" (inputs and constants), "param", "llm" or "tool"
    component: str
    inputs: list[int] = attrs.Factory(list)
    arguments: tuple[str, ...] = ()
    role: str = ""
    value: Any = None
    error: Any = None
    run: NodeRun | None = None
    occurrence: int = 0
    options: dict[str, Any] = attrs.Factory(dict)  # the builder's keywords


class Context:
    """The ``ctx`` a system's function gets: ``ctx.llm``, ``ctx.tool`` and ``ctx.param`` (see `record`).

    * ``ctx.param(name, value, role=..., trainable=True)``: a free trainable text (the same node
      however often it is asked for); its value now, `value` the first time.
    * ``await ctx.llm(name, instruction=..., inputs={...}, role=..., trainable=True,
      output_format="", reason=True)``: one LLM call, as `GraphBuilder.llm` describes the node.
    * ``await ctx.tool(name, fn, timeout=None, retries=0, deterministic=False, description=None,
      trainable_description=False, **arguments)``: ``fn(**arguments)``, sync or async. These
      keywords are ctx's own, so a tool's arguments cannot have their names.

    A failed call raises `NodeFailed`.

    Examples:
        >>> import anyio
        >>> from semgrad.backends import fake
        >>> def lookup(query):
        ...     \"\"\"Find an invoice.\"\"\"
        ...     raise KeyError(query)
        >>> async def support(ctx, question):
        ...     style = ctx.param("style", "Be brief.")
        ...     try:
        ...         facts = await ctx.tool("lookup", lookup, retries=1, query=question)
        ...     except NodeFailed as failed:
        ...         facts = failed.error
        ...     return await ctx.llm("answer", instruction="Answer.", inputs={"q": question, "s": style, "f": facts})
        >>> llm = fake.FunctionLLM(lambda request: "<result>ok</result>")
        >>> graph, trace, _ = anyio.run(lambda: record(support, None, {"question": "17?"}, llm=llm))
        >>> graph["answer"].inputs, trace["lookup"].error
        (('question', 'style', 'f'), "tool 'lookup' raised KeyError: '17?'")
    """

    def __init__(
        self,
        system: PythonSystem,
        params: Params,
        sample: Any,
        runner: Runner,
        tool_cache: ToolCache | None,
        engine: str,
        options: Mapping[str, Any] | None,
    ) -> None:
        self._system = system
        self._params = params
        self._sample = sample
        self._runner = runner
        self._tool_cache = tool_cache
        self._engine = engine
        self._options = options
        self._recs: list[_Rec] = []
        self._calls: dict[str, int] = {}
        self._names: set[str] = set()  # every name taken so far, casefolded (constants are named against it)
        self._identity: dict[int, tuple[Any, int]] = {}
        self._literals: dict[str, Any] = {}  # component -> the literal instruction or description of its first call
        self._over: RecordingError | None = None
        self._finished = False  # the run is over: a call now raises RecordingError itself

    # -- the user's calls ---------------------------------------------------------------------------------------

    def param(self, name: str, value: Any, *, role: str = "", trainable: bool = True) -> Any:
        """A free trainable text named `name` (`value` is its starting value); the same node on every call."""
        self._check_open()
        _check_name("ctx.param", name)
        found = next((i for i, rec in enumerate(self._recs) if rec.kind == "param" and rec.component == name), None)
        if found is None:
            if name in self._params:
                value = self._params.value(name)
            else:
                self._new_parameter(Parameter(name, value, role or f"the variable '{name}'", trainable))
            found = self._add(_Rec("param", name, role=role, value=value, options={"trainable": trainable}))
        return self._traced(self._recs[found].value, found)

    async def llm(
        self,
        name: str,
        *,
        instruction: str,
        inputs: Mapping[str, Any],
        role: str = "",
        trainable: bool = True,
        output_format: str = "",
        reason: bool = True,
    ) -> str:
        """One LLM call: an LLM node whose instruction is the parameter ``f"{name}.instruction"``."""
        self._check_open()
        _check_name("ctx.llm", name)
        if not isinstance(inputs, Mapping):
            raise RecordingError(
                f"ctx.llm({name!r}): inputs must be a mapping of labels to values, got {type(inputs).__name__}"
            )
        self._instruction(name, instruction, trainable)
        sources = self._sources(name, inputs, tool=False)
        options = {"trainable": trainable, "output_format": output_format, "reason": reason}
        index = self._call(_Rec("llm", name, sources[0], role=role, options=options))
        node = Node(name, "llm", output_format=output_format, reason=reason)
        shown = tuple((self._name(s), self._role(s), _plain(self._recs[s].value)) for s in sources[0])
        program = llm_call(node, self._params, shown, sample=self._sample, engine=self._engine, options=self._options)
        while not program.done:  # one request at a time (a repair comes after the reply it repairs)
            ((token, request),) = program.emitted
            program = program.feed(token, await self._runner.ask(request))
        run = program.value
        rec = self._recs[index]
        rec.run = run
        if run.error is not None:
            rec.error = run.error
            raise NodeFailed(self._name(index), _error_text(run.error), owner=self, index=index)
        rec.value = run.value
        return self._traced(run.value, index)  # type: ignore[no-any-return]

    async def tool(
        self,
        name: str,
        fn: Any,
        /,
        *,
        timeout: float | None = None,
        retries: int = 0,
        deterministic: bool = False,
        description: str | None = None,
        trainable_description: bool = False,
        **arguments: Any,
    ) -> Any:
        """One tool call ``fn(**arguments)`` (sync or async): a tool node, run as an effect."""
        self._check_open()
        _check_tool(name, fn, timeout, retries)
        text = _docstring(fn) if description is None else description
        if trainable_description:
            text = self._description(name, text)
        inputs, keywords = self._sources(name, arguments, tool=True)
        options = {"description": text, "trainable_description": trainable_description}
        index = self._call(_Rec("tool", name, inputs, arguments=keywords, options=options))
        plain = {key: _plain(value) for key, value in arguments.items()}
        cache = self._tool_cache if deterministic else None
        outcome = await call_tool(name, fn, plain, timeout, retries, cache)
        self._runner.count_tool(name, error=outcome.kind, cache_hit=outcome.cache_hit)
        rec = self._recs[index]
        if outcome.kind:
            rec.error = outcome.error
            raise NodeFailed(self._name(index), outcome.error, owner=self, index=index)
        rec.value = outcome.value
        return self._traced(outcome.value, index)

    # -- what the calls share -----------------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._over is not None:
            if self._finished:
                raise self._over
            raise _Stopped(self._over)

    def _add(self, rec: _Rec) -> int:
        if len(self._recs) >= self._system.max_nodes:
            self._over = RecordingError(
                f"system {self._system.name!r} recorded more than {self._system.max_nodes} nodes on sample"
                f" {self._sample!r}: a loop that does not end? Bound it in the function, or raise"
                " max_nodes (@semgrad.system(max_nodes=...))"
            )
            raise _Stopped(self._over)
        self._recs.append(rec)
        self._names.add(rec.component.casefold())
        return len(self._recs) - 1

    def _call(self, rec: _Rec) -> int:
        """Add the node of one call of a component (the k-th call is occurrence k)."""
        previous = next((r.kind for r in self._recs if r.component == rec.component and r.occurrence), rec.kind)
        if previous != rec.kind:
            raise RecordingError(
                f"{rec.component!r} is called as a {previous} and as a {rec.kind}: give them two names"
            )
        rec.occurrence = self._calls.get(rec.component, 0) + 1
        index = self._add(rec)
        self._calls[rec.component] = rec.occurrence
        self._names.add(self._name(index).casefold())
        return index

    def _name(self, index: int) -> str:
        """The node's name now: ``act#k`` once its component has been called more than once."""
        rec = self._recs[index]
        if rec.occurrence and self._calls.get(rec.component, 1) > 1:
            return f"{rec.component}#{rec.occurrence}"
        return rec.component

    def _role(self, index: int) -> str:
        """The node's role as a prompt shows it (the builder's default when the user gave none)."""
        rec = self._recs[index]
        if rec.role:
            return rec.role
        name = self._name(index)
        return {
            "input": f"the input '{name}'",
            "param": f"the variable '{name}'",
            "llm": f"the output of component '{name}'",
        }.get(rec.kind, f"the result of tool '{name}'")

    def _traced(self, value: Any, index: int) -> Any:
        """`value` as the function gets it: text that carries its node, or another value known by identity."""
        if type(value) is str or type(value) is _Traced:  # a subclass of str keeps its type: known by identity
            traced = _Traced(value)
            traced._semgrad_owner = self
            traced._semgrad_node = index
            return traced
        self._identity[id(value)] = (value, index)
        return value

    def _source(self, value: Any) -> int | None:
        """The node that produced `value`, or None for a constant."""
        if isinstance(value, _Traced) and getattr(value, "_semgrad_owner", None) is self:
            return value._semgrad_node
        found = self._identity.get(id(value))
        return found[1] if found is not None and found[0] is value else None

    def _sources(self, owner: str, given: Mapping[str, Any], *, tool: bool) -> tuple[list[int], tuple[str, ...]]:
        """The nodes feeding a call, and for a tool the keyword each one feeds; a constant becomes an input node.

        A node given twice feeds an LLM once; a tool's second keyword from the same node gets a constant.
        """
        sources: list[int] = []
        keywords: list[str] = []
        for key, value in given.items():
            if not isinstance(key, str):
                raise RecordingError(f"{owner!r}: the labels of its inputs must be text, got {key!r}")
            index = self._source(value)
            if index is not None and index in sources:
                if not tool:
                    continue
                index = None
            if index is None:
                index = self._add(
                    _Rec(
                        "input", self._constant_name(owner, key), role=f"a fixed value given to '{owner}'", value=value
                    )
                )
            sources.append(index)
            keywords.append(key)
        return sources, tuple(keywords)

    def _constant_name(self, owner: str, key: str) -> str:
        for name in (key, f"{owner}.{key}"):
            if name.casefold() not in self._names and instruction_name(name).casefold() not in self._names:
                return name
        k = 2
        while f"{owner}.{key} {k}".casefold() in self._names:
            k += 1
        return f"{owner}.{key} {k}"

    def _new_parameter(self, parameter: Parameter) -> None:
        self._params = Params(self._params.items_.set(parameter.name, parameter))
        self._names.add(parameter.name.casefold())

    def _instruction(self, name: str, literal: str, trainable: bool) -> None:
        """Check the literal instruction of a call of `name`; a new component's becomes its parameter."""
        if not isinstance(literal, str) or not literal.strip():
            raise RecordingError(f"ctx.llm({name!r}) needs a non-empty instruction")
        first = self._literals.setdefault(name, literal)
        if first != literal:
            raise RecordingError(f"ctx.llm({name!r}) was called with two different instructions in one run")
        pname = instruction_name(name)
        if pname not in self._params:
            self._new_parameter(Parameter(pname, literal, f"the instruction of component '{name}'", trainable, name))

    def _description(self, name: str, literal: str) -> str:
        """A trainable tool description's current text (a new one becomes its parameter)."""
        pname = description_name(name)
        if pname not in self._params:
            self._new_parameter(Parameter(pname, literal, f"the description of tool '{name}'", True, name))
        return str(self._params.value(pname))

    # -- the end of the run -------------------------------------------------------------------------------------

    def _output(self, returned: Any) -> int:
        """The node that produced the returned value: by identity, else the latest node of an equal value."""
        index = self._source(returned)
        if index is not None:
            return index
        for index in reversed(range(len(self._recs))):
            rec = self._recs[index]
            if rec.error is None and rec.kind != "input" and _equal(rec.value, returned):
                return index
        raise RecordingError(
            f"system {self._system.name!r} returned a value that no ctx.llm, ctx.tool or ctx.param call produced"
            f" ({type(returned).__name__}): return one of their values as it is, so the output is a node"
        )

    def finish(self, output: int) -> Recording:
        """The run's `Recording`, the output being node `output`."""
        final = [self._name(i) for i in range(len(self._recs))]
        builder = GraphBuilder()
        for index, rec in enumerate(self._recs):
            _build(builder, rec, final[index], [final[s] for s in rec.inputs], self._of(index), self._params)
        graph, _ = builder.build(output=final[output])
        runs = [(final[i], self._run(i, final)) for i in range(len(self._recs))]
        trace = Trace(self._sample, graph.fingerprint, graph.output, FrozenMap(runs), params=self._params.digest)
        return Recording(graph, trace, self._params)

    def _of(self, index: int) -> str:
        """The component a node is an occurrence of ("" when its component was called once)."""
        rec = self._recs[index]
        return rec.component if rec.occurrence and self._calls[rec.component] > 1 else ""

    def _run(self, index: int, final: list[str]) -> NodeRun:
        """Node `index`'s run, under the final names."""
        rec = self._recs[index]
        inputs = tuple((final[s], _plain(self._recs[s].value)) for s in rec.inputs)
        me = final[index]
        if rec.run is not None:
            return attrs.evolve(rec.run, node=me, inputs=inputs)
        return NodeRun(me, rec.kind, inputs, None if rec.error is not None else _plain(rec.value), error=rec.error)


def _build(builder: GraphBuilder, rec: _Rec, name: str, inputs: list[str], of: str, params: Params) -> None:
    """Add one recorded node to the builder."""
    if rec.kind == "input":
        builder.input(name, role=rec.role)
    elif rec.kind == "param":
        builder.param(name, params.value(name), role=rec.role, trainable=params[name].trainable)
    elif rec.kind == "llm":
        parameter = params[instruction_name(rec.component)]
        options = {"output_format": rec.options["output_format"], "reason": rec.options["reason"]}
        builder.llm(
            name,
            inputs=inputs,
            instruction=parameter.value,
            role=rec.role,
            trainable=parameter.trainable,
            occurrence_of=of,
            **options,
        )
    else:
        builder.tool(
            name,
            inputs=inputs,
            arguments=rec.arguments,
            description=rec.options["description"],
            trainable_description=rec.options["trainable_description"],
            role=rec.role,
            occurrence_of=of,
        )


def _plain(value: Any) -> Any:
    """A traced text as plain ``str`` (what a trace holds and a tool gets); any other value as it is."""
    return str.__str__(value) if isinstance(value, _Traced) else value


def _equal(a: Any, b: Any) -> bool:
    try:
        return type(_plain(a)) is type(_plain(b)) and bool(a == b)
    except Exception:  # a value whose == raises or is ambiguous (an array) is not this one
        return False


def _check_name(call: str, name: Any) -> None:
    """Refuse a name that is not non-empty text, or holds ``#`` (kept for the occurrences ``act#2``)."""
    if not isinstance(name, str) or not name:
        raise RecordingError(f"{call} needs a name (non-empty text), got {name!r}")
    if "#" in name:
        raise RecordingError(f"{call}({name!r}): '#' is kept for the calls of a repeated step (act#1, act#2)")


def _docstring(fn: Any) -> str:
    """What a tool's function says it does: its docstring (a partial's function's), or ""."""
    while isinstance(fn, functools.partial):
        fn = fn.func
    return inspect.getdoc(fn) or ""


def _error_text(error: Any) -> str:
    """A failed call's error as the text `NodeFailed` carries: ``"server: HTTP 500"`` for an `LLMError`."""
    kind, message = getattr(error, "kind", None), getattr(error, "message", None)
    return f"{kind}: {message}" if isinstance(kind, str) and isinstance(message, str) else str(error)


def _check_tool(name: Any, fn: Any, timeout: Any, retries: Any) -> None:
    _check_name("ctx.tool", name)
    if not callable(fn):
        raise RecordingError(f"ctx.tool({name!r}, fn): fn must be a function, got {type(fn).__name__}")
    if timeout is not None and not (isinstance(timeout, (int, float)) and timeout > 0):
        raise RecordingError(f"ctx.tool({name!r}): timeout must be a positive number of seconds, got {timeout!r}")
    if type(retries) is not int or retries < 0:
        raise RecordingError(f"ctx.tool({name!r}): retries must be a whole number of at least 0, got {retries!r}")


def _inputs_of(target: PythonSystem, example: Any) -> tuple[dict[str, Any], Any]:
    """The inputs to call the function with, in its order, and the sample id; `InputError` when they do not fit."""
    if isinstance(example, Example):
        inputs, sample = dict(example.inputs), example.id
    elif isinstance(example, Mapping):
        inputs, sample = dict(example), None
    else:
        raise InputError(f"record needs an Example or a mapping of inputs, got {type(example).__name__}")
    if target.inputs is None:
        return inputs, sample
    missing = [n for n in target.inputs if n not in inputs]
    extra = [n for n in inputs if n not in target.inputs]
    if missing or extra:
        raise InputError(
            f"system {target.name!r} takes the inputs {', '.join(map(repr, target.inputs))};"
            f" the example lacks {missing or 'none'} and has unexpected {extra or 'none'}"
        )
    return {n: inputs[n] for n in target.inputs}, sample


async def record(
    target: PythonSystem | Any,
    params: Params | None,
    example: Example | Mapping[str, Any],
    *,
    llm: Any,
    tool_cache: ToolCache | None = None,
    sample: Any = ...,
    engine: str = "forward",
    options: Mapping[str, Any] | None = None,
) -> Recording:
    """Run `target` (a `PythonSystem`, or an async function ``fn(ctx, **inputs)``) on one example and
    record it: ``(graph, trace, params)`` of the nodes that actually ran (see the module's theory of operation).

    Args:
        target: The system.
        params: Its current parameters (None: none yet); names the run meets for the first time
            start from the literals in the code and are added to the recording's params.
        example: An `Example` (its id is the sample) or a mapping of its inputs.
        llm: An LLM, or a `Runner` to make the calls with (its statistics then count them, and
            the tool calls apart).
        tool_cache: Where deterministic tools (``deterministic=True``) keep their results.
        sample: The requests' sample id (default: the example's id).
        engine, options: The forward requests' engine and options, as `forward` takes them.

    Raises:
        RecordingError: More nodes than ``max_nodes``, or an output that no node produced.
        InputError: An example whose fields are not the function's inputs.

    Examples:
        >>> from semgrad.backends import fake
        >>> @system
        ... async def support(ctx, question):
        ...     topic = await ctx.llm("classify", instruction="Name the topic.", inputs={"question": question})
        ...     return await ctx.llm("answer", instruction="Answer.", inputs={"question": question, "classify": topic})
        >>> llm = fake.FunctionLLM(lambda r: "billing" if r.node == "classify" else "Sorry.")
        >>> import anyio
        >>> graph, trace, params = anyio.run(lambda: record(support, None, {"question": "Refund?"}, llm=llm))
        >>> graph.topological_order, trace.output_value, list(params)
        (('question', 'classify', 'answer'), 'Sorry.', ['classify.instruction', 'answer.instruction'])
    """
    target = target if isinstance(target, PythonSystem) else system(target)
    if params is not None and not isinstance(params, Params):
        raise TypeError(f"record needs Params (or None for none yet), got {type(params).__name__}")
    inputs, example_id = _inputs_of(target, example)
    runner = llm if isinstance(llm, Runner) else Runner(llm)
    ctx = Context(
        target,
        params or Params(FrozenMap()),
        example_id if sample is ... else sample,
        runner,
        tool_cache,
        engine,
        options,
    )
    values = {name: ctx._traced(value, ctx._add(_Rec("input", name, value=value))) for name, value in inputs.items()}
    try:
        output = await _called(target, ctx, values)
    finally:
        ctx._finished = True
        ctx._over = RecordingError(f"the run of system {target.name!r} is over: its ctx takes no more calls")
    return ctx.finish(output)


async def _called(target: PythonSystem, ctx: Context, values: dict[str, Any]) -> int:
    """Call the system's function; the output node: the one that produced its value, or the failed node
    of a `NodeFailed` it let through (alone, or in the group a task group raises)."""
    try:
        returned = await target.fn(ctx, **values)
        if ctx._over is not None:  # the function swallowed the stop itself
            raise _Stopped(ctx._over)
    except _Stopped as stopped:
        raise stopped.error from None
    except NodeFailed as failed:
        if failed._owner is not ctx:
            raise
        return failed._index
    except BaseExceptionGroup as group:  # calls made in a task group
        stops = [e for e in _leaves(group) if isinstance(e, _Stopped)]
        if stops:
            raise stops[0].error from None
        leaves = _leaves(group)
        ours = [e._index for e in leaves if isinstance(e, NodeFailed) and e._owner is ctx]
        if not ours or len(ours) != len(leaves):
            raise
        return min(ours)
    return ctx._output(returned)


def _leaves(group: BaseException) -> list[BaseException]:
    if isinstance(group, BaseExceptionGroup):
        return [leaf for e in group.exceptions for leaf in _leaves(e)]
    return [group]
