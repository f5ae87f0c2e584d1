"""Deadlines: one timer per channel for every pending request's timeout."""

from __future__ import annotations

import asyncio

from aiorocketmq.remoting.deadlines import TICK, Deadlines


async def test_each_request_expires_once_at_its_own_deadline() -> None:
    """Timeouts fire in deadline order, none early and at most a tick (plus scheduling) late."""
    loop = asyncio.get_running_loop()
    fired: list[tuple[int, float]] = []
    done = asyncio.Event()

    def expire(due: list[tuple[int, int, float]]) -> None:
        fired.extend((opaque, loop.time()) for opaque, _code, _timeout in due)
        if len(fired) == 3:
            done.set()

    deadlines = Deadlines(expire)
    start = loop.time()
    for opaque, after in ((1, 0.15), (2, 0.05), (3, 0.10)):
        deadlines.add(start + after, opaque, 10, after)
    await asyncio.wait_for(done.wait(), 5)
    assert [o for o, _ in fired] == [2, 3, 1]
    for opaque, at in fired:
        due = start + {1: 0.15, 2: 0.05, 3: 0.10}[opaque]
        assert due <= at < due + TICK + 0.5
    deadlines.close()


async def test_answered_requests_do_not_accumulate() -> None:
    """Entries of answered requests are dropped once the heap outgrows the pending table."""
    pending: dict[int, object] = {}
    deadlines = Deadlines(lambda due: None, pending)
    loop = asyncio.get_running_loop()
    for opaque in range(20_000):
        pending[opaque] = object()
        deadlines.add(loop.time() + 30, opaque, 10, 30)
        del pending[opaque]  # answered at once
    assert len(deadlines._heap) <= 4097
    deadlines.close()


async def test_close_stops_the_timer() -> None:
    """A closed channel's deadlines never fire (it fails its requests itself)."""
    fired: list[object] = []
    deadlines = Deadlines(fired.append)
    deadlines.add(asyncio.get_running_loop().time() + 0.01, 1, 10, 0.01)
    deadlines.close()
    await asyncio.sleep(0.05)
    assert fired == []
