"""TextGrad's backward pass (textgrad 0.1.8) as a semgrad rule: `textgrad()`.

What TextGrad does on an LLM call ``output = LLM(system_prompt, input)``: for every
predecessor that requires a gradient -- each input variable and the system prompt
(the instruction) -- it makes one backward call that shows the whole conversation
(the system prompt, the whole formatted input, in which the sibling inputs appear,
and the output), what the output is used as, the feedback on the output, and the
variable to criticise. The loss is an operation too: its own backward call turns
the evaluation (prediction, ground truth, result) into the output's feedback.

`textgrad()` carries the same information in the same call pattern (our wording):

* one request per (target, sample), the instruction included, for each LLM node;
* on the output node, first one request for the loss's backward call (the seed
  feedback plays the evaluation's result), whose reply becomes the output's gradient;
* the output shown is the node's whole reply, reasoning included (TextGrad's output
  variable is the whole completion), while its inputs are the values its forward call
  was shown; the variable criticised, and the loss call's prediction, are shown as
  TextGrad's ``get_short_value`` shows them: whole up to 20 words, else the first and
  last ten words around ``(...)`` (`short_value`).

On the paper's graph with an exact-match loss that is 1 + 3 + 1 + 1 = 6 backward
calls per sample, as TextGrad makes. `per_edge()` is the formal special case: one
call per edge that shows only that input, the output and its gradient.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from ._aggregate import Concat
from ._frozen import FrozenMap
from ._gradients import BackwardFailure
from ._program import Program, ask, bind, gather, map_, pure
from ._prompts import feedback_form, format_inputs
from ._requests import LLMRequest, Message, SampleId
from ._rules import BackwardContext, NodeResult, _Base, _default_overrides

__all__ = [
    "TEXTGRAD_CALL",
    "TEXTGRAD_LOSS_USER",
    "TEXTGRAD_SYSTEM",
    "TEXTGRAD_USER",
    "TextGrad",
    "render_textgrad",
    "render_textgrad_loss",
    "short_value",
    "textgrad",
    "whole_output",
]

TEXTGRAD_SYSTEM = (
    "You are the feedback step of an optimizer that improves the texts (variables) of a system: "
    "solutions, prompts to language models, code or any other text. Given an objective, you criticise "
    "one variable and say how it should change to serve the objective better, taking into account its "
    "role and the context it is used in (assume it will be used in a similar context again). Give "
    "strategies, explanations and concrete changes; do not write a new version of the variable, that is "
    "the optimizer's job. If the variable already works well for the objective, say that it needs no change."
)
#: One call of a language model as TextGrad shows it, in the backward request (`TEXTGRAD_USER`)
#: and in each gradient of the update request (`semgrad.core.optim.GRADIENT_BLOCK`).
TEXTGRAD_CALL = """<system_prompt>
{instruction}
</system_prompt>
<input>
{inputs}
</input>
<output>
{output}
</output>"""
TEXTGRAD_USER = (
    """You give feedback on a variable whose role is: {target_role}.
It took part in this call of a language model:
"""
    + TEXTGRAD_CALL
    + """
This call is part of a larger system, where its output is used as {node_role}.

Objective: address this feedback on the output:
<feedback>
{feedback}
</feedback>

The variable to give feedback on ({target}):
<variable>
{value}
</variable>

Say how {target} should change so that the objective improves. Reply exactly in this form:
{form}"""
)
TEXTGRAD_LOSS_USER = """You give feedback on a variable whose role is: {role}.
It was evaluated by the loss of the system ({loss}):
<prediction>
{output}
</prediction>
<evaluation>
{feedback}
</evaluation>

Objective: improve that evaluation, and nothing else; criticise the variable in the light of it.

The variable to give feedback on ({node}):
<variable>
{output}
</variable>

Say how {node} should change so that the evaluation improves. Reply exactly in this form:
{form}"""

_SYSTEM = Message("system", TEXTGRAD_SYSTEM)


def short_value(value: Any, n_words_offset: int = 10) -> str:
    """`value` as TextGrad's ``Variable.get_short_value`` shows it: whole when it has at most
    ``2 * n_words_offset`` space-separated words, else the first and last `n_words_offset` around ``(...)``.

    Examples:
        >>> short_value("one two three", 1)
        'one (...) three'
        >>> short_value("one two", 1)
        'one two'
    """
    text = str(value)
    words = text.split(" ")
    if len(words) <= 2 * n_words_offset:
        return text
    return " ".join(words[:n_words_offset]) + " (...) " + " ".join(words[-n_words_offset:])


def whole_output(trace: Any, node: str) -> str:
    """The whole reply of `node`'s forward call in `trace`, reasoning included (its value when it has none)."""
    run = trace.runs.get(node)
    if run is not None and run.raw:
        return str(run.raw)
    return str(trace.value(node))


def _request(user: str, node: str, target: str, sample: SampleId, engine: str, options: Any) -> LLMRequest:
    return LLMRequest(
        (_SYSTEM, Message("user", user)),
        engine=engine,
        purpose="backward",
        node=node,
        sample=sample,
        targets=(target,),
        options=options or {},
    )


