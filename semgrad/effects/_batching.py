"""Batch APIs: the calls of one dependency level sent as one provider batch, at half the price.

OpenAI's Batch API and Anthropic's Message Batches take many requests at once and answer
them within a day, at half the price of the same calls made one by one. A program's
calls can go into one batch only when their inputs are known: the calls of one
dependency level of a forward (every sample's first node, then every sample's next...).
`batched` collects them that way. Each call it is given waits; once no new call has
arrived for a moment (the level has *settled*: every call its runner had ready is in),
the calls waiting go out as one batch; its status is polled with backoff until it ends,
and each call gets its own line's reply, or its line's failure.

Every line's failure is an `LLMError` with its kind, as a call's would be (the provider's
status for the line: ``rate_limit``, ``server``, ``bad_request``...; ``batch_expired`` or
``batch_cancelled`` for a line the batch never ran, retryable: a `retrying` layer above
sends it again, in a later batch). A line that is missing from the results is a
``malformed`` failure, never an empty answer.

A batch is paid for once it is created: `on_created` is told its `BatchRecord` (provider,
id, the lines' ids) before anything waits on it, so a run keeps it in its ledger; a later
process given the records (``known=``) picks those batches up -- a call whose line is in
one waits for that batch's results instead of sending the request again.

A reply a batch answered carries ``usage["batch"] == 1``: the accounts count it as a
batch call, priced at `BATCH_DISCOUNT` of the table's rates (see `Accounts.cost`).

The backend does the talking (`BatchAPI`: submit, status, results, cancel); this module
never imports one. The sleep and the clock are injected, so tests poll without waiting.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import anyio
import anyio.lowlevel
import attrs
from returns.result import Failure, Result, Success

from ..core import FrozenMap, LLMError, LLMFailure, LLMRequest, LLMResponse
from ._cache import cache_key
from ._routing import Middleware

__all__ = [
    "BATCH_USAGE",
    "BatchAPI",
    "BatchPolicy",
    "BatchRecord",
    "BatchStatus",
    "batched",
    "has_batch_api",
    "is_batch_reply",
]

#: The usage key that marks a reply a batch answered (its value is 1).
BATCH_USAGE = "batch"

Outcome = Result[LLMResponse, LLMError]
Sleep = Callable[[float], Awaitable[Any]]


@attrs.frozen
class BatchStatus:
    """Where a provider's batch is.

    Attributes:
        id: The provider's batch id.
        state: The provider's word for it (``in_progress``, ``completed``, ``ended``, ``expired``...).
        done: Whether it has ended (completed, expired, cancelled or failed): its results can be read.
        where: What the backend needs to read its results (OpenAI's output and error file ids).
    """

    id: str
    state: str
    done: bool
    where: FrozenMap[str, str] = FrozenMap()


@attrs.frozen
class BatchRecord:
    """A batch as a run's ledger keeps it: enough for a later process to pick it up.

    Attributes:
        provider: The backend's provider (``openai_compatible``, ``anthropic``).
        id: The provider's batch id.
        lines: The ids of its lines (``custom_id``), in order.
    """

    provider: str
    id: str
    lines: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        """A plain dict (for a ledger)."""
        return {"provider": self.provider, "id": self.id, "lines": list(self.lines)}

    @classmethod
    def from_json(cls, value: Any) -> BatchRecord | None:
        """The record in `value`, or None when it is not one (hostile input: strings only, bounded)."""
        ok = (
            isinstance(value, dict)
            and set(value) == {"provider", "id", "lines"}
            and all(isinstance(value[k], str) and 0 < len(value[k]) <= 200 for k in ("provider", "id"))
            and isinstance(value["lines"], list)
            and all(isinstance(x, str) and 0 < len(x) <= 64 for x in value["lines"])
        )
        return cls(value["provider"], value["id"], tuple(value["lines"])) if ok else None


@runtime_checkable
class BatchAPI(Protocol):
    """What a backend with a batch API offers (`semgrad.backends` OpenAI and Anthropic backends have it)."""

    batch_provider: str

    async def submit_batch(self, lines: Sequence[tuple[str, LLMRequest]]) -> str: ...

    async def batch_status(self, batch_id: str) -> BatchStatus: ...

    async def batch_results(self, status: BatchStatus) -> Mapping[str, Outcome]: ...

    async def cancel_batch(self, batch_id: str) -> None: ...


def has_batch_api(llm: Any) -> bool:
    """Whether `llm` can send batches (a backend with `BatchAPI`'s methods).

    Examples:
        >>> has_batch_api(lambda request: "4")
        False
    """
    return isinstance(llm, BatchAPI) and isinstance(getattr(llm, "batch_provider", None), str)


def is_batch_reply(response: Any) -> bool:
    """Whether a batch answered `response` (its usage says so)."""
    usage = getattr(response, "usage", None)
    return isinstance(usage, Mapping) and usage.get(BATCH_USAGE) == 1


@attrs.frozen
class BatchPolicy:
    """How a batch is polled and when a level has settled.

    Attributes:
        first_poll: Seconds before the first status poll.
        factor: Each wait is this many times the last...
        longest_poll: ...up to this many seconds.
        settle: Seconds with no new call before the calls waiting go out as a batch.
        give_up: Seconds after which a batch still running is cancelled (its unfinished lines then fail as
            ``batch_cancelled``); None: wait as long as the provider keeps it (24 hours, then it expires).
        max_lines: The most lines in one batch (a larger level goes as several).
        status_failures: Failed status polls in a row before the batch's calls fail.
    """

    first_poll: float = attrs.field(default=5.0, validator=attrs.validators.ge(0))
    factor: float = attrs.field(default=1.5, validator=attrs.validators.ge(1))
    longest_poll: float = attrs.field(default=60.0, validator=attrs.validators.ge(0))
    settle: float = attrs.field(default=0.25, validator=attrs.validators.ge(0))
    give_up: float | None = None
    max_lines: int = attrs.field(default=50_000, validator=attrs.validators.ge(1))
    status_failures: int = attrs.field(default=5, validator=attrs.validators.ge(1))

    def waits(self) -> Iterable[float]:
        """The waits between polls: `first_poll`, growing by `factor` up to `longest_poll`, for ever.

        Examples:
            >>> import itertools
            >>> list(itertools.islice(BatchPolicy(first_poll=1, factor=2, longest_poll=5).waits(), 5))
            [1, 2, 4, 5, 5]
        """
        wait = self.first_poll
        while True:
            yield wait
            wait = min(wait * self.factor, self.longest_poll)


class _Waiter:
    """One call waiting for its line: its id, its request, and its outcome once it has one."""

    __slots__ = ("done", "id", "outcome", "request")

    def __init__(self, line: str, request: LLMRequest) -> None:
        self.id, self.request = line, request
        self.done = anyio.Event()
        self.outcome: Outcome | None = None

    def settle(self, outcome: Outcome) -> None:
        if self.outcome is None:
            self.outcome = outcome
            self.done.set()


def _missing(batch: str, line: str, state: str) -> LLMError:
    """The failure of a line a finished batch holds no result for."""
    if state in ("expired", "cancelled", "canceled", "failed"):  # failed: the provider refused the whole file
        kind = "batch_cancelled" if state.startswith("cancel") else f"batch_{state}"
        return LLMError(kind, f"batch {batch} ended {state} before line {line} ran", retryable=state != "failed")
    return LLMError("malformed", f"batch {batch} ended ({state}) without a result for line {line}", retryable=True)


class _Batched(Middleware):
    """An async LLM that sends the calls of each settled level as one batch (see `batched`)."""

    def __init__(
        self,
        inner: Any,
        policy: BatchPolicy,
        sleep: Sleep,
        clock: Callable[[], float],
        known: Iterable[BatchRecord],
        on_created: Callable[[BatchRecord], None] | None,
        say: Callable[[str], None] | None,
    ) -> None:
        self.inner, self.policy, self.sleep, self.clock = inner, policy, sleep, clock
        self.on_created, self.say = on_created, say
        self.records: list[BatchRecord] = [r for r in known if r.provider == inner.batch_provider]
        self._known = {line: r.id for r in self.records for line in r.lines}
        self._results: dict[str, Mapping[str, Outcome] | anyio.Event] = {}  # a known batch's, once read
        self._seen: dict[str, int] = {}
        self._pending: list[_Waiter] = []
        self._leading = False
        self.created = 0  #: batches this layer created
        self.picked_up = 0  #: batches of an earlier process whose results answered a call here
        self.failed_lines: dict[str, int] = {}  #: lines that failed, by kind

    async def __call__(self, request: LLMRequest) -> LLMResponse:
        key = cache_key(request, self.inner)
        n = self._seen[key] = self._seen.get(key, -1) + 1
        line = f"{key[:56]}-{n}"
        outcome: Outcome | None = None
        batch = self._known.pop(line, None)
        if batch is not None:  # an earlier process paid for it: its batch answers
            outcome = (await self._known_results(batch)).get(line)
        if outcome is None:
            waiter = _Waiter(line, request)
            self._pending.append(waiter)
            if not self._leading:
                self._leading = True
                await self._lead()
            await waiter.done.wait()
            outcome = waiter.outcome
        assert outcome is not None
        if isinstance(outcome, Success):
            response: LLMResponse = outcome.unwrap()
            return response
        raise LLMFailure(outcome.failure())

    async def _known_results(self, batch: str) -> Mapping[str, Outcome]:
        """The results of an earlier process's batch `batch`, polled and read once for all its calls."""
        found = self._results.get(batch)
        if isinstance(found, anyio.Event):
            await found.wait()
            found = self._results.get(batch)
        if found is None:
            ready = self._results[batch] = anyio.Event()
            try:
                found = await self._collect(batch)
            except LLMFailure as failure:  # the batch is gone (or unreadable): its calls are sent again
                self._tell(f"batch {batch} of an earlier process cannot be read ({failure.error.message})")
                found = {}
            finally:
                ready.set()
            self._results[batch] = found
            self.picked_up += 1
        assert not isinstance(found, anyio.Event)
        return found

    async def _settled(self) -> list[_Waiter]:
        """The calls waiting once no new one has come for `BatchPolicy.settle` seconds (and 20 turns of the loop)."""
        while True:
            before = len(self._pending)
            for _ in range(20):
                await anyio.lowlevel.checkpoint()
            if self.policy.settle:
                await self.sleep(self.policy.settle)
            if len(self._pending) == before:
                break
        level, self._pending, self._leading = self._pending, [], False  # the next call leads the next batch
        return level

    async def _lead(self) -> None:
        """Send the settled level as batches (`BatchPolicy.max_lines` lines each); give each call its line."""
        level: list[_Waiter] | None = None
        try:
            level = await self._settled()
            size = self.policy.max_lines
            async with anyio.create_task_group() as group:
                for start in range(0, len(level), size):
                    group.start_soon(self._one_batch, level[start : start + size])
        finally:  # a cancelled run: the calls still waiting end too, never hang
            if level is None:  # cut while settling: the calls waiting are this level's
                level, self._pending, self._leading = self._pending, [], False
            cut = Failure(LLMError("batch_cancelled", "the run stopped while its batch was running", retryable=True))
            for waiter in level:
                waiter.settle(cut)

    async def _one_batch(self, level: list[_Waiter]) -> None:
        try:
            batch = await self.inner.submit_batch([(w.id, w.request) for w in level])
        except LLMFailure as failure:  # nothing was created: each call fails as the submission did
            for waiter in level:
                waiter.settle(Failure(failure.error))
            return
        record = BatchRecord(self.inner.batch_provider, batch, tuple(w.id for w in level))
        self.records.append(record)
        self.created += 1
        if self.on_created is not None:
            self.on_created(record)  # kept before anything waits on it: a killed process picks it up
        try:
            results = await self._collect(batch)
        except LLMFailure as failure:
            results = {w.id: Failure(failure.error) for w in level}
        for waiter in level:
            waiter.settle(results.get(waiter.id) or Failure(_missing(batch, waiter.id, "ended")))
        self._report(batch, [w.outcome for w in level])

    async def _collect(self, batch: str) -> dict[str, Outcome]:
        """Poll `batch` with backoff until it ends (cancelling it past `BatchPolicy.give_up`); its results."""
        started, failed, cancelled = self.clock(), 0, False
        waits = iter(self.policy.waits())
        while True:
            try:
                status = await self.inner.batch_status(batch)
                failed = 0
            except LLMFailure as failure:
                failed += 1
                if failed >= self.policy.status_failures or not failure.error.retryable:
                    raise
                status = None
            if status is not None and status.done:
                break
            give_up = self.policy.give_up
            if not cancelled and give_up is not None and self.clock() - started >= give_up:
                cancelled = True
                self._tell(f"batch {batch} still runs after {give_up:g} s: cancelling it")
                await self.inner.cancel_batch(batch)
                continue
            await self.sleep(next(waits))
        found = dict(await self.inner.batch_results(status))
        return {line: _marked(outcome) for line, outcome in found.items()} | {
            line: Failure(_missing(batch, line, status.state)) for line in self._lines_of(batch) if line not in found
        }

    def _lines_of(self, batch: str) -> tuple[str, ...]:
        for record in self.records:
            if record.id == batch:
                return record.lines
        return ()

    def _report(self, batch: str, outcomes: list[Outcome | None]) -> None:
        """One line saying how many of `batch`'s lines failed, by kind (nothing when none did)."""
        kinds: dict[str, int] = {}
        for outcome in outcomes:
            if isinstance(outcome, Failure):
                kind = outcome.failure().kind
                kinds[kind] = kinds.get(kind, 0) + 1
                self.failed_lines[kind] = self.failed_lines.get(kind, 0) + 1
        if kinds:
            said = ", ".join(f"{kind} {n}" for kind, n in sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0])))
            self._tell(f"batch {batch}: {sum(kinds.values())} of {len(outcomes)} lines failed ({said})")

    def _tell(self, message: str) -> None:
        if self.say is not None:
            self.say(message)

    def __repr__(self) -> str:
        return f"batched({self.inner!r})"


