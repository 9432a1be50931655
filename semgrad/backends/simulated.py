"""The built-in simulated LLM: deterministic, offline, and clearly not a real model.

It lets ``semgrad demo``, ``semgrad run --backend simulated`` and the tests run
a whole optimisation with no network and no API key, and it *responds to
optimisation* the way the method assumes a real model does:

* each question needs one of the `skills` (derived from its text and the seed);
* a final node answers a question it knows correctly when its instruction names
  the skill that question needs, and wrongly otherwise;
* a rewrite request adds the next missing skill to the text being improved, so
  every accepted update makes more questions come out right.

Everything is derived from the request, so the same request always gets the
same reply.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping

from ..core import LLMRequest, parse_number
from ..core._parse import format_tagged, parse_tagged
from ..core.optim._named import format_named
from .fake import HashLLM, reply_backward

__all__ = ["SKILLS", "SimulatedLLM"]

#: The phrases the simulated model "needs" in an instruction, in the order rewrites add them.
SKILLS = (
    "Work step by step.",
    "Check each intermediate result before using it.",
    "End with a line 'Answer: <answer>' and nothing after it.",
)


def _digest(text: str) -> int:
    return int(hashlib.sha256(text.encode("utf-8")).hexdigest()[:12], 16)


class SimulatedLLM:
    """A deterministic stand-in for a real LLM that learns from rewrites.

    Args:
        answers: The right answer per question text (questions it does not know
            get a plausible wrong answer).
        skills: The phrases an instruction must contain (see module doc).
        seed: Varies difficulties and texts.

    Examples:
        >>> from semgrad.core import Message
        >>> llm = SimulatedLLM({"What is 3 + 4?": "7"})
        >>> skilled = " ".join(SKILLS)
        >>> prompt = "[1] question (q):\\nWhat is 3 + 4?"
        >>> r = LLMRequest((Message("system", skilled), Message("user", prompt)), node="answer")
        >>> llm(r)
        'Working through it, the result follows.\\nAnswer: 7'
    """

    is_async = False

    def __init__(
        self, answers: Mapping[str, str] | None = None, *, skills: tuple[str, ...] = SKILLS, seed: int = 0
    ) -> None:
        if not skills:
            raise ValueError("SimulatedLLM needs at least one skill")
        self.answers = dict(answers or {})
        self.skills = tuple(skills)
        self.seed = seed
        self._fallback = HashLLM(salt=f"simulated:{seed}")

    def needed(self, question: str) -> str:
        """The skill a question needs."""
        return self.skills[_digest(f"{self.seed}:{question}") % len(self.skills)]

    @staticmethod
    def _has(text: str, skill: str) -> bool:
        return skill.casefold().rstrip(".") in " ".join(text.split()).casefold()

    def __call__(self, request: LLMRequest) -> str:
        if request.purpose == "forward":
            return self._forward(request)
        if request.purpose == "backward":
            return self._backward(request)
        if request.purpose == "rewrite":
            return self._rewrite(request)
        if request.purpose == "critique":
            return format_tagged("critique", "The instruction should say how to reason and how to format the answer.")
        return self._fallback(request)

    def _question(self, prompt: str) -> str | None:
        return next((q for q in sorted(self.answers, key=len, reverse=True) if q and q in prompt), None)

    def _forward(self, request: LLMRequest) -> str:
        question = self._question(request.prompt)
        if request.node and not self._is_final(request):
            numbers = re.findall(r"[0-9]+", request.prompt.split("\n", 1)[-1])
            about = f" About: {question}" if question is not None else ""
            return f"Key facts: {', '.join(numbers[:4]) or 'none'}.{about}"
        if question is None:
            return "Answer: unknown"
        right = self.answers[question]
        if self._has(request.system, self.needed(question)):
            return f"Working through it, the result follows.\nAnswer: {right}"
        return f"It seems to be this.\nAnswer: {self._wrong(right)}"

    @staticmethod
    def _is_final(request: LLMRequest) -> bool:
        return request.node in ("answer", "final", "output") or "[2]" in request.prompt

    @staticmethod
    def _wrong(right: str) -> str:
        number = parse_number(right)
        if number is not None and re.fullmatch(r"-?[\d,.$]+", right.strip()):
            return str(int(number) + 1 if number.is_integer() else number + 1)
        letter = re.fullmatch(r"\(([A-Za-z])\)", right.strip())
        if letter:
            return f"({chr((ord(letter.group(1).upper()) - 64) % 5 + 65)})"
        flips = {"yes": "No", "no": "Yes", "true": "False", "false": "True", "valid": "invalid", "invalid": "valid"}
        return flips.get(right.strip().casefold(), f"not {right}")

    def _backward(self, request: LLMRequest) -> str:
        feedback = parse_tagged(request.prompt, ["feedback"]).value_or("the output was wrong")
        return reply_backward(
            request,
            {
                t: f"{t} should make the reasoning explicit and checkable; downstream feedback: {feedback}"
                for t in request.targets
            },
        )

    def _rewrite(self, request: LLMRequest) -> str:
        if request.targets:
            return self._rewrite_each(request)
        current = parse_tagged(request.prompt, ["current"]).value_or("")
        missing = [s for s in self.skills if not self._has(current, s)]
        improved = f"{current} {missing[0]}".strip() if missing else current
        return format_tagged("improved", improved)

    def _rewrite_each(self, request: LLMRequest) -> str:
        """A reply with one value per target: OptoPrime's variables (each shown in a named
        block) get their next missing skill; COPRO's candidates, improving the text shown
        (the current one, or the best attempt), get different missing skills."""
        prompt = request.prompt
        fallback = parse_tagged(prompt, ["current"]).value_or("")
        if not fallback:
            tried = re.findall(r"(?m)^Instruction: (.*)$", prompt)
            fallback = tried[-1] if tried else ""
        values = {}
        for index, target in enumerate(request.targets):
            shown = re.search(rf'<variable name="{re.escape(target)}">\n?(.*?)\n?</variable>', prompt, re.DOTALL)
            base = shown.group(1).strip() if shown else fallback
            missing = [s for s in self.skills if not self._has(base, s)]
            pick = index if target.startswith("candidate ") else 0
            values[target] = f"{base} {missing[pick % len(missing)]}".strip() if missing else base
        return format_named("improved", values)
