"""The timer wheel across a CommitLog cut (a failover: broker.roles / broker.ha_slave call
``MessageStore.truncate_to``): the wheel's units of the messages cut go with them, so a
record written later at the same offset -- even the wheel topic's with the same
ConsumeQueue offset -- is delivered at its own time only, never at the cut one's. A real
store and wheel in-process, a real cut."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

from aiorocketmq.broker.store import MessageStore, PutStatus
from aiorocketmq.broker.timer import TimerService
from aiorocketmq.broker.timer_rules import TimerLimits, apply_timer
from aiorocketmq.remoting.protocol.message import MessageExt, Prop, now_ms
from aiorocketmq.remoting.protocol.timer import TIMER_TOPIC, TimerProp
from tests.store.conftest import HOST, small_config
from tests.util import wait_until

PRECISION = 100
LIMITS = TimerLimits(True, PRECISION, 3600)


async def _put_timer(store: MessageStore, body: bytes, due: int, key: str) -> int:
    msg = MessageExt(topic="Real", body=body, queue_id=0, born_host="127.0.0.1:5555",
                     born_timestamp=now_ms(), properties={TimerProp.DELIVER_MS: str(due),
                                                          Prop.UNIQ_KEY: key})  # fmt: skip
    assert apply_timer(msg, LIMITS, now_ms())
    result = await store.put(msg)
    assert result.status is PutStatus.PUT_OK
    return msg.commit_log_offset


async def test_a_cut_drops_the_units_of_the_messages_cut(tmp_path: Path) -> None:
    """A timer due soon is cut away; a timer due in 10 minutes is written at its offset with
    its ConsumeQueue offset: the cut one's slot passes and delivers nothing, the new one
    waits (before the fix: the cut unit delivered the new message 10 minutes early)."""
    config = small_config(tmp_path, timer_precision_ms=PRECISION, timer_roll_window_slot=20_000)
    store = MessageStore(config, store_host=HOST)
    await store.start()
    try:
        await _cut_then_deliver(store)
    finally:
        await store.shutdown()


async def _cut_then_deliver(store: MessageStore) -> None:
    timer = TimerService(store, lambda: store.config)
    timer.load()
    soon = now_ms() + 1500
    cut_at = await _put_timer(store, b"cut", soon, "K-CUT")
    assert timer.timers.pending == 1
    store.truncate_to(cut_at)
    assert store.max_offset(TIMER_TOPIC, 0) == 0
    later = await _put_timer(store, b"later", now_ms() + 600_000, "K-LATER")
    assert later == cut_at and store.max_offset(TIMER_TOPIC, 0) == 1  # same offset, same unit
    assert timer.timers.pending == 1 and timer.timers.next_cq == 1
    delivering = asyncio.create_task(timer.run())
    try:
        await wait_until(lambda: timer.timers.progress.read_ms > soon, timeout=30)
    finally:
        delivering.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await delivering
        timer.close()
    assert store.max_offset("Real", 0) == 0, "the cut unit delivered the record now at its offset"
    assert timer.counts["delivered"] == 0 and timer.timers.pending == 1


async def test_a_unit_whose_record_is_another_is_skipped(tmp_path: Path) -> None:
    """A cut the wheel was not told of (the guard under ``_cut``): at a unit's offset now
    lies the wheel topic's record of another ConsumeQueue offset. Delivery reads it, sees
    it is not the unit's message and skips it (before the fix: delivered, 10 minutes
    early)."""
    config = small_config(tmp_path, timer_precision_ms=PRECISION, timer_roll_window_slot=20_000,
                          mapped_file_size_commit_log=1 << 20)  # fmt: skip
    store = MessageStore(config, store_host=HOST)
    await store.start()
    try:
        await _guarded(store)
    finally:
        await store.shutdown()


def _plain(body: bytes) -> MessageExt:
    return MessageExt(topic="Real", body=body, queue_id=0, born_host="127.0.0.1:5555",
                      born_timestamp=now_ms())  # fmt: skip


async def _guarded(store: MessageStore) -> None:
    timer = TimerService(store, lambda: store.config)
    timer.load()
    store.cut_listeners.clear()  # the wheel misses the cut
    empty = await store.put(_plain(b""))
    empty_size = empty.wrote_bytes
    first = await _put_timer(store, b"first", now_ms() + 600_000, "K-1")
    soon = now_ms() + 1500
    second = await _put_timer(store, b"second", soon, "K-2")  # ConsumeQueue offset 1
    store.truncate_to(first)
    pad = await store.put(_plain(b"p" * (second - first - empty_size)))  # as long as "first"
    assert pad.wrote_bytes == second - first
    other = await _put_timer(store, b"other", now_ms() + 600_000, "K-3")
    assert other == second and store.max_offset(TIMER_TOPIC, 0) == 1  # offset 0 at unit 1's
    delivering = asyncio.create_task(timer.run())
    try:
        await wait_until(lambda: timer.timers.progress.read_ms > soon, timeout=30)
    finally:
        delivering.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await delivering
        timer.close()
    assert store.max_offset("Real", 0) == 2, "the unit delivered a record not its own"
    assert timer.counts["delivered"] == 0 and timer.counts["skipped"] == 1
