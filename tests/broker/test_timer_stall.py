"""One slot of many timers falling due together shares the broker's loop (issue 36: "one
slot holding 100,000 messages that fall due together delivers them without stalling the
event loop"), at that size: the wheel moves them CHUNK at a time, giving way whenever a
TimeSlice runs out, while other clients' requests are answered."""

from __future__ import annotations

import asyncio
import statistics
import time

import pytest

from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.protocol.timer import TimerProp
from tests.broker.timer_wire import now_ms, timer_batch, waiting
from tests.broker.wire import create_topic, max_offset
from tests.cluster import Cluster

MESSAGES = 100_000
BATCH = 1000
# as tests/broker/test_schedule_stall.py: a probe waits a few slices at most; a stall would
# hold one for the whole move, so a third of the probing time still tells them apart
WORST_RTT_S = 0.100
STALL_SHARE = 3


@pytest.mark.slow
async def test_one_slot_of_100000_keeps_answering(cluster: Cluster) -> None:
    """100,000 timers in one slot: every one arrives once, and GET_MAX_OFFSET round trips
    go on meanwhile (printed: p50, p99, worst)."""
    b = cluster.add_broker("broker-a")
    cli = RemotingClient()
    try:
        assert (await cli.invoke(b.addr, create_topic("TimerSlot", 1))).code == 0
        began = time.monotonic()
        warm = timer_batch("TimerSlot", [b"w"] * BATCH, {TimerProp.DELAY_SEC: "3600"})
        assert (await cli.invoke(b.addr, warm, timeout=30)).code == 0  # its pace, not due
        per_batch = time.monotonic() - began
        due = now_ms() + max(4000, int(4 * per_batch * MESSAGES / BATCH * 1000))
        for k in range(0, MESSAGES, BATCH):
            bodies = [b"%06d" % i for i in range(k, k + BATCH)]
            cmd = timer_batch("TimerSlot", bodies, {TimerProp.DELIVER_MS: str(due)})
            resp = await cli.invoke(b.addr, cmd, timeout=30)
            assert resp.code == 0, resp.remark
        assert await waiting(cli, b.addr) == BATCH + MESSAGES, "some fell due while sending"
        assert await max_offset(cli, b.addr, "TimerSlot", 0) == 0
        await asyncio.sleep(max(0.0, (due - now_ms()) / 1000))
        rtts: list[float] = []
        totals: list[int] = []
        start = time.monotonic()
        while not totals or totals[-1] < MESSAGES:
            assert time.monotonic() < start + 120, f"only {totals[-1]} of {MESSAGES} delivered"
            sent = time.monotonic()
            totals.append(await max_offset(cli, b.addr, "TimerSlot", 0))
            rtts.append(time.monotonic() - sent)
        probing = time.monotonic() - start
    finally:
        await cli.close()
    rtts.sort()
    p99 = rtts[int(len(rtts) * 0.99)]
    print(f"probes={len(rtts)} p50_ms={statistics.median(rtts) * 1000:.1f} "
          f"p99_ms={p99 * 1000:.1f} worst_ms={rtts[-1] * 1000:.1f} "
          f"delivery_s={probing:.2f}")  # fmt: skip
    assert totals[-1] == MESSAGES  # all of them, none twice
    assert any(0 < t < MESSAGES for t in totals), "the probes never saw the move under way"
    bound = max(WORST_RTT_S, probing / STALL_SHARE)
    assert rtts[-1] < bound, f"a request waited {rtts[-1] * 1000:.0f} ms behind the wheel"
