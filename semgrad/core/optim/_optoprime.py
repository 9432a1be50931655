"""Trace's OptoPrime (trace-opt) as a chain: one optimizer call that sees the whole execution.

OptoPrime makes no backward calls: Trace propagates the output's feedback through
the traced graph without an LLM, and `OptoPrime.step()` then makes one call that
shows the traced program -- its code, the documentation of the operations it calls,
the trainable variables and their constraints, the inputs, the intermediate values,
the outputs and the feedback -- and asks for new values of the variables at once.

`optoprime()` carries the same information: `optoprime_update` renders the graph as
code, each LLM node as a call ``node = llm(instruction, inputs...)``, and, for every
selected sample, its inputs, every node's output and the feedback; the reply is the
package's JSON object -- ``reasoning``, ``answer`` and ``suggestion`` (the new value by
variable name) -- asked for in JSON mode (``response_format``, which OpenAI-compatible
servers take and other backends leave out) with OptoPrime's 4,096-token cap. A reply that
is no JSON is read as OptoPrime reads it (its ``"suggestion"`` pairs), and then as
``<improved name="...">`` blocks.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

import attrs
from returns.result import Failure, Result, Success

from .._frozen import FrozenMap
from .._graph import Graph, Params
from .._parse import ParseError
from .._program import Program, ask, map_, pure
from .._requests import LLMRequest, Message
from .._sampling import merged_options
from ._base import EmptyState, Proposal, Step, Transform, require
from ._combining import chain
from ._named_blocks import parse_named
from ._stages import full_update, select_error_samples, validation_gate

__all__ = [
    "OPTOPRIME_OPTIONS",
    "OPTOPRIME_SYSTEM",
    "OPTOPRIME_USER",
    "optoprime",
    "optoprime_update",
    "parse_suggestion",
    "render_optoprime",
]

OPTOPRIME_SYSTEM = (
    "You improve a program whose trainable variables are texts. You are shown the program as code, "
    "the documentation of the operations it calls, the variables you may change and their constraints, "
    "and, for each run of the program, its inputs, the intermediate values it computed, its output and "
    "the feedback on that output. Work out how the variables caused the feedback, then propose new "
    "values for the variables that should change."
)
OPTOPRIME_USER = """#Instruction
{objective}

#Code
{code}

#Documentation
{documentation}

#Variables
{variables}

#Constraints
{constraints}

{runs}

Reply with one JSON object and nothing else, in this form:
{{
  "reasoning": "how the feedback on the outputs follows from the variables, given the code, the \
documentation, the inputs and the other values, and what changing them should do",
  "answer": "an answer, if #Instruction asks for one; otherwise empty",
  "suggestion": {{
{form}
  }}
}}
Put in "suggestion" the new value of each variable you change, by its name (leave out the variables \
that should stay as they are); you may change only the variables in #Variables."""
RUN_BLOCK = """#Run {index}
#Inputs
{inputs}

#Others
{others}

#Outputs
{outputs}

#Feedback
{feedback}"""
DOCUMENTATION = (
    "[llm] llm(instruction, *inputs) asks a language model: the instruction is its system prompt and "
    "the inputs, numbered and labelled, are its user message; it returns the model's reply."
)
#: OptoPrime's call: JSON mode (OpenAI's ``response_format``) and at most 4,096 output tokens.
OPTOPRIME_OPTIONS: FrozenMap[str, Any] = FrozenMap(
    {"max_tokens": 4096, "response_format": FrozenMap({"type": "json_object"})}
)
OBJECTIVE = (
    "Change the variables so that the program's outputs earn better feedback. The feedback on each run's "
    "output is in #Feedback."
)


def _code(graph: Graph) -> str:
    lines = []
    for node in graph.nodes.values():
        if node.kind == "llm":
            lines.append(f"{node.name} = llm({', '.join((str(node.instruction), *node.inputs))})")
        elif node.kind == "function":
            lines.append(f"{node.name} = {node.name}({', '.join(node.inputs)})")
    return "\n".join(lines)


