"""Transactional batches, ours beyond 4.9.8 (issue 34; remoting/protocol/txbatch.py): half
messages in one SEND_BATCH_MESSAGE (asked for with ``halfBatch=true``) and
END_TRANSACTION_BATCH, against a broker process on a real socket; and the refusals that keep
a 4.9.8 client's view unchanged (a transactional batch without the field, or with
``enableBatchTransaction=false``, is MESSAGE_ILLEGAL as CommitLog.putMessages answers; the
batch END is then an unknown code)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest

from aiorocketmq.client.core import api
from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.config import ClientConfig
from aiorocketmq.remoting.protocol.batch import BatchItem, encode_batch
from aiorocketmq.remoting.protocol.codes import RequestCode as C
from aiorocketmq.remoting.protocol.codes import SerializeType
from aiorocketmq.remoting.protocol.command import RemotingCommand
from aiorocketmq.remoting.protocol.message import (
    MessageExt,
    SysFlag,
    decode_records,
    encode_properties,
)
from aiorocketmq.remoting.protocol.msgid import parse_offset_msg_id
from aiorocketmq.remoting.protocol.topic import TRANS_HALF_TOPIC, TRANS_OP_HALF_TOPIC
from aiorocketmq.remoting.protocol.txbatch import (
    END_TRANSACTION_BATCH,
    HALF_BATCH_FIELD,
    MAX_END_ENTRIES,
    EndEntry,
    decode_results,
    encode_entries,
)
from tests.broker.wire import create_topic, pull
from tests.cluster import BrokerProc, Cluster

GROUP = "pg_batch"
COMMIT, ROLLBACK = 8, 12
ILLEGAL = (
    "the message is illegal, maybe msg body or properties length not matched. "
    "msg body length limit 4194304B, msg properties length limit 32KB."
)


@pytest.fixture
async def cli() -> AsyncIterator[RemotingClient]:
    c = RemotingClient(ClientConfig(serialize_type=SerializeType.JSON))
    yield c
    await c.close()


async def broker_with_topic(cluster: Cluster, cli: RemotingClient, **sets: str) -> BrokerProc:
    broker = cluster.add_broker("broker-a", sets={"transactionTimeOut": "600000", **sets})
    assert (await cli.invoke(broker.addr, create_topic("TxB", 4))).code == 0
    return broker


def half_batch(
    bodies: list[bytes], queue_id: int, *, asked: bool = True, group: str = GROUP, tran: bool = True
) -> RemotingCommand:
    """A SEND_BATCH_MESSAGE of half messages (each with TRAN_MSG, PGROUP, its UNIQ_KEY)."""
    items = []
    for i, body in enumerate(bodies):
        props = {"UNIQ_KEY": f"U{queue_id}{i:024d}", "PGROUP": group}
        if tran:
            props["TRAN_MSG"] = "true"
        items.append(BatchItem(body, 0, encode_properties(props)))
    req = api.send_message("TxB", encode_batch(items), group=group, properties="",
                           queue_id=queue_id, sys_flag=SysFlag.TRANSACTION_PREPARED,
                           batch=True)  # fmt: skip
    if asked:
        req.ext_fields[HALF_BATCH_FIELD] = "true"
    return req


def handles(resp: RemotingCommand) -> list[tuple[int, int, str]]:
    """(commitLogOffset, half queue offset, msgId) of each half of a batch's answer."""
    first = int(resp.ext_fields["queueOffset"])
    ids = resp.ext_fields["msgId"].split(",")
    return [(parse_offset_msg_id(m)[1], first + i, m) for i, m in enumerate(ids)]


def end_batch(entries: list[EndEntry], group: str = GROUP) -> RemotingCommand:
    return RemotingCommand.request(
        END_TRANSACTION_BATCH, {"producerGroup": group}, encode_entries(entries)
    )


async def ended(
    cli: RemotingClient, addr: str, entries: list[EndEntry], group: str = GROUP
) -> list[tuple[int, str | None]]:
    resp = await cli.invoke(addr, end_batch(entries, group))
    assert resp.code == 0, resp.remark
    return decode_results(resp.body, len(entries))


