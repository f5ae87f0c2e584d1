"""A batch parked as one half (ours, beyond 4.9.8: ``halfBatch=record``,
broker/half_record.py; issue 34's exactly-once sink), against a broker process on a real
socket: one record in the half queue, answered as one send, ended by a batch END or a
single END_TRANSACTION or a check-back's answer as one half, its COMMIT appending every
message in order with its own msgId and the shared properties; and the refusals."""

from __future__ import annotations

import asyncio

from aiorocketmq.broker.half_record import HALF_RECORD
from aiorocketmq.client.core import api
from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.protocol.batch import BatchItem, encode_batch
from aiorocketmq.remoting.protocol.command import RemotingCommand
from aiorocketmq.remoting.protocol.headers.transaction import CheckTransactionStateRequestHeader
from aiorocketmq.remoting.protocol.message import (
    MessageExt,
    SysFlag,
    decode_record,
    decode_records,
    encode_properties,
)
from aiorocketmq.remoting.protocol.msgid import parse_offset_msg_id
from aiorocketmq.remoting.protocol.topic import TRANS_HALF_TOPIC, TRANS_OP_HALF_TOPIC
from aiorocketmq.remoting.protocol.txbatch import HALF_BATCH_FIELD, MAX_HALVES, EndEntry
from tests.broker.test_transaction_batch import (
    COMMIT,
    GROUP,
    ILLEGAL,
    ROLLBACK,
    broker_with_topic,
    cli,
    ended,
    queue,
)
from tests.broker.test_transactions import Producer, messages, setup, until
from tests.broker.wire import create_topic
from tests.cluster import Cluster

__all__ = ["cli"]  # the fixture

SHARED = {"SPARK_QUERY": "q1", "SPARK_BATCH": "7"}


def parked(
    bodies: list[bytes], queue_id: int, *, key: str, group: str = GROUP, topic: str = "TxB",
    item_props: dict[str, str] | None = None,
) -> RemotingCommand:  # fmt: skip
    """A SEND_BATCH_MESSAGE asking its halves parked as one (``halfBatch=record``): the
    items with their own UNIQ_KEYs, the request's properties shared (TRAN_MSG, PGROUP, the
    record's UNIQ_KEY ``key``)."""
    items = [
        BatchItem(body, 0, encode_properties({"UNIQ_KEY": f"{key}-{i:04d}", **(item_props or {})}))
        for i, body in enumerate(bodies)
    ]
    head = {**SHARED, "TRAN_MSG": "true", "UNIQ_KEY": key}
    if group:
        head["PGROUP"] = group
    req = api.send_message(topic, encode_batch(items), group=group or GROUP,
                           properties=encode_properties(head), queue_id=queue_id,
                           sys_flag=SysFlag.TRANSACTION_PREPARED, batch=True)  # fmt: skip
    req.ext_fields[HALF_BATCH_FIELD] = "record"
    return req


def handle(resp: RemotingCommand, key: str, action: int = COMMIT) -> EndEntry:
    """The END entry of a parked batch, from its answer: one offsetMsgId, one offset."""
    offset_id = resp.ext_fields["msgId"]
    assert "," not in offset_id
    return EndEntry(parse_offset_msg_id(offset_id)[1], int(resp.ext_fields["queueOffset"]),
                    key, action)  # fmt: skip


