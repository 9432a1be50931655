"""Losses: compare a trace's output with the example's target; give a score and seed feedback.

A loss is a callable ``loss(example, trace) -> Program[Score]``. String and
numeric matches are pure (no call); `llm_judge` asks an LLM (``purpose="evaluate"``)
and its critique becomes the seed feedback of backpropagation.
"""

from __future__ import annotations

import inspect
import math
import re
import string
from collections.abc import Callable
from typing import Any

import attrs
from returns.result import Success

from ._example import Example
from ._parse import parse_tagged
from ._program import Program, ask, map_, pure
from ._requests import LLMRequest, Message
from ._trace import Trace

__all__ = [
    "Loss",
    "Score",
    "exact_match",
    "extract_answer",
    "llm_judge",
    "normalize",
    "normalized_match",
    "numeric_match",
    "parse_number",
]


@attrs.frozen
class Score:
    """How one sample did.

    Attributes:
        value: 1.0 for a right answer, 0.0 for a wrong one (a judge may give values between).
        feedback: The seed feedback for backpropagation.
        answer: The answer that was compared (extracted from the output).
    """

    value: float = attrs.field()
    feedback: str
    answer: Any = None

    @value.validator
    def _finite(self, attribute: Any, value: float) -> None:
        # A NaN score compares false with everything: the gate would refuse every candidate, unsaid.
        if not (isinstance(value, (int, float)) and math.isfinite(value)):
            raise ValueError(f"a score's value must be a finite number, got {value!r}")

    @property
    def correct(self) -> bool:
        """True for a full score."""
        return self.value >= 1.0


Loss = Callable[[Example, Trace], Program[Score]]


def check_loss(loss: Any) -> None:
    """Refuse, with a `TypeError`, what cannot be called as ``loss(example, trace)``: not a
    callable, or a loss's factory left uncalled (``normalized_match`` for ``normalized_match()``).

    Examples:
        >>> check_loss(normalized_match())
        >>> check_loss(normalized_match)
        Traceback (most recent call last):
        ...
        TypeError: loss must be a loss(example, trace) -> Program[Score], such as normalized_match(); \
normalized_match takes () (a factory: call it to build the loss)
    """
    if not callable(loss):
        raise TypeError(f"loss must be a callable loss(example, trace) -> Program[Score], got {type(loss).__name__}")
    try:
        signature = inspect.signature(loss)
    except (TypeError, ValueError):  # a callable without a signature to read: it is called as it is
        return
    try:
        signature.bind(None, None)
    except TypeError:
        name = getattr(loss, "__name__", type(loss).__name__)
        shown = signature.replace(return_annotation=inspect.Signature.empty)
        try:
            signature.bind()
            hint = "a factory: call it to build the loss"
        except TypeError:
            hint = "a loss takes the example and the trace"
        raise TypeError(
            "loss must be a loss(example, trace) -> Program[Score], such as normalized_match(); "
            f"{name} takes {shown} ({hint})"
        ) from None


#: An ``Answer: ...`` line. A dash separates only when no number follows it at once: in "Answer is -5" it is the sign.
_ANSWER_LINE = re.compile(r"(?im)^\s*(?:final\s+)?answer\s*(?:is)?\s*(?::|-(?![\d.]))\s*(.+?)\s*$")


def extract_answer(output: Any) -> str:
    """The answer in an output: the last ``Answer: ...`` line, else the whole text.

    Examples:
        >>> extract_answer("Let me think.\\nAnswer: (B)")
        '(B)'
        >>> extract_answer("  42 ")
        '42'
        >>> extract_answer("Answer - (C)"), extract_answer("Answer: -5"), extract_answer("Answer is -5")
        ('(C)', '-5', 'Answer is -5')
    """
    text = "" if output is None else str(output)
    found = _ANSWER_LINE.findall(text)
    return (found[-1] if found else text).strip()


_CHOICE = re.compile(r"\(?([a-z])\)?")


#: What `normalize` strips from an answer's ends: quotes, sentence punctuation and emphasis marks. Brackets
#: and signs are the answer itself in some tasks (BBH's dyck_languages, ``] ] >``; a negative number, ``-50``).
_EDGES = "\"'`\u201c\u201d\u2018\u2019.,;:!?*_ "


def normalize(text: str) -> str:
    """Case and whitespace folded, and the quotes, sentence punctuation and emphasis around an answer
    stripped; ``(B)``, ``B)`` and ``b`` all become ``(b)``. Brackets and signs are kept: they are
    the answer in some tasks.

    Examples:
        >>> normalize("  The Answer.  "), normalize("B)"), normalize("(b)"), normalize('"Yes".')
        ('the answer', '(b)', '(b)', 'yes')
        >>> normalize("**-50**."), normalize("] ] >")
        ('-50', '] ] >')
    """
    folded = " ".join(str(text).split()).casefold()
    choice = _CHOICE.fullmatch(folded.strip(string.punctuation.replace("(", "").replace(")", "") + " "))
    if choice:
        return f"({choice.group(1)})"
    return folded.strip(_EDGES)


_NUMBER = re.compile(r"-?\$?\d[\d,]*(?:\.\d+)?|-?\.\d+")


def parse_number(text: Any) -> float | None:
    """The last number in a text (commas and a dollar sign allowed), or None.

    Examples:
        >>> parse_number("He made $70,000 in profit."), parse_number("none")
        (70000.0, None)
    """
    found = _NUMBER.findall("" if text is None else str(text))
    if not found:
        return None
    return float(found[-1].replace(",", "").replace("$", ""))


def _feedback(answer: str, target: Any) -> str:
    return f'The output "{answer}" is wrong; the expected output is "{target}".'


