"""Delayed delivery shares the broker's loop fairly (issue: event-loop stalls; protocol.md 12.3).

A broker restarted with 20,000 due delayed messages moves them all to their real topic while
still answering other requests promptly (ScheduleService yields through remoting.tasks.TimeSlice).
"""

from __future__ import annotations

import asyncio
import time

import pytest

from aiorocketmq.remoting.client import RemotingClient
from tests.broker.wire import create_topic, max_offset, send_v2
from tests.cluster import Cluster

MESSAGES = 20_000
QUEUES = 4
# level 1 while the 20,000 are sent: none falls due before the broker stops, however slow the
# machine (a 10 s level once did, behind a second test worker and other load)
SENDING_LEVELS = "1h 1m"
# level 1 of the restarted broker: a due time is store time + the level's delay then, so
# every message is due at the restart (as in 4.9.8, whose correctDeliverTimestamp delivers at
# once a stored due time beyond now + the level's delay)
DELAY_S = 1.0
IN_FLIGHT = 64
# Each slice of delayed delivery holds the loop ~5 ms; a probe waits for at most a few slices
# plus a dispatch and a write. 100 ms leaves ~10x margin for a slow 2-core CI machine (the
# test process and the broker share it), and is still 10x under the >1 s stall it replaces.
# Beside CPU hogs a probe waited 189 ms (issue 30), but the move stretches as much: one stall
# would hold a probe for all of it, so a third of the probing time still tells them apart.
WORST_RTT_S = 0.100
STALL_SHARE = 3


async def _send_delayed(cli: RemotingClient, addr: str, topic: str) -> None:
    """MESSAGES sends with DELAY=1, IN_FLIGHT at a time, spread over the topic's queues."""
    todo = iter(range(MESSAGES))

    async def worker() -> None:
        for i in todo:
            cmd = send_v2(topic, b"%08d" % i, queue_id=i % QUEUES, props={"DELAY": "1"})
            resp = await cli.invoke(addr, cmd, timeout=30)
            assert resp.code == 0, resp.remark

    async with asyncio.TaskGroup() as tg:
        for _ in range(IN_FLIGHT):
            tg.create_task(worker())


async def _probe_until_delivered(
    cli: RemotingClient, addr: str, topic: str
) -> tuple[list[float], list[int], float]:
    """GET_MAX_OFFSET round trips, timed one by one, until every message has arrived; the
    round trips, the delivered totals seen on the way and the seconds it all took."""
    rtts: list[float] = []
    totals: list[int] = []
    start = time.monotonic()
    deadline = start + 40
    while not totals or totals[-1] < MESSAGES:
        assert time.monotonic() < deadline, f"only {totals[-1]} of {MESSAGES} delivered"
        total = 0
        for queue_id in range(QUEUES):
            began = time.monotonic()
            total += await max_offset(cli, addr, topic, queue_id)
            rtts.append(time.monotonic() - began)
        totals.append(total)
    return rtts, totals, time.monotonic() - start


@pytest.mark.slow
async def test_moving_20000_due_messages_keeps_answering(cluster: Cluster) -> None:
    """protocol.md 12.3 / design.md 10 "never block the loop": while ScheduleService moves
    20,000 due messages at once, every GET_MAX_OFFSET round trip stays under 100 ms, or a
    third of the probing on a busy machine (the old service held the loop for >1 s: all of
    it), and all 20,000 arrive, once each."""
    b = cluster.add_broker("broker-a", messageDelayLevel=SENDING_LEVELS)
    topic = "StallT"
    sender = RemotingClient()
    try:
        assert (await sender.invoke(b.addr, create_topic(topic, QUEUES))).code == 0
        await _send_delayed(sender, b.addr, topic)
        last_sent = time.monotonic()
        early = sum([await max_offset(sender, b.addr, topic, q) for q in range(QUEUES)])
    finally:
        await sender.close()
    assert early == 0, "the sends outran the delay: not all would be due at once"
    assert cluster.stop_broker("broker-a") == 0
    b.sets["messageDelayLevel"] = f"{DELAY_S:g}s 1m"
    await asyncio.sleep(max(0.0, last_sent + DELAY_S + 0.2 - time.monotonic()))
    cluster.start_broker("broker-a")  # every one of the 20,000 is due now
    prober = RemotingClient()
    try:
        rtts, totals, probing = await _probe_until_delivered(prober, b.addr, topic)
    finally:
        await prober.close()
    worst = max(rtts)
    print(f"probes={len(rtts)} worst_rtt_ms={worst * 1000:.1f} totals={totals[:3]}...")
    assert totals[-1] == MESSAGES  # all of them, none twice
    bound = max(WORST_RTT_S, probing / STALL_SHARE)
    assert worst < bound, (
        f"a request waited {worst * 1000:.0f} ms behind the schedule (probing {probing:.1f} s)"
    )
    assert any(0 < t < MESSAGES for t in totals), "the probes never saw the move under way"