def render_textgrad(
    context: BackwardContext,
    target: str,
    *,
    gradient: Any = None,
    engine: str = "backward",
    options: Mapping[str, Any] | None = None,
) -> LLMRequest:
    """TextGrad's backward request for one target of one LLM node.

    It shows the node's instruction (the system prompt), its whole input as the
    forward call formatted it, its whole reply (reasoning included), the role of its output,
    the feedback on the output (`gradient`, default ``context.gradient``), and the target's
    role and value (its `short_value`, as TextGrad shows the variable).
    """
    _, role, value = context.shown(target)
    user = TEXTGRAD_USER.format(
        target_role=role,
        instruction=context.task,
        inputs=format_inputs(context.inputs_shown()),
        output=whole_output(context.trace, context.node),
        node_role=context.spec.role,
        feedback=context.gradient if gradient is None else gradient,
        target=target,
        value=short_value(value),
        form=feedback_form([target]),
    )
    return _request(user, context.node, target, context.sample, engine, options)


def render_textgrad_loss(
    context: BackwardContext,
    *,
    loss: str = "the loss compares the answer in the prediction with the expected output",
    engine: str = "backward",
    options: Mapping[str, Any] | None = None,
) -> LLMRequest:
    """The loss's own backward request: the prediction (the output's whole reply, as its `short_value`,
    which is how TextGrad's loss shows its inputs and the variable) and its evaluation (the seed feedback)."""
    user = TEXTGRAD_LOSS_USER.format(
        role=context.spec.role,
        loss=loss,
        output=short_value(whole_output(context.trace, context.node)),
        feedback=context.gradient,
        node=context.node,
        form=feedback_form([context.node]),
    )
    return _request(user, context.node, context.node, context.sample, engine, options)


@attrs.frozen
class TextGrad(_Base):
    """TextGrad's backward rule; build it with `textgrad`."""

    loss_call: bool = True
    loss: str = "the loss compares the answer in the prediction with the expected output"

    def backward(self, context: BackwardContext) -> Program[NodeResult]:
        if self.loss_call and context.node == context.graph.output and context.spec.kind == "llm":
            return self._through_loss(context)
        return self._targets(context)

    def _targets(self, context: BackwardContext) -> Program[NodeResult]:
        return map_(gather(*(self._one(context, t) for t in context.targets)), NodeResult.combine)

    def _one(self, context: BackwardContext, target: str) -> Program[NodeResult]:
        request = render_textgrad(context, target, engine=self.engine, options=self.options)
        one = attrs.evolve(context, targets=(target,))
        # The request shows the node's whole input: the partial's siblings are its inputs other than
        # the target (all of them for the instruction), as for the neighbour-aware rule.
        shown = context.siblings
        return bind(ask(request), lambda reply: self._read(one, request, reply, shown, FrozenMap(), False))

    def _through_loss(self, context: BackwardContext) -> Program[NodeResult]:
        request = render_textgrad_loss(context, loss=self.loss, engine=self.engine, options=self.options)
        own = attrs.evolve(context, targets=(context.node,))

        def then(result: NodeResult) -> Program[NodeResult]:
            if not result.partials:
                reason = "the loss's backward call gave no feedback" + (
                    f" ({result.failures[0].reason})" if result.failures else ""
                )
                return pure(NodeResult((), (BackwardFailure(context.node, context.targets, reason, context.sample),)))
            return self._targets(attrs.evolve(context, gradient=result.partials[0].text))

        return bind(
            bind(ask(request), lambda reply: self._read(own, request, reply, lambda t: (), FrozenMap(), False)), then
        )


def textgrad(
    *,
    loss_call: bool = True,
    loss: str = "the loss compares the answer in the prediction with the expected output",
    aggregate: Any = None,
    overrides: Mapping[str, Any] | None = None,
    engine: str = "backward",
    options: Mapping[str, Any] | None = None,
    repair: bool = True,
) -> TextGrad:
    """TextGrad's backward pass (textgrad 0.1.8): one call per (target, sample), instructions included.

    Each call shows the node's instruction, its whole input (the siblings appear in
    it), its output, what the output is used as, the feedback on the output, and the
    target's role and value. With `loss_call`, the output's step first makes the
    loss's own backward call (showing the prediction and the seed feedback as the
    evaluation) and uses its reply as the output's gradient.

    Args:
        loss_call: Make the loss's backward call (TextGrad always does).
        loss: How the loss is described in that call.
        aggregate: How incoming partials become a node's gradient (default: concatenation,
            as TextGrad joins a variable's gradients).
        overrides, engine, options, repair: As for `neighbor_aware`.

    Examples:
        >>> from semgrad.backends.fake import RecordingLLM, HashLLM
        >>> from semgrad.core import backward, forward
        >>> from semgrad.effects import run_sync
        >>> from semgrad.topologies import paper_graph
        >>> graph, params = paper_graph()
        >>> trace = run_sync(forward(graph, params, {"question": "2+2?"}), HashLLM())
        >>> llm = RecordingLLM(HashLLM())
        >>> grads = run_sync(backward(graph, params, trace, "The expected output is 4.", textgrad()), llm)
        >>> llm.counts()["backward"], sorted({p.target for p in grads.partials})
        (6, ['answer.instruction', 'hint_1', 'hint_1.instruction', 'hint_2', 'hint_2.instruction'])
    """
    return TextGrad(
        aggregate or Concat(),
        FrozenMap({**_default_overrides(), **(overrides or {})}),
        engine,
        FrozenMap(options or {}),
        repair,
        True,
        loss_call,
        loss,
    )
