"""Prompt rendering: pure functions from domain values to `LLMRequest`s.

All wording is ours. Templates are module constants so they can be read in one
place and golden-tested; renderers only fill them in.
"""

from __future__ import annotations

import string
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

from ._frozen import FrozenMap, freeze
from ._requests import _NO_OPTIONS, LLMRequest, Message, SampleId, _message, _request

__all__ = [
    "Shown",
    "feedback_form",
    "format_inputs",
    "NeighborAwarePrompt",
    "forward_request",
    "forward_system",
    "forward_user",
    "render_critique",
    "render_examples",
    "render_forward",
    "render_forward_repair",
    "render_neighbor_aware",
    "render_per_edge",
    "render_repair",
    "render_rewrite",
    "render_summarize",
    "render_tool_backward",
]

#: One input as a prompt shows it: ``(name, role, value)``.
Shown = tuple[str, str, Any]

#: The tag a forward reply wraps its result in; what is inside flows on and is scored.
RESULT_TAG = "result"
FORWARD_SYSTEM = (
    "Follow your instruction on your inputs: reason step by step, then give your result between "
    "<result> and </result>; only it is passed on.\n\n"
    "Instruction:\n{instruction}"
)
#: `FORWARD_SYSTEM` for a node not asked to reason (`Node.reason` False).
FORWARD_SYSTEM_DIRECT = (
    "Follow your instruction on your inputs and give your result between <result> and </result>; "
    "only it is passed on.\n\n"
    "Instruction:\n{instruction}"
)
#: Appended to a forward system message for a node with a fixed `Node.output_format`.
FORWARD_FORMAT = "\n\nForm of the result (fixed):\n{output_format}"
FORWARD_REPAIR_USER = (
    "Your reply could not be read: {reason}. Reply again, ending with your result between <result> and </result>."
)
NO_INPUTS = "(This component has no inputs.)"


def format_inputs(shown: Sequence[Shown]) -> str:
    """Number and label each input: ``[i] name (role):`` then its value.

    Examples:
        >>> print(format_inputs([("question", "the question", "2+2?")]))
        [1] question (the question):
        2+2?
    """
    if not shown:
        return NO_INPUTS
    parts = []
    i = 0
    for name, role, value in shown:
        i += 1
        parts.append(f"[{i}] {name} ({role}):\n{value}")
    return "\n\n".join(parts)


def forward_system(instruction: str, output_format: str = "", *, reason: bool = True) -> Message:
    """The system message of a forward request: the frame and the node's instruction, then its
    fixed output format when it has one; `reason` False drops the request to think first.

    Examples:
        >>> print(forward_system("Judge the party's view.", "Reply in at most two sentences.", reason=False).content)
        ... # doctest: +ELLIPSIS
        Follow your instruction on your inputs and give your result between <result> and </result>; only it ...
        Instruction:
        Judge the party's view.
        <BLANKLINE>
        Form of the result (fixed):
        Reply in at most two sentences.
    """
    text = (FORWARD_SYSTEM if reason else FORWARD_SYSTEM_DIRECT).format(instruction=instruction)
    return _message("system", text + (FORWARD_FORMAT.format(output_format=output_format) if output_format else ""))


def render_forward(
    node: str,
    instruction: str,
    shown: Sequence[Shown],
    *,
    sample: SampleId = None,
    engine: str = "forward",
    options: Mapping[str, Any] | None = None,
    output_format: str = "",
    reason: bool = True,
) -> LLMRequest:
    """The forward request of an LLM node: its instruction and its inputs (`output_format` and
    `reason` as the node's, see `forward_system`).

    Examples:
        >>> r = render_forward("answer", "Solve the problem.", [("question", "the question", "2+2?")])
        >>> r.system.splitlines()[-2:]
        ['Instruction:', 'Solve the problem.']
        >>> r.purpose, r.node
        ('forward', 'answer')
    """
    system = forward_system(instruction, output_format, reason=reason)
    return forward_request(node, system, shown, sample, engine, freeze(options) if options else _NO_OPTIONS)


def forward_request(
    node: str, system: Message, shown: Sequence[Shown], sample: SampleId, engine: str, options: FrozenMap[str, Any]
) -> LLMRequest:
    """`render_forward` with its system message already rendered (by `forward_system`)."""
    return _request((system, forward_user(shown)), engine, "forward", node, sample, (), options)


