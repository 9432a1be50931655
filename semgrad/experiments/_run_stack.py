"""One middleware stack per run, shared by every phase, and the counters that travel with a run.

Every call a run makes -- the preflight, the training loop, the final
evaluation -- goes through one `RunStack`, so its budget holds by
construction::

    tally( journal( cached( limited( retrying( deadline( budgeted( backend )))))))

* `budgeted` refuses calls past ``--max-calls`` / ``--max-tokens`` (reserving
  before each call, so calls in flight cannot pass it together); it sits below
  the retries and the cache, so a retry is paid for and a cache hit is free;
* `retrying`, `limited` and a per-attempt deadline (``--timeout``) are added
  for real backends only; their calls get no runner timeout on top, which
  would cut a call's retries short;
* `cached` when the config names a cache file;
* the run's journal (`semgrad.experiments._journal`) when the run has a folder:
  every finished call is appended to ``journal.jsonl``, and a resumed run's
  identical requests are answered from it;
* with ``--batch``, a switch below the budget sends the calls of the phases that may wait (the final
  evaluation; with ``all``, training too: `RunStack.batching`) to `semgrad.effects._batching.batched`, one
  provider batch per dependency level, at half price; those calls skip the concurrency limit and the
  per-attempt deadline (a batch may take hours) but keep the budget (reserved per call before the batch is
  sent) and the retries (a failed line goes into a later batch);
* the tally, on top, keeps the run's `semgrad.effects.Accounts` (calls, tokens
  and errors by kind, purpose, engine and model; a reply the cache or the journal
  answered is a hit there, never a call, and costs no tokens) and *halts* the run
  when its first `FAIL_FAST_CALLS` calls all failed: later calls are refused at
  once with ``LLMError(kind="halted")``, which `fit` treats as a stop.

Counters are plain JSON-shaped dicts (`empty_counters`, made from the accounts by
`counters_of`), so they can be summed across tasks and across the processes of a
resumed run.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import anyio
import attrs

from ..core import LLMError, LLMFailure, LLMRequest, LLMResponse
from ..effects import Accounts, Amount, Line, budgeted, cached, limited, memoized, retrying
from ..effects._batching import BatchPolicy, BatchRecord, batched, has_batch_api
from ..effects._routing import Middleware, call, identity_of
from ._errors import SetupError

__all__ = [
    "FAIL_FAST_CALLS",
    "MAX_ERROR_SHARE",
    "Batching",
    "RunStack",
    "add_counters",
    "counters_of",
    "empty_counters",
    "error_share",
]

#: A run stops (non-zero exit) when its first this many calls all failed.
FAIL_FAST_CALLS = 20

#: A run that finished exits non-zero when more than this share of its calls failed (after retries).
MAX_ERROR_SHARE = 0.1

#: Error kinds that are not failures of the backend: the run's own budget and its own stop.
_NOT_FAILURES = ("budget", "halted")

_MAPS = ("calls_by_purpose", "calls_by_engine", "errors_by_kind", "hits")
_PAIRS = ("tokens_by_engine", "tokens_by_model", "batch_tokens_by_model", "prompt_cache_by_model")
_INTS = ("calls", "errors", "input_tokens", "output_tokens", "batch_calls", "tool_calls", "tool_errors")


def empty_counters() -> dict[str, Any]:
    """Counters with nothing counted yet: ``calls`` are billed calls (failed ones included); ``hits``
    the requests a cache or the journal (``"cache"``) or a memo (``"memo"``) answered, apart; ``batch_calls``
    and ``batch_tokens_by_model`` the calls a provider's batch answered and their tokens (of ``calls`` and
    ``tokens_by_model``), priced at half; ``prompt_cache_by_model``: of each model's input tokens,
    ``[read from, written to]`` the provider's prompt cache; ``tool_calls`` and ``tool_errors`` the calls of a
    system's tools (``ctx.tool``) and how many of them failed, never LLM calls (nor in ``calls``).

    Examples:
        >>> sorted(empty_counters())[:3]
        ['batch_calls', 'batch_tokens_by_model', 'calls']
    """
    return {
        "calls": 0,
        "calls_by_purpose": {},
        "calls_by_engine": {},
        "tokens_by_engine": {},
        "tokens_by_model": {},
        "prompt_cache_by_model": {},
        "input_tokens": 0,
        "output_tokens": 0,
        "errors": 0,
        "errors_by_kind": {},
        "hits": {},
        "batch_calls": 0,
        "batch_tokens_by_model": {},
        "tool_calls": 0,
        "tool_errors": 0,
    }


def counters_of(accounts: Accounts) -> dict[str, Any]:
    """The counters of `accounts` (what a ledger keeps).

    Examples:
        >>> from semgrad.effects import Amount, Line
        >>> a = Accounts().add(Line("forward", "forward", "m"), Amount(calls=2, input_tokens=9, cache_hits=1))
        >>> c = counters_of(a)
        >>> c["calls"], c["calls_by_purpose"], c["tokens_by_model"], c["hits"]
        (2, {'forward': 2}, {'m': [9, 0]}, {'cache': 1})
    """
    c = empty_counters()
    for line, amount in accounts.lines.items():
        if amount.calls:
            c["calls"] += amount.calls
            for key, name in (("calls_by_purpose", line.purpose), ("calls_by_engine", line.engine)):
                c[key][name] = c[key].get(name, 0) + amount.calls
        if amount.errors:
            c["errors"] += amount.errors
            c["errors_by_kind"][line.error] = c["errors_by_kind"].get(line.error, 0) + amount.errors
        if amount.input_tokens or amount.output_tokens:
            c["input_tokens"] += amount.input_tokens
            c["output_tokens"] += amount.output_tokens
            for key, name in (("tokens_by_engine", line.engine), ("tokens_by_model", line.model)):
                before = c[key].get(name, [0, 0])
                c[key][name] = [before[0] + amount.input_tokens, before[1] + amount.output_tokens]
        if amount.batch_calls:
            c["batch_calls"] += amount.batch_calls
            before = c["batch_tokens_by_model"].get(line.model, [0, 0])
            used = [before[0] + amount.batch_input_tokens, before[1] + amount.batch_output_tokens]
            c["batch_tokens_by_model"][line.model] = used
        if amount.cached_input_tokens or amount.cache_write_tokens:
            before = c["prompt_cache_by_model"].get(line.model, [0, 0])
            c["prompt_cache_by_model"][line.model] = [
                before[0] + amount.cached_input_tokens,
                before[1] + amount.cache_write_tokens,
            ]
        c["tool_calls"] += amount.tool_calls
        c["tool_errors"] += amount.tool_errors
        for kind, n in (("cache", amount.cache_hits), ("memo", amount.memo_hits)):
            if n:
                c["hits"][kind] = c["hits"].get(kind, 0) + n
    return c


def add_counters(a: Mapping[str, Any], b: Mapping[str, Any]) -> dict[str, Any]:
    """The sum of two counters (new dicts; key order: `a`'s first).

    Examples:
        >>> one = {**empty_counters(), "calls": 2, "errors_by_kind": {"server": 1}}
        >>> two = {**empty_counters(), "calls": 1, "errors_by_kind": {"server": 1, "timeout": 1}}
        >>> total = add_counters(one, two)
        >>> total["calls"], total["errors_by_kind"]
        (3, {'server': 2, 'timeout': 1})
    """
    total = empty_counters()
    for key in _INTS:
        total[key] = int(a.get(key, 0)) + int(b.get(key, 0))
    for key in _MAPS:
        merged: dict[str, int] = dict(a.get(key, {}))
        for name, n in b.get(key, {}).items():
            merged[name] = merged.get(name, 0) + int(n)
        total[key] = merged
    for key in _PAIRS:
        tokens: dict[str, list[int]] = {k: [int(v[0]), int(v[1])] for k, v in a.get(key, {}).items()}
        for name, used in b.get(key, {}).items():
            before = tokens.get(name, [0, 0])
            tokens[name] = [before[0] + int(used[0]), before[1] + int(used[1])]
        total[key] = tokens
    return total


def failures(counters: Mapping[str, Any]) -> int:
    """Failed calls that are the backend's (refusals by the run's own budget or stop left out)."""
    kinds = counters.get("errors_by_kind", {})
    return int(counters.get("errors", 0)) - sum(int(kinds.get(k, 0)) for k in _NOT_FAILURES)


def error_share(counters: Mapping[str, Any]) -> float:
    """The share of calls that failed (see `failures`); 0.0 for no calls.

    Examples:
        >>> error_share({**empty_counters(), "calls": 11, "errors": 3, "errors_by_kind": {"server": 2, "budget": 1}})
        0.2
    """
    calls = int(counters.get("calls", 0)) - sum(
        int(counters.get("errors_by_kind", {}).get(k, 0)) for k in _NOT_FAILURES
    )
    return failures(counters) / calls if calls > 0 else 0.0


def kinds_text(counters: Mapping[str, Any]) -> str:
    """``"server 40, timeout 2"``: the failed calls per kind, most first.

    Examples:
        >>> kinds_text({"errors_by_kind": {"timeout": 2, "server": 40}})
        'server 40, timeout 2'
    """
    kinds = counters.get("errors_by_kind", {})
    return ", ".join(f"{kind} {n}" for kind, n in sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0])))


class _Tally:
    """The top of a run's stack: keeps the run's accounts, and halts the run when its first calls all fail."""

    is_async = True

    def __init__(self, inner: Any, fail_fast: int) -> None:
        self.inner = inner
        self.fail_fast = fail_fast
        self.accounts = Accounts()  # since the last `take`
        self.taken = Accounts()  # what the `take`s gave so far
        self.halted: str | None = None  # why the run was halted, once it is
        self._judged = 0  # outcomes seen that count towards the fail-fast rule
        self._failed = 0
        self._failed_kinds: dict[str, int] = {}  # the judged failures by kind: the accounts restart at each `take`
        self._first: LLMError | None = None

    @property
    def identity(self) -> Any:
        """The wrapped LLM's identity."""
        return identity_of(self.inner)

    @property
    def counters(self) -> dict[str, Any]:
        """The counters since the last `take`."""
        return counters_of(self.accounts)

    async def __call__(self, request: LLMRequest) -> LLMResponse:
        if self.halted is not None:
            error = LLMError("halted", self.halted)
            self._count(request, None, error)
            raise LLMFailure(error)
        try:
            response = await call(self.inner, request)
        except LLMFailure as failure:
            self._count(request, None, failure.error)
            self._judge(failure.error)
            raise
        except TimeoutError:  # the per-attempt deadline, after the last retry
            error = LLMError("timeout", "no reply within the timeout, after retries", retryable=True)
            self._count(request, None, error)
            self._judge(error)
            raise LLMFailure(error) from None
        except Exception as exc:  # a bug in a user's LLM: counted like the runner counts it
            error = LLMError("exception", f"{type(exc).__name__}: {exc}")
            self._count(request, None, error)
            self._judge(error)
            raise LLMFailure(error) from None
        except anyio.get_cancelled_exc_class():  # the runner's timeout (it reports the call as a timeout)
            error = LLMError("timeout", "no reply within the runner's timeout", retryable=True)
            self._count(request, None, error)
            self._judge(error)
            raise
        self._count(request, response, None)
        self._judge(None)
        return response

    def _judge(self, error: LLMError | None) -> None:
        if error is not None and error.kind in _NOT_FAILURES:
            return
        if self._judged >= self.fail_fast:
            return
        self._judged += 1
        if error is not None:
            self._failed += 1
            self._failed_kinds[error.kind] = self._failed_kinds.get(error.kind, 0) + 1
            self._first = self._first or error
        if self._failed == self._judged == self.fail_fast and self._first is not None:
            first = " ".join(self._first.message.split())[:300]
            self.halted = (
                f"the first {self.fail_fast} calls all failed ({kinds_text({'errors_by_kind': self._failed_kinds})}); "
                f"the first said {self._first.kind}: {first}"
            )

    def _count(self, request: LLMRequest, response: LLMResponse | None, error: LLMError | None) -> None:
        if error is not None:
            self.accounts = self.accounts.record(request, error=error)
        else:
            self.accounts = self.accounts.record(request, response)

    def count_tool(self, tool: str, *, error: str = "", cache_hit: bool = False) -> None:
        """Count one tool call of a system written as Python (`Runner.count_tool` passes it on): a tool call,
        failed when `error` names its kind, or a cache hit -- never an LLM call, never judged for fail-fast."""
        amount = Amount(cache_hits=1) if cache_hit else Amount(tool_calls=1, tool_errors=1 if error else 0)
        self.accounts = self.accounts.add(Line("tool", "tool", tool, error), amount)

    def watch_afresh(self) -> None:
        """Start the fail-fast window again (after the preflight, which has its own check)."""
        self._judged = self._failed = 0
        self._first = None

    def take(self) -> dict[str, Any]:
        """The counters since the last `take` (and start counting afresh)."""
        taken, self.accounts = self.accounts, Accounts()
        self.taken = self.taken + taken
        return counters_of(taken)

    def accounts_so_far(self) -> Accounts:
        """Every outcome this process's stack has seen (what the live progress reads)."""
        return self.taken + self.accounts

    def __repr__(self) -> str:
        return f"tally({self.inner!r})"


