"""Timer messages against a real broker (issue 36, features.md 4.1): the rules on the wire,
delivery in [due, due + precision), recall, the wheel's checkpoint and metrics requests.
One broker serves every rule at once (their timers overlap), to keep the suite short."""

from __future__ import annotations

import asyncio
import json

import pytest

from aiorocketmq.broker.timer_rules import DISABLED_REMARK
from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.protocol.batch import BatchItem, encode_batch
from aiorocketmq.remoting.protocol.codes import RequestCode, ResponseCode
from aiorocketmq.remoting.protocol.command import RemotingCommand
from aiorocketmq.remoting.protocol.message import Prop, SysFlag, encode_properties
from aiorocketmq.remoting.protocol.route import decode_kv_table
from aiorocketmq.remoting.protocol.timer import TIMER_TOPIC, TimerProp, decode_handle
from tests.broker.test_transactions import Producer
from tests.broker.timer_wire import (
    handle_of,
    now_ms,
    read_all,
    recall,
    send_at,
    timer_batch,
    timer_send,
    wait_count,
    waiting,
)
from tests.broker.wire import create_topic, max_offset
from tests.cluster import Cluster
from tests.scrape import scrape, value

PRECISION = 1000


@pytest.mark.slow
async def test_rules_recall_and_requests(cluster: Cluster) -> None:
    """On one broker (timerMaxDelaySec=60):
    - TIMER_DELIVER_MS waits in rmq_sys_wheel_timer (its real queue empty), then arrives in
      its real topic and queue no earlier than asked, with TIMER_ENQUEUE_MS /
      TIMER_DEQUEUE_MS and without REAL_TOPIC / REAL_QID; the send answers a recall handle;
    - TIMER_DELAY_SEC beats TIMER_DELAY_MS and TIMER_DELIVER_MS; a past time is at once;
    - beyond the limit or unparsable: MESSAGE_ILLEGAL with 5.3.3's remark; a DELAY level
      wins; a send straight to rmq_sys_wheel_timer: NO_PERMISSION;
    - a batch's timers wait together; a batch mixing due and not due is refused;
    - RECALL_MESSAGE (370) cancels a pending one; recalling a delivered one says so;
    - GET_TIMER_CHECK_POINT (60) and GET_TIMER_METRICS (61) answer JSON."""
    b = cluster.add_broker("broker-a", timerMaxDelaySec="60")
    cli = RemotingClient()
    try:
        for topic, queues in (("TimerT", 4), ("TimerP", 1), ("TimerR", 1), ("TimerC", 1)):
            assert (await cli.invoke(b.addr, create_topic(topic, queues))).code == 0
        start = now_ms()
        due = start + 2500
        t1 = await send_at(cli, b.addr, "TimerT", b"t1", due, queue_id=2)
        handle = decode_handle(handle_of(t1))
        assert (handle.topic, handle.broker_name) == ("TimerT", "broker-a")
        assert int(handle.timestamp) == due // PRECISION * PRECISION + 1  # 5.x: slot + 1
        # precedence and the past
        past = timer_send("TimerP", b"past", {TimerProp.DELIVER_MS: str(start - 10_000)})
        assert (await cli.invoke(b.addr, past)).code == 0
        assert await max_offset(cli, b.addr, "TimerP", 0) == 1  # delivered at once
        both = timer_send("TimerP", b"sec", {TimerProp.DELAY_SEC: "2", TimerProp.DELAY_MS: "1",
                                             TimerProp.DELIVER_MS: str(start + 1)})  # fmt: skip
        resp = await cli.invoke(b.addr, both)
        assert resp.code == 0, resp.remark
        assert int(decode_handle(handle_of(resp)).timestamp) >= start + 2000 - PRECISION
        # refusals
        far = await cli.invoke(b.addr, timer_send("TimerR", b"x", {TimerProp.DELAY_SEC: "61"}))
        assert far.code == ResponseCode.MESSAGE_ILLEGAL
        assert far.remark is not None and "60000ms" in far.remark
        bad = await cli.invoke(b.addr, timer_send("TimerR", b"x", {TimerProp.DELAY_MS: "1s"}))
        assert bad.code == ResponseCode.MESSAGE_ILLEGAL
        level = timer_send("TimerR", b"lvl", {Prop.DELAY: "1", TimerProp.DELAY_SEC: "30"})
        assert (await cli.invoke(b.addr, level)).code == 0
        direct = await cli.invoke(b.addr, timer_send(TIMER_TOPIC, b"x"))
        assert direct.code == ResponseCode.NO_PERMISSION
        # batches
        batch = timer_batch("TimerP", [b"b1", b"b2"], {TimerProp.DELIVER_MS: str(due)})
        assert (await cli.invoke(b.addr, batch)).code == 0
        mixed = timer_batch("TimerP", [b"m1"], {})
        timed = encode_properties({TimerProp.DELIVER_MS: str(due)})
        mixed.body = encode_batch([BatchItem(b"m1"), BatchItem(b"m2", 0, timed)])
        refused = await cli.invoke(b.addr, mixed)
        assert refused.code == ResponseCode.MESSAGE_ILLEGAL, refused.remark
        # recall
        keep = await send_at(cli, b.addr, "TimerC", b"keep", due)
        drop = await send_at(cli, b.addr, "TimerC", b"drop", due)
        resp = await cli.invoke(b.addr, recall("TimerC", handle_of(drop)))
        assert resp.code == 0, resp.remark
        assert resp.ext_fields["msgId"] == decode_handle(handle_of(drop)).msg_id
        junk = await cli.invoke(b.addr, recall("TimerC", "not-a-handle"))
        assert junk.code == ResponseCode.ILLEGAL_OPERATION
        # what waits: t1, sec, b1, b2, keep, drop and drop's marker; the level not
        assert await waiting(cli, b.addr) == 7
        assert await max_offset(cli, b.addr, "TimerT", 2) == 0
        cp = await cli.invoke(b.addr, RemotingCommand.request(RequestCode.GET_TIMER_CHECK_POINT))
        body = json.loads(cp.body)
        assert cp.code == 0 and body["lastTimerQueueOffset"] == 7
        assert body["masterTimerQueueOffset"] == 7
        metrics = await cli.invoke(b.addr, RemotingCommand.request(RequestCode.GET_TIMER_METRICS))
        assert metrics.code == 0 and json.loads(metrics.body)["pending"] == 7
        # 5.x's runtime keys (DefaultMessageStore.getRuntimeInfo): clusterList's #Timer(Progress)
        rt = await cli.invoke(b.addr, RemotingCommand.request(RequestCode.GET_BROKER_RUNTIME_INFO))
        kv = decode_kv_table(rt.body)
        assert (kv["timerCongestNum"], kv["timerOffsetBehind"]) == ("7", "0")
        assert 0 <= int(kv["timerReadBehind"]) <= 60
        assert float(kv["timerEnqueueTps"]) > 0 and float(kv["timerDequeueTps"]) >= 0
        assert b.proc is not None
        found = await scrape(b.proc.metrics_port())
        assert value(found, "rocketmq_timer_pending_messages") == 7
        assert value(found, "rocketmq_timer_delivery_lag_ms") == 0
        # deliveries
        assert await wait_count(cli, b.addr, "TimerT", 1, 15, queue_id=2) == 1
        assert await wait_count(cli, b.addr, "TimerP", 4, 15) == 4
        assert await wait_count(cli, b.addr, "TimerC", 1, 15) == 1
        assert await wait_count(cli, b.addr, "TimerR", 1, 15) == 1  # level 1: 1 s
        (msg,) = await read_all(cli, b.addr, "TimerT", 2)
        got_p = await read_all(cli, b.addr, "TimerP")
        got_c = await read_all(cli, b.addr, "TimerC")
        late = await cli.invoke(b.addr, recall("TimerC", handle_of(keep)))
        found = await scrape(b.proc.metrics_port())
    finally:
        await cli.close()
    assert msg.body == b"t1"
    assert msg.store_timestamp >= due, "delivered early"
    assert due <= int(msg.properties[TimerProp.DEQUEUE_MS])
    assert int(msg.properties[TimerProp.ENQUEUE_MS]) < due
    assert Prop.REAL_TOPIC not in msg.properties and Prop.REAL_QID not in msg.properties
    print(f"late_ms={msg.store_timestamp - due}")
    assert [m.body for m in got_p[:1]] == [b"past"]
    assert sorted(m.body for m in got_p[1:]) == [b"b1", b"b2", b"sec"]
    assert all(m.store_timestamp >= due for m in got_p if m.body in (b"b1", b"b2"))
    assert [m.store_timestamp >= start + 2000 for m in got_p if m.body == b"sec"] == [True]
    # "drop" would have come with "keep": the same slot, delivered together
    assert [m.body for m in got_c] == [b"keep"]
    assert late.code == ResponseCode.ILLEGAL_OPERATION
    assert late.remark is not None and "delivered" in late.remark
    assert value(found, "rocketmq_timer_pending_messages") == 0
    assert value(found, "rocketmq_timer_messages_total", outcome="delivered") == 5
    assert value(found, "rocketmq_timer_messages_total", outcome="recalled") == 1


