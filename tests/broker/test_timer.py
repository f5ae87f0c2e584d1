"""Timer messages against a real broker (issue 36, features.md 4.1): the rules on the wire,
delivery in [due, due + precision), recall, the wheel's checkpoint and metrics requests."""

from __future__ import annotations

import json

import pytest

from aiorocketmq.broker.timer_rules import DISABLED_REMARK
from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.protocol.codes import RequestCode, ResponseCode
from aiorocketmq.remoting.protocol.command import RemotingCommand
from aiorocketmq.remoting.protocol.message import Prop
from aiorocketmq.remoting.protocol.timer import TIMER_TOPIC, TimerProp, decode_handle
from tests.broker.timer_wire import (
    handle_of,
    now_ms,
    read_all,
    recall,
    send_at,
    timer_send,
    wait_count,
    waiting,
)
from tests.broker.wire import create_topic, max_offset
from tests.cluster import Cluster

PRECISION = 1000


@pytest.fixture
async def cli() -> RemotingClient:  # type: ignore[misc]
    c = RemotingClient()
    yield c
    await c.close()


async def test_timer_message_waits_then_arrives_on_time(cluster: Cluster,
                                                        cli: RemotingClient) -> None:  # fmt: skip
    """TIMER_DELIVER_MS: stored in rmq_sys_wheel_timer (the real topic empty), delivered to
    its real topic and queue no earlier than asked and within a precision after, with
    TIMER_ENQUEUE_MS / TIMER_DEQUEUE_MS; REAL_TOPIC / REAL_QID gone."""
    b = cluster.add_broker("broker-a")
    assert (await cli.invoke(b.addr, create_topic("TimerT", 4))).code == 0
    due = now_ms() + 2500
    resp = await send_at(cli, b.addr, "TimerT", b"t1", due, queue_id=2)
    handle = decode_handle(handle_of(resp))
    assert (handle.topic, handle.broker_name) == ("TimerT", "broker-a")
    assert int(handle.timestamp) == due // PRECISION * PRECISION
    assert await max_offset(cli, b.addr, "TimerT", 2) == 0
    assert await waiting(cli, b.addr) == 1
    assert await wait_count(cli, b.addr, "TimerT", 1, 15, queue_id=2) == 1
    (msg,) = await read_all(cli, b.addr, "TimerT", 2)
    assert msg.body == b"t1"
    assert msg.store_timestamp >= due, "delivered early"
    dequeued = int(msg.properties[TimerProp.DEQUEUE_MS])
    assert due <= dequeued
    assert int(msg.properties[TimerProp.ENQUEUE_MS]) < due
    assert Prop.REAL_TOPIC not in msg.properties and Prop.REAL_QID not in msg.properties
    print(f"late_ms={msg.store_timestamp - due}")


async def test_delay_sec_and_delay_ms_and_past(cluster: Cluster, cli: RemotingClient) -> None:
    """TIMER_DELAY_SEC beats TIMER_DELAY_MS and TIMER_DELIVER_MS; a past time is at once."""
    b = cluster.add_broker("broker-a")
    assert (await cli.invoke(b.addr, create_topic("TimerP", 1))).code == 0
    past = timer_send("TimerP", b"past", {TimerProp.DELIVER_MS: str(now_ms() - 10_000)})
    assert (await cli.invoke(b.addr, past)).code == 0
    assert await max_offset(cli, b.addr, "TimerP", 0) == 1  # delivered at once
    sent = now_ms()
    both = timer_send("TimerP", b"sec", {TimerProp.DELAY_SEC: "2", TimerProp.DELAY_MS: "1",
                                           TimerProp.DELIVER_MS: str(sent + 1)})  # fmt: skip
    resp = await cli.invoke(b.addr, both)
    assert resp.code == 0, resp.remark
    assert int(decode_handle(handle_of(resp)).timestamp) >= sent + 2000 - PRECISION
    assert await wait_count(cli, b.addr, "TimerP", 2, 15) == 2
    got = await read_all(cli, b.addr, "TimerP")
    assert got[1].body == b"sec" and got[1].store_timestamp >= sent + 2000


