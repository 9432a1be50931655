"""TextGrad 0.1.8 as a chain: its backward pass (`rules.textgrad()`) and its TGD update.

TextGrad's `TextualGradientDescent.step()` makes one call per parameter. The call
shows the parameter's role and value, each gradient it received *with the
conversation it came from* (the call's system prompt, input and output, and what
the output is used as) and the feedback, and the constraints. `textgrad_gradients`
builds exactly that per parameter; `propose_rewrite` then asks once per parameter.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from .._frozen import FrozenMap
from .._gradients import Gradients, Partial
from .._graph import Params
from .._program import Program, pure
from .._prompts import format_inputs
from .._textgrad import textgrad as textgrad_rule
from ._base import EmptyState, ParamGradient, Step, Transform, require
from ._combining import chain
from ._stages import backward, full_update, propose_rewrite, select_error_samples, validation_gate

__all__ = ["GRADIENT_BLOCK", "textgrad", "textgrad_gradients"]

GRADIENT_BLOCK = """<gradient {index}>
The text was used in this call of a language model:
<system_prompt>
{instruction}
</system_prompt>
<input>
{inputs}
</input>
<output>
{output}
</output>
The call is part of a larger system; its output is used as {role}.
The feedback on {target_role} in this call:
{feedback}
</gradient {index}>"""

#: TextGrad's validation revert keeps a candidate whose score ties the last one.
_TIES_KEEP = -1e-9


def _context_block(step: Step, params: Params, params_role: str, partial: Partial, index: int) -> str:
    trace = next((t for t in step.traces if t.sample == partial.sample), None)
    spec = step.graph.nodes.get(partial.source)
    if trace is None or spec is None or spec.kind != "llm" or partial.source not in trace.runs:
        return f"<gradient {index}>\n{partial.text}\n</gradient {index}>"
    run = trace[partial.source]
    shown = tuple((name, step.graph[name].role, value) for name, value in run.inputs)
    return GRADIENT_BLOCK.format(
        index=index,
        instruction=params.value(spec.instruction),  # type: ignore[arg-type]
        inputs=format_inputs(shown),
        output=run.value,
        role=spec.role,
        target_role=params_role,
        feedback=partial.text,
    )


def textgrad_gradients() -> Transform:
    """Per trainable parameter, its gradients with their context, as TGD's update prompt shows them.

    Each partial the parameter received becomes one block: the conversation it came
    from (the source call's instruction, whole input and output), what that output is
    used as, and the feedback. Parameters with no partial get no gradient.
    """

    def update(step: Step, state: EmptyState, params: Params) -> Program[tuple[Step, EmptyState]]:
        require(step, "selected", "textgrad_gradients", "select_error_samples()")
        grads: Gradients = require(step, "gradients", "textgrad_gradients", "backward(rules.textgrad())")
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


def textgrad(
    k: int = 2,
    *,
    seed: int = 0,
    gate: bool = False,
    constraints: Sequence[str] = (),
    loss_call: bool = True,
) -> Transform:
    """TextGrad 0.1.8's prompt optimization as a chain.

    ``select_error_samples(k) -> backward(rules.textgrad()) -> textgrad_gradients ->
    propose_rewrite -> full_update [-> validation_gate]``: per error sample, one
    backward call per (variable that requires a gradient) plus the loss's own
    backward call (6 on the paper's graph); then one TGD update per parameter,
    showing its role, value, gradients with their conversations, and `constraints`.

    Args:
        k: Error samples backpropagated per iteration (TextGrad's batch).
        seed: Seeds sample selection.
        gate: Revert an update whose validation score is lower than the best so far
            (a tie is kept), as TextGrad's prompt-optimization script does with
            ``--run_validation``; off by default, as in TextGrad's optimizer.
        constraints: TGD's constraints, stated in every update prompt.
        loss_call: Make the loss's backward call (TextGrad does).

    Examples:
        >>> textgrad(k=2).name
        'chain(select_error_samples, backward, textgrad_gradients, propose_rewrite, full_update)'
    """
    stages = [
        select_error_samples(k, seed=seed),
        backward(textgrad_rule(loss_call=loss_call)),
        textgrad_gradients(),
        propose_rewrite(constraints=constraints),
        full_update(),
    ]
    if gate:
        stages.append(validation_gate(min_gain=_TIES_KEEP))
    return chain(*stages)
