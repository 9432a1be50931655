"""Hypothesis strategies for semgrad users and its own tests (needs the ``testing`` extra).

* `graphs()`: random valid DAGs, valid by construction (inputs, free parameters,
  LLM nodes, function nodes, dead branches that do not reach the output, frozen
  instructions, names with spaces, capitals or letters beyond ASCII);
* `inputs_for(graph)`: random values for a graph's input fields;
* `pure_llms()`: deterministic fake LLMs whose replies always parse;
* `flaky_llms(rate)`: pure fake LLMs that fail a seeded share of calls;
* `system_of_graph(graph, params)`: a static graph written as a system (``@semgrad.system``),
  which records the graph and makes its forward requests;
* `python_systems()`: random systems written as Python, with branches on what a model
  said, bounded loops and tools (one of which may raise), and their `SystemSpec`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

try:
    from hypothesis import strategies as st
except ModuleNotFoundError as error:  # pragma: no cover - exercised in a subprocess that hides hypothesis
    if not (error.name or "").startswith("hypothesis"):
        raise
    raise ImportError(
        "semgrad.testing needs hypothesis, which is not installed; install the testing extra: "
        "pip install -e '.[testing]' in the semgrad checkout",
        name=__name__,
    ) from error

import attrs

from .backends.fake import HashLLM, _WrappedIdentity
from .core import Graph, GraphBuilder, LLMError, LLMFailure, LLMRequest, Params, request_key
from .effects import NodeFailed, PythonSystem, system
from .effects._protocol import is_async_llm

__all__ = [
    "FlakyLLM",
    "SystemSpec",
    "flaky_llms",
    "graphs",
    "inputs_for",
    "join_text",
    "pure_llms",
    "python_systems",
    "system_of_graph",
]


def join_text(*values: Any) -> str:
    """The function node of generated graphs: join the inputs' text with `` | ``."""
    return " | ".join(str(v) for v in values)


#: Name forms beside the plain ``n_3``: what users write (spaces, letters beyond ASCII, capitals,
#: brackets) within what the builder accepts. Each keeps the node's own prefix and index, so names
#: stay distinct, ignoring case too.
_NAME_FORMS = (
    "{p}_{i}",
    "{p} {i}",
    "{p}_{i} \u00e9tape",
    "\u6b65\u9aa4 {p}{i}",
    "{P}-{i}",
    "[{P}] {i}",
)


@st.composite
def graphs(
    draw: st.DrawFn,
    *,
    max_inputs: int = 3,
    max_params: int = 2,
    max_computed: int = 8,
    functions: bool = True,
    shuffle: bool = True,
    frozen: bool = True,
    unusual_names: bool = True,
) -> tuple[Graph, Params]:
    """Random valid graphs ``(graph, params)``; the output is the last computed node.

    Every computed node reads a non-empty set of earlier nodes, so the graph is
    acyclic and every node is reachable from a source. Nodes are added to the
    builder in a shuffled order (when `shuffle`) to exercise topological sorting.
    With `frozen`, some LLM nodes' instructions are not trainable (``trainable=False``),
    as some free parameters are; with `unusual_names`, some names hold spaces, letters
    beyond ASCII, capitals or brackets (``"n 3"``, ``"[N] 3"``) beside the plain ``"n_3"``.
    """
    n_inputs = draw(st.integers(1, max_inputs))
    n_params = draw(st.integers(0, max_params))
    n_computed = draw(st.integers(1, max_computed))
    forms = st.sampled_from(_NAME_FORMS) if unusual_names else st.just(_NAME_FORMS[0])

    def name_of(prefix: str, i: int) -> str:
        return draw(forms).format(p=prefix, P=prefix.upper(), i=i)

    names = [name_of("in", i) for i in range(n_inputs)] + [name_of("p", i) for i in range(n_params)]
    specs: list[tuple[str, str, tuple[str, ...], bool]] = []
    for i in range(n_computed):
        kind = "function" if functions and draw(st.integers(0, 4)) == 0 else "llm"
        # Latest names first: hypothesis favours a list's first elements, and a node reading only the inputs
        # (which came first) left most outputs with nothing to backpropagate to.
        inputs = draw(st.lists(st.sampled_from(names[::-1]), min_size=1, max_size=min(4, len(names)), unique=True))
        trainable = kind == "function" or not frozen or draw(st.integers(0, 3)) > 0
        specs.append((name_of("f" if kind == "function" else "n", i), kind, tuple(inputs), trainable))
        names.append(specs[-1][0])
    b = GraphBuilder()
    order = list(range(n_inputs + n_params + n_computed))
    if shuffle:
        order = draw(st.permutations(order))
    for index in order:
        if index < n_inputs:
            b.input(names[index])
        elif index < n_inputs + n_params:
            j = index - n_inputs
            b.param(names[index], f"initial value of p_{j}", trainable=draw(st.booleans()) or j == 0)
        else:
            name, kind, inputs, trainable = specs[index - n_inputs - n_params]
            if kind == "llm":
                b.llm(name, inputs=inputs, instruction=f"Instruction of {name}.", trainable=trainable)
            else:
                b.function(name, join_text, inputs=inputs)
    return b.build(output=specs[-1][0])