def _documentation(graph: Graph) -> str:
    lines = [DOCUMENTATION]
    for node in graph.nodes.values():
        if node.kind == "function":
            lines.append(f"[{node.name}] a plain function: {node.role}")
    lines.extend(f"[{n.name}] its value is {n.role}" for n in graph.nodes.values() if n.kind in ("llm", "function"))
    return "\n".join(lines)


def _values(pairs: Sequence[tuple[str, Any]]) -> str:
    return "\n".join(f"{name} = {value}" for name, value in pairs) or "(none)"


def render_optoprime(
    graph: Graph,
    params: Params,
    names: Sequence[str],
    runs: Sequence[tuple[Mapping[str, Any], Any]],
    *,
    engine: str = "optimizer",
    options: Mapping[str, Any] | None = None,
) -> LLMRequest:
    """OptoPrime's one request: the graph as code and every run's execution and feedback.

    Args:
        graph, params: The system and its current values.
        names: The trainable variables the reply may change (its ``targets``).
        runs: Per selected sample, ``(value by node name, feedback)``.
    """
    variables = "\n".join(f'<variable name="{n}">\n{params.value(n)}\n</variable>' for n in names)
    constraints = "\n".join(f"{n}: {params[n].role}" for n in names)
    blocks = []
    inputs = [n.name for n in graph.nodes.values() if n.kind == "input"]
    fixed = [n.name for n in graph.nodes.values() if n.kind == "param" and n.name not in names]
    computed = [n.name for n in graph.nodes.values() if n.kind in ("llm", "function") and n.name != graph.output]
    for index, (values, feedback) in enumerate(runs, 1):
        blocks.append(
            RUN_BLOCK.format(
                index=index,
                inputs=_values([(n, values.get(n)) for n in inputs + fixed]),
                others=_values([(n, values.get(n)) for n in computed]),
                outputs=_values([(graph.output, values.get(graph.output))]),
                feedback=feedback,
            )
        )
    user = OPTOPRIME_USER.format(
        objective=OBJECTIVE,
        code=_code(graph),
        documentation=_documentation(graph),
        variables=variables,
        constraints=constraints,
        runs="\n\n".join(blocks),
        form=",\n".join(f'    {json.dumps(n)}: "its new value"' for n in names),
    )
    return LLMRequest(
        (Message("system", OPTOPRIME_SYSTEM), Message("user", user)),
        engine=engine,
        purpose="rewrite",
        targets=tuple(names),
        options=options or {},
    )