def _marked(outcome: Outcome) -> Outcome:
    """A line's reply marked as a batch's (`BATCH_USAGE`); a failure as it is."""
    if isinstance(outcome, Success):
        response: LLMResponse = outcome.unwrap()
        return Success(attrs.evolve(response, usage={**dict(response.usage), BATCH_USAGE: 1}))
    return outcome


def batched(
    llm: Any,
    policy: BatchPolicy = BatchPolicy(),
    *,
    sleep: Sleep = anyio.sleep,
    clock: Callable[[], float] = time.monotonic,
    known: Iterable[BatchRecord] = (),
    on_created: Callable[[BatchRecord], None] | None = None,
    say: Callable[[str], None] | None = None,
) -> Any:
    """Wrap a backend with a batch API so the calls of each dependency level go as one batch, at half the price.

    The calls must be in flight together to share a batch: run the program without a concurrency
    limit (``Runner(llm, max_concurrency=None)``), and put no `limited` layer below this one.

    Args:
        llm: A backend with a batch API (`has_batch_api`): `semgrad.backends.openai_compatible` on
            OpenAI's API, `semgrad.backends.anthropic`.
        policy: How to poll, when a level has settled, when to give up.
        sleep, clock: Awaitable sleep and monotonic clock (tests pass fakes: no waiting).
        known: Batches an earlier process created (its `BatchRecord` s): their results answer the
            calls whose lines they hold, nothing is sent again.
        on_created: Told each batch this layer creates, as soon as it exists (to keep it in a ledger).
        say: Told, in one line each, of failed lines by kind and of batches cancelled or unreadable.

    Raises:
        TypeError: `llm` has no batch API.

    Examples:
        >>> batched(lambda request: "4")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        TypeError: batched needs a backend with a batch API ...
    """
    if not has_batch_api(llm):
        raise TypeError(f"batched needs a backend with a batch API (OpenAI's or Anthropic's), got {type(llm).__name__}")
    return _Batched(llm, policy, sleep, clock, known, on_created, say)
