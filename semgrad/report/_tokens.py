"""Tokens on the simulated LLM, shown one way everywhere: none.

The simulated LLM runs offline and sends no text to any model, so a run on it counts no tokens and
estimates none: its ``results.json`` holds null tokens, and the progress line, the end line, the report,
the comparison and the sweep page say `SIMULATED_TOKENS` where a real run shows its counts. (A dry run's
plan is another matter: it estimates what a real model would use, and says so.)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["SIMULATED_TOKENS", "tokens_json"]

#: What a display shows for the tokens of a run on the simulated LLM.
SIMULATED_TOKENS = "none (simulated LLM)"


def tokens_json(
    simulated: bool, input_tokens: int, output_tokens: int, by_role: Mapping[str, tuple[int, int]]
) -> dict[str, Any]:
    """``results.json``'s ``tokens``: the counts, or null ones for the simulated LLM (no reply reported any).

    Examples:
        >>> tokens_json(True, 0, 0, {})
        {'input': None, 'output': None, 'by_role': {}}
        >>> tokens_json(False, 7, 3, {"forward": (7, 3)})["by_role"]
        {'forward': {'input': 7, 'output': 3}}
    """
    if simulated and not (input_tokens or output_tokens):
        return {"input": None, "output": None, "by_role": {}}
    return {
        "input": input_tokens,
        "output": output_tokens,
        "by_role": {role: {"input": used[0], "output": used[1]} for role, used in by_role.items()},
    }
