"""A 4.9.8-style client's timer message (issue 36; features.md 4.1): ali-ons 3.12.0 sets only the
user property TIMER_DELIVER_MS -- 4.9.8's reserved set has no TIMER_* keys, and it knows
nothing of timers -- and our broker holds the message in rmq_sys_wheel_timer until it falls
due, then delivers it to its topic, where an ali-ons consumer gets it."""

from __future__ import annotations

import pytest

from aiorocketmq.remoting.client import RemotingClient
from tests.cluster import Cluster
from tests.compat.conftest import Node, create_everywhere

pytestmark = [pytest.mark.compat, pytest.mark.slow]

COUNT = 6
AHEAD_MS = 3000  # ahead of the send: ali-ons's start and sends take well under that


async def test_ali_ons_timer_message_waits_until_due(
    compat_cluster: Cluster, admin: RemotingClient
) -> None:
    """Every message sent; each consumed once, never before its TIMER_DELIVER_MS (the
    consumer's clock is the broker's: one machine), with the wheel's TIMER_ENQUEUE_MS /
    TIMER_DEQUEUE_MS and its own properties kept."""
    await create_everywhere(admin, compat_cluster, "CompatTimer", 2)
    consumer = await Node.start(
        "consume.js", compat_cluster.namesrv_addr, "CompatTimer", "compat_timer_cg",
        f"--expect={COUNT}", "--idle-ms=3000", "--from=first",
    )  # fmt: skip
    await consumer.ready()
    producer = await Node.start(
        "produce.js", compat_cluster.namesrv_addr, "CompatTimer", str(COUNT),
        "--run=timer", f"--deliverInMs={AHEAD_MS}",
    )  # fmt: skip
    assert await producer.wait() == 0, producer.stderr.decode()[-2000:]
    sent = {m["body"]: m for m in producer.messages}
    assert all(m.get("status") == "SEND_OK" for m in sent.values()), producer.messages
    assert await consumer.wait() == 0, consumer.stderr.decode()[-2000:]
    got = consumer.messages
    assert sorted(m["body"] for m in got) == sorted(sent), got
    for m in got:
        due = sent[m["body"]]["deliverAt"]
        assert m["receivedAt"] >= due, (m["body"], due - m["receivedAt"], "ms early")
        assert m["topic"] == "CompatTimer"
        props = m["props"]
        assert props["TIMER_DELIVER_MS"] == str(due) and props["customProp"].startswith("value-")
        assert int(props["TIMER_DEQUEUE_MS"]) >= due and "TIMER_ENQUEUE_MS" in props