class _MemoHits(Middleware):
    """Over a memo over the run's tally: counts the memo's answers as memo hits in the tally's accounts (the
    requests it passes on are counted by the tally below, as calls or other hits)."""

    def __init__(self, inner: Any, tally: _Tally) -> None:
        self.inner, self.tally = inner, tally

    async def __call__(self, request: LLMRequest) -> LLMResponse:
        response: LLMResponse = await call(self.inner, request)
        if getattr(response, "memo_hit", False) is True:
            self.tally.accounts = self.tally.accounts.record(request, response)
        return response

    def count_tool(self, tool: str, *, error: str = "", cache_hit: bool = False) -> None:
        """A tool call, counted by the tally."""
        self.tally.count_tool(tool, error=error, cache_hit=cache_hit)

    def __repr__(self) -> str:
        return f"memo_hits({self.inner!r})"


class _Deadline(Middleware):
    """Each attempt of a call gets `timeout` seconds (under the retries, so a retry gets its own)."""

    def __init__(self, inner: Any, timeout: float) -> None:
        self.inner, self.timeout = inner, timeout

    async def __call__(self, request: LLMRequest) -> LLMResponse:
        with anyio.fail_after(self.timeout):
            return await call(self.inner, request)

    def __repr__(self) -> str:
        return f"deadline({self.inner!r}, {self.timeout!r})"