def forward_user(shown: Sequence[Shown]) -> Message:
    """The user message of a forward request: the formatted inputs, as they are.

    Examples:
        >>> print(forward_user([("question", "the question", "2+2?")]).content)
        [1] question (the question):
        2+2?
    """
    if len(shown) == 1:  # the common case, without the generic loop
        name, role, value = shown[0]
        return _message("user", f"[1] {name} ({role}):\n{value}")
    return _message("user", format_inputs(shown))


def render_forward_repair(request: LLMRequest, reply: str, reason: str) -> LLMRequest:
    """Ask a forward call again after a reply with no readable result: the conversation so far plus why.

    Examples:
        >>> r = render_forward("answer", "Solve it.", [("question", "the question", "2+2?")], sample=3)
        >>> again = render_forward_repair(r, "It is 4.", "the reply has no <result> block")
        >>> [m.role for m in again.messages], again.purpose, again.sample
        (['system', 'user', 'assistant', 'user'], 'forward', 3)
    """
    user = FORWARD_REPAIR_USER.format(reason=reason)
    return _request(
        (*request.messages, _message("assistant", reply), _message("user", user)),
        request.engine,
        "forward",
        request.node,
        request.sample,
        (),
        request.options,
    )


# --- backward -------------------------------------------------------------------------------

BACKWARD_SYSTEM = (
    "You say how the inputs of one component of an LLM system should change so that the system's "
    "final output improves. Be specific and brief."
)
_OUTPUT_AND_FEEDBACK = """Its output:
<output>
{output}
</output>

Feedback on it from the rest of the system:
<feedback>
{feedback}
</feedback>
"""
# Backward prompts are laid out stable-first: what depends only on the node (its task, the inputs
# asked about, the reply form) comes before what each sample brings (the inputs' values, the output,
# the feedback), so the requests of one node share a prefix a provider can serve from its prompt cache.
NEIGHBOR_AWARE_USER = """A component of the system has this task:
<task>
{task}
</task>

For each input {targets}, say how it should change so that the output improves, given the \
other inputs: what it should add, fix or leave to them. Reply with one block per input, exactly so:
{form}

Its inputs:
{inputs}

""" + _OUTPUT_AND_FEEDBACK.rstrip("\n")
PER_EDGE_USER = """A component of the system read an input, {name} ({role}). Explain how the input {name} should \
change so that the output improves. Reply exactly in this form:
{form}

The input {name} ({role}):
<input>
{value}
</input>

""" + _OUTPUT_AND_FEEDBACK.rstrip("\n")
TOOL_BACKWARD_USER = """The system called a tool. What the tool does:
<tool>
{description}
</tool>

It was called with these arguments:
{arguments}

{outcome}

Feedback on that result, from the rest of the system:
<feedback>
{feedback}
</feedback>

The tool itself stays as it is; what can change is {what}. For each of these: {targets}, explain \
how it should change so that the tool's result serves the system better (a different query, a \
missing detail, a value in the form the tool expects). Reply with one block each, exactly in this form:
{form}"""
TOOL_RESULT = "It returned:\n<result>\n{result}\n</result>"
TOOL_FAILED = "It failed with this error:\n<error>\n{error}\n</error>"
_BACKWARD_SYSTEM = Message("system", BACKWARD_SYSTEM)
REPAIR_USER = (
    "Your reply could not be read: {reason}. Reply again with exactly one block for each of: "
    "{targets}, in this form:\n{form}"
)
SUMMARIZE_SYSTEM = "You condense feedback without losing any distinct point."
SUMMARIZE_USER = """Several parts of a system sent feedback about {node} ({role}):
{items}

Merge it into one feedback text that keeps every distinct point and drops repetition. Reply in the form:
<summary>
...
</summary>"""


def feedback_form(targets: Sequence[str]) -> str:
    """The reply form a backward prompt asks for.

    Examples:
        >>> print(feedback_form(["a"]))
        <feedback input="a">how a should change</feedback>
    """
    return "\n".join(f'<feedback input="{t}">how {t} should change</feedback>' for t in targets)


def _numbered(targets: Sequence[str], numbering: Sequence[str]) -> str:
    number: dict[str, int] = {}
    for i, name in enumerate(numbering, 1):
        number.setdefault(name, i)
    return ", ".join(f"[{number[t]}] {t}" if t in number else t for t in targets)