async def test_wheel_disabled_is_refused(cluster: Cluster) -> None:
    """timerWheelEnable=false: a timer message is SYSTEM_ERROR with 5.3.3's remark."""
    b = cluster.add_broker("broker-a", timerWheelEnable="false")
    cli = RemotingClient()
    try:
        assert (await cli.invoke(b.addr, create_topic("TimerD", 1))).code == 0
        cmd = timer_send("TimerD", b"x", {TimerProp.DELAY_SEC: "5"})
        resp = await cli.invoke(b.addr, cmd)
    finally:
        await cli.close()
    assert (resp.code, resp.remark) == (ResponseCode.SYSTEM_ERROR, DISABLED_REMARK)


async def test_a_transaction_gets_its_timer_at_the_commit(cluster: Cluster) -> None:
    """HookUtils: only a normal or a commit message gets a timer, so a half's
    TIMER_DELAY_SEC counts from its commit: the half waits invisible, the commit puts the
    message into the wheel, and it arrives 2 s after the commit (not after the half)."""
    producer = Producer()
    try:
        b = cluster.add_broker("broker-a")
        await producer.register(b.addr)
        assert (await producer.cli.invoke(b.addr, create_topic("TxT", 4))).code == 0
        uniq = "UNIQ0000000000000000000009"
        sent = await producer.half(b.addr, "TxT", b"tx", uniq, **{TimerProp.DELAY_SEC: "2"})
        await asyncio.sleep(1.0)  # the timer must not count from here
        committed = now_ms()
        await producer.end(b.addr, sent, uniq, 8, oneway=False)
        assert await waiting(producer.cli, b.addr) == 1
        assert await wait_count(producer.cli, b.addr, "TxT", 1, 15, queue_id=1) == 1
        (msg,) = await read_all(producer.cli, b.addr, "TxT", 1)
    finally:
        await producer.cli.close()
    assert msg.body == b"tx" and msg.store_timestamp >= committed + 2000
    assert msg.sys_flag & SysFlag.TRANSACTION_MASK == SysFlag.TRANSACTION_COMMIT
