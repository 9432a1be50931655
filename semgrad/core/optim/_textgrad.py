"""TextGrad 0.1.8 as a chain: its prompt-optimization script's batch, its backward pass
(`rules.textgrad_backward()`) and its TGD update.

TextGrad's prompt-optimization script draws a batch of training items (3 by default,
from a shuffled loader), runs them, sums every item's loss -- right answers included --
and backpropagates the sum; `TextualGradientDescent.step()` then makes one call per
parameter. The call shows the parameter's role and value, each gradient it received
*with the conversation it came from* (the call's system prompt, input and whole output,
and what the output is used as) and the feedback, and the constraints. `sample_batch`
draws the batch, `textgrad_gradients` builds exactly that per parameter and
`textgrad_update` asks once per parameter.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any

import attrs
from returns.result import Success

from .._frozen import FrozenMap
from .._gradients import Gradients, Partial
from .._graph import Params
from .._parse import parse_tagged
from .._program import Program, ask, gather, map_, pure
from .._prompts import format_inputs
from .._requests import LLMRequest, Message
from .._sampling import merged_options
from .._textgrad import TEXTGRAD_CALL, short_value, whole_output
from .._textgrad import textgrad as textgrad_rule
from ._base import EmptyState, ParamGradient, Proposal, Step, Transform, require
from ._combining import chain
from ._stages import backpropagate, full_update, select_error_samples, validation_gate

__all__ = [
    "GRADIENT_BLOCK",
    "TEXTGRAD_BATCH",
    "TEXTGRAD_UPDATE_SYSTEM",
    "TEXTGRAD_UPDATE_USER",
    "render_textgrad_update",
    "sample_batch",
    "textgrad",
    "textgrad_gradients",
    "textgrad_update",
]

#: The batch TextGrad's prompt-optimization script draws each iteration (its ``--batch_size`` default):
#: `textgrad` and `sample_batch`'s default, and what ``semgrad run --protocol official`` uses.
TEXTGRAD_BATCH = 3

GRADIENT_BLOCK = (
    """<gradient {index}>
The text was used in this call of a language model:
"""
    + TEXTGRAD_CALL
    + """
The call is part of a larger system; its output is used as {role}.
The feedback on {target_role} in this call:
{feedback}
</gradient {index}>"""
)
TEXTGRAD_UPDATE_SYSTEM = (
    "You are the update step of an optimizer that improves the texts (variables) of a system: prompts "
    "to language models, solutions, code or any other text. You are given a variable, what it is used "
    "for, and feedback on it from the calls it took part in. The feedback may be noisy: judge what "
    "matters and what is right. Keep the variable's role and the context it is used in in mind. The "
    "text you reply between the tags replaces the variable as it is."
)
TEXTGRAD_UPDATE_USER = """The variable to improve ({name}) has this role: {role}.
Its current value:
<variable>
{value}
</variable>

