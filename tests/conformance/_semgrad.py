"""semgrad's side of the conformance tests: `fit` with the shared `World` as its LLM."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import anyio
import attrs

from semgrad.backends import fake
from semgrad.core import Example, Graph, LLMRequest, Params
from semgrad.core.optim import Transform
from semgrad.effects import FitResult, fit, memoized

from ._world import REASONING, Call, Item, World

_CURRENT = re.compile(r"<current>\s*(.*?)\s*</current>", re.S)


def kind(node: str | None, output: str) -> str:
    """``final`` for the output node (or its instruction), ``hint`` for a hint node, else ``param``."""
    name = (node or "").removesuffix(".instruction")
    return "final" if name == output else "hint"


@attrs.define
class SemgradSide:
    """A sync fake LLM answering semgrad's requests from `world`, recording each call and its phase."""

    world: World
    items: Sequence[Item]
    output: str = "answer"
    phase: str = "iteration 0"
    calls: list[Call] = attrs.Factory(list)
    requests: list[LLMRequest] = attrs.Factory(list)

    def item(self, request: LLMRequest) -> Item | None:
        """The item a request is about: its sample's."""
        return next((i for i in self.items if i.key == request.sample), None)

    def __call__(self, request: LLMRequest) -> str:
        text = "\n".join(m.content for m in request.messages)
        node_kind = "param" if request.purpose in ("rewrite", "critique") else kind(request.node, self.output)
        item = self.item(request)
        self.calls.append(Call(self.phase, request.purpose, node_kind, item, text))
        self.requests.append(request)
        if request.purpose == "forward":
            assert item is not None, request
            value = self.world.answer(item, text) if node_kind == "final" else self.world.notes(item, text)
            return fake.reply_forward(request, value, reasoning=REASONING)  # only the result may flow on
        if request.purpose == "backward":
            assert item is not None, request
            alone = len(request.targets) == 1 and self.world.hints > 1
            lines = self.world.partials(item, len(request.targets), alone=alone)
            return fake.reply_backward(request, dict(zip(request.targets, lines)))
        if request.purpose == "rewrite":
            found = _CURRENT.search(request.prompt)
            assert found is not None, request.prompt[:300]
            final = kind(request.node, self.output) == "final"
            return fake.reply_rewrite(request, self.world.improved(found.group(1), text, final=final))
        if request.purpose == "summarize":
            return fake.reply_summary(request, text)
        raise AssertionError(f"unexpected request purpose {request.purpose!r}")


def run_semgrad(
    world: World,
    items: Sequence[Item],
    graph: Graph,
    params: Params,
    optimizer: Transform,
    iterations: int,
    *,
    memo: bool = False,
) -> tuple[FitResult, SemgradSide]:
    """`fit` on `items` with no validation set (the official protocol), answered by `world`.

    `memo`: through `memoized`, as ``semgrad run --protocol official`` calls (``side.calls`` then holds
    the calls that reached the LLM, not the memo's answers)."""
    side = SemgradSide(world, items, output=graph.output)
    train = [Example(dict(i.fields), i.target, id=i.key) for i in items]

    def progress(event: Any) -> None:
        if event.phase == "forward" or event.phase == "scoring initial params":
            side.phase = f"iteration {max(event.iteration - 1, 0)}"  # the reference counts from 0

    result = anyio.run(
        lambda: fit(
            graph,
            params,
            optimizer,
            train=train,
            llm=memoized(side) if memo else side,
            iterations=iterations,
            on_progress=progress,
        )
    )
    return result, side
