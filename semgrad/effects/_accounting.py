"""Accounting and budgets: count calls and tokens, estimate the cost, stop at a limit.

One model counts for everything that counts calls: `Accounts`, a frozen map from
a `Line` (engine, purpose, model, error kind) to an `Amount` (billed calls, failed
calls, tokens, cache hits, memo hits). A reply a cache or a memo answered itself is
marked by that layer (`mark_answered`: the reply's ``cache_hit`` or ``memo_hit``), so
whoever counts above it sees a hit, not a call: hits never reach ``calls``, and their
stored usage is never counted again. ``Accounts.record`` is the one place an outcome
becomes a line.

`accounted` keeps an `Accounts` (its `AccountingReport`, the billed calls per
``(engine, model)``, is derived from it on demand); `budgeted` keeps one too, and
refuses calls once its totals reach a call or token limit, with a non-retryable
``LLMError(kind="budget")``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from typing import Any, Literal

import attrs

from ..core import FrozenMap, LLMError, LLMFailure, LLMRequest, LLMResponse
from ._limit import estimate_tokens
from ._routing import call, identity_of

__all__ = [
    "BATCH_DISCOUNT",
    "AccountingReport",
    "Accounts",
    "Amount",
    "Line",
    "UsageRow",
    "accounted",
    "answered_by",
    "budgeted",
    "mark_answered",
]

#: USD per million tokens by model: ``(input, output)``, or ``(input, output, cached_input, cache_write)``
#: where the provider bills prompt tokens read from its cache, or written to it, at other rates.
Prices = Mapping[str, tuple[float, ...]]

#: The usage keys a reply's cached prompt tokens are reported under: tokens of ``input_tokens`` (which
#: counts every prompt token) the provider read from its prompt cache, and tokens it wrote to it.
CACHED_INPUT, CACHE_WRITE = "cached_input_tokens", "cache_write_tokens"


@attrs.frozen
class UsageRow:
    """Calls and tokens for one ``(engine, model)``.

    Attributes:
        engine: The requests' engine ("forward", "backward", "optimizer").
        model: The model that answered (as the reply names it; for failed calls,
            the model the backend was configured with, if it says).
        calls: Calls made, failed ones included.
        failures: Calls that failed (or were cancelled: a deadline cut them).
        input_tokens: Input tokens the replies reported.
        output_tokens: Output tokens the replies reported.
        cost_usd: Estimated cost, or None when the price table lacks the model.
    """

    engine: str
    model: str
    calls: int = 0
    failures: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None


@attrs.frozen
class AccountingReport:
    """Totals over every call an `accounted` LLM saw.

    Attributes:
        calls: Calls made, failed ones included.
        failures: Calls that failed.
        input_tokens: Input tokens reported.
        output_tokens: Output tokens reported.
        cost_usd: Estimated cost of the priced rows (None without a price table).
        unpriced: Models that used tokens but have no price in the table.
        rows: A `UsageRow` per ``(engine, model)``, in first-seen order.
    """

    calls: int = 0
    failures: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    unpriced: tuple[str, ...] = ()
    rows: FrozenMap[tuple[str, str], UsageRow] = FrozenMap()


Answerer = Literal["cache", "memo"]


def mark_answered(response: LLMResponse, by: Answerer) -> LLMResponse:
    """A copy of `response` marked as answered by a cache or a memo (no call made).

    A cache or memo layer returns ``mark_answered(stored, "cache")``; a counter above it
    (`accounted`, a run's tally) then counts a hit instead of a call. The mark is the reply's
    ``cache_hit`` or ``memo_hit`` field (provenance: the copy equals `response`); marking
    clears the other one, so the outermost layer that answered is the one named.

    Examples:
        >>> reply = LLMResponse("4")
        >>> answered_by(mark_answered(reply, "memo")), answered_by(LLMResponse("4"))
        ('memo', None)
        >>> mark_answered(reply, "cache") == reply, answered_by(reply)
        (True, None)
    """
    if by not in ("cache", "memo"):
        raise ValueError(f"a reply is answered by 'cache' or 'memo', not {by!r}")
    if not isinstance(response, LLMResponse):
        raise TypeError(f"only an LLMResponse can be marked answered, got {type(response).__name__}")
    return attrs.evolve(response, cache_hit=by == "cache", memo_hit=by == "memo")


def answered_by(response: Any) -> str | None:
    """``"cache"`` or ``"memo"`` when the layer below answered `response` itself (see `mark_answered`), else None."""
    if getattr(response, "cache_hit", False) is True:
        return "cache"
    return "memo" if getattr(response, "memo_hit", False) is True else None


@attrs.frozen(cache_hash=True)
class Line:
    """What a count is about: the engine, the purpose, the model that answered, and the error kind ("" for a reply).

    A failed call is counted under the model its backend was configured with, if it says.
    """

    engine: str
    purpose: str
    model: str = ""
    error: str = ""


@attrs.frozen
class Amount:
    """How much: billed calls (failed ones included), failed calls, tokens, and hits apart from calls.

    Attributes:
        calls: Calls made: they reached the provider (or were attempted and failed).
        errors: Of those, calls that failed.
        input_tokens, output_tokens: Tokens the replies of the billed calls reported.
        cache_hits: Requests a cache (or a run's journal) answered: no call, no tokens.
        memo_hits: Requests an in-run memo answered: no call, no tokens.
        tool_calls: Calls of a tool by a system written as Python (``ctx.tool``), on the
            tool's own line (engine and purpose ``"tool"``, model: the tool's name): never LLM
            calls, so never in `calls`. A call retried counts once; one answered from a cache
            counts as a cache hit instead.
        tool_errors: Of those, tool calls that failed (raised, or ran out of time) after their retries.
        batch_calls: Of the calls, those a provider's batch answered (``batched``).
        batch_input_tokens, batch_output_tokens: Of the tokens, those of the batch calls: priced at
            `BATCH_DISCOUNT` of the table's rates.
        cached_input_tokens: Of `input_tokens`, those the provider read from its prompt cache (billed at
            its cached-input rate).
        cache_write_tokens: Of `input_tokens`, those the provider wrote to its prompt cache (Anthropic bills
            them at its cache-write rate).
    """

    calls: int = 0
    errors: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_hits: int = 0
    memo_hits: int = 0
    tool_calls: int = 0
    tool_errors: int = 0
    batch_calls: int = 0
    batch_input_tokens: int = 0
    batch_output_tokens: int = 0
    cached_input_tokens: int = 0
    cache_write_tokens: int = 0

    def __add__(self, other: Amount) -> Amount:
        # By field name, never by position: a field added in the middle cannot shift the others.
        return Amount(*(getattr(self, name) + getattr(other, name) for name in _AMOUNT_FIELDS))

    def cost(self, price: tuple[float, ...]) -> float:
        """USD for these tokens at `price` (see `amount_cost`).

        Examples:
            >>> Amount(calls=2, input_tokens=2_000_000, batch_calls=1, batch_input_tokens=1_000_000).cost((1.0, 0.0))
            1.5
        """
        return amount_cost(price, self)

    @property
    def hits(self) -> int:
        """Requests answered without a call."""
        return self.cache_hits + self.memo_hits


_AMOUNT_FIELDS = tuple(f.name for f in attrs.fields(Amount))
#: The counts an accounts line written before tools, batches or prompt caching were counted lacks (read as 0).
_LATER_FIELDS = (
    "tool_calls",
    "tool_errors",
    "batch_calls",
    "batch_input_tokens",
    "batch_output_tokens",
    "cached_input_tokens",
    "cache_write_tokens",
)

#: What a batch call costs, as a share of the same call's price (OpenAI's Batch API, Anthropic's Message Batches).
BATCH_DISCOUNT = 0.5
_LINE_FIELDS = tuple(f.name for f in attrs.fields(Line))


def _count(value: Any) -> int:
    """A non-negative whole token count from a reply's usage, else 0 (an odd value must not stop the counting)."""
    if type(value) is float and math.isfinite(value) and value.is_integer():
        value = int(value)
    return value if type(value) is int and 0 <= value < 2**63 else 0


@attrs.frozen
class Accounts:
    """Calls, tokens, cost and errors by kind, purpose, engine and model: a `Line` -> `Amount` map.

    Every total is the sum of the lines (`total`, `by`); hits are lines' ``cache_hits`` and
    ``memo_hits``, never ``calls``. ``to_json`` / ``from_json`` carry it across processes
    (``from_json`` checks hostile input).

    Examples:
        >>> from semgrad.core import Message
        >>> r = LLMRequest((Message("user", "hi"),), purpose="forward")
        >>> a = Accounts().record(r, LLMResponse("ok", {"input_tokens": 5, "output_tokens": 2}, "m"))
        >>> a = a.record(r, mark_answered(LLMResponse("ok"), "cache"))
        >>> a = a.record(r, error=LLMError("server", "HTTP 500"))
        >>> t = a.total()
        >>> t.calls, t.errors, t.input_tokens, t.cache_hits
        (2, 1, 5, 1)
        >>> a.cost({"m": (1e6, 0.0)}), Accounts.from_json(a.to_json()) == a
        (5.0, True)
    """

    lines: FrozenMap[Line, Amount] = FrozenMap()

    def add(self, line: Line, amount: Amount) -> Accounts:
        """These accounts with `amount` added to `line`."""
        lines = dict(self.lines.view)  # a plain copy at C speed: a run's tally adds a line per call
        before = lines.get(line)
        lines[line] = amount if before is None else before + amount
        return Accounts(FrozenMap(lines))

    def __add__(self, other: Accounts) -> Accounts:
        total = dict(self.lines)
        for line, amount in other.lines.items():
            total[line] = total[line] + amount if line in total else amount
        return Accounts(FrozenMap(total))

    def record(
        self,
        request: LLMRequest,
        response: Any = None,
        *,
        error: LLMError | None = None,
        model: str = "",
    ) -> Accounts:
        """These accounts with one outcome of `request` added: a reply (a hit when a layer below marked it
        answered), or a failed call (`error`; `model`: the one the backend was configured with)."""
        engine, purpose = str(request.engine), str(request.purpose)
        if error is not None:
            return self.add(Line(engine, purpose, model, error.kind), Amount(calls=1, errors=1))
        answered = answered_by(response)
        reply_model = getattr(response, "model", "")
        line = Line(engine, purpose, reply_model if isinstance(reply_model, str) else "")
        if answered == "cache":
            return self.add(line, Amount(cache_hits=1))
        if answered == "memo":
            return self.add(line, Amount(memo_hits=1))
        usage = getattr(response, "usage", None) or {}
        amount = billed(usage)
        if usage.get("batch") == 1:  # a provider's batch answered it (`semgrad.effects._batching.BATCH_USAGE`)
            amount = attrs.evolve(
                amount, batch_calls=1, batch_input_tokens=amount.input_tokens, batch_output_tokens=amount.output_tokens
            )
        return self.add(line, amount)

    def total(self) -> Amount:
        """The sum of every line."""
        total = Amount()
        for amount in self.lines.values():
            total = total + amount
        return total

    def by(self, field: Literal["engine", "purpose", "model", "error"]) -> dict[str, Amount]:
        """The lines summed by one of their fields, in first-seen order (``error``: "" for replies)."""
        if field not in _LINE_FIELDS:
            raise ValueError(f"accounts are kept by {', '.join(_LINE_FIELDS)}, not {field!r}")
        grouped: dict[str, Amount] = {}
        for line, amount in self.lines.items():
            key = getattr(line, field)
            grouped[key] = grouped[key] + amount if key in grouped else amount
        return grouped

    def errors_by_kind(self) -> dict[str, int]:
        """Failed calls by error kind."""
        return {kind: a.errors for kind, a in self.by("error").items() if kind and a.errors}

    def cost(self, prices: Prices | None) -> float | None:
        """USD for the billed tokens, each line priced by the model that answered it; None without prices,
        or when a model that used tokens has no price (an unpriced model, not a guess)."""
        if not prices:
            return None
        total = 0.0
        for model, amount in self.by("model").items():
            if not (amount.input_tokens or amount.output_tokens):
                continue
            price = price_of(prices, model)
            if price is None:
                return None
            total += amount_cost(price, amount)
        return total

    def to_json(self) -> list[dict[str, Any]]:
        """The lines as JSON-shaped values (a list, in order)."""
        return [{**attrs.asdict(line), **attrs.asdict(amount)} for line, amount in self.lines.items()]

    @classmethod
    def from_json(cls, value: Any, *, source: str = "the accounts") -> Accounts:
        """Accounts back from `to_json`'s form, checked as hostile input.

        Raises:
            ValueError: Anything but a list of lines of strings and non-negative whole counts (names `source`).
        """
        if not isinstance(value, list):
            raise ValueError(f"{source}: accounts must be a list of lines, got {type(value).__name__}")
        accounts = cls()
        for entry in value:
            if isinstance(entry, dict):  # a line written before some counts were kept lacks them: read as 0
                entry = {**dict.fromkeys(_LATER_FIELDS, 0), **entry}
            if not (isinstance(entry, dict) and set(entry) == set(_LINE_FIELDS) | set(_AMOUNT_FIELDS)):
                raise ValueError(f"{source}: an accounts line must have exactly the fields of a Line and an Amount")
            if not all(isinstance(entry[k], str) and len(entry[k]) <= 1000 for k in _LINE_FIELDS):
                raise ValueError(f"{source}: an accounts line's engine, purpose, model and error must be strings")
            if not all(type(entry[k]) is int and 0 <= entry[k] < 2**63 for k in _AMOUNT_FIELDS):
                raise ValueError(f"{source}: an accounts line's counts must be non-negative whole numbers")
            line = Line(*(entry[k] for k in _LINE_FIELDS))
            accounts = accounts.add(line, Amount(*(entry[k] for k in _AMOUNT_FIELDS)))
        return accounts

    @classmethod
    def of(cls, items: Iterable[tuple[Line, Amount]]) -> Accounts:
        """Accounts summing `items` (a line may repeat)."""
        accounts = cls()
        for line, amount in items:
            accounts = accounts.add(line, amount)
        return accounts


#: What may follow an entry's name in a model name it prices: snapshot dates and tags only
#: (``-2024-08-06``, ``-20241022``, ``-0613``, ``-latest``, ``-preview``). Anything else names
#: another model -- ``o3-pro`` is not ``o3``, ``gpt-5.4`` not ``gpt-5`` -- often at another price.
_SNAPSHOT = re.compile(r"(?:-(?:\d{4}-\d{2}-\d{2}|\d{8}|\d{4}|latest|preview))+")


def price_of(prices: Prices, model: str) -> tuple[float, ...] | None:
    """The price of `model`: an exact entry, else the entry it extends by a snapshot suffix only
    (a date, ``-latest``, ``-preview``), else None: an unpriced model, not a guess.

    Examples:
        >>> price_of({"gpt-4o": (2.5, 10.0), "gpt-4o-mini": (0.15, 0.6)}, "gpt-4o-mini-2024-07-18")
        (0.15, 0.6)
        >>> price_of({"o3": (2.0, 8.0)}, "o3-pro") is None  # another model, at ten times the price
        True
        >>> price_of({"gpt-4o": (2.5, 10.0)}, "llama3") is None
        True
    """
    if model in prices:
        return prices[model]
    for name in sorted((n for n in prices if model.startswith(n)), key=len, reverse=True):
        if _SNAPSHOT.fullmatch(model, len(name)):
            return prices[name]
    return None


def token_cost(
    price: tuple[float, ...], tokens_in: int, tokens_out: int, cached_in: int = 0, cache_write: int = 0
) -> float:
    """USD for `tokens_in` input and `tokens_out` output tokens at `price` (USD per million of each):
    the one place the cost arithmetic is written. Of `tokens_in`, `cached_in` were read from the provider's
    prompt cache and `cache_write` written to it: they are billed at the price's third and fourth rates
    (cached input, cache write) when it has them, else at its input rate.

    Examples:
        >>> token_cost((0.5, 2.0), 2_000_000, 1_000_000)
        3.0
        >>> token_cost((1.0, 5.0, 0.1, 1.25), 3_000_000, 0, cached_in=1_000_000, cache_write=1_000_000)
        2.35
    """
    cached_rate = price[2] if len(price) > 2 else price[0]
    write_rate = price[3] if len(price) > 3 else price[0]
    cached_in = min(cached_in, tokens_in)
    cache_write = min(cache_write, tokens_in - cached_in)
    plain = tokens_in - cached_in - cache_write
    return (plain * price[0] + cached_in * cached_rate + cache_write * write_rate + tokens_out * price[1]) / 1e6


def amount_cost(price: tuple[float, ...], amount: Amount) -> float:
    """USD for `amount`'s billed tokens at `price` (see `token_cost`), the batch calls' tokens at
    `BATCH_DISCOUNT` of their price.

    Examples:
        >>> half = Amount(calls=2, input_tokens=2_000_000, batch_calls=1, batch_input_tokens=1_000_000)
        >>> amount_cost((1.0, 0.0), half)  # one of the two million input tokens went as a batch
        1.5
    """
    full = token_cost(
        price, amount.input_tokens, amount.output_tokens, amount.cached_input_tokens, amount.cache_write_tokens
    )
    return full - (1 - BATCH_DISCOUNT) * token_cost(price, amount.batch_input_tokens, amount.batch_output_tokens)


def billed(usage: Mapping[str, Any]) -> Amount:
    """One billed call with the tokens a reply's `usage` reports (odd counts read as 0): input and output
    tokens, and of the input tokens those read from the provider's prompt cache or written to it.

    Examples:
        >>> a = billed({"input_tokens": 1500, "output_tokens": 20, "cached_input_tokens": 1024})
        >>> a.calls, a.input_tokens, a.cached_input_tokens, a.cache_write_tokens
        (1, 1500, 1024, 0)
    """
    tokens_in = _count(usage.get("input_tokens", 0))
    cached = min(_count(usage.get(CACHED_INPUT, 0)), tokens_in)
    written = min(_count(usage.get(CACHE_WRITE, 0)), tokens_in - cached)
    return Amount(
        calls=1,
        input_tokens=tokens_in,
        output_tokens=_count(usage.get("output_tokens", 0)),
        cached_input_tokens=cached,
        cache_write_tokens=written,
    )


def accounting_report(accounts: Accounts, prices: Prices | None = None) -> AccountingReport:
    """The `AccountingReport` of `accounts`: its billed calls (failed ones included) summed per
    ``(engine, model)``, rows in first-seen order; hits are not calls, so they make no row.

    Examples:
        >>> from semgrad.core import Message
        >>> r = LLMRequest((Message("user", "hi"),))
        >>> a = Accounts().record(r, LLMResponse("ok", {"input_tokens": 3, "output_tokens": 1}, "m"))
        >>> report = accounting_report(a.record(r, mark_answered(LLMResponse("ok"), "cache")), {"m": (1e6, 0.0)})
        >>> report.calls, report.input_tokens, report.cost_usd, tuple(report.rows)
        (1, 3, 3.0, (('forward', 'm'),))
    """
    sums: dict[tuple[str, str], Amount] = {}
    for line, amount in accounts.lines.items():
        if amount.calls:
            key = (line.engine, line.model)
            sums[key] = sums[key] + amount if key in sums else amount
    rows: FrozenMap[tuple[str, str], UsageRow] = FrozenMap({key: _usage_row(key, a, prices) for key, a in sums.items()})
    unpriced: tuple[str, ...] = ()
    cost = None
    if prices is not None:
        unpriced = tuple(
            dict.fromkeys(r.model for r in rows.values() if r.cost_usd is None and r.input_tokens + r.output_tokens)
        )
        cost = sum(r.cost_usd or 0.0 for r in rows.values())
    return AccountingReport(
        calls=sum(r.calls for r in rows.values()),
        failures=sum(r.failures for r in rows.values()),
        input_tokens=sum(r.input_tokens for r in rows.values()),
        output_tokens=sum(r.output_tokens for r in rows.values()),
        cost_usd=cost,
        unpriced=unpriced,
        rows=rows,
    )


def _usage_row(key: tuple[str, str], amount: Amount, prices: Prices | None) -> UsageRow:
    price = price_of(prices, key[1]) if prices is not None else None
    tokens = amount.input_tokens, amount.output_tokens
    cost = amount_cost(price, amount) if price is not None else None
    return UsageRow(key[0], key[1], amount.calls, amount.errors, *tokens, cost)


def _check_prices(prices: Prices) -> FrozenMap[str, tuple[float, ...]]:
    for model, price in prices.items():
        if not (isinstance(price, (tuple, list)) and len(price) in (2, 4) and all(p >= 0 for p in price)):
            raise ValueError(
                f"price for {model!r} must be (usd_per_1M_input, usd_per_1M_output), non-negative, optionally "
                f"followed by the cached-input and cache-write rates; got {price!r}"
            )
    return FrozenMap({model: tuple(float(p) for p in price) for model, price in prices.items()})


def _configured_model(llm: Any, engine: str) -> str:
    identity = identity_of(llm)
    if not isinstance(identity, Mapping):
        return ""
    models = identity.get("models") or {}
    return str(models.get(engine) or identity.get("model") or "")


class _Accounted:
    """An async LLM that counts its inner LLM's outcomes in an `Accounts` (its report is derived from them)."""

    is_async = True

    def __init__(self, inner: Any, prices: FrozenMap[str, tuple[float, ...]] | None) -> None:
        self.inner = inner
        self.prices = prices
        self.accounts = Accounts()

    @property
    def identity(self) -> Any:
        """The wrapped LLM's identity."""
        return identity_of(self.inner)

    async def __call__(self, request: LLMRequest) -> LLMResponse:
        try:
            response = await call(self.inner, request)
        except BaseException as exc:  # a cancelled call too (a deadline above cut it): it was made, and may be paid for
            model = _configured_model(self.inner, request.engine)
            kind = exc.error.kind if isinstance(exc, LLMFailure) else type(exc).__name__
            self.accounts = self.accounts.record(request, error=LLMError(kind, ""), model=model)
            raise
        self.accounts = self.accounts.record(request, response)  # a reply a cache or memo below answered: a hit
        return response

    def report(self) -> AccountingReport:
        """A frozen snapshot of the totals so far: the billed calls of `accounts` per ``(engine, model)``."""
        return accounting_report(self.accounts, self.prices)

    def __repr__(self) -> str:
        return f"accounted({self.inner!r})"


def accounted(llm: Any, prices: Prices | None = None) -> Any:
    """Wrap `llm` to count calls and tokens per ``(engine, model)`` and estimate the cost.

    Args:
        llm: A sync or async LLM.
        prices: ``{model: (usd_per_1M_input_tokens, usd_per_1M_output_tokens)}``, optionally
            followed by the cached-input and cache-write rates (see `token_cost`).
            A reply's model matches an exact entry, else the entry it extends by
            a snapshot suffix only (``"gpt-4o-mini"`` prices
            ``"gpt-4o-mini-2024-07-18"``, ``"o3"`` does not price ``"o3-pro"``;
            see `price_of`).

    Returns:
        An async LLM with the same ``identity`` as `llm`, a ``report()`` method (billed calls per
        ``(engine, model)``) and ``.accounts`` (an `Accounts` of every outcome: a reply a cache or
        memo below answered is a hit there, not a call).

    Examples:
        >>> import anyio
        >>> from semgrad.core import Message
        >>> llm = accounted(lambda r: LLMResponse("4", {"input_tokens": 1000, "output_tokens": 10}, "m-2025-01-31"),
        ...                 prices={"m": (1.0, 2.0)})
        >>> _ = anyio.run(llm, LLMRequest((Message("user", "2+2?"),)))
        >>> report = llm.report()
        >>> report.calls, report.input_tokens, report.cost_usd
        (1, 1000, 0.00102)
    """
    if not callable(llm):
        raise TypeError(f"accounted needs an LLM (a callable), got {type(llm).__name__}")
    return _Accounted(llm, _check_prices(prices) if prices is not None else None)


def charged_tokens(reply: Any, estimate: int) -> int:
    """The tokens a budget charges for `reply`: the usage it reports, else `estimate`.

    A reply's reported usage replaces its estimate; a reply without usage (a plain
    string, a server that sends no ``usage``) keeps the estimate, so a token budget
    still ends when the provider reports nothing.

    Examples:
        >>> charged_tokens(LLMResponse("ok", {"input_tokens": 7, "output_tokens": 3}), 50)
        10
        >>> charged_tokens(LLMResponse("ok"), 50), charged_tokens("ok", 50)
        (50, 50)
    """
    usage = getattr(reply, "usage", None) or {}
    if "input_tokens" not in usage and "output_tokens" not in usage:
        return estimate
    return int(usage.get("input_tokens", 0)) + int(usage.get("output_tokens", 0))


#: Error kinds that say the model never ran: the provider refused the request (credentials, a bad
#: request, a rate limit, a conflict, a server error) or it never left (a budget, no route, no
#: recorded reply). A call failing so costs no tokens; any other failure -- a reply cut at its
#: output-token cap, refused or unreadable (all paid for), a timeout, a dropped connection, a
#: cancellation -- may have been paid for, and keeps its estimate.
UNPAID_KINDS = frozenset(
    {"auth", "bad_request", "rate_limit", "conflict", "server", "budget", "halted", "unrouted", "not_recorded"}
)


def failed_tokens(exc: BaseException, estimate: int) -> int:
    """The tokens a budget charges for a call that ended in `exc`: none when its error kind says the
    model never ran (`UNPAID_KINDS`), else `estimate`.

    Examples:
        >>> failed_tokens(LLMFailure(LLMError("rate_limit", "HTTP 429", retryable=True)), 50)
        0
        >>> failed_tokens(LLMFailure(LLMError("truncated", "stopped at the cap")), 50)
        50
    """
    if isinstance(exc, LLMFailure) and exc.error.kind in UNPAID_KINDS:
        return 0
    return estimate


class _Budgeted:
    """An async LLM that refuses calls once a budget is spent: its limits read the totals of its `Accounts`.

    ``accounts`` holds one line per outcome let through, with the tokens the budget charged it (a reply's
    reported usage, else its estimate, booked as input tokens; a failed call's `failed_tokens`); a reply a
    cache or memo below answered is a hit there. The calls in flight are counted, and their estimates
    reserved, from the moment they are let through until their outcome is booked.
    """

    is_async = True

    def __init__(self, inner: Any, max_calls: int | None, max_tokens: int | None) -> None:
        self.inner = inner
        self.max_calls = max_calls
        self.max_tokens = max_tokens
        self.accounts = Accounts()
        self.refused = 0
        self.in_flight = 0  # calls let through whose outcome is not booked yet
        self.reserved = 0  # estimated tokens of the calls in flight

    @property
    def identity(self) -> Any:
        """The wrapped LLM's identity."""
        return identity_of(self.inner)

    @property
    def calls(self) -> int:
        """Requests let through so far: booked outcomes (billed calls and hits) and the calls in flight."""
        total = self.accounts.total()
        return total.calls + total.hits + self.in_flight

    @property
    def tokens(self) -> int:
        """Tokens charged to the booked outcomes."""
        total = self.accounts.total()
        return total.input_tokens + total.output_tokens

    def _exhausted(self, estimate: int) -> str | None:
        calls = self.calls
        if self.max_calls is not None and calls >= self.max_calls:
            return f"{calls} calls made, max_calls={self.max_calls}"
        tokens = self.tokens
        if self.max_tokens is not None and tokens + self.reserved + estimate > self.max_tokens:
            in_flight = f" + {self.reserved} reserved by calls in flight" if self.reserved else ""
            return f"{tokens} tokens used{in_flight}, this call needs ~{estimate}, max_tokens={self.max_tokens}"
        return None

    async def __call__(self, request: LLMRequest) -> LLMResponse:
        # Reserve before calling (no await in between), so calls in flight can never pass the budget together.
        estimate = estimate_tokens(request) if self.max_tokens is not None else 0
        spent = self._exhausted(estimate)
        if spent is not None:
            self.refused += 1
            message = f"budget exhausted ({spent}); refusing the {request.purpose} call for node {request.node!r}"
            raise LLMFailure(LLMError("budget", message + "; raise the limit in budgeted(...) to go on"))
        self.in_flight += 1
        self.reserved += estimate
        try:
            response = await call(self.inner, request)
        except BaseException as exc:  # a paid reply that failed (cut at its cap, say), or a cancellation
            kind = exc.error.kind if isinstance(exc, LLMFailure) else type(exc).__name__
            line = Line(str(request.engine), str(request.purpose), _configured_model(self.inner, request.engine), kind)
            self.accounts = self.accounts.add(
                line, Amount(calls=1, errors=1, input_tokens=failed_tokens(exc, estimate))
            )
            raise
        finally:
            self.in_flight -= 1
            self.reserved -= estimate
        self.accounts = self._booked(request, response, estimate)
        return response

    def _booked(self, request: LLMRequest, response: Any, estimate: int) -> Accounts:
        """The accounts with `response` booked: a hit as `Accounts.record` counts it, a call with its charged tokens."""
        if answered_by(response) is not None:
            return self.accounts.record(request, response)
        usage = getattr(response, "usage", None) or {}
        if "input_tokens" in usage or "output_tokens" in usage:
            charged = billed(usage)
        else:  # no usage reported: the estimate stands (see `charged_tokens`)
            charged = Amount(calls=1, input_tokens=estimate)
        model = getattr(response, "model", "")
        line = Line(str(request.engine), str(request.purpose), model if isinstance(model, str) else "")
        return self.accounts.add(line, charged)

    def __repr__(self) -> str:
        return f"budgeted({self.inner!r}, max_calls={self.max_calls!r}, max_tokens={self.max_tokens!r})"


def budgeted(llm: Any, max_calls: int | None = None, max_tokens: int | None = None) -> Any:
    """Wrap `llm` so calls are refused once `max_calls` calls or `max_tokens` tokens are spent.

    Calls are counted when they start (failed ones too), so concurrent calls
    never overshoot `max_calls`. For `max_tokens`, each call reserves its
    estimate (`semgrad.effects.limited`'s ``estimate_tokens``: characters / 4,
    plus the request's ``max_tokens`` option) before it starts, and is refused
    when the tokens used plus the reservations of the calls in flight plus its
    own would pass the limit. A reply's reported usage replaces its estimate;
    a reply without usage (no input or output token count: a plain string, a
    server that reports none) keeps the estimate, so the limit is reached even
    when the provider reports nothing. A failed call keeps its estimate too
    (a reply cut at its output-token cap, refused or unreadable was paid for;
    a timeout or a cancellation may have been), unless its error kind says the
    model never ran (``UNPAID_KINDS``: a rate limit, a server error, a bad
    request...). So the limit holds with many calls in
    flight as long as replies stay within their estimate (set a ``max_tokens``
    option to bound them).
    A refused call fails with the non-retryable ``LLMError(kind="budget")``.
    ``.calls``, ``.tokens`` and ``.refused`` tell the spending so far.

    Raises:
        ValueError: When a limit is negative.

    Examples:
        >>> import anyio
        >>> from semgrad.core import Message
        >>> llm = budgeted(lambda r: "ok", max_calls=1)
        >>> r = LLMRequest((Message("user", "hi"),))
        >>> anyio.run(llm, r).text
        'ok'
        >>> anyio.run(llm, r)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        semgrad.core._requests.LLMFailure: budget: budget exhausted (1 calls made, max_calls=1); ...
    """
    if not callable(llm):
        raise TypeError(f"budgeted needs an LLM (a callable), got {type(llm).__name__}")
    for name, value in (("max_calls", max_calls), ("max_tokens", max_tokens)):
        if value is not None and not (
            type(value) is int and value >= 0
        ):  # NaN or 1.5 would be no limit, or a wrong one
            raise ValueError(f"{name} must be >= 0 and a whole number (or None for no limit), got {value!r}")
    return _Budgeted(llm, max_calls, max_tokens)