async def test_a_parked_batch_is_one_half_and_its_commit_appends_every_message_in_order(
    cluster: Cluster, cli: RemotingClient
) -> None:
    """Two batches, one record each in the half queue (the body as sent, HALF_RECORD = the
    count, the shared properties), nothing visible; one batch END of both, the second first:
    every message appended in that order, each with its own UNIQ_KEY, the shared properties,
    TRAN_MSG and PGROUP (as a committed half keeps them), sysFlag COMMIT, the record's
    offset as its prepared offset, and no HALF_RECORD; one op names both records. A second
    END commits nothing again."""
    broker = await broker_with_topic(cluster, cli)
    addr = broker.addr
    first, second = [b"a0", b"a1", b"a2"], [b"b0", b"b1"]
    sent = []
    for bodies, key in ((first, "KA"), (second, "KB")):
        resp = await cli.invoke(addr, parked(bodies, 2, key=key))
        assert resp.code == 0, resp.remark
        assert resp.ext_fields["queueId"] == "2"
        sent.append(handle(resp, key))
    assert await queue(cli, addr, "TxB", 2) == []
    records = await queue(cli, addr, TRANS_HALF_TOPIC, 0)
    assert [r.properties[HALF_RECORD] for r in records] == ["3", "2"]
    assert [(r.commit_log_offset, r.queue_offset) for r in records] == [s[:2] for s in sent]
    assert all(r.properties["SPARK_QUERY"] == "q1" and r.properties["REAL_QID"] == "2"
               for r in records)  # fmt: skip
    assert [r.properties["UNIQ_KEY"] for r in records] == ["KA", "KB"]
    assert await ended(cli, addr, [sent[1], sent[0]]) == [(0, None)] * 2
    visible = await queue(cli, addr, "TxB", 2)
    assert [m.body for m in visible] == second + first
    assert [m.properties["UNIQ_KEY"] for m in visible] == [
        "KB-0000", "KB-0001", "KA-0000", "KA-0001", "KA-0002"]  # fmt: skip
    for m in visible:
        assert m.properties["SPARK_QUERY"] == "q1" and m.properties["SPARK_BATCH"] == "7"
        assert m.properties["TRAN_MSG"] == "true" and m.properties["PGROUP"] == GROUP
        assert HALF_RECORD not in m.properties
        assert m.sys_flag & SysFlag.TRANSACTION_MASK == SysFlag.TRANSACTION_COMMIT
    assert {m.prepared_transaction_offset for m in visible[:2]} == {sent[1].commit_log_offset}
    ops = await queue(cli, addr, TRANS_OP_HALF_TOPIC, 0)
    assert len(ops) == 1
    assert sorted(int(x) for x in ops[0].body.decode().split(",")) == [s[1] for s in sent]
    assert await ended(cli, addr, sent) == [(0, None)] * 2  # again: nothing new
    assert len(await queue(cli, addr, "TxB", 2)) == 5


async def test_a_rollback_hides_every_message_of_a_parked_batch(
    cluster: Cluster, cli: RemotingClient
) -> None:
    broker = await broker_with_topic(cluster, cli)
    resp = await cli.invoke(broker.addr, parked([b"x", b"y"], 1, key="KR"))
    assert resp.code == 0, resp.remark
    assert await ended(cli, broker.addr, [handle(resp, "KR", ROLLBACK)]) == [(0, None)]
    assert await ended(cli, broker.addr, [handle(resp, "KR", COMMIT)]) == [(0, None)]  # ended
    assert await queue(cli, broker.addr, "TxB", 1) == []


async def test_a_batch_end_commits_many_messages_in_appends_of_bounded_size(
    cluster: Cluster, cli: RemotingClient
) -> None:
    """Three parked batches of 2,500 messages: one batch END commits all 7,500 in order, in
    two appends (transaction_batch.CHUNK: an append is written once it gathers 4,096
    messages or more), an op each naming the records it ended."""
    broker = await broker_with_topic(cluster, cli)
    entries = []
    for k in range(3):
        bodies = [b"%d-%04d" % (k, i) for i in range(2500)]
        resp = await cli.invoke(broker.addr, parked(bodies, 0, key=f"KC{k}"))
        assert resp.code == 0, resp.remark
        entries.append(handle(resp, f"KC{k}"))
    assert await ended(cli, broker.addr, entries) == [(0, None)] * 3
    got: list[MessageExt] = []
    while len(got) < 7500:
        req = api.pull_message("cg", "TxB", 0, len(got), max_nums=32, sys_flag=4, suspend_ms=0,
                               subscription="*")  # fmt: skip
        resp = await cli.invoke(broker.addr, req)
        assert resp.code == 0, resp.remark
        got += decode_records(resp.body)
    assert [m.body for m in got] == [b"%d-%04d" % (k, i) for k in range(3) for i in range(2500)]
    ops = await queue(cli, broker.addr, TRANS_OP_HALF_TOPIC, 0)
    assert [len(op.body.split(b",")) for op in ops] == [2, 1]