The feedback on it, each with the call it came from:
{gradients}
{constraints}
Improve the variable ({role}) using this feedback. Reply with its new value inside tags, \
exactly in this form:
<improved>
the new value
</improved>"""

#: TextGrad's validation revert keeps a candidate whose score ties the last one.
_TIES_KEEP = -1e-9


def sample_batch(k: int = TEXTGRAD_BATCH, *, seed: int = 0) -> Transform:
    """Choose the `k` items of this iteration's training batch, right answers included, as TextGrad's
    prompt-optimization script does: its loader shuffles the items each epoch (seeded by `seed` and the
    epoch) and hands them out `k` at a time, the last batch of an epoch possibly shorter.

    Examples:
        >>> sample_batch(3).name
        'sample_batch'
    """
    if not (type(k) is int and k >= 1):
        raise ValueError(f"sample_batch needs a whole number k >= 1, got {k!r}")

    def update(step: Step, state: EmptyState, params: Params) -> Program[tuple[Step, EmptyState]]:
        scores = require(step, "scores", "sample_batch", "fit (which scores the training batch)")
        n = len(scores)
        if n == 0:
            return pure((attrs.evolve(step, selected=()).noted("sample_batch", "no training items"), state))
        per_epoch = -(-n // k)
        epoch, index = divmod(step.iteration, per_epoch)
        order = list(range(n))
        random.Random(f"{seed}/{epoch}/textgrad-batch").shuffle(order)
        chosen = tuple(order[index * k : (index + 1) * k])
        wrong = sum(1 for i in chosen if not scores[i].correct)
        ids = ", ".join(str(step.traces[i].sample) for i in chosen)
        new = attrs.evolve(step, selected=chosen).noted(
            "sample_batch", f"epoch {epoch}, batch {index}: {len(chosen)} items, {wrong} wrong", f"selected: {ids}"
        )
        return pure((new, state))

    return Transform(lambda params: EmptyState(), update, "sample_batch")


def _context_block(step: Step, params: Params, params_role: str, partial: Partial, index: int) -> str:
    where = next((i for i, t in enumerate(step.traces) if t.sample == partial.sample), None)
    trace = None if where is None else step.traces[where]
    graph = None if where is None else step.graph_of(where)  # the sample's own, for a system recorded per sample
    spec = None if graph is None else graph.nodes.get(partial.source)
    if trace is None or graph is None or spec is None or spec.kind != "llm" or partial.source not in trace.runs:
        return f"<gradient {index}>\n{partial.text}\n</gradient {index}>"
    run = trace[partial.source]
    shown = tuple((name, graph[name].role, value) for name, value in run.inputs)
    return GRADIENT_BLOCK.format(
        index=index,
        instruction=params.value(spec.instruction),  # type: ignore[arg-type]
        inputs=format_inputs(shown),
        output=whole_output(trace, partial.source),
        role=spec.role,
        target_role=params_role,
        feedback=partial.text,
    )


def textgrad_gradients() -> Transform:
    """Per trainable parameter, its gradients with their context, as TGD's update prompt shows them.

    Each partial the parameter received becomes one block: the conversation it came
    from (the source call's instruction, whole input and whole reply), what that output is
    used as, and the feedback. Parameters with no partial get no gradient.
    """

    def update(step: Step, state: EmptyState, params: Params) -> Program[tuple[Step, EmptyState]]:
        require(step, "selected", "textgrad_gradients", "sample_batch() or select_error_samples()")
        grads: Gradients = require(step, "gradients", "textgrad_gradients", "backpropagate(rules.textgrad_backward())")
        result = {}
        for name in step.trainable(params):
            received = grads.for_node(name)
            if not received:
                continue
            role = params[name].role
            blocks = [_context_block(step, params, role, p, i) for i, p in enumerate(received, 1)]
            result[name] = ParamGradient(name, (), "\n\n".join(blocks))
        note = f"gradients for {', '.join(result) or 'no parameter'}"
        return pure((attrs.evolve(step, param_gradients=FrozenMap(result)).noted("textgrad_gradients", note), state))

    return Transform(lambda params: EmptyState(), update, "textgrad_gradients")


def render_textgrad_update(
    name: str,
    role: str,
    value: Any,
    gradients: str,
    *,
    constraints: Sequence[str] = (),
    engine: str = "optimizer",
    options: Mapping[str, Any] | None = None,
) -> LLMRequest:
    """TGD's update request for parameter `name`: its role, its value (as its `short_value`, as TGD
    shows it), its gradients with their conversations, and the `constraints`, one per line."""
    stated = "\n".join(f"{i}. {c}" for i, c in enumerate(constraints, 1))
    user = TEXTGRAD_UPDATE_USER.format(
        name=name,
        role=role,
        value=short_value(value),
        gradients=gradients,
        constraints=f"\nThe new value must meet these constraints:\n<constraints>\n{stated}\n</constraints>\n"
        if constraints
        else "",
    )
    return LLMRequest(
        (Message("system", TEXTGRAD_UPDATE_SYSTEM), Message("user", user)),
        engine=engine,
        purpose="rewrite",
        node=name,
        options=options or {},
    )


def _proposal(name: str, reply: Any) -> Proposal:
    if not isinstance(reply, Success):
        error = reply.failure()
        return Proposal(name, None, f"the call failed ({error.kind}: {error.message})")
    parsed = parse_tagged(reply.unwrap().text, ["improved"])
    if not isinstance(parsed, Success):
        return Proposal(name, None, f"unusable reply: {parsed.failure().reason}")
    return Proposal(name, parsed.unwrap())


def textgrad_update(
    *, constraints: Sequence[str] = (), engine: str = "optimizer", options: Mapping[str, Any] | None = None
) -> Transform:
    """TGD's step: one request per parameter with a gradient (`textgrad_gradients`), its reply the new value.

    Raises:
        TypeError: When `constraints` is a single string: pass a sequence of strings.
    """
    if isinstance(constraints, str):
        raise TypeError(f"constraints: pass a sequence of strings, such as [{constraints!r}], not a single string")
    constraints = tuple(constraints)

    def update(step: Step, state: EmptyState, params: Params) -> Program[tuple[Step, EmptyState]]:
        grads = require(step, "param_gradients", "textgrad_update", "textgrad_gradients()")
        asking = merged_options(step.options.get(engine), options)
        names = [n for n in grads if n in step.trainable(params)]

        def one(name: str) -> Program[Proposal]:
            p = params[name]
            request = render_textgrad_update(
                name, p.role, p.value, grads[name].feedback, constraints=constraints, engine=engine, options=asking
            )
            return map_(ask(request), lambda reply: _proposal(name, reply))

        def done(proposals: tuple[Proposal, ...]) -> tuple[Step, EmptyState]:
            notes = [f"{p.param}: {'proposed' if p.ok else 'kept (' + p.reason + ')'}" for p in proposals]
            new = attrs.evolve(step, proposals=FrozenMap((p.param, p) for p in proposals))
            return new.noted("textgrad_update", *notes), state

        return map_(gather(*(one(n) for n in names)), done)

    return Transform(lambda params: EmptyState(), update, "textgrad_update")


def textgrad(
    k: int = TEXTGRAD_BATCH,
    *,
    seed: int = 0,
    gate: bool | Transform = False,
    constraints: Sequence[str] = (),
    loss_call: bool = True,
    errors_only: bool = False,
) -> Transform:
    """TextGrad 0.1.8's prompt optimization, as its script runs it, as a chain.

    ``sample_batch(k) -> backpropagate(rules.textgrad_backward()) -> textgrad_gradients ->
    textgrad_update -> full_update [-> validation_gate]``: every item of the batch, right
    answers included, is backpropagated -- one backward call per (variable that requires a
    gradient) plus the loss's own backward call, 6 per item on the paper's graph (18 for a
    batch of 3) -- then one TGD update per parameter, showing its role, value, gradients
    with their conversations, and `constraints`.

    Args:
        k: The batch size (TextGrad's script: `TEXTGRAD_BATCH`, 3).
        seed: Seeds the batches.
        gate: Revert an update whose validation score is lower than the best so far
            (a tie is kept), as TextGrad's prompt-optimization script does with
            ``--run_validation``; off by default, as in TextGrad's optimizer. A `Transform`
            is the gate stage itself (``validation_gate(rule="lcb")``, say).
        constraints: TGD's constraints, stated in every update prompt.
        loss_call: Make the loss's backward call (TextGrad does).
        errors_only: Backpropagate up to `k` wrong items only (``select_error_samples(k)``),
            as the paper's method does, instead of the whole batch.

    Examples:
        >>> textgrad().name
        'chain(sample_batch, backward, textgrad_gradients, textgrad_update, full_update)'
        >>> textgrad(k=2, errors_only=True).name
        'chain(select_error_samples, backward, textgrad_gradients, textgrad_update, full_update)'
    """
    stages = [
        select_error_samples(k, seed=seed) if errors_only else sample_batch(k, seed=seed),
        backpropagate(textgrad_rule(loss_call=loss_call)),
        textgrad_gradients(),
        textgrad_update(constraints=constraints),
        full_update(),
    ]
    if gate:
        stages.append(gate if isinstance(gate, Transform) else validation_gate(min_gain=_TIES_KEEP))
    return chain(*stages)