def _backward_request(
    user: str,
    node: str,
    targets: tuple[str, ...],
    sample: SampleId,
    engine: str,
    options: Mapping[str, Any] | None,
) -> LLMRequest:
    frozen = options if type(options) is FrozenMap else freeze(options) if options else _NO_OPTIONS
    return _request((_BACKWARD_SYSTEM, _message("user", user)), engine, "backward", node, sample, targets, frozen)


def render_neighbor_aware(
    node: str,
    task: str,
    shown: Sequence[Shown],
    output: Any,
    feedback: Any,
    targets: Sequence[str],
    *,
    sample: SampleId = None,
    engine: str = "backward",
    options: Mapping[str, Any] | None = None,
) -> LLMRequest:
    """One backward request for a whole node: its task, ALL its inputs, its output and feedback."""
    prompt = NeighborAwarePrompt.of(task, targets, [(name, role) for name, role, _ in shown])
    user = prompt.fill([value for _, _, value in shown], output, feedback)
    return _backward_request(user, node, tuple(targets), sample, engine, options)


@attrs.frozen(eq=False)
class NeighborAwarePrompt:
    """A neighbour-aware prompt with what depends only on the node filled in -- its task,
    its numbered targets, the reply form and each input's heading -- split around what
    each sample brings: the inputs' values, the output and the feedback.

    The text is ``leads[i]`` and input i's value for each input, then `before_output`,
    the output, `before_feedback`, the feedback and `rest` (a node without inputs has no
    leads: `before_output` then holds the whole text before the output). Build it once
    per node and fill it per sample; `render_neighbor_aware` does both.

    Examples:
        >>> prompt = NeighborAwarePrompt.of("Solve it.", ["hint"], [("hint", "a step")])
        >>> prompt.fill(["Add them."], "Answer: 8", "Wrong.").splitlines()[8:11]
        ['Its inputs:', '[1] hint (a step):', 'Add them.']
    """

    leads: tuple[str, ...]
    before_output: str
    before_feedback: str
    rest: str

    @classmethod
    def of(cls, task: str, targets: Sequence[str], inputs: Sequence[tuple[str, str]]) -> NeighborAwarePrompt:
        """The prompt of a node with this `task`, asking about `targets`, whose `inputs` are
        ``(name, role)`` pairs in input order."""
        targets_line = _numbered(targets, [name for name, _ in inputs])
        fixed = {"task": task, "targets": targets_line, "form": feedback_form(targets)}
        before_inputs, before_output, before_feedback, rest = _split_template(NEIGHBOR_AWARE_USER, fixed, _PER_SAMPLE)
        leads = tuple(
            f"{before_inputs if i == 1 else _SEPARATOR}[{i}] {name} ({role}):\n"
            for i, (name, role) in enumerate(inputs, 1)
        )
        if not leads:
            before_output = f"{before_inputs}{NO_INPUTS}{before_output}"
        return cls(leads, before_output, before_feedback, rest)

    def fill(self, values: Iterable[Any], output: Any, feedback: Any) -> str:
        """The prompt's text for one sample: the inputs' `values` (in input order), its output
        and the feedback on it, each shown as ``str.format`` shows it."""
        text: list[str] = []
        for lead, value in zip(self.leads, values):
            text += (lead, value if type(value) is str else f"{value}")
        text += (
            self.before_output,
            output if type(output) is str else f"{output}",
            self.before_feedback,
            feedback if type(feedback) is str else f"{feedback}",
            self.rest,
        )
        return "".join(text)


#: What separates two inputs in a neighbour-aware prompt (as in `format_inputs`).
_SEPARATOR = "\n\n"
#: The fields of `NEIGHBOR_AWARE_USER` each sample fills in, in the template's order.
_PER_SAMPLE = ("inputs", "output", "feedback")