def _json_object(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        pass
    span = re.search(r"\{.*\}", text, re.DOTALL)
    if span:
        try:
            return json.loads(span.group(0))
        except ValueError:
            pass
    return None


def parse_suggestion(text: str, names: Sequence[str]) -> Result[FrozenMap[str, str], ParseError]:
    """The new values an OptoPrime reply suggests for `names`, in the order asked.

    The package's JSON object (its ``suggestion``), else its ``"suggestion": {"name": "value", ...}``
    pairs read one by one (as OptoPrime reads a reply that is no JSON), else ``<improved name=...>``
    blocks. Names match in any case; unknown names and empty values are left out; a reply with
    none of them is a `Failure`.

    Examples:
        >>> parse_suggestion('{"reasoning": "r", "answer": "", "suggestion": {"a": "Be brief."}}', ["a", "b"])
        <Success: FrozenMap({'a': 'Be brief.'})>
        >>> parse_suggestion('Sure: "suggestion": {"a": "Be brief."} oops', ["a"])
        <Success: FrozenMap({'a': 'Be brief.'})>
    """
    lookup = {n.casefold(): n for n in names}
    data = _json_object(text)
    pairs: list[tuple[Any, Any]] = []
    if isinstance(data, dict) and isinstance(data.get("suggestion"), dict):
        pairs = list(data["suggestion"].items())
    else:
        block = re.search(r'"suggestion"\s*:\s*\{(.*?)\}', text, re.DOTALL)
        if block:
            pairs = re.findall(r'"([^"]+)"\s*:\s*"(.*)"', block.group(1))
    found: dict[str, str] = {}
    for key, value in pairs:
        name = lookup.get(str(key).strip().casefold())
        shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        if name is not None and shown.strip():
            found[name] = shown.strip()
    if found:
        return Success(FrozenMap((n, found[n]) for n in names if n in found))
    named = parse_named(text, "improved", names)
    if isinstance(named, Success):
        return named
    return Failure(ParseError(f"the reply suggests no new value for {', '.join(names)}", tuple(names)))


def optoprime_update(
    *, engine: str = "optimizer", options: Mapping[str, Any] | None = None, json_mode: bool = True
) -> Transform:
    """One optimizer call for all trainable parameters, from the selected samples' whole execution.

    The call carries `OPTOPRIME_OPTIONS` over the run's options (without ``response_format`` unless
    `json_mode`), and `options` over both.
    """
    own = OPTOPRIME_OPTIONS if json_mode else FrozenMap({"max_tokens": OPTOPRIME_OPTIONS["max_tokens"]})

    def update(step: Step, state: EmptyState, params: Params) -> Program[tuple[Step, EmptyState]]:
        selected = require(step, "selected", "optoprime_update", "select_error_samples()")
        names = step.trainable(params)
        runs = [({n: r.value for n, r in step.traces[i].runs.items()}, step.scores[i].feedback) for i in selected]
        if not names or not runs:
            new = attrs.evolve(step, proposals=FrozenMap()).noted("optoprime_update", "nothing to optimize")
            return pure((new, state))
        asking = merged_options(merged_options(step.options.get(engine), own), options)
        # A system recorded per sample has a graph per trace: the first selected sample's is shown.
        request = render_optoprime(step.graph_of(selected[0]), params, names, runs, engine=engine, options=asking)

        def read(reply: Any) -> tuple[Step, EmptyState]:
            if not isinstance(reply, Success):
                error = reply.failure()
                proposals = {n: Proposal(n, None, f"the call failed ({error.kind}: {error.message})") for n in names}
            else:
                parsed = parse_suggestion(reply.unwrap().text, names)
                found = parsed.unwrap() if isinstance(parsed, Success) else FrozenMap()
                reason = "" if isinstance(parsed, Success) else f"unusable reply: {parsed.failure().reason}"
                proposals = {
                    n: Proposal(n, found[n], "") if n in found else Proposal(n, None, reason or "no new value")
                    for n in names
                }
            notes = [f"{p.param}: {'proposed' if p.ok else 'kept (' + p.reason + ')'}" for p in proposals.values()]
            return attrs.evolve(step, proposals=FrozenMap(proposals)).noted("optoprime_update", *notes), state

        return map_(ask(request), read)

    return Transform(lambda params: EmptyState(), update, "optoprime_update")


def optoprime(
    k: int = 2,
    *,
    seed: int = 0,
    gate: bool | Transform = False,
    engine: str = "optimizer",
    options: Mapping[str, Any] | None = None,
    json_mode: bool = True,
) -> Transform:
    """Trace's OptoPrime as a chain: ``select_error_samples(k) -> optoprime_update -> full_update``.

    One optimizer call per iteration, no backward calls: it sees the whole graph's
    execution (instructions, inputs, every node's output, feedback) for the selected
    samples and returns new values for the trainable parameters at once.

    Args:
        k: Samples shown per iteration (their feedback is summed into one call, as
            Trace does when several outputs are backpropagated before one step).
        seed: Seeds sample selection.
        gate: Add the validation gate (Trace has none; off by default); a `Transform` is
            the gate stage itself (``validation_gate(rule="lcb")``, say).
        engine, options: The logical engine and sampling options of the call.
        json_mode: Ask for JSON mode (``response_format``), as OptoPrime does.

    Examples:
        >>> optoprime().name
        'chain(select_error_samples, optoprime_update, full_update)'
    """
    stages = [
        select_error_samples(k, seed=seed),
        optoprime_update(engine=engine, options=options, json_mode=json_mode),
        full_update(),
    ]
    if gate:
        stages.append(gate if isinstance(gate, Transform) else validation_gate())
    return chain(*stages)