def inputs_for(graph: Graph, values: st.SearchStrategy[str] | None = None) -> st.SearchStrategy[Mapping[str, str]]:
    """Random values for each input field of `graph`."""
    values = values if values is not None else st.text(min_size=1, max_size=20)
    return st.fixed_dictionaries({name: values for name in graph.inputs})


def pure_llms() -> st.SearchStrategy[HashLLM]:
    """Deterministic fake LLMs (a `HashLLM` with a random salt); their replies always parse."""
    return st.builds(HashLLM, salt=st.text(max_size=8))


class FlakyLLM:
    """Wraps an LLM and fails a seeded share of calls with retryable errors.

    Whether a call fails is a pure function of the seed, the request's key and
    the call's attempt number for that request: how many calls with the same key
    failed in a row before it. A success ends the request, and the next call with
    its key is attempt 0 again. So retries can succeed, and a run is reproducible
    -- on a fresh instance, and on one already used, as long as each of the earlier
    runs' requests ended in a success (a request given up on after failures goes on
    counting its attempts).

    `inner` may be sync or async: this LLM is async when it is.
    """

    KINDS = ("timeout", "rate_limit", "server")

    def __init__(self, inner: Any, rate: float, *, seed: int = 0) -> None:
        self.inner, self.rate, self.seed = inner, rate, seed
        self.is_async = is_async_llm(inner)  # the runner awaits what this returns only when it says so
        self._attempts: dict[str, int] = {}  # per request key: the failures in a row since its last success

    #: The wrapped LLM's identity unless one is set: the failures it injects are never cached.
    identity = _WrappedIdentity("inner")

    def __call__(self, request: LLMRequest) -> Any:
        key = request_key(request)
        attempt = self._attempts.get(key, 0)
        roll = int(hashlib.sha256(f"{self.seed}:{key}:{attempt}".encode()).hexdigest()[:8], 16) / 0xFFFFFFFF
        if roll < self.rate:
            self._attempts[key] = attempt + 1
            kind = self.KINDS[attempt % len(self.KINDS)]
            raise LLMFailure(LLMError(kind, f"injected {kind} failure", retryable=True))
        self._attempts.pop(key, None)
        return self.inner(request)


def flaky_llms(rate: float = 0.2) -> st.SearchStrategy[FlakyLLM]:
    """Pure fakes that fail about `rate` of calls with retryable errors."""
    return st.builds(lambda llm, seed: FlakyLLM(llm, rate, seed=seed), pure_llms(), st.integers(0, 2**16))


def system_of_graph(graph: Graph, params: Params) -> PythonSystem:
    """`graph` written as a system: its nodes called in topological order, each LLM node with
    ``ctx.llm`` (its instruction, role, format and flags), each free parameter with ``ctx.param``;
    recorded, it gives the same graph, trace and forward requests as ``forward(graph, ...)``.
    Function nodes have no ``ctx`` call: a graph with one is refused.

    Examples:
        >>> import anyio
        >>> from semgrad.effects import record
        >>> b = GraphBuilder(); q = b.input("question")
        >>> _ = b.llm("answer", inputs=[q], instruction="Solve the problem.")
        >>> graph, params = b.build(output="answer")
        >>> recorded = anyio.run(lambda: record(system_of_graph(graph, params), params, {"question": "2+2?"},
        ...                                     llm=HashLLM()))
        >>> recorded.graph == graph
        True
    """
    functions = graph.of_kind("function")
    if functions:
        raise ValueError(f"function nodes {functions!r} have no ctx call: a system cannot write them")

    async def static(ctx: Any, **inputs: Any) -> Any:
        values: dict[str, Any] = dict(inputs)
        for name in graph.topological_order:
            node = graph[name]
            if node.kind == "param":
                parameter = params[name]
                values[name] = ctx.param(name, parameter.value, role=node.role, trainable=parameter.trainable)
            elif node.kind == "llm":
                instruction = params[node.instruction]  # type: ignore[index]
                values[name] = await ctx.llm(
                    name,
                    instruction=instruction.value,
                    inputs={source: values[source] for source in node.inputs},
                    role=node.role,
                    trainable=instruction.trainable,
                    output_format=node.output_format,
                    reason=node.reason,
                )
        return values[graph.output]

    static.__name__ = "static_graph"
    return system(static)  # type: ignore[no-any-return]


