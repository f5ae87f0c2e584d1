"""The pull path against real processes (issue 7; protocol.md 5.2, seed 003)."""

from __future__ import annotations

import asyncio
import time

import pytest

from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.protocol.codes import ResponseCode as R
from aiorocketmq.remoting.protocol.command import RemotingCommand
from aiorocketmq.remoting.protocol.message import decode_records
from tests.broker.wire import create_topic, heartbeat, pull, send_v2
from tests.cluster import BrokerProc, Cluster
from tests.util import FAQ

FIELDS = {"nextBeginOffset", "minOffset", "maxOffset", "suggestWhichBrokerId"}


@pytest.fixture
async def broker(cluster: Cluster, client: RemotingClient) -> BrokerProc:
    b = cluster.add_broker("broker-a")
    assert (await client.invoke(b.addr, create_topic("PullT", 2))).code == 0
    assert (await client.invoke(b.addr, heartbeat("127.0.0.1@1", "cg", ("PullT", "*")))).code == 0
    return b


async def send_n(
    client: RemotingClient, addr: str, n: int, queue_id: int = 0, tags: str = "A"
) -> None:
    for i in range(n):
        resp = await client.invoke(
            addr, send_v2("PullT", f"m{i}".encode(), queue_id=queue_id, props={"TAGS": tags})
        )
        assert resp.code == 0, resp.remark


async def test_every_pull_outcome(broker: BrokerProc, client: RemotingClient) -> None:
    """protocol.md 5.2: each store status and its code, with all four header fields always."""
    addr = broker.addr

    async def outcome(
        offset: int, sys_flag: int = 0, subscription: str | None = None, max_msgs: int = 32
    ) -> RemotingCommand:
        request = pull(
            "cg",
            "PullT",
            0,
            offset,
            sys_flag=sys_flag,
            subscription=subscription,
            max_msgs=max_msgs,
        )
        resp = await client.invoke(addr, request)
        assert resp.ext_fields.keys() >= FIELDS, resp.ext_fields
        return resp

    empty = await outcome(0)  # NO_MATCHED_LOGIC_QUEUE at offset 0 -> 19
    assert (empty.code, empty.remark, empty.ext_fields["nextBeginOffset"]) == (
        R.PULL_NOT_FOUND,
        "NO_MATCHED_LOGIC_QUEUE",
        "0",
    )
    moved = await outcome(5)  # ... at offset 5 -> 21
    assert (moved.code, moved.ext_fields["nextBeginOffset"]) == (R.PULL_OFFSET_MOVED, "0")
    await send_n(client, addr, 3)
    found = await outcome(0)
    assert (found.code, found.remark) == (R.SUCCESS, "FOUND")
    assert [m.body for m in decode_records(found.body)] == [b"m0", b"m1", b"m2"]
    assert (found.ext_fields["nextBeginOffset"], found.ext_fields["maxOffset"]) == ("3", "3")
    assert found.ext_fields["suggestWhichBrokerId"] == "0"
    one = await outcome(3)
    assert (one.code, one.remark, one.ext_fields["nextBeginOffset"]) == (
        19,
        "OFFSET_OVERFLOW_ONE",
        "3",
    )
    badly = await outcome(9)
    assert (badly.code, badly.remark, badly.ext_fields["nextBeginOffset"]) == (
        21,
        "OFFSET_OVERFLOW_BADLY",
        "3",
    )
    await send_n(client, addr, 2, tags="B")
    filtered = await outcome(3, sys_flag=4, subscription="A")
    assert (filtered.code, filtered.remark) == (R.PULL_RETRY_IMMEDIATELY, "NO_MATCHED_MESSAGE")
    assert filtered.ext_fields["nextBeginOffset"] == "5"  # filtered units count as scanned
    some = await outcome(0, sys_flag=4, subscription="B || C", max_msgs=1)
    assert [m.tags for m in decode_records(some.body)] == ["B"]
    assert some.ext_fields["nextBeginOffset"] == "4"


