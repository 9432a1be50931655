"""One limit on concurrent LLM calls per backend, shared by every run of a sweep.

Theory of operation: a `CallSlots` object owns one `asyncio.Semaphore` per
limited backend and lives on a single event loop -- in a Ray actor (async
actor: its methods run on the actor's loop) or, for ``--local`` sweeps, on a
private thread of this process (`local_call_slots`). Runs reach it through a
client: `RaySlots` (actor calls) or `LocalSlots` (coroutines handed to the
slots' loop). A run opens an *attempt* (``client.attempt(run)``) and wraps
its LLM with `slotted`, so every call takes a slot first and gives it back after.

Each call has a ticket ``run|attempt|n``. Releasing is fire-and-forget, so it
also works while the caller is being cancelled; a release that arrives before
its grant marks the ticket abandoned, and the grant is then handed straight back.

A worker that dies would hold its slots forever, and the runs waiting for
them would keep their CPUs -- so Ray could never start the retry that might
free them. Three things prevent that:

* under Ray, an attempt sends heartbeats from a thread, and a watchdog frees
  the slots of attempts silent for `expire_after` seconds (the spec's
  ``resources.lease_seconds``);
* a new attempt of a run (Ray's retry) frees its earlier attempts' slots at
  once, and their late grants are handed back;
* the driver retires a run that failed for good.
"""

from __future__ import annotations

import asyncio
import itertools
import threading
import time
import uuid
from collections.abc import Coroutine, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from typing import Any, Protocol

from ..core import LLMError, LLMFailure, LLMRequest, LLMResponse
from ..effects._routing import Middleware, call

__all__ = ["CallSlots", "LocalSlots", "RaySlots", "SlotsClient", "local_call_slots", "slotted"]


class CallSlots:
    """Counting semaphores per backend, with tickets and attempts; run it on one event loop.

    Args:
        limits: Calls in flight at once, per backend name (backends not named are unlimited).
        expire_after: Free the slots of an attempt whose last heartbeat is older
            than this many seconds (None: attempts never expire).

    Examples:
        >>> async def demo():
        ...     slots = CallSlots({"simulated": 1})
        ...     await slots.begin("run", "a")
        ...     granted = await slots.acquire("simulated", "run|a|0", "run", "a")
        ...     await slots.release("run|a|0")
        ...     return granted, await slots.stats()
        >>> asyncio.run(demo())
        (True, {'in_flight': {'simulated': 0}, 'peak': {'simulated': 1}})
    """

    def __init__(self, limits: Mapping[str, int], *, expire_after: float | None = None) -> None:
        self.limits = dict(limits)
        self.expire_after = expire_after
        self._semaphores: dict[str, asyncio.Semaphore] = {}
        self._held: dict[str, tuple[str, str, str]] = {}
        self._abandoned: set[str] = set()
        self._attempts: dict[str, str | None] = {}
        self._beats: dict[tuple[str, str], float] = {}
        self._watchdog: asyncio.Task[None] | None = None
        self._in_flight = {key: 0 for key in self.limits}
        self._peak = {key: 0 for key in self.limits}

    async def acquire(self, key: str, ticket: str, run: str, attempt: str) -> bool:
        """Wait for a slot of `key`; False when the grant was refused (abandoned ticket, superseded attempt)."""
        if key not in self.limits:
            return True
        if ticket in self._abandoned:
            self._abandoned.discard(ticket)
            return False
        if key not in self._semaphores:
            self._semaphores[key] = asyncio.Semaphore(self.limits[key])
        semaphore = self._semaphores[key]
        await semaphore.acquire()
        if ticket in self._abandoned or self._attempts.get(run, attempt) != attempt:
            self._abandoned.discard(ticket)
            semaphore.release()
            return False
        self._held[ticket] = (key, run, attempt)
        self._in_flight[key] += 1
        self._peak[key] = max(self._peak[key], self._in_flight[key])
        return True

    async def release(self, ticket: str) -> None:
        """Give a slot back (or, before it is granted, refuse it in advance)."""
        held = self._held.pop(ticket, None)
        if held is None:
            self._abandoned.add(ticket)
            return
        self._in_flight[held[0]] -= 1
        self._semaphores[held[0]].release()

    async def begin(self, run: str, attempt: str) -> int:
        """Start an attempt of `run`: free the slots its earlier attempts still hold; return how many."""
        self._attempts[run] = attempt
        await self.heartbeat(run, attempt)
        if self.expire_after is not None and self._watchdog is None:
            self._watchdog = asyncio.get_running_loop().create_task(self._watch(self.expire_after))
        return await self._free(lambda r, a: r == run and a != attempt)

    async def heartbeat(self, run: str, attempt: str) -> None:
        """The attempt is alive."""
        self._beats[(run, attempt)] = time.monotonic()

    async def retire(self, run: str) -> int:
        """`run` is over for good: free its slots and refuse its late grants; return how many were freed."""
        self._attempts[run] = None
        return await self._free(lambda r, a: r == run)

    async def expire(self) -> int:
        """Free the slots of attempts silent for longer than `expire_after`; return how many."""
        if self.expire_after is None:
            return 0
        oldest = time.monotonic() - self.expire_after
        return await self._free(lambda r, a: self._beats.get((r, a), oldest) < oldest)

    async def _watch(self, expire_after: float) -> None:
        while True:
            await asyncio.sleep(expire_after / 4)
            await self.expire()

    async def _free(self, stale: Any) -> int:
        tickets = [t for t, (_, r, a) in self._held.items() if stale(r, a)]
        for ticket in tickets:
            await self.release(ticket)
        return len(tickets)

    async def stats(self) -> dict[str, dict[str, int]]:
        """Calls in flight now and at most so far, per limited backend."""
        return {"in_flight": dict(self._in_flight), "peak": dict(self._peak)}

    async def aclose(self) -> None:
        """Stop the watchdog."""
        watchdog, self._watchdog = self._watchdog, None
        if watchdog is not None:
            watchdog.cancel()
            await asyncio.gather(watchdog, return_exceptions=True)


