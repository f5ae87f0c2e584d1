"""Sends that arrive in one read (issue 20): the broker stores the single-message sends of a
read in one append (SendProcessor.send_many, MessageStore.put_many), yet each request is
checked, stored and answered as it would be alone -- its own opaque, code and remark, its
queue offset in arrival order -- and a request the batch cannot take (a topic to create, a
transactional send) is handled in its turn. Real broker process, raw frames written at once.
"""

from __future__ import annotations

import asyncio

from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.protocol.codes import ResponseCode
from aiorocketmq.remoting.protocol.command import RemotingCommand
from aiorocketmq.remoting.protocol.frame import FrameDecoder, encode
from aiorocketmq.remoting.protocol.message import Prop
from tests.broker.wire import create_topic, send_v2, view
from tests.cluster import Cluster

TOPIC = "ManyInOneRead"


def frames(cmds: list[RemotingCommand]) -> bytes:
    out = []
    for opaque, cmd in enumerate(cmds, start=1):
        cmd.opaque = opaque
        head, body = encode(cmd)
        out += [head, body]
    return b"".join(out)


async def answers(port: int, data: bytes, count: int) -> dict[int, RemotingCommand]:
    """Write ``data`` in one go; the responses by opaque once ``count`` have come."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    got: dict[int, RemotingCommand] = {}
    try:
        writer.write(data)
        decoder = FrameDecoder()
        async with asyncio.timeout(10):
            while len(got) < count:
                chunk = await reader.read(65536)
                assert chunk, "the broker closed the connection"
                for cmd in decoder.feed(chunk):
                    if cmd.is_response:
                        assert cmd.opaque not in got, f"opaque {cmd.opaque} answered twice"
                        got[cmd.opaque] = cmd
    finally:
        writer.close()
    return got


def request(i: int) -> tuple[RemotingCommand, str]:
    """The i-th request and what it must get: stored, refused, or handled on its own."""
    if i % 10 == 3:
        return send_v2(TOPIC, f"m{i}".encode(), queue_id=99), "bad-queue"
    if i % 10 == 6:
        return send_v2("bad topic!", f"m{i}".encode()), "bad-name"
    if i == 20:  # unknown: created from TBW102 -- the batch stops, ``send`` takes it
        return send_v2("ManyAutoCreated", b"auto", queue_id=0), "created"
    if i == 31:  # transactional: parked in the half topic by ``send``
        return send_v2(TOPIC, b"half", queue_id=0, props={Prop.TRAN_MSG: "true"}), "half"
    return send_v2(TOPIC, f"m{i}".encode(), queue_id=i % 2), "stored"


async def test_sends_of_one_read_are_each_checked_stored_in_order_and_answered(
    cluster: Cluster, client: RemotingClient
) -> None:
    broker = cluster.add_broker("broker-a")
    assert (await client.invoke(broker.addr, create_topic(TOPIC, 2))).code == 0
    reqs = [request(i) for i in range(48)]
    got = await answers(broker.port, frames([cmd for cmd, _ in reqs]), len(reqs))
    next_offset = {0: 0, 1: 0}
    for opaque, (cmd, expect) in enumerate(reqs, start=1):
        resp = got[opaque]
        if expect == "bad-queue":
            assert resp.code == ResponseCode.SYSTEM_ERROR
            assert resp.remark is not None and "queueId[99] is illegal" in resp.remark
            continue
        if expect == "bad-name":
            assert resp.code == ResponseCode.SYSTEM_ERROR
            assert resp.remark is not None and "illegal characters" in resp.remark
            continue
        assert resp.code == ResponseCode.SUCCESS, (opaque, resp.remark)
        assert resp.ext_fields["MSG_REGION"] == "DefaultRegion"
        stored = await view(client, broker.addr, resp.ext_fields["msgId"])
        if expect == "stored":  # queue offsets follow the order the requests came in
            queue_id = int(cmd.ext_fields["e"])
            assert int(resp.ext_fields["queueId"]) == queue_id
            assert int(resp.ext_fields["queueOffset"]) == next_offset[queue_id]
            next_offset[queue_id] += 1
            assert (stored.topic, stored.body, stored.queue_id) == (TOPIC, cmd.body, queue_id)
            assert stored.queue_offset == int(resp.ext_fields["queueOffset"])
        elif expect == "created":
            assert (stored.topic, stored.body) == ("ManyAutoCreated", b"auto")
        else:
            assert stored.topic == "RMQ_SYS_TRANS_HALF_TOPIC"
            assert stored.properties[Prop.REAL_TOPIC] == TOPIC
    assert sum(next_offset.values()) == sum(1 for _, e in reqs if e == "stored")


async def test_sends_of_one_read_to_a_store_that_waits_get_their_wait_status(
    cluster: Cluster, client: RemotingClient
) -> None:
    """A store whose puts wait (SYNC_MASTER; with no slave the wait ends at once in
    SLAVE_NOT_AVAILABLE, CommitLog.handleHA) still takes a read's sends in one append, and
    each gets what it would alone: a sender that waits (no WAIT property, or "true") code 11
    with its msgId -- stored all the same --, one that does not (WAIT=false) SUCCESS; queue
    offsets in arrival order."""
    broker = cluster.add_broker("broker-a", brokerRole="SYNC_MASTER")
    assert (await client.invoke(broker.addr, create_topic(TOPIC, 1))).code == 0
    waits = [i % 3 != 1 for i in range(24)]
    reqs = [
        send_v2(TOPIC, f"w{i}".encode(), queue_id=0, props={} if i % 3 else {Prop.WAIT: "true"})
        if wait
        else send_v2(TOPIC, f"n{i}".encode(), queue_id=0, props={Prop.WAIT: "false"})
        for i, wait in enumerate(waits)
    ]
    got = await answers(broker.port, frames(reqs), len(reqs))
    for opaque, (cmd, wait) in enumerate(zip(reqs, waits, strict=True), start=1):
        resp = got[opaque]
        want = ResponseCode.SLAVE_NOT_AVAILABLE if wait else ResponseCode.SUCCESS
        assert resp.code == want, (opaque, resp.code, resp.remark)
        assert int(resp.ext_fields["queueOffset"]) == opaque - 1
        stored = await view(client, broker.addr, resp.ext_fields["msgId"])
        assert stored.body == cmd.body and Prop.WAIT not in stored.properties


async def test_half_messages_of_one_read_are_each_parked_and_answered(
    cluster: Cluster, client: RemotingClient
) -> None:
    """Once the half topic exists, a transactional producer's halves that arrive in one read
    go through the same append as plain sends: each is parked in the half topic under its
    REAL_TOPIC / REAL_QID (never visible in its queue), answered with its own half-queue
    offset, in arrival order, between plain messages stored as usual."""
    broker = cluster.add_broker("broker-a")
    assert (await client.invoke(broker.addr, create_topic(TOPIC, 2))).code == 0
    half = {Prop.TRAN_MSG: "true", Prop.PGROUP: "pg_many"}
    first = await client.invoke(broker.addr, send_v2(TOPIC, b"h-first", queue_id=1, props=half))
    assert first.code == 0 and first.ext_fields["queueOffset"] == "0"  # creates the half topic
    reqs = [
        send_v2(TOPIC, f"h{i}".encode(), queue_id=1, props=half)
        if i % 3
        else send_v2(TOPIC, f"p{i}".encode(), queue_id=1)
        for i in range(30)
    ]
    got = await answers(broker.port, frames(reqs), len(reqs))
    halves = plain = 0
    for opaque, cmd in enumerate(reqs, start=1):
        resp = got[opaque]
        assert resp.code == ResponseCode.SUCCESS, (opaque, resp.remark)
        stored = await view(client, broker.addr, resp.ext_fields["msgId"])
        assert stored.body == cmd.body and resp.ext_fields["queueId"] == "1"
        if cmd.body.startswith(b"h"):
            halves += 1
            assert stored.topic == "RMQ_SYS_TRANS_HALF_TOPIC" and stored.queue_id == 0
            assert stored.properties[Prop.REAL_TOPIC] == TOPIC
            assert stored.properties[Prop.REAL_QID] == "1"
            assert int(resp.ext_fields["queueOffset"]) == halves == stored.queue_offset
        else:
            assert (stored.topic, stored.queue_id) == (TOPIC, 1)
            assert int(resp.ext_fields["queueOffset"]) == plain
            plain += 1
    assert (halves, plain) == (20, 10)