async def test_checks_before_reading(
    cluster: Cluster, broker: BrokerProc, client: RemotingClient
) -> None:
    """protocol.md 5.2's checks: topic, queue id, subscription presence and freshness; the
    remarks are 4.9.8's, FAQ suffix included (fidelity D14)."""
    addr = broker.addr
    no_topic = await client.invoke(addr, pull("cg", "Nope", 0, 0, sys_flag=0))
    assert (no_topic.code, no_topic.remark) == (
        17,
        "topic[Nope] not exist, apply first please! " + FAQ,
    )
    bad_queue = await client.invoke(addr, pull("cg", "PullT", 7, 0, sys_flag=0))
    assert bad_queue.code == R.SYSTEM_ERROR and str(bad_queue.remark).startswith(
        "queueId[7] is illegal"
    )
    stranger = await client.invoke(addr, pull("nobody", "PullT", 0, 0, sys_flag=0))
    assert (stranger.code, stranger.remark) == (24, "the consumer's group info not exist" + FAQ)
    other_topic = await client.invoke(addr, create_topic("Other", 1))
    assert other_topic.code == 0
    unsubscribed = await client.invoke(addr, pull("cg", "Other", 0, 0, sys_flag=0))
    assert (unsubscribed.code, unsubscribed.remark) == (
        24,
        "the consumer's subscription not exist" + FAQ,
    )
    stale = pull("cg", "PullT", 0, 0, sys_flag=0)
    stale.ext_fields["subVersion"] = str(2**62)
    assert (await client.invoke(addr, stale)).code == R.SUBSCRIPTION_NOT_LATEST
    sql = pull("cg", "PullT", 0, 0, sys_flag=4, subscription="a > 1")
    sql.ext_fields["expressionType"] = "SQL92"
    assert (await client.invoke(addr, sql)).code == R.SYSTEM_ERROR


async def test_held_pull_wakes_on_a_matching_send_and_times_out(
    broker: BrokerProc, client: RemotingClient
) -> None:
    """protocol.md 5.2 long polling: a held pull returns soon after a matching send (not a
    non-matching one) and, with nothing arriving, at its suspend time."""
    addr = broker.addr
    held = asyncio.ensure_future(
        client.invoke(
            addr, pull("cg", "PullT", 1, 0, sys_flag=6, subscription="A", suspend_ms=10_000), 15
        )
    )
    await asyncio.sleep(0.2)
    assert not held.done()
    await send_n(client, addr, 1, queue_id=1, tags="B")
    await asyncio.sleep(0.2)
    assert not held.done(), "a message of another tag must not wake it"
    began = time.monotonic()
    await send_n(client, addr, 1, queue_id=1, tags="A")
    resp = await held
    # within 100 ms on an idle machine; not woken, it would answer at its 10 s suspend: 5 s
    # tells the two apart with room for a busy machine
    assert time.monotonic() - began < 5
    assert resp.code == R.SUCCESS and [m.tags for m in decode_records(resp.body)] == ["A"]
    began = time.monotonic()
    quiet = await client.invoke(addr, pull("cg", "PullT", 1, 2, suspend_ms=700), 5)
    took = time.monotonic() - began
    # held its 700 ms; the upper bound only says it was answered, not left to the request's
    # own 5 s timeout (generous: a busy machine delays the answer, never hurries it)
    assert quiet.code == R.PULL_NOT_FOUND and 0.65 <= took < 4.5


async def test_held_pulls_do_not_delay_other_requests(
    broker: BrokerProc, client: RemotingClient
) -> None:
    """protocol.md 5.2: clients pull many queues over one connection; parked pulls never delay
    other requests on it."""
    held = [
        asyncio.ensure_future(
            client.invoke(broker.addr, pull("cg", "PullT", q, 0, suspend_ms=5000), 10)
        )
        for q in (0, 1)
    ]
    await asyncio.sleep(0.1)
    began = time.monotonic()
    resp = await client.invoke(
        broker.addr, RemotingCommand.request(30, {"topic": "PullT", "queueId": "0"})
    )
    # behind a parked pull it would wait for its 5 s suspend: 2.5 s tells that apart from a
    # busy machine's delay
    assert resp.code == 0 and time.monotonic() - began < 2.5
    assert not any(h.done() for h in held)
    await send_n(client, broker.addr, 1, queue_id=0)
    await send_n(client, broker.addr, 1, queue_id=1)
    assert [r.code for r in await asyncio.gather(*held)] == [0, 0]


async def test_parked_pulls_are_answered_at_stop(
    cluster: Cluster, broker: BrokerProc, client: RemotingClient
) -> None:
    """design.md 9: a graceful stop answers parked long-polls so consumers move on."""
    held = asyncio.ensure_future(
        client.invoke(broker.addr, pull("cg", "PullT", 0, 0, suspend_ms=20_000), 30)
    )
    await asyncio.sleep(0.2)
    began = time.monotonic()
    assert cluster.stop_broker("broker-a") == 0
    resp = await held
    # answered by the stop, not at its 20 s suspend (a busy machine slows the stop itself)
    assert resp.code == R.PULL_NOT_FOUND and time.monotonic() - began < 15
