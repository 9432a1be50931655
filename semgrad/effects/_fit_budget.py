"""`fit`'s budget: a `Budget` value, and the guard around the LLM that keeps a run within it.

The guard is the one place `fit` checks its budget: it refuses a call before it starts
once the calls or tokens would pass the limit, and notes a budget (or a stop) spent
further down the LLM's middleware; `fit` ends the run cleanly when the guard says so.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from ..core import LLMError, LLMFailure, LLMRequest
from ._accounting import Accounts, Amount, Line, billed, failed_tokens
from ._interpret import error_of
from ._limit import estimate_tokens
from ._protocol import is_async_llm

__all__ = ["STOP_KINDS", "Budget", "BudgetGuard", "as_budget"]


@attrs.frozen
class Budget:
    """Stop the run cleanly once either limit would be passed (None: no limit).

    The budget counts the calls `fit` makes of its `llm`, one per request of its
    programs, above whatever middleware `llm` holds: a call that a
    ``retrying(...)`` inside `llm` tries three times counts once, and a call a
    ``cached(...)`` inside `llm` answers from its cache counts too. To cap what
    reaches the provider (each retry paid for, cache hits free), put
    ``budgeted(provider, max_calls=..., max_tokens=...)`` under the retries and
    the cache instead, as the CLI does: ``cached(retrying(budgeted(provider, ...)))``;
    the call it refuses stops `fit` the same way. A call this budget refuses
    reaches no LLM; the run's statistics count it as a failed call of kind
    ``"budget"`` (see `RunStatistics`). A request an in-run memo (``memoized``)
    answers from memory is no call: the budget neither counts nor refuses it.

    Attributes:
        max_calls: Calls `fit` may make (calls it started; the refused ones are not
            counted against the limit).
        max_tokens: Tokens `fit`'s calls may use. Each call reserves its estimate
            (characters / 4, plus the request's ``max_tokens`` option) before it
            starts and is refused when the tokens used plus the reservations would
            pass the limit. A reply's reported usage replaces its estimate; a reply
            without usage keeps the estimate, so the limit is reached even when
            the provider reports no usage. A failed call keeps its estimate too,
            unless its error kind says the model never ran (see ``budgeted``).
    """

    max_calls: int | None = attrs.field(default=None, validator=lambda _, a, v: _check_limit(a.name, v))
    max_tokens: int | None = attrs.field(default=None, validator=lambda _, a, v: _check_limit(a.name, v))


def _check_limit(name: str, value: Any) -> None:
    if value is not None and not (type(value) is int and value >= 0):  # NaN or 1.5 would be no limit, or a wrong one
        raise ValueError(f"Budget.{name} must be >= 0 and a whole number (or None for no limit), got {value!r}")


#: Error kinds that mean "stop the run": a spent budget anywhere in the LLM's middleware stack, or a
#: run-level stop (``"halted"``: the calls keep failing). `fit` ends cleanly with ``stopped`` set to the kind.
STOP_KINDS = ("budget", "halted")


class BudgetGuard:
    """Wraps the LLM: counts calls and tokens in an `Accounts`; refuses calls past the budget.

    The calls `fit` made of its LLM are `accounts` (a line per outcome: a reply's reported tokens, a failed
    call's error kind, a memo's answer as a memo hit), plus the calls in flight, counted when they start so
    concurrent calls never overshoot ``max_calls``. Above the LLM's middleware, a reply a ``cached(...)``
    inside it gave counts as a call with its stored usage (see `Budget`). The tokens are the accounts' plus
    `estimated`: the estimates charged for replies that reported no usage and for failed calls that may have
    been paid (see ``budgeted``), which no reply reported.

    `exceeded` says the run must stop, and `stopped` why: ``"budget"`` (this budget, or a
    `budgeted` layer of the LLM, refused a call) or another of `STOP_KINDS` a middleware raised.
    """

    is_async = True

    def __init__(self, llm: Any, budget: Budget | None) -> None:
        self.llm, self.budget = llm, budget or Budget()
        self.identity = getattr(llm, "identity", None)
        self.accounts = Accounts()
        self.in_flight = self.estimated = self.reserved = 0
        self._calls = self._tokens = 0  # the accounts' billed calls and tokens, kept as they are added
        self.exceeded = False
        self.stopped = "budget"

    @property
    def calls(self) -> int:
        """Calls started: those the accounts hold, and those in flight."""
        return self._calls + self.in_flight

    @property
    def tokens(self) -> int:
        """Tokens charged: the accounts' reported tokens and the estimates."""
        return self._tokens + self.estimated

    def _add(self, request: LLMRequest, amount: Amount, model: Any = "", error: str = "") -> None:
        line = Line(str(request.engine), str(request.purpose), model if isinstance(model, str) else "", error)
        self.accounts = self.accounts.add(line, amount)
        self._calls += amount.calls
        self._tokens += amount.input_tokens + amount.output_tokens

    async def __call__(self, request: LLMRequest) -> Any:
        from_memory = getattr(self.llm, "answers_from_memory", None)
        if from_memory is not None and from_memory(request):  # a memo hit: no call, nothing to count or refuse
            result = self.llm(request)
            result = await result if hasattr(result, "__await__") else result
            self._add(request, Amount(memo_hits=1), getattr(result, "model", ""))
            return result
        # Reserve before calling (as `budgeted` does), so the calls in flight cannot pass the budget together.
        estimate = estimate_tokens(request) if self.budget.max_tokens is not None else 0
        if (self.budget.max_calls is not None and self.calls >= self.budget.max_calls) or (
            self.budget.max_tokens is not None and self.tokens + self.reserved + estimate > self.budget.max_tokens
        ):
            self.exceeded = True
            raise LLMFailure(LLMError("budget", "the run's budget is spent", retryable=False))
        self.in_flight += 1
        self.reserved += estimate
        try:
            result = self.llm(request)
            if is_async_llm(self.llm) or hasattr(result, "__await__"):
                result = await result
        except BaseException as exc:  # a failed call, or a cancellation: it was made, and may have been paid
            if isinstance(exc, LLMFailure) and exc.error.kind in STOP_KINDS:  # a budget (or a stop) further down
                self.exceeded = True
                self.stopped = exc.error.kind
            # the kind the runner above records: the error's own, a timeout, or "exception"; a cancellation is
            # the runner's timeout cutting the call (as the run's tally counts it)
            kind = error_of(exc).kind if isinstance(exc, Exception) else "timeout"
            self.estimated += failed_tokens(exc, estimate)
            self._add(request, Amount(calls=1, errors=1), error=kind)
            raise
        finally:
            self.in_flight -= 1
            self.reserved -= estimate
        if getattr(result, "memo_hit", False):  # answered from memory after all (an identical call was in flight)
            self._add(request, Amount(memo_hits=1), getattr(result, "model", ""))
            return result
        usage, model = getattr(result, "usage", None) or {}, getattr(result, "model", "")
        if "input_tokens" in usage or "output_tokens" in usage:  # reported usage replaces the estimate
            self._add(request, billed(usage), model)
        else:  # no usage reported: the estimate is charged (see `charged_tokens`)
            self.estimated += estimate
            self._add(request, Amount(calls=1), model)
        return result


def as_budget(budget: Budget | Mapping[str, int] | None) -> Budget | None:
    """`fit`'s ``budget`` argument as a `Budget` (a mapping gives its fields), or None for no limit."""
    if budget is None or isinstance(budget, Budget):
        return budget
    if not isinstance(budget, Mapping):
        raise TypeError(
            f"budget must be a Budget or a mapping such as {{'max_calls': 100}}, got {type(budget).__name__}"
        )
    return Budget(**dict(budget))
