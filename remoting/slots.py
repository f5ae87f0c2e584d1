"""Slots: a counter with a cap and a queue of waiters only at the cap (cheaper than a
Semaphore on the common path). RemotingClient keeps one per address and kind, so a peer
that holds many requests never starves requests to other peers."""

from __future__ import annotations

import asyncio
import collections

from aiorocketmq.remoting.errors import RemotingTooMuchRequestError


class Slots:
    __slots__ = ("_waiters", "limit", "used")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0
        self._waiters: collections.deque[asyncio.Future[None]] = collections.deque()

    async def take(self, deadline: float, what: str) -> None:
        """One slot, waiting until ``deadline`` (RemotingTooMuchRequestError past it)."""
        while self.used >= self.limit:
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            try:
                async with asyncio.timeout_at(deadline):
                    await waiter
            except BaseException as exc:  # gave up: timeout or cancellation
                if waiter in self._waiters:
                    self._waiters.remove(waiter)
                elif waiter.done() and not waiter.cancelled() and self.used < self.limit:
                    self._wake_one()  # it was woken for a free slot: pass the wake on
                if isinstance(exc, TimeoutError):
                    raise RemotingTooMuchRequestError(
                        f"{self.limit} {what} already in flight"
                    ) from None
                raise
        self.used += 1

    def give(self) -> None:
        self.used -= 1
        self._wake_one()

    def _wake_one(self) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                break