def _score_by(same: Callable[[str, Any], bool]) -> Loss:
    def loss(example: Example, trace: Trace) -> Program[Score]:
        answer = extract_answer(trace.output_value)
        if trace.output_value is None:
            return pure(Score(0.0, f'The system produced no output; the expected output is "{example.target}".', None))
        if same(answer, example.target):
            return pure(Score(1.0, f'The output "{answer}" is correct.', answer))
        return pure(Score(0.0, _feedback(answer, example.target), answer))

    return loss


def exact_match() -> Loss:
    """Right when the extracted answer equals the target exactly (after stripping)."""
    return _score_by(lambda answer, target: answer == str(target).strip())


def normalized_match() -> Loss:
    """Right when answers agree after `normalize` (the default loss of `fit`).

    Examples:
        >>> from semgrad.core import NodeRun
        >>> trace = Trace(0, "g", "out", {"out": NodeRun("out", "llm", value="Thinking...\\nAnswer: b)")})
        >>> normalized_match()(Example({}, "(B)"), trace).value
        Score(value=1.0, feedback='The output "b)" is correct.', answer='b)')
    """
    return _score_by(lambda answer, target: normalize(answer) == normalize(str(target)))


def numeric_match(*, tolerance: float = 1e-6) -> Loss:
    """Right when the last number of the answer equals the target's number (GSM8K)."""

    def same(answer: str, target: Any) -> bool:
        got, want = parse_number(answer), parse_number(target)
        return got is not None and want is not None and abs(got - want) <= tolerance * max(1.0, abs(want))

    return _score_by(same)


#: A judge's score written over its scale: "0.8/1", "8 out of 10", or "80%".
_JUDGE_FRACTION = re.compile(
    r"(?P<value>-?\d+(?:\.\d+)?|-?\.\d+)\s*(?:(?:/|out\s+of)\s*(?P<scale>\d+(?:\.\d+)?|\.\d+)|(?P<percent>%))",
    re.IGNORECASE,
)


def _judge_score(text: str) -> float | None:
    """The score in the text of a judge's ``<score>`` block, or None: the first number written over a
    scale (``/``, ``out of``, ``%``) divided by it, else the last number; `llm_judge` clamps it to [0, 1].

    Examples:
        >>> _judge_score("0.8"), _judge_score("0.3/1"), _judge_score("8 out of 10"), _judge_score("75%")
        (0.8, 0.3, 0.8, 0.75)
        >>> _judge_score("0.0 to 1.0: 0.6"), _judge_score("none")
        (0.6, None)
    """
    found = _JUDGE_FRACTION.search(text)
    if found is None:
        return parse_number(text)
    value = float(found.group("value"))
    if found.group("percent"):
        return value / 100.0
    scale = float(found.group("scale"))
    return value / scale if scale > 0 else value


JUDGE_SYSTEM = "You are a strict evaluator. You judge an output against the criteria and explain what is wrong."
JUDGE_USER = """Criteria:
{criteria}

Input:
{inputs}

Output to judge:
<output>
{output}
</output>
{reference}
Give a score from 0 to 1 (1 only if the output fully meets the criteria) and a critique that says \
concretely what to change. Reply exactly in this form:
<score>0.0 to 1.0</score>
<critique>what is wrong and how to fix it</critique>"""


def llm_judge(criteria: str, *, engine: str = "backward", show_target: bool = True) -> Loss:
    """An LLM-judge loss (``purpose="evaluate"``): its critique becomes the seed feedback.

    The judge's reply holds a ``<score>`` block and a ``<critique>`` block. The score
    is read from its block: a number written over its scale (``0.8/1``, ``8 out of
    10``, ``80%``) as that fraction, else its last number; clamped to [0, 1]. An
    unreadable or failed judgement scores 0 with feedback that says so.

    Examples:
        >>> from semgrad.core import NodeRun, Trace
        >>> trace = Trace(0, "g", "answer", {"answer": NodeRun("answer", "llm", value="7")})
        >>> judged = llm_judge("The sum, alone.")(Example({"question": "3 + 4?"}, "7"), trace)
        >>> judged.emitted[0][1].purpose
        'evaluate'
        >>> from returns.result import Success
        >>> from semgrad.core import LLMResponse
        >>> reply = Success(LLMResponse("<score>1</score><critique>Nothing to fix.</critique>"))
        >>> judged.feed(judged.emitted[0][0], reply).value
        Score(value=1.0, feedback='Nothing to fix.', answer='7')
    """

    def loss(example: Example, trace: Trace) -> Program[Score]:
        inputs = "\n".join(f"{k}: {v}" for k, v in example.inputs.items()) or "(none)"
        reference = f"\nReference answer: {example.target}\n" if show_target and example.target is not None else ""
        request = LLMRequest(
            (
                Message("system", JUDGE_SYSTEM),
                Message(
                    "user",
                    JUDGE_USER.format(criteria=criteria, inputs=inputs, output=trace.output_value, reference=reference),
                ),
            ),
            engine=engine,
            purpose="evaluate",
            node=trace.output,
            sample=trace.sample,
        )

        def read(reply: Any) -> Score:
            if not isinstance(reply, Success):
                return Score(0.0, f"The judge could not be asked ({reply.failure().kind}).", trace.output_value)
            text = reply.unwrap().text
            critique = parse_tagged(text, ["critique"])
            number = _judge_score(parse_tagged(text, ["score"]).value_or(""))
            if not isinstance(critique, Success) or number is None:
                return Score(0.0, "The judge's reply could not be read.", trace.output_value)
            return Score(max(0.0, min(1.0, number)), critique.unwrap(), trace.output_value)

        return map_(ask(request), read)

    return loss