async def test_a_check_back_asks_about_the_record_and_its_answer_commits_them_all(
    cluster: Cluster,
) -> None:
    """A parked batch nobody ends is checked back as one half: CHECK_TRANSACTION_STATE names
    the record's UNIQ_KEY and carries the shared properties (what the Spark sink's answerer
    decides by); a COMMIT answer (END_TRANSACTION from the check) appends every message."""
    producer = Producer(GROUP)
    try:
        broker = await setup(cluster, producer)
        addr = broker.addr
        await producer.register(addr)
        resp = await producer.cli.invoke(addr, parked([b"c0", b"c1", b"c2"], 1, key="KK",
                                                      topic="TxT"))  # fmt: skip
        assert resp.code == 0, resp.remark
        check = await asyncio.wait_for(producer.checks.get(), 30)
        hdr = CheckTransactionStateRequestHeader.from_ext(check.ext_fields)
        assert hdr.msg_id == hdr.transaction_id == "KK"
        asked = decode_record(check.body)
        assert asked.properties["SPARK_QUERY"] == "q1" and asked.properties[HALF_RECORD] == "3"
        await producer.answer(addr, check, COMMIT)
        got = await until(lambda: messages(producer.cli, addr, "TxT"), lambda m: len(m) == 3)
        assert [m.body for m in got] == [b"c0", b"c1", b"c2"]
    finally:
        await producer.cli.close()


async def test_a_parked_batch_is_refused_when_it_cannot_be_committed_as_sent(
    cluster: Cluster, cli: RemotingClient
) -> None:
    """Refused MESSAGE_ILLEGAL (13), nothing stored: an item with a delay level, a request
    without PGROUP, a body that is no batch, more than MAX_HALVES; with
    ``enableBatchTransaction=false`` 4.9.8's remark, as for any transactional batch."""
    broker = await broker_with_topic(cluster, cli)
    addr = broker.addr
    delayed = await cli.invoke(addr, parked([b"d"], 0, key="KD", item_props={"DELAY": "3"}))
    assert (delayed.code, delayed.remark) == (13, "a batch may not carry delayed messages")
    resp = await cli.invoke(addr, parked([b"n"], 0, key="KN", group=""))
    assert resp.code == 13 and "PGROUP" in (resp.remark or "")
    garbled = parked([b"g"], 0, key="KG")
    garbled.body = garbled.body[:-3]  # the item's properties cut short
    resp = await cli.invoke(addr, garbled)
    assert resp.code == 13 and (resp.remark or "").startswith("malformed batch body")
    many = await cli.invoke(addr, parked([b"m"] * (MAX_HALVES + 1), 0, key="KM"))
    assert (many.code, many.remark) == (13, f"at most {MAX_HALVES} half messages in one batch")
    assert await queue(cli, addr, TRANS_HALF_TOPIC, 0) == []
    other = cluster.add_broker("broker-b", sets={"enableBatchTransaction": "false"})
    assert (await cli.invoke(other.addr, create_topic("TxB", 4))).code == 0
    resp = await cli.invoke(other.addr, parked([b"o"], 0, key="KO"))
    assert (resp.code, resp.remark) == (13, ILLEGAL)


async def test_a_lone_half_naming_half_record_is_still_one_message(cluster: Cluster) -> None:
    """HALF_RECORD is the broker's name: a client's half message that carries it (a user
    property) is parked without it and commits as the one message it is, not read as a
    parked batch (its body is no batch: the END would be refused for ever)."""
    producer = Producer(GROUP)
    try:
        broker = await setup(cluster, producer, transactionTimeOut="600000")
        addr = broker.addr
        sent = await producer.half(addr, "TxT", b"plain body", "KL", HALF_RECORD="5")
        resp = await producer.end(addr, sent, "KL", COMMIT, oneway=False)
        assert resp is not None and resp.code == 0, resp and resp.remark
        got = await until(lambda: messages(producer.cli, addr, "TxT"), lambda m: len(m) == 1)
        assert got[0].body == b"plain body" and HALF_RECORD not in got[0].properties
    finally:
        await producer.cli.close()