async def queue(cli: RemotingClient, addr: str, topic: str, queue_id: int) -> list[MessageExt]:
    req = pull("cg", topic, queue_id, 0, sys_flag=4, suspend_ms=0, subscription="*")
    resp = await cli.invoke(addr, req)
    return decode_records(resp.body) if resp.code == 0 else []


async def test_a_half_batch_is_parked_and_a_batch_end_commits_in_order_once(
    cluster: Cluster, cli: RemotingClient
) -> None:
    """Halves in one SEND_BATCH_MESSAGE are invisible, each addressable by its own offsets
    (consecutive half-queue offsets, an offsetMsgId each); a batch END whose entries are out
    of the halves' order appends the committed messages in the entries' order, with one op
    naming them all; a second batch END of the same entries commits nothing again."""
    broker = await broker_with_topic(cluster, cli)
    addr = broker.addr
    bodies = [f"row-{i}".encode() for i in range(6)]
    resp = await cli.invoke(addr, half_batch(bodies, 2))
    assert resp.code == 0, resp.remark
    assert resp.ext_fields["queueId"] == "2"
    got = handles(resp)
    assert len(got) == 6 and await queue(cli, addr, "TxB", 2) == []
    halves = await queue(cli, addr, TRANS_HALF_TOPIC, 0)
    assert [h.body for h in halves] == bodies
    assert [(h.commit_log_offset, h.queue_offset) for h in halves] == [g[:2] for g in got]
    assert all(h.properties["REAL_TOPIC"] == "TxB" and h.properties["REAL_QID"] == "2"
               for h in halves)  # fmt: skip
    order = [3, 0, 5, 1, 4, 2]
    entries = [EndEntry(got[i][0], got[i][1], got[i][2], COMMIT) for i in order]
    assert await ended(cli, addr, entries) == [(0, None)] * 6
    visible = await queue(cli, addr, "TxB", 2)
    assert [m.body for m in visible] == [bodies[i] for i in order]
    assert all(m.sys_flag & SysFlag.TRANSACTION_MASK == SysFlag.TRANSACTION_COMMIT
               for m in visible)  # fmt: skip
    ops = await queue(cli, addr, TRANS_OP_HALF_TOPIC, 0)
    assert len(ops) == 1 and ops[0].tags == "d"
    assert sorted(int(x) for x in ops[0].body.decode().split(",")) == [g[1] for g in got]
    assert await ended(cli, addr, entries) == [(0, None)] * 6  # again: nothing new
    assert len(await queue(cli, addr, "TxB", 2)) == 6
    assert len(await queue(cli, addr, TRANS_OP_HALF_TOPIC, 0)) == 1


async def test_rollback_hides_and_a_bad_entry_poisons_no_other(
    cluster: Cluster, cli: RemotingClient
) -> None:
    """In one batch END: rollbacks stay invisible; an entry naming no half, another group's
    half (the group is the request's), wrong offsets, a malformed entry, commitOrRollback 0,
    and a second entry for a half ended earlier in the same request each get their own
    answer, and the good commits around them are stored."""
    broker = await broker_with_topic(cluster, cli)
    addr = broker.addr
    got = handles(await cli.invoke(addr, half_batch([b"a", b"b", b"c", b"d"], 1)))
    other = handles(await cli.invoke(addr, half_batch([b"x"], 3, group="pg_other")))
    (a, b, c, d), (x,) = got, other
    entries = [
        EndEntry(a[0], a[1], a[2], COMMIT),
        EndEntry(b[0], b[1], b[2], ROLLBACK),
        EndEntry(3, 0, "nowhere", COMMIT),
        EndEntry(x[0], x[1], x[2], COMMIT),  # pg_other's half, ended as pg_batch
        EndEntry(c[0], c[1] + 7, c[2], COMMIT),
        EndEntry(c[0], c[1], c[2], 0),
        EndEntry(d[0], d[1], d[2], COMMIT),
        EndEntry(a[0], a[1], a[2], ROLLBACK),  # a again, in the same request
    ]
    body = encode_entries(entries)
    raw = json.loads(body)
    raw.insert(5, ["not", "an", "entry"])
    resp = await cli.invoke(addr, RemotingCommand.request(
        END_TRANSACTION_BATCH, {"producerGroup": GROUP}, json.dumps(raw).encode()))  # fmt: skip
    assert resp.code == 0, resp.remark
    results = decode_results(resp.body, len(raw))
    assert [code for code, _ in results] == [0, 0, 1, 1, 1, 1, 1, 0, 0]
    assert results[2][1] == "Find prepared transaction message failed"
    assert results[3][1] == "The producer group wrong"
    assert results[4][1] == "The transaction state table offset wrong"
    assert results[5][1] is not None and "malformed" in results[5][1]
    assert results[6][1] is not None and "commitOrRollback" in results[6][1]
    assert [m.body for m in await queue(cli, addr, "TxB", 1)] == [b"a", b"d"]
    # c was not ended: a good END for it still commits; b's rollback holds
    again = [EndEntry(c[0], c[1], c[2], COMMIT), EndEntry(b[0], b[1], b[2], COMMIT)]
    assert await ended(cli, addr, again) == [(0, None)] * 2
    assert [m.body for m in await queue(cli, addr, "TxB", 1)] == [b"a", b"d", b"c"]
    assert await queue(cli, addr, "TxB", 3) == []