def _split_template(template: str, fixed: Mapping[str, str], holes: tuple[str, ...]) -> tuple[str, ...]:
    """`template` with the `fixed` fields filled in, split around the `holes` (in that order):
    ``"".join(interleave(pieces, values)) == template.format(**fixed, **dict(zip(holes, values)))``
    for values that are text.

    Examples:
        >>> _split_template("{a}:{x}-{{b}}{y}.", {"a": "A{"}, ("x", "y"))
        ('A{:', '-{b}', '.')
    """
    pieces, current, seen = [], [], []
    for literal, field, spec, conversion in string.Formatter().parse(template):
        current.append(literal)
        if field is None:
            continue
        if spec or conversion:
            raise ValueError(f"field {field!r} of the template has a format spec or conversion")
        if field in holes:
            pieces.append("".join(current))
            current = []
            seen.append(field)
        else:
            current.append(fixed[field])
    if tuple(seen) != holes:
        raise ValueError(f"the template's fields {seen} are not {list(holes)} in that order")
    pieces.append("".join(current))
    return tuple(pieces)


def render_per_edge(
    node: str,
    target: Shown,
    output: Any,
    feedback: Any,
    *,
    sample: SampleId = None,
    engine: str = "backward",
    options: Mapping[str, Any] | None = None,
) -> LLMRequest:
    """One backward request for one edge: only that input, the node's output and feedback."""
    name, role, value = target
    user = PER_EDGE_USER.format(
        name=name, role=role, value=value, output=output, feedback=feedback, form=feedback_form([name])
    )
    return _backward_request(user, node, (name,), sample, engine, options)


def render_tool_backward(
    node: str,
    description: str,
    arguments: Sequence[tuple[str, str, Any]],
    result: Any,
    feedback: Any,
    targets: Sequence[str],
    *,
    error: str | None = None,
    sample: SampleId = None,
    engine: str = "backward",
    options: Mapping[str, Any] | None = None,
) -> LLMRequest:
    """One backward request for a tool node: its description, its arguments (``(argument, node, value)``
    each, in input order), its result (or the error it raised) and the feedback on it, asking how each
    target -- an input node that wrote an argument, or the tool's trainable description -- should change.

    Examples:
        >>> r = render_tool_backward("lookup", "Find an invoice.", [("query", "classify", "billing")],
        ...                          "no invoice", "The answer lacked the amount.", ["classify"])
        >>> r.purpose, r.node, r.targets
        ('backward', 'lookup', ('classify',))
        >>> print(r.prompt.splitlines()[6])
        [1] query (written by classify):
    """
    shown = _SEPARATOR.join(
        f"[{i}] {argument} (written by {source}):\n{value}" for i, (argument, source, value) in enumerate(arguments, 1)
    )
    outcome = TOOL_FAILED.format(error=error) if error is not None else TOOL_RESULT.format(result=result)
    sources = [source for _, source, _ in arguments]
    described = [t for t in targets if t not in sources]
    what = "the arguments it was called with" + (" and its description" if described else "")
    user = TOOL_BACKWARD_USER.format(
        description=description or "(no description)",
        arguments=shown or NO_INPUTS.strip(),
        outcome=outcome,
        feedback=feedback,
        what=what,
        targets=_numbered(targets, sources),
        form=feedback_form(targets),
    )
    return _backward_request(user, node, tuple(targets), sample, engine, options)


def render_repair(request: LLMRequest, reply: str, reason: str, missing: Sequence[str]) -> LLMRequest:
    """Ask again after an unreadable reply: the conversation so far plus what was wrong."""
    user = REPAIR_USER.format(reason=reason, targets=", ".join(missing), form=feedback_form(missing))
    return LLMRequest(
        (*request.messages, Message("assistant", reply), Message("user", user)),
        engine=request.engine,
        purpose=request.purpose,
        node=request.node,
        sample=request.sample,
        draw=request.draw,
        targets=tuple(missing),
        options=request.options,
    )


def render_summarize(
    node: str,
    role: str,
    texts: Sequence[str],
    *,
    sample: SampleId = None,
    engine: str = "backward",
    options: Mapping[str, Any] | None = None,
) -> LLMRequest:
    """Ask for one feedback text that merges several."""
    items = "\n".join(f"<item>\n{t}\n</item>" for t in texts)
    return LLMRequest(
        (
            Message("system", SUMMARIZE_SYSTEM),
            Message("user", SUMMARIZE_USER.format(node=node, role=role, items=items)),
        ),
        engine=engine,
        purpose="summarize",
        node=node,
        sample=sample,
        options=options or {},
    )


# --- optimizer ------------------------------------------------------------------------------

