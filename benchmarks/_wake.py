"""Sleeps that end when the kernel says, not at the event loop's next millisecond.

A fake LLM that waits with ``anyio.sleep`` wakes late: asyncio's loop hands epoll a
timeout rounded *up* to a whole millisecond (`selectors.EpollSelector.select`), and
libuv (uvloop) keeps its timers in whole milliseconds of a coarse clock. Each call of
a chain of dependent calls then ends up to a millisecond after its latency: on W4 at
20 ms (nine calls deep) that alone is 1.05 of the limit, whatever runs the calls. A
real LLM's reply arrives on a socket, and epoll reports the socket the moment it is
readable; nothing rounds it.

`FdSleep` is such a sleep for the benchmarks: one Linux ``timerfd`` per event loop,
armed at the earliest deadline (absolute, nanoseconds, ``CLOCK_MONOTONIC`` -- the
clock of `time.monotonic`), watched with ``loop.add_reader`` as a socket would be.
When it fires, every sleep whose deadline has come ends, and the fd is armed for the
next. It works on asyncio's own loop and on uvloop's, which is what the benchmarks run.

`precise_sleep()` returns an `FdSleep` where ``timerfd_create`` is available (Linux),
and ``None`` elsewhere, where the benchmarks keep the event loop's timers.

Examples:
    >>> import anyio, time
    >>> sleep = precise_sleep()
    >>> async def nap() -> float:
    ...     t0 = time.monotonic()
    ...     await (sleep or anyio.sleep)(0.0105)
    ...     return time.monotonic() - t0
    >>> 0.0105 <= anyio.run(nap) < 0.5
    True
"""

from __future__ import annotations

import asyncio
import ctypes
import heapq
import itertools
import math
import os
import sys
import time
import weakref
from typing import Any

__all__ = ["FdSleep", "precise_sleep"]

_CLOCK_MONOTONIC = 1
_TFD_NONBLOCK = os.O_NONBLOCK
_TFD_CLOEXEC = os.O_CLOEXEC
_TFD_TIMER_ABSTIME = 1


class _Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


class _Itimerspec(ctypes.Structure):
    _fields_ = [("it_interval", _Timespec), ("it_value", _Timespec)]


def _libc() -> Any | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.timerfd_create.argtypes = [ctypes.c_int, ctypes.c_int]
        libc.timerfd_settime.argtypes = [
            ctypes.c_int,
            ctypes.c_int,
            ctypes.POINTER(_Itimerspec),
            ctypes.POINTER(_Itimerspec),
        ]
    except (OSError, AttributeError):
        return None
    return libc


class _LoopTimer:
    """One loop's timerfd and the sleeps waiting on it, earliest first."""

    def __init__(self, libc: Any, loop: asyncio.AbstractEventLoop) -> None:
        fd = libc.timerfd_create(_CLOCK_MONOTONIC, _TFD_NONBLOCK | _TFD_CLOEXEC)
        if fd < 0:
            err = ctypes.get_errno()
            raise OSError(err, f"timerfd_create: {os.strerror(err)}")
        self.libc = libc
        self.fd = fd
        self.heap: list[tuple[float, int, asyncio.Future[None]]] = []
        self.armed = math.inf  # when the fd fires next (inf: it does not)
        self.deferred = False  # set while a re-arm waits for the tasks a firing woke
        self.spec = _Itimerspec()
        self.loop = loop
        loop.add_reader(fd, self._fire)
        weakref.finalize(loop, os.close, fd)

    def arm(self, deadline: float) -> None:
        """Fire at `deadline` (`time.monotonic` seconds), rounded up to the nanosecond; inf disarms."""
        value = self.spec.it_value
        if math.isinf(deadline):
            value.tv_sec = value.tv_nsec = 0
        else:
            ns = math.ceil(deadline * 1e9)
            value.tv_sec, value.tv_nsec = divmod(ns, 1_000_000_000)
        if self.libc.timerfd_settime(self.fd, _TFD_TIMER_ABSTIME, ctypes.byref(self.spec), None) < 0:
            err = ctypes.get_errno()
            raise OSError(err, f"timerfd_settime: {os.strerror(err)}")
        self.armed = deadline

    def _fire(self) -> None:
        try:
            os.read(self.fd, 8)
        except BlockingIOError:  # re-armed since it became readable
            pass
        self.armed = math.inf  # a one-shot timer that has fired is disarmed
        self._wake_due()

    def _wake_due(self) -> None:
        """End every sleep whose deadline has come; see to the next one after the tasks woken have run."""
        heap = self.heap
        now = time.monotonic()
        while heap and heap[0][0] <= now:
            future = heapq.heappop(heap)[2]
            if not future.done():  # a cancelled sleep leaves its entry behind
                future.set_result(None)
        if heap and not self.deferred:
            # Arming the timer costs tens of microseconds on a VM (the clock's hardware is
            # reprogrammed), and more when its time has passed by then (it fires at once, an
            # interrupt and an event-loop pass later). So it waits for the tasks just woken,
            # and sleeps that came due while they ran end without it: as replies that reached
            # a socket while its reader was busy are read without a timer at all.
            self.deferred = True
            self.loop.call_soon(self._rearm)

    def _rearm(self) -> None:
        self.deferred = False
        heap = self.heap
        if heap and heap[0][0] <= time.monotonic():
            self._wake_due()
        elif heap and heap[0][0] < self.armed:
            self.arm(heap[0][0])


class FdSleep:
    """``await sleep(seconds)``, woken by a timerfd on the running asyncio (or uvloop) loop."""

    def __init__(self, libc: Any) -> None:
        self._libc = libc
        self._timers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopTimer] = weakref.WeakKeyDictionary()
        self._order = itertools.count()

    def __repr__(self) -> str:
        return "FdSleep()"

    async def __call__(self, seconds: float) -> None:
        await self.until(time.monotonic() + max(seconds, 0.0))

    async def until(self, deadline: float) -> None:
        """Sleep until `time.monotonic()` reaches `deadline`."""
        loop = asyncio.get_running_loop()
        timer = self._timers.get(loop)
        if timer is None:
            timer = self._timers[loop] = _LoopTimer(self._libc, loop)
        future: asyncio.Future[None] = loop.create_future()
        heapq.heappush(timer.heap, (deadline, next(self._order), future))
        if deadline < timer.armed and not timer.deferred:
            timer.arm(deadline)
        await future


def precise_sleep() -> FdSleep | None:
    """An `FdSleep` where Linux's timerfd is available, else None (use the event loop's timers)."""
    libc = _libc()
    return None if libc is None else FdSleep(libc)
