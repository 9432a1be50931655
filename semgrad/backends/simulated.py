"""The built-in simulated LLM: deterministic, offline, and clearly not a real model.

It lets ``semgrad demo`` and the tests run the whole system with no network and
no API key. Forward replies are derived from the request (the node, its
instruction and its inputs), so the same request always gets the same reply.
"""

from __future__ import annotations

import hashlib
import re

from ..core import LLMRequest, request_key
from .fake import HashLLM

__all__ = ["SimulatedLLM"]

_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


class SimulatedLLM:
    """A deterministic stand-in for a real LLM.

    * forward: a hint node names the numbers it sees; the final node answers with
      a number picked deterministically from the question's numbers (so some
      answers are right, most are not, as with a weak model);
    * every other purpose: a well-formed reply from `HashLLM`.

    Examples:
        >>> from semgrad.core import Message
        >>> llm = SimulatedLLM()
        >>> r = LLMRequest((Message("system", "Solve."), Message("user", "[1] question (q):\\n3 + 4?")), node="answer")
        >>> llm(r) == llm(r)
        True
    """

    is_async = False

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed
        self._fallback = HashLLM(salt=f"simulated:{seed}")

    def __call__(self, request: LLMRequest) -> str:
        if request.purpose != "forward":
            return self._fallback(request)
        numbers = _NUMBER.findall(request.prompt)
        pick = int(hashlib.sha256(f"{self.seed}:{request_key(request)}".encode()).hexdigest(), 16)
        if request.node and request.node.startswith("hint"):
            shown = ", ".join(numbers[:4]) or "no numbers"
            return f"The quantities that matter are: {shown}. Combine them step by step."
        if not numbers:
            return "Answer: unknown"
        return f"Answer: {numbers[pick % len(numbers)]}"