@attrs.frozen
class SystemSpec:
    """What a random system of `python_systems` does, as data.

    A step is ``("llm", name, reads)``, ``("tool", name, reads)`` (``reads``: positions in the
    values so far, taken modulo their number, so any position is valid on any path),
    ``("branch", read, then, otherwise)`` (``then`` when the value read has an even length)
    or ``("loop", bound, body)`` (at most `bound` rounds; it stops early after a round whose
    last value's length is a multiple of 3). The tool ``"flaky"`` raises when its
    arguments' lengths add up to an even number; with `catch`, the system goes on with the
    message as a constant, else the run ends at the failed tool.
    """

    inputs: tuple[str, ...]
    steps: tuple[Any, ...]
    catch: bool = False


def _tool_value(**arguments: Any) -> str:
    """The result of a random system's tools: a digest of its arguments."""
    text = "|".join(f"{k}={v}" for k, v in sorted(arguments.items()))
    return "tool:" + hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()[:8]


def _flaky_tool(**arguments: Any) -> str:
    """A tool that raises for some arguments (their texts' lengths add up to an even number)."""
    if sum(len(str(v)) for v in arguments.values()) % 2 == 0:
        raise ValueError("no result for these arguments")
    return _tool_value(**arguments)


async def _run_steps(ctx: Any, spec: SystemSpec, steps: tuple[Any, ...], values: list[Any]) -> None:
    for step in steps:
        if step[0] in ("llm", "tool"):
            _, name, reads = step
            shown = {f"v{i % len(values)}": values[i % len(values)] for i in reads}
            if step[0] == "llm":
                values.append(await ctx.llm(name, instruction=f"Do {name}.", inputs=shown))
                continue
            fn = _flaky_tool if name == "flaky" else _tool_value
            try:
                values.append(await ctx.tool(name, fn, **shown))
            except NodeFailed as failed:
                if not spec.catch:
                    raise
                values.append(failed.error)
        elif step[0] == "branch":
            _, read, then, otherwise = step
            chosen = then if len(str(values[read % len(values)])) % 2 == 0 else otherwise
            await _run_steps(ctx, spec, chosen, values)
        else:
            _, bound, body = step
            for _ in range(bound):
                await _run_steps(ctx, spec, body, values)
                if len(str(values[-1])) % 3 == 0:
                    break


def _system_of_spec(spec: SystemSpec) -> PythonSystem:
    async def random_system(ctx: Any, **inputs: Any) -> Any:
        values = [inputs[name] for name in spec.inputs]
        await _run_steps(ctx, spec, spec.steps, values)
        return values[-1]  # an LLM call's value: every block ends with one

    return system(random_system)  # type: ignore[no-any-return]


@st.composite
def _steps(draw: st.DrawFn, depth: int, names: list[str]) -> tuple[Any, ...]:
    steps: list[Any] = []
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(("llm", "llm", "tool", "branch", "loop") if depth < 2 else ("llm", "tool")))
        reads = tuple(draw(st.lists(st.integers(0, 50), min_size=1, max_size=3)))
        if kind == "llm":
            steps.append(("llm", draw(st.sampled_from(names)), reads))
        elif kind == "tool":
            steps.append(("tool", draw(st.sampled_from(("search", "flaky"))), reads))
        elif kind == "branch":
            steps.append(("branch", reads[0], draw(_steps(depth + 1, names)), draw(_steps(depth + 1, names))))
        else:
            steps.append(("loop", draw(st.integers(1, 3)), draw(_steps(depth + 1, names))))
    steps.append(("llm", draw(st.sampled_from(names)), (draw(st.integers(0, 50)),)))  # an LLM node ends each block
    return tuple(steps)


@st.composite
def python_systems(draw: st.DrawFn, *, max_inputs: int = 2) -> tuple[PythonSystem, SystemSpec]:
    """Random systems written as Python ``(system, spec)``: LLM calls, tools (``"search"``, and
    ``"flaky"``, which raises for some arguments), branches on what a model said, and bounded
    loops (so components are called several times: occurrences). Their inputs are the
    spec's ``inputs`` (``"x0"``, ``"x1"``, ...): an example is ``{name: text}`` for each.
    """
    inputs = tuple(f"x{i}" for i in range(draw(st.integers(1, max_inputs))))
    names = [f"step_{i}" for i in range(draw(st.integers(1, 3)))]
    spec = SystemSpec(inputs, draw(_steps(0, names)), draw(st.booleans()))
    return _system_of_spec(spec), spec
