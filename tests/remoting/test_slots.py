"""Bulkhead slots: a counter with waiters; slots are handed over, never lost."""

from __future__ import annotations

import asyncio

from remoting.dispatch import Slots


async def test_slots_hand_over_and_time_out() -> None:
    """A released slot goes to the first live waiter; a waiter that timed out gets none, and
    the count returns to zero when everyone is done."""
    slots = Slots(1)
    assert slots.try_take() and not slots.try_take()
    assert await slots.take(0.01) is False  # timed out while the slot was held
    waiter = asyncio.ensure_future(slots.take(5))
    await asyncio.sleep(0)
    slots.release()  # handed to the waiter: used stays 1
    assert await waiter is True and slots.used == 1
    slots.release()
    assert slots.used == 0 and not slots.waiters
