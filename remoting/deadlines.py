"""Deadlines: the response timeouts of one channel, served by a single loop timer.

A libuv timer per request costs more than the rest of a request's bookkeeping, so pending
deadlines sit in a heap and one timer is armed for the earliest, rounded up to a 10 ms tick:
a timeout fires at most one tick late (Java scans its response table only once a second).
Entries of answered requests are dropped lazily, when they come due or when the heap grows
past four times the pending count.
"""

from __future__ import annotations

import asyncio
import heapq
import math
from collections.abc import Callable, Mapping
from typing import Any, Final

TICK: Final = 0.010  # seconds

Expired = list[tuple[int, int, float]]  # (opaque, code, timeout) of each request due


class Deadlines:
    """Calls ``expire(entries)`` with every request whose deadline has passed."""

    def __init__(
        self, expire: Callable[[Expired], None], pending: Mapping[int, Any] | None = None
    ) -> None:
        self._expire = expire
        self._pending: Mapping[int, Any] = pending if pending is not None else {}
        self._heap: list[tuple[float, int, int, float]] = []
        self._timer: asyncio.TimerHandle | None = None
        self._armed_at = math.inf
        self._closed = False

    def add(self, deadline: float, opaque: int, code: int, timeout: float) -> None:
        heap = self._heap
        heapq.heappush(heap, (deadline, opaque, code, timeout))
        if deadline < self._armed_at and not self._closed:
            self._arm(deadline)
        if len(heap) > 4096 and len(heap) > 4 * len(self._pending):
            pending = self._pending
            self._heap = [e for e in heap if e[1] in pending]
            heapq.heapify(self._heap)

    def _arm(self, deadline: float) -> None:
        if self._timer is not None:
            self._timer.cancel()
        when = math.ceil(deadline / TICK) * TICK
        self._timer = asyncio.get_running_loop().call_at(when, self._fire)
        self._armed_at = when

    def _fire(self) -> None:
        self._timer, self._armed_at = None, math.inf
        now = asyncio.get_running_loop().time()
        heap, due = self._heap, []
        while heap and heap[0][0] <= now:
            _deadline, opaque, code, timeout = heapq.heappop(heap)
            due.append((opaque, code, timeout))
        if heap:
            self._arm(heap[0][0])
        if due:
            self._expire(due)

    def close(self) -> None:
        """Stop the timer: the channel is gone and fails its pending requests itself."""
        self._closed = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._heap.clear()