class _Switch(Middleware):
    """`inner`, or `batch` while the run's stack is batching (`RunStack.batching`); answers as `inner`."""

    def __init__(self, inner: Any, batch: Any, stack: RunStack) -> None:
        self.inner, self.batch, self.stack = inner, batch, stack

    async def __call__(self, request: LLMRequest) -> LLMResponse:
        response: LLMResponse = await call(self.batch if self.stack.batching else self.inner, request)
        return response

    def __repr__(self) -> str:
        return f"switch({self.inner!r}, batch={self.batch!r})"


@attrs.frozen
class Batching:
    """How a run sends batches (``--batch``).

    Attributes:
        phases: ``"eval"`` (the final evaluation) or ``"all"`` (training too).
        policy: How they are polled.
        known: The batches earlier processes of the run created (from its ledger).
        on_created: Told each batch as soon as it is created (the run keeps it in its ledger).
        say: Told of failed lines by kind, in one line per batch.
    """

    phases: str
    policy: BatchPolicy = BatchPolicy()
    known: tuple[BatchRecord, ...] = ()
    on_created: Any = None
    say: Any = None


class RunStack:
    """The middleware stack of one run (see the module doc); use `llm` for every call of every phase.

    Args:
        backend: The provider (or a fake) at the bottom of the stack.
        real: Add retries with backoff and a concurrency limit (real backends).
        max_calls, max_tokens: The run's budget (None: no limit).
        concurrency: Calls in flight at most (real backends).
        timeout: Seconds per attempt, under the retries (real backends; None: no deadline).
        cache: An SQLite file for `cached` (None: no cache).
        fail_fast: Halt when this many first calls all failed.
        journal: The run's `Journal` (None: no journal).
        batch: How to send batches (``--batch``; None: never).

    Raises:
        SetupError: `batch` is given for a backend without a batch API.

    Examples:
        >>> import anyio
        >>> from semgrad.core import Message
        >>> stack = RunStack(lambda request: "ok", max_calls=1)
        >>> r = LLMRequest((Message("user", "hi"),))
        >>> anyio.run(stack.llm, r).text, stack.budget.calls
        ('ok', 1)
        >>> anyio.run(stack.llm, r)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        semgrad.core._requests.LLMFailure: budget: budget exhausted (1 calls made, max_calls=1); ...
        >>> stack.budget_spent, stack.tally.counters["errors_by_kind"]
        (True, {'budget': 1})
    """

    def __init__(
        self,
        backend: Any,
        *,
        real: bool = False,
        max_calls: int | None = None,
        max_tokens: int | None = None,
        concurrency: int | None = None,
        cache: str | None = None,
        fail_fast: int = FAIL_FAST_CALLS,
        timeout: float | None = None,
        journal: Any = None,
        batch: Batching | None = None,
    ) -> None:
        #: Whether the calls go as batches now (the phases `batch` names set it; never without `batch`).
        self.batching = False
        self.batcher: Any = None
        if batch is not None:
            if not has_batch_api(backend):
                raise SetupError(
                    f"--batch needs a provider with a batch API (openai-compatible on OpenAI's API, anthropic); "
                    f"{type(backend).__name__} has none: drop --batch"
                )
            self.batcher = batched(backend, batch.policy, known=batch.known, on_created=batch.on_created, say=batch.say)
            backend = _Switch(backend, self.batcher, self)
        self.batch = batch
        self.budget = budgeted(backend, max_calls=max_calls, max_tokens=max_tokens)
        llm: Any = self.budget
        if real:
            llm = limited(retrying(_Deadline(llm, timeout) if timeout else llm), max_concurrency=concurrency)
        if batch is not None:  # a batch's calls skip the limit and the deadline, and keep the budget and retries
            llm = _Switch(llm, retrying(self.budget), self)
        self.cache = cached(llm, path=cache) if cache else None
        llm = self.cache or llm
        self.journal = journal
        self.tally = _Tally(journal.wrap(llm) if journal is not None else llm, fail_fast)
        self.llm: Any = self.tally

    def batched_in(self, phase: str) -> bool:
        """Whether `phase` (``"eval"``, ``"train"``) sends its calls as batches: the final evaluation with any
        ``--batch``, training with ``--batch all``."""
        return self.batch is not None and (phase == "eval" or self.batch.phases == "all")

    def memoized(self) -> Any:
        """The run's LLM behind an in-run memo (the official protocol's): its answers are counted as memo hits
        in the run's accounts, never as calls."""
        return _MemoHits(memoized(self.llm), self.tally)

    @property
    def budget_spent(self) -> bool:
        """Whether the budget has refused a call."""
        return bool(self.budget.refused)

    @property
    def halted(self) -> str | None:
        """Why the run was halted (its first calls all failed), or None."""
        return self.tally.halted

    def budget_text(self) -> str:
        """What the budget allowed and what was spent, for the terminal."""
        parts = []
        if self.budget.max_calls is not None:
            parts.append(f"{self.budget.calls} of --max-calls {self.budget.max_calls} calls")
        if self.budget.max_tokens is not None:
            parts.append(f"{self.budget.tokens} of --max-tokens {self.budget.max_tokens} tokens")
        return ", ".join(parts) or "no budget"
