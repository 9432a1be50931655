"""``semgrad run ... --show-prompts N``: the exact first requests of each purpose, with nothing called.

The run is driven, as a dry run is, by a local stand-in LLM; the first `n`
requests of each purpose are kept and printed with their metadata and sampling
options. Forward requests are exactly what a real run sends first; requests
built from earlier replies (backward, critique, rewrite, evaluate) carry the
stand-in's placeholder replies where a real run has the model's.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from ..core import LLMRequest
from ._config import RunConfig
from ._dry_run import OUTPUT_TOKENS, _Counter, dry_run

__all__ = ["first_requests", "format_request", "show_prompts"]

#: The order purposes are printed in (others after, alphabetically).
_ORDER = ("forward", "evaluate", "backward", "summarize", "critique", "rewrite")


def first_requests(config: RunConfig, n: int) -> dict[str, list[LLMRequest]]:
    """The first `n` requests of each purpose a run of `config` makes, without calling any LLM."""
    if n < 1:
        raise ValueError(f"--show-prompts needs at least 1, got {n}")
    counter = _Counter(OUTPUT_TOKENS, keep=n)
    dry_run(config, counter=counter)
    found = counter.requests
    order = [p for p in _ORDER if p in found] + sorted(p for p in found if p not in _ORDER)
    return {purpose: found[purpose] for purpose in order}


def format_request(request: LLMRequest, number: int) -> str:
    """One request as text: a header with its metadata, then each message verbatim.

    Examples:
        >>> from semgrad.core import Message
        >>> print(format_request(LLMRequest((Message("user", "2+2?"),), node="answer", sample=3), 1))
        ===== forward #1: engine forward, node answer, sample 3 =====
        ----- user -----
        2+2?
    """
    meta = [f"engine {request.engine}"]
    meta += [f"node {request.node}"] if request.node is not None else []
    meta += [f"sample {request.sample}"] if request.sample is not None else []
    meta += [f"draw {request.draw}"] if request.draw else []
    meta += [f"targets {', '.join(request.targets)}"] if request.targets else []
    if request.options:
        meta.append("options " + json.dumps(dict(request.options), sort_keys=True, default=str))
    lines = [f"===== {request.purpose} #{number}: {', '.join(meta)} ====="]
    for message in request.messages:
        lines += [f"----- {message.role} -----", message.content]
    return "\n".join(lines)


def show_prompts(config: RunConfig, n: int) -> str:
    """The text `--show-prompts N` prints."""
    found: Mapping[str, list[LLMRequest]] = first_requests(config, n)
    blocks = [
        f"The first {n} request(s) of each purpose of this run; nothing was called. Requests after the first "
        "forward ones contain a stand-in's placeholder replies where a real run has the model's."
    ]
    for requests in found.values():
        blocks += [format_request(r, i) for i, r in enumerate(requests, 1)]
    return "\n\n".join(blocks)
