"""Helpers for owned background tasks: ``every()`` runs a periodic job with a fixed delay;
``TimeSlice`` lets a long job share the loop; ``run_steps`` runs a generator of bounded
steps with it."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from typing import Final, TypeVar

from aiorocketmq.remoting.log import get_logger
from aiorocketmq.remoting.protocol.steps import Steps

log = get_logger(__name__)


async def every(
    interval: float,
    job: Callable[[], Awaitable[None]],
    *,
    name: str,
    initial_delay: float | None = None,
    wake: asyncio.Event | None = None,
) -> None:
    """Sleep, run ``job``, repeat until cancelled; an exception is logged and survived.

    The delay is fixed between the end of one round and the start of the next, so slow rounds
    never pile up. ``wake``, when set, ends a delay early (it is cleared as the round starts).
    """
    await _pause(interval if initial_delay is None else initial_delay, wake)
    while True:
        try:
            await job()
        except Exception:  # broad catch 2 of 3: a failed round must not stop the loop
            log.exception("periodic_job_failed", job=name)
        await _pause(interval, wake)


async def _pause(seconds: float, wake: asyncio.Event | None) -> None:
    if wake is None:
        await asyncio.sleep(seconds)
        return
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(seconds):
            await wake.wait()
    wake.clear()


SLICE_SECONDS: Final = 0.005
T = TypeVar("T")


class TimeSlice:
    """Cooperative scheduling for a long job on the event loop: call ``await s.tick()`` after
    each unit of work (a message moved, a queue scanned); once ``budget`` seconds have passed
    since the last yield it yields to the loop (``asyncio.sleep(0)``), so pending I/O,
    requests and timers run, and a new slice begins.

    Needed wherever a loop awaits only calls that do not suspend (``MessageStore.put`` under
    ASYNC_FLUSH returns without suspending): such a job otherwise holds the loop until it ends,
    and no send, pull or heartbeat is answered meanwhile. Between yields ``tick`` costs one
    clock read, so call it per item rather than batching by hand.

    One instance per job, kept across its rounds. It bounds how long the loop is held, not how
    much a round does: also cap the work per round (so progress is saved and other queues get
    their turn) -- ScheduleService moves at most ``ROUND_MESSAGES`` per level per round.
    Delayed delivery uses it; transaction check-back and replication should use the same.
    """

    __slots__ = ("_clock", "_ends", "budget", "yields")

    def __init__(
        self, budget: float = SLICE_SECONDS, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.budget = budget
        self.yields = 0  # how often the job gave way: for tests and debug logs
        self._clock = clock
        self._ends = clock() + budget

    @property
    def spent(self) -> bool:
        """Whether the current slice is used up (the next ``tick`` will yield)."""
        return self._clock() >= self._ends

    async def tick(self) -> None:
        """Yield to the loop if this slice is used up; otherwise return at once."""
        if self._clock() >= self._ends:
            await self.pause()

    async def pause(self) -> None:
        """Yield to the loop now and start a new slice."""
        await asyncio.sleep(0)
        self.yields += 1
        self._ends = self._clock() + self.budget


async def run_steps(steps: Steps[T], budget: float = SLICE_SECONDS) -> T:
    """Run ``steps`` (a generator that yields between bounded units of work and returns a
    result) to its end, letting the loop serve others whenever ``budget`` seconds are used."""
    turn = TimeSlice(budget)
    while True:
        try:
            next(steps)
        except StopIteration as done:
            result: T = done.value
            return result
        await turn.tick()