async def test_requests_are_bounded(cluster: Cluster, cli: RemotingClient) -> None:
    """More than MAX_END_ENTRIES entries, a body that is no JSON array, or no producerGroup:
    the whole request is refused (29) and nothing is ended."""
    broker = await broker_with_topic(cluster, cli)
    addr = broker.addr
    ((clo, qo, mid),) = handles(await cli.invoke(addr, half_batch([b"kept"], 0)))
    too_many = [EndEntry(clo, qo, mid, COMMIT)] * (MAX_END_ENTRIES + 1)
    resp = await cli.invoke(addr, end_batch(too_many))
    assert resp.code == 29 and resp.remark is not None and str(MAX_END_ENTRIES) in resp.remark
    for bad in (b"{}", b"[1, 2", b""):
        resp = await cli.invoke(addr, RemotingCommand.request(
            END_TRANSACTION_BATCH, {"producerGroup": GROUP}, bad))  # fmt: skip
        assert resp.code == 29, bad
    resp = await cli.invoke(addr, RemotingCommand.request(
        END_TRANSACTION_BATCH, {}, encode_entries([EndEntry(clo, qo, mid, COMMIT)])))  # fmt: skip
    assert resp.code == 29
    assert await queue(cli, addr, "TxB", 0) == []


async def test_a_transactional_batch_is_refused_as_4_9_8_refuses_it(
    cluster: Cluster, cli: RemotingClient
) -> None:
    """Without ``halfBatch=true``, a batch with the prepared sysFlag is MESSAGE_ILLEGAL
    (CommitLog.putMessages), so is a half batch whose messages lack TRAN_MSG; nothing is
    stored. With ``enableBatchTransaction=false`` the asked-for batch is refused the same
    way and END_TRANSACTION_BATCH is an unknown code (3), as on a broker without them."""
    broker = await broker_with_topic(cluster, cli)
    resp = await cli.invoke(broker.addr, half_batch([b"p"], 0, asked=False))
    assert (resp.code, resp.remark) == (13, ILLEGAL)
    resp = await cli.invoke(broker.addr, half_batch([b"p"], 0, tran=False))
    assert resp.code == 13
    assert await queue(cli, broker.addr, "TxB", 0) == []
    assert await queue(cli, broker.addr, TRANS_HALF_TOPIC, 0) == []
    off = cluster.add_broker("broker-b", sets={"enableBatchTransaction": "false"})
    assert (await cli.invoke(off.addr, create_topic("TxB", 4))).code == 0
    resp = await cli.invoke(off.addr, half_batch([b"p"], 0))
    assert (resp.code, resp.remark) == (13, ILLEGAL)
    resp = await cli.invoke(off.addr, end_batch([EndEntry(0, 0, "m", COMMIT)]))
    assert resp.code == 3 and resp.remark == f" request type {END_TRANSACTION_BATCH} not supported"
    plain = await cli.invoke(off.addr, RemotingCommand.request(C.GET_ALL_TOPIC_CONFIG))
    assert TRANS_HALF_TOPIC not in json.loads(plain.body)["topicConfigTable"]
