"""Slots (remoting.slots): the per-address in-flight cap of RemotingClient."""

from __future__ import annotations

import asyncio

import pytest

from aiorocketmq.remoting.errors import RemotingTooMuchRequestError
from aiorocketmq.remoting.slots import Slots


async def test_a_woken_waiter_that_gives_up_passes_the_slot_on() -> None:
    """A waiter woken for a free slot but cancelled before it ran must not strand the next
    waiter until its own deadline."""
    slots = Slots(1)
    loop = asyncio.get_running_loop()
    await slots.take(loop.time() + 1, "requests")
    first = asyncio.ensure_future(slots.take(loop.time() + 5, "requests"))
    second = asyncio.ensure_future(slots.take(loop.time() + 5, "requests"))
    await asyncio.sleep(0)  # both are waiting
    slots.give()  # wakes `first` ...
    first.cancel()  # ... which gives up before it runs
    # `second` gets the slot now, not at its 5 s deadline (4 s: room for a busy machine)
    await asyncio.wait_for(second, 4)
    assert slots.used == 1
    with pytest.raises(asyncio.CancelledError):
        await first


async def test_past_the_deadline_is_a_typed_error() -> None:
    slots = Slots(1)
    loop = asyncio.get_running_loop()
    await slots.take(loop.time() + 1, "requests")
    with pytest.raises(RemotingTooMuchRequestError, match="1 requests already in flight"):
        await slots.take(loop.time() + 0.05, "requests")
    assert slots.used == 1