class SlotsClient(Protocol):
    """How a run reaches the `CallSlots` of its sweep."""

    def limited(self, key: str) -> bool:
        """Whether calls to backend `key` take a slot."""
        ...

    def attempt(self, run: str) -> AbstractContextManager[str]:
        """Open an attempt of `run` (freeing its earlier attempts' slots); yields the attempt's id."""
        ...

    async def acquire(self, key: str, ticket: str, run: str, attempt: str) -> bool:
        """Wait for a slot; see `CallSlots.acquire`."""
        ...

    def release(self, ticket: str) -> None:
        """Give a slot back without waiting."""
        ...


class RaySlots:
    """A client of a `CallSlots` Ray actor (picklable: it travels to every worker).

    Args:
        actor: The actor's handle.
        limits: The limits it was created with.
        beat_every: Seconds between an attempt's heartbeats (well below the actor's `expire_after`).
    """

    def __init__(self, actor: Any, limits: Mapping[str, int], *, beat_every: float = 1.0) -> None:
        self.actor = actor
        self.limits = dict(limits)
        self.beat_every = beat_every

    def limited(self, key: str) -> bool:
        """Whether `key` has a limit."""
        return key in self.limits

    @contextmanager
    def attempt(self, run: str) -> Iterator[str]:
        """Begin an attempt, and send heartbeats from a thread until it ends."""
        import ray

        attempt = uuid.uuid4().hex
        ray.get(self.actor.begin.remote(run, attempt))
        stop = threading.Event()

        def beat() -> None:
            while not stop.wait(self.beat_every):
                self.actor.heartbeat.remote(run, attempt)

        thread = threading.Thread(target=beat, name=f"semgrad-heartbeat-{run}", daemon=True)
        thread.start()
        try:
            yield attempt
        finally:
            stop.set()
            thread.join()

    async def acquire(self, key: str, ticket: str, run: str, attempt: str) -> bool:
        """Wait for the actor to grant a slot."""
        try:
            return bool(await self.actor.acquire.remote(key, ticket, run, attempt))
        except BaseException:
            self.release(ticket)
            raise

    def release(self, ticket: str) -> None:
        """Tell the actor (fire and forget)."""
        self.actor.release.remote(ticket)