async def test_refusals_on_the_wire(cluster: Cluster, cli: RemotingClient) -> None:
    """Beyond timerMaxDelaySec or unparsable: MESSAGE_ILLEGAL; a delay level wins."""
    b = cluster.add_broker("broker-a", timerMaxDelaySec="60")
    assert (await cli.invoke(b.addr, create_topic("TimerR", 1))).code == 0
    far = await cli.invoke(b.addr, timer_send("TimerR", b"x", {TimerProp.DELAY_SEC: "61"}))
    assert far.code == ResponseCode.MESSAGE_ILLEGAL
    assert far.remark is not None and "60000ms" in far.remark
    bad = await cli.invoke(b.addr, timer_send("TimerR", b"x", {TimerProp.DELAY_MS: "1s"}))
    assert bad.code == ResponseCode.MESSAGE_ILLEGAL
    level = timer_send("TimerR", b"x", {Prop.DELAY: "1", TimerProp.DELAY_SEC: "30"})
    assert (await cli.invoke(b.addr, level)).code == 0
    assert await waiting(cli, b.addr) == 0  # the level's path, not the wheel
    assert await wait_count(cli, b.addr, "TimerR", 1, 15) == 1  # level 1: 1 s
    direct = await cli.invoke(b.addr, timer_send(TIMER_TOPIC, b"x"))
    assert direct.code == ResponseCode.NO_PERMISSION


async def test_wheel_disabled_is_refused(cluster: Cluster, cli: RemotingClient) -> None:
    b = cluster.add_broker("broker-a", timerWheelEnable="false")
    assert (await cli.invoke(b.addr, create_topic("TimerD", 1))).code == 0
    resp = await cli.invoke(b.addr, timer_send("TimerD", b"x", {TimerProp.DELAY_SEC: "5"}))
    assert (resp.code, resp.remark) == (ResponseCode.SYSTEM_ERROR, DISABLED_REMARK)


async def test_recall_cancels_and_delivered_says_so(cluster: Cluster,
                                                    cli: RemotingClient) -> None:  # fmt: skip
    """RECALL_MESSAGE (370) with the send's handle: the message never arrives; a recall of
    one already delivered answers ILLEGAL_OPERATION saying so."""
    b = cluster.add_broker("broker-a")
    assert (await cli.invoke(b.addr, create_topic("TimerC", 1))).code == 0
    due = now_ms() + 2500
    keep = await send_at(cli, b.addr, "TimerC", b"keep", due)
    drop = await send_at(cli, b.addr, "TimerC", b"drop", due)
    resp = await cli.invoke(b.addr, recall("TimerC", handle_of(drop)))
    assert resp.code == 0, resp.remark
    assert resp.ext_fields["msgId"] == decode_handle(handle_of(drop)).msg_id
    assert await wait_count(cli, b.addr, "TimerC", 1, 15) == 1
    # the slot is passed: had "drop" come, it would be there now (delivered in slot order)
    assert await wait_count(cli, b.addr, "TimerC", 2, 1.5) == 1
    assert [m.body for m in await read_all(cli, b.addr, "TimerC")] == [b"keep"]
    late = await cli.invoke(b.addr, recall("TimerC", handle_of(keep)))
    assert late.code == ResponseCode.ILLEGAL_OPERATION
    assert late.remark is not None and "delivered" in late.remark
    junk = await cli.invoke(b.addr, recall("TimerC", "not-a-handle"))
    assert junk.code == ResponseCode.ILLEGAL_OPERATION


async def test_checkpoint_and_metrics_requests(cluster: Cluster, cli: RemotingClient) -> None:
    """GET_TIMER_CHECK_POINT (60) and GET_TIMER_METRICS (61): JSON bodies."""
    b = cluster.add_broker("broker-a")
    assert (await cli.invoke(b.addr, create_topic("TimerM", 1))).code == 0
    await send_at(cli, b.addr, "TimerM", b"m", now_ms() + 60_000)
    cp = await cli.invoke(b.addr, RemotingCommand.request(RequestCode.GET_TIMER_CHECK_POINT))
    assert cp.code == 0
    body = json.loads(cp.body)
    assert body["lastTimerQueueOffset"] == 1 == body["masterTimerQueueOffset"]
    assert abs(body["lastReadTimeMs"] - now_ms()) < 60_000
    m = await cli.invoke(b.addr, RemotingCommand.request(RequestCode.GET_TIMER_METRICS))
    assert m.code == 0
    assert json.loads(m.body)["pending"] == 1