OPTIMIZER_SYSTEM = (
    "You improve one part of an LLM system: fix what the feedback points out, keep what works, and "
    "write general improvements, not answers to the examples."
)
EXAMPLE_BLOCK = """<example {index}>
Inputs:
{inputs}

Output:
{output}

Feedback on the output:
{feedback}
</example {index}>"""
EXAMPLE_BLOCK_NO_FEEDBACK = """<example {index}>
Inputs:
{inputs}

Output:
{output}
</example {index}>"""
REWRITE_USER = """You are improving {role} ({name}).

Current text:
<current>
{current}
</current>
{sections}
{constraints}First reason step by step about what went wrong and what the text should change. Then \
write the improved text. It must not contain the word "feedback", nor anything that only fits \
these examples. End with it in this form (only the first such block is read):
<improved>
the improved text
</improved>"""
CRITIQUE_USER = """Here is {role} ({name}):
<current>
{current}
</current>

Here is how the component did with it:
{examples}

Explain how this text should change so that the component's outputs earn better feedback. Be \
specific. Reply in the form:
<critique>
your explanation
</critique>"""


def render_examples(examples: Sequence[tuple[Sequence[tuple[str, Any]], Any, Any]]) -> str:
    """Number ``(inputs, output, feedback)`` examples for optimizer prompts.

    A feedback of None leaves the feedback section out (the "no gradients" ablation);
    an empty one says there was none.

    Examples:
        >>> print(render_examples([((("question", "2+2?"),), "5", None)]))
        <example 1>
        Inputs:
        question: 2+2?
        <BLANKLINE>
        Output:
        5
        </example 1>
    """
    blocks = []
    for index, (inputs, output, feedback) in enumerate(examples, 1):
        shown = "\n".join(f"{name}: {value}" for name, value in inputs) or "(none)"
        if feedback is None:
            blocks.append(EXAMPLE_BLOCK_NO_FEEDBACK.format(index=index, inputs=shown, output=output))
        else:
            blocks.append(
                EXAMPLE_BLOCK.format(index=index, inputs=shown, output=output, feedback=feedback or "(no feedback)")
            )
    return "\n\n".join(blocks)


def render_rewrite(
    name: str,
    role: str,
    current: Any,
    *,
    examples: str = "",
    feedback: str = "",
    critique: str = "",
    history: Sequence[str] = (),
    constraints: Sequence[str] = (),
    engine: str = "optimizer",
    options: Mapping[str, Any] | None = None,
    failed: bool = True,
) -> LLMRequest:
    """The request that asks for an improved value of one parameter.

    `failed` says the examples are ones the component did not handle well (the error
    samples); False shows them as plain examples (a fallback draw of right answers).
    """
    sections = []
    if examples and failed:
        sections.append(f"Examples the component did not handle well, each with the feedback it got:\n{examples}")
    elif examples:
        sections.append(f"How the component did on some examples:\n{examples}")
    if feedback:
        sections.append(f"Feedback on this text from the rest of the system:\n<feedback>\n{feedback}\n</feedback>")
    if critique:
        sections.append(f"A critique of this text:\n<critique>\n{critique}\n</critique>")
    if history:
        past = "\n".join(f"- {h}" for h in history)
        sections.append(f"Earlier feedback and rejected attempts (do not repeat what failed):\n{past}")
    rules = "".join(f"- {c}\n" for c in constraints)
    user = REWRITE_USER.format(
        role=role,
        name=name,
        current=current,
        sections="\n" + "\n\n".join(sections) + "\n" if sections else "",
        constraints=f"Constraints:\n{rules}\n" if rules else "",
    )
    return LLMRequest(
        (Message("system", OPTIMIZER_SYSTEM), Message("user", user)),
        engine=engine,
        purpose="rewrite",
        node=name,
        options=options or {},
    )


def render_critique(
    name: str,
    role: str,
    current: Any,
    examples: str,
    *,
    engine: str = "optimizer",
    options: Mapping[str, Any] | None = None,
) -> LLMRequest:
    """The request that asks for an explicit gradient (critique) of an instruction."""
    user = CRITIQUE_USER.format(role=role, name=name, current=current, examples=examples)
    return LLMRequest(
        (Message("system", OPTIMIZER_SYSTEM), Message("user", user)),
        engine=engine,
        purpose="critique",
        node=name,
        options=options or {},
    )