class LocalSlots:
    """A client of a `CallSlots` running on a private event loop thread of this process."""

    def __init__(self, slots: CallSlots, loop: asyncio.AbstractEventLoop) -> None:
        self.slots = slots
        self.loop = loop

    def limited(self, key: str) -> bool:
        """Whether `key` has a limit."""
        return key in self.slots.limits

    def _submit(self, coroutine: Coroutine[Any, Any, Any]) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop)

    @contextmanager
    def attempt(self, run: str) -> Iterator[str]:
        """Begin an attempt (threads do not die apart from their process: no heartbeat)."""
        attempt = uuid.uuid4().hex
        self._submit(self.slots.begin(run, attempt)).result()
        yield attempt

    async def acquire(self, key: str, ticket: str, run: str, attempt: str) -> bool:
        """Wait for a slot (from any thread's event loop)."""
        try:
            return bool(await asyncio.wrap_future(self._submit(self.slots.acquire(key, ticket, run, attempt))))
        except BaseException:
            self.release(ticket)
            raise

    def release(self, ticket: str) -> None:
        """Give a slot back (fire and forget)."""
        self._submit(self.slots.release(ticket))

    def stats(self) -> dict[str, dict[str, int]]:
        """See `CallSlots.stats`."""
        return dict(self._submit(self.slots.stats()).result())


@contextmanager
def local_call_slots(limits: Mapping[str, int]) -> Iterator[LocalSlots]:
    """`CallSlots` on a private event loop thread, for sweeps run in this process; stopped on exit.

    Examples:
        >>> with local_call_slots({"simulated": 2}) as slots:
        ...     slots.limited("simulated"), slots.limited("anthropic")
        (True, False)
    """
    loop = asyncio.new_event_loop()
    ready = threading.Event()

    def serve() -> None:
        asyncio.set_event_loop(loop)
        loop.call_soon(ready.set)
        loop.run_forever()

    thread = threading.Thread(target=serve, name="semgrad-call-slots", daemon=True)
    thread.start()
    ready.wait()
    try:
        yield LocalSlots(CallSlots(limits), loop)
    finally:
        # Releases are fire-and-forget: let every one already submitted finish before stopping.
        asyncio.run_coroutine_threadsafe(_drain(), loop).result(timeout=60)
        loop.call_soon_threadsafe(loop.stop)
        thread.join()
        loop.close()


async def _drain() -> None:
    current = asyncio.current_task()
    await asyncio.gather(*(t for t in asyncio.all_tasks() if t is not current), return_exceptions=True)


class _Slotted(Middleware):
    """An async LLM that takes a sweep-wide slot for every call to its inner LLM."""

    def __init__(self, inner: Any, slots: SlotsClient, key: str, run: str, attempt: str) -> None:
        self.inner, self.slots, self.key, self.run, self.attempt = inner, slots, key, run, attempt
        self._tickets = itertools.count()

    async def __call__(self, request: LLMRequest) -> LLMResponse:
        ticket = f"{self.run}|{self.attempt}|{next(self._tickets)}"
        if not await self.slots.acquire(self.key, ticket, self.run, self.attempt):
            raise LLMFailure(LLMError("cancelled", f"the sweep no longer runs this attempt of {self.run}"))
        try:
            return await call(self.inner, request)
        finally:
            self.slots.release(ticket)

    def __repr__(self) -> str:
        return f"slotted({self.inner!r}, key={self.key!r})"


def slotted(llm: Any, slots: SlotsClient, *, key: str, run: str, attempt: str) -> Any:
    """Wrap `llm` so each call first takes a slot of `key` from the sweep's shared `slots`.

    Args:
        llm: A sync or async LLM.
        slots: The sweep's slots client.
        key: The backend name the limit is kept under.
        run: The run's name.
        attempt: The id ``slots.attempt(run)`` yielded.

    Returns:
        An async LLM with the same ``identity`` as `llm`, or `llm` itself when `key` has no limit.

    Examples:
        >>> import anyio
        >>> from semgrad.core import Message
        >>> with local_call_slots({"simulated": 1}) as slots, slots.attempt("run") as attempt:
        ...     llm = slotted(lambda request: "ok", slots, key="simulated", run="run", attempt=attempt)
        ...     anyio.run(llm, LLMRequest((Message("user", "hi"),))).text
        'ok'
    """
    if not slots.limited(key):
        return llm
    return _Slotted(llm, slots, key, run, attempt)
