"""Transactions on the wire (issue 17; fidelity D2, §3.1; protocol.md 5.6, 12.4): half
messages, END_TRANSACTION (37) sent oneway with JSON headers as the Java and C++ clients send
it, CHECK_TRANSACTION_STATE (39) to a registered producer channel, restart, max checks."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

import pytest

from aiorocketmq.client.core import api
from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.config import ClientConfig
from aiorocketmq.remoting.dispatch import Route
from aiorocketmq.remoting.errors import RemotingTimeoutError
from aiorocketmq.remoting.protocol.codes import RequestCode as C
from aiorocketmq.remoting.protocol.codes import SerializeType
from aiorocketmq.remoting.protocol.command import RemotingCommand
from aiorocketmq.remoting.protocol.headers.transaction import (
    CheckTransactionStateRequestHeader,
    EndTransactionRequestHeader,
)
from aiorocketmq.remoting.protocol.message import MessageExt, SysFlag, decode_record, decode_records
from aiorocketmq.remoting.protocol.msgid import parse_offset_msg_id
from aiorocketmq.remoting.protocol.topic import (
    TRANS_CHECK_MAX_TIME_TOPIC,
    TRANS_HALF_TOPIC,
    TRANS_OP_HALF_TOPIC,
)
from tests.broker.wire import create_topic, pull, send_v2
from tests.cluster import BrokerProc, Cluster

FAST_CHECKS = {"transactionCheckInterval": "300", "transactionTimeOut": "600"}


class Producer:
    """A producer's own connection (JSON headers): it heartbeats its group and records the
    CHECK_TRANSACTION_STATE requests the broker sends it."""

    def __init__(self, group: str = "pg") -> None:
        self.group = group
        self.checks: asyncio.Queue[RemotingCommand] = asyncio.Queue()
        route = Route(self._check)
        self.cli = RemotingClient(
            ClientConfig(serialize_type=SerializeType.JSON), {C.CHECK_TRANSACTION_STATE: route}
        )

    def _check(self, req: RemotingCommand, _ch: object) -> None:
        self.checks.put_nowait(req)

    async def register(self, addr: str) -> None:
        resp = await self.cli.invoke(
            addr, api.heartbeat(f"127.0.0.1@{self.group}", producers=[self.group])
        )
        assert resp.code == 0

    async def half(
        self, addr: str, topic: str, body: bytes, uniq: str, **props: str
    ) -> RemotingCommand:
        """sendKernelImpl for a TransactionMQProducer: TRAN_MSG, PGROUP, prepared sysFlag."""
        msg_props = {"TRAN_MSG": "true", "PGROUP": self.group, "UNIQ_KEY": uniq, **props}
        req = send_v2(topic, body, queue_id=1, props=msg_props, group=self.group)
        req.ext_fields["f"] = str(SysFlag.TRANSACTION_PREPARED)
        resp = await self.cli.invoke(addr, req)
        assert resp.code == 0, resp.remark
        return resp

    async def end(
        self, addr: str, sent: RemotingCommand, uniq: str, action: int, *,
        oneway: bool = True, group: str | None = None, **override: str,
    ) -> RemotingCommand | None:  # fmt: skip
        """MQClientAPIImpl.endTransactionOneway: offsets from the send's answer."""
        hdr = EndTransactionRequestHeader(
            producer_group=group or self.group,
            tran_state_table_offset=int(sent.ext_fields["queueOffset"]),
            commit_log_offset=parse_offset_msg_id(sent.ext_fields["msgId"])[1],
            commit_or_rollback=action,
            msg_id=uniq,
            transaction_id=uniq,
        )
        return await self.send_end(addr, {**hdr.to_ext(), **override}, oneway=oneway)

    async def send_end(
        self, addr: str, ext: dict[str, str], *, oneway: bool = True
    ) -> RemotingCommand | None:
        req = RemotingCommand.request(C.END_TRANSACTION, ext, oneway=oneway)
        if oneway:
            await self.cli.invoke_oneway(addr, req, 3.0)
            return None
        wait = 3.0 if ext["commitOrRollback"] != "0" else 0.5  # 0 is never answered
        return await self.cli.invoke(addr, req, wait)

    async def answer(self, addr: str, check: RemotingCommand, action: int) -> None:
        """ClientRemotingProcessor.checkTransactionState -> processTransactionState."""
        hdr = CheckTransactionStateRequestHeader.from_ext(check.ext_fields)
        msg = decode_record(check.body)
        end = EndTransactionRequestHeader(
            producer_group=msg.properties["PGROUP"],
            tran_state_table_offset=hdr.tran_state_table_offset,
            commit_log_offset=hdr.commit_log_offset,
            commit_or_rollback=action,
            from_transaction_check=True,
            msg_id=msg.properties["UNIQ_KEY"],
            transaction_id=hdr.transaction_id,
        )
        await self.send_end(addr, end.to_ext())


@pytest.fixture
async def producer() -> AsyncIterator[Producer]:
    p = Producer()
    yield p
    await p.cli.close()


async def messages(
    cli: RemotingClient, addr: str, topic: str, queue_id: int = 1
) -> list[MessageExt]:
    """Everything in one queue, as a consumer of group cg pulls it."""
    req = pull("cg", topic, queue_id, 0, sys_flag=4, suspend_ms=0, subscription="*")
    resp = await cli.invoke(addr, req)
    return decode_records(resp.body) if resp.code == 0 else []


async def topics(cli: RemotingClient, addr: str) -> set[str]:
    resp = await cli.invoke(addr, RemotingCommand.request(C.GET_ALL_TOPIC_CONFIG))
    return set(json.loads(resp.body)["topicConfigTable"])


async def until(probe, done, timeout: float = 8.0):  # type: ignore[no-untyped-def]
    async with asyncio.timeout(timeout):
        while not done(result := await probe()):  # noqa: ASYNC110 -- state of another process
            await asyncio.sleep(0.05)
    return result


async def setup(cluster: Cluster, producer: Producer, **sets: str) -> BrokerProc:
    broker = cluster.add_broker("broker-a", sets={**FAST_CHECKS, **sets})
    await producer.cli.invoke(broker.addr, create_topic("TxT", 4))
    return broker


async def test_commit_sent_oneway_with_json_delivers_once_with_the_half_properties(
    cluster: Cluster, producer: Producer
) -> None:
    """fidelity D2 / §3.1: a half is invisible; END 8 oneway (JSON header, as Java and C++
    send it) stores it under REAL_TOPIC/REAL_QID with the half's properties string unchanged
    (TRAN_MSG=true kept: the Java consumer needs it for transactionId), sysFlag type 8, the
    prepared offset = the half's; an op (tag d, body = half queue offset) follows; a second
    END, two-way this time, changes nothing (protocol.md 12.4: check for an op first).
    The half and op topics are created on first use (D15)."""
    broker = await setup(cluster, producer)
    cli, addr = producer.cli, broker.addr
    assert not {TRANS_HALF_TOPIC, TRANS_OP_HALF_TOPIC} & await topics(cli, addr)
    sent = await producer.half(addr, "TxT", b"order-1", "UNIQ0000000000000000000001")
    assert TRANS_HALF_TOPIC in await topics(cli, addr)
    half = decode_records((await cli.invoke(addr, api.view_message(
        parse_offset_msg_id(sent.ext_fields["msgId"])[1]))).body)[0]  # fmt: skip
    assert await messages(cli, addr, "TxT") == []
    await producer.end(addr, sent, "UNIQ0000000000000000000001", 8)
    got = await until(lambda: messages(cli, addr, "TxT"), lambda m: len(m) == 1)
    msg = got[0]
    assert msg.body == b"order-1" and msg.queue_id == 1
    assert msg.properties == half.properties  # verbatim: REAL_*, TRAN_MSG, PGROUP included
    assert msg.properties["TRAN_MSG"] == "true" and msg.properties["REAL_TOPIC"] == "TxT"
    assert msg.sys_flag & SysFlag.TRANSACTION_MASK == SysFlag.TRANSACTION_COMMIT
    assert msg.prepared_transaction_offset == half.commit_log_offset
    assert msg.born_timestamp == half.born_timestamp
    ops = await until(lambda: messages(cli, addr, TRANS_OP_HALF_TOPIC, 0), lambda m: len(m) == 1)
    assert (ops[0].body, ops[0].tags) == (str(half.queue_offset).encode(), "d")
    again = await producer.end(addr, sent, "UNIQ0000000000000000000001", 8, oneway=False)
    assert again is not None and again.code == 0
    rolled = await producer.end(addr, sent, "UNIQ0000000000000000000001", 12, oneway=False)
    assert rolled is not None and rolled.code == 0
    await asyncio.sleep(0.3)
    assert len(await messages(cli, addr, "TxT")) == 1
    assert len(await messages(cli, addr, TRANS_OP_HALF_TOPIC, 0)) == 1


async def test_rollback_is_never_visible_and_bad_ends_are_refused(
    cluster: Cluster, producer: Producer
) -> None:
    """fidelity §3.1: rollback (12) writes the op only; checkPrepareMessage's remarks for a
    wrong group, queue offset or CommitLog offset; 0 (UNKNOW) gets no answer at all."""
    broker = await setup(cluster, producer)
    cli, addr = producer.cli, broker.addr
    uniq = "UNIQ0000000000000000000002"
    sent = await producer.half(addr, "TxT", b"cancelled", uniq)
    wrong_group = await producer.end(addr, sent, uniq, 8, oneway=False, group="other")
    assert wrong_group is not None and (wrong_group.code, wrong_group.remark) == (
        1, "The producer group wrong")  # fmt: skip
    wrong_queue = await producer.end(addr, sent, uniq, 8, oneway=False, tranStateTableOffset="7")
    assert wrong_queue is not None and (wrong_queue.code, wrong_queue.remark) == (
        1, "The transaction state table offset wrong")  # fmt: skip
    nowhere = await producer.end(addr, sent, uniq, 8, oneway=False, commitLogOffset="3")
    assert nowhere is not None and (nowhere.code, nowhere.remark) == (
        1, "Find prepared transaction message failed")  # fmt: skip
    with pytest.raises(RemotingTimeoutError):
        await producer.end(addr, sent, uniq, 0, oneway=False)
    await producer.end(addr, sent, uniq, 12)
    await until(lambda: messages(cli, addr, TRANS_OP_HALF_TOPIC, 0), lambda m: len(m) == 1)
    late_commit = await producer.end(addr, sent, uniq, 8, oneway=False)
    assert late_commit is not None and late_commit.code == 0
    await asyncio.sleep(0.3)
    assert await messages(cli, addr, "TxT") == []


async def test_unanswered_half_is_checked_on_a_copy_and_the_answer_commits(
    cluster: Cluster, producer: Producer
) -> None:
    """fidelity §3.1 check loop and request 39: past transactionTimeOut the half is
    re-appended with TRANSACTION_CHECK_TIMES=1 and 39 goes, oneway, to the group's producer:
    header offsets of the copy, msgId = transactionId = UNIQ_KEY, offsetMsgId of the copy;
    body = the record with topic and queue restored from REAL_TOPIC/REAL_QID. The answer
    (fromTransactionCheck=true, the header's offsets) commits it once; a late END for the
    original half then changes nothing (its chain has an op)."""
    broker = await setup(cluster, producer)
    cli, addr = producer.cli, broker.addr
    await producer.register(addr)
    uniq = "UNIQ0000000000000000000003"
    sent = await producer.half(addr, "TxT", b"unsure", uniq)
    check = await asyncio.wait_for(producer.checks.get(), 10)
    hdr = CheckTransactionStateRequestHeader.from_ext(check.ext_fields)
    assert hdr.msg_id == hdr.transaction_id == uniq
    assert hdr.tran_state_table_offset == int(sent.ext_fields["queueOffset"]) + 1  # the copy
    assert parse_offset_msg_id(hdr.offset_msg_id or "")[1] == hdr.commit_log_offset
    body = decode_record(check.body)
    assert (body.topic, body.queue_id, body.body) == ("TxT", 1, b"unsure")
    assert (body.queue_offset, body.commit_log_offset) == (
        hdr.tran_state_table_offset, hdr.commit_log_offset)  # fmt: skip
    assert body.properties["TRANSACTION_CHECK_TIMES"] == "1"
    assert body.properties["PGROUP"] == "pg" and body.properties["TRAN_MSG"] == "true"
    await producer.answer(addr, check, 8)
    got = await until(lambda: messages(cli, addr, "TxT"), lambda m: len(m) == 1)
    assert got[0].properties["UNIQ_KEY"] == uniq
    await producer.end(addr, sent, uniq, 8)  # the local transaction's own, late END
    await asyncio.sleep(1.0)  # a few check rounds: nothing more is checked or delivered
    assert len(await messages(cli, addr, "TxT")) == 1
    assert producer.checks.empty()


async def test_a_half_checked_transaction_check_max_times_is_moved_aside(
    cluster: Cluster, producer: Producer
) -> None:
    """fidelity §3.1 needDiscard: after transactionCheckMax checks (answered UNKNOW) the half
    goes to TRANS_CHECK_MAX_TIME_TOPIC (1 queue, perm 6), is never delivered, never
    checked again; said once, as a warning (Java: an error; issue 29's fuzzer counts client-
    caused error lines)."""
    broker = await setup(cluster, producer, transactionCheckMax="2")
    cli, addr = producer.cli, broker.addr
    await producer.register(addr)
    await producer.half(addr, "TxT", b"stuck", "UNIQ0000000000000000000004")
    for times in ("1", "2"):
        check = await asyncio.wait_for(producer.checks.get(), 10)
        assert decode_record(check.body).properties["TRANSACTION_CHECK_TIMES"] == times
        await producer.answer(addr, check, 0)  # UNKNOW: no answer from the broker
    moved = await until(lambda: messages(cli, addr, TRANS_CHECK_MAX_TIME_TOPIC, 0), bool)
    assert moved[0].body == b"stuck" and moved[0].properties["REAL_TOPIC"] == "TxT"
    table = json.loads(
        (await cli.invoke(addr, RemotingCommand.request(C.GET_ALL_TOPIC_CONFIG))).body
    )
    tcmt = table["topicConfigTable"][TRANS_CHECK_MAX_TIME_TOPIC]
    assert (tcmt["readQueueNums"], tcmt["writeQueueNums"], tcmt["perm"]) == (1, 1, 6)
    await asyncio.sleep(1.0)
    assert producer.checks.empty()
    assert await messages(cli, addr, "TxT") == []
    assert broker.proc is not None  # a producer that never answers is no broken invariant
    said = [e for e in broker.proc.events if e.get("event") == "transaction_checked_too_often"]
    assert [e["level"] for e in said] == ["warning"], said


async def test_state_survives_a_broker_restart(cluster: Cluster, producer: Producer) -> None:
    """Issue 17: everything lives in the half and op topics; a restarted broker still checks
    a pending half (answered: committed once) and still knows an ended one (a duplicate END
    after the restart delivers nothing)."""
    broker = await setup(cluster, producer, transactionCheckInterval="60000")
    cli, addr = producer.cli, broker.addr
    done = await producer.half(addr, "TxT", b"ended", "UNIQ0000000000000000000005")
    await producer.end(addr, done, "UNIQ0000000000000000000005", 8)
    await until(lambda: messages(cli, addr, "TxT"), lambda m: len(m) == 1)
    await producer.half(addr, "TxT", b"pending", "UNIQ0000000000000000000006")
    assert cluster.stop_broker("broker-a") == 0
    broker.sets.update(FAST_CHECKS)
    cluster.start_broker("broker-a")
    addr, producer = broker.addr, Producer()  # a new connection to the new process
    try:
        await _after_restart(producer, addr, done)
    finally:
        await producer.cli.close()


async def _after_restart(producer: Producer, addr: str, done: RemotingCommand) -> None:
    cli = producer.cli
    ops = await messages(cli, addr, TRANS_OP_HALF_TOPIC, 0)  # written though the stop came
    assert [op.body for op in ops] == [b"0"]  # at once (its topic's creation awaits no one)
    await producer.register(addr)
    again = await producer.end(addr, done, "UNIQ0000000000000000000005", 8, oneway=False)
    assert again is not None and again.code == 0
    check = await asyncio.wait_for(producer.checks.get(), 10)
    assert decode_record(check.body).properties["UNIQ_KEY"] == "UNIQ0000000000000000000006"
    await producer.answer(addr, check, 8)
    got = await until(lambda: messages(cli, addr, "TxT"), lambda m: len(m) == 2)
    assert sorted(m.body for m in got) == [b"ended", b"pending"]
    await asyncio.sleep(1.0)
    # the ended half is never checked; the answered one may be once more (the answer is
    # oneway: TransactionalMessageCheckService checks its copy again if a round comes before
    # the answer is stored, as on a busy machine), and it is not delivered twice
    again_checked = []
    while not producer.checks.empty():
        again_checked.append(decode_record(producer.checks.get_nowait().body))
    assert {m.properties["UNIQ_KEY"] for m in again_checked} <= {"UNIQ0000000000000000000006"}
    assert len(await messages(cli, addr, "TxT")) == 2


async def test_resume_check_half_message_checks_a_moved_half_again(
    cluster: Cluster, producer: Producer
) -> None:
    """fidelity §3.1 RESUME_CHECK_HALF_MESSAGE (323): the record behind an offsetMsgId goes
    back to the half queue with TRANSACTION_CHECK_TIMES=0 and is checked again (here after
    it was moved to TRANS_CHECK_MAX_TIME_TOPIC); a bad id gets Java's remark."""
    broker = await setup(cluster, producer, transactionCheckMax="1")
    cli, addr = producer.cli, broker.addr
    await producer.register(addr)
    await producer.half(addr, "TxT", b"again", "UNIQ0000000000000000000007")
    await producer.answer(addr, await asyncio.wait_for(producer.checks.get(), 10), 0)
    moved = await until(lambda: messages(cli, addr, TRANS_CHECK_MAX_TIME_TOPIC, 0), bool)
    resume = RemotingCommand.request(C.RESUME_CHECK_HALF_MESSAGE, {"msgId": moved[0].msg_id})
    assert (await cli.invoke(addr, resume)).code == 0
    check = await asyncio.wait_for(producer.checks.get(), 10)
    assert decode_record(check.body).properties["TRANSACTION_CHECK_TIMES"] == "1"
    await producer.answer(addr, check, 8)
    got = await until(lambda: messages(cli, addr, "TxT"), bool)
    assert [m.body for m in got] == [b"again"]
    bad = RemotingCommand.request(C.RESUME_CHECK_HALF_MESSAGE, {"msgId": "00"})
    answer = await cli.invoke(addr, bad)
    assert (answer.code, answer.remark) == (
        1, "Put message back to RMQ_SYS_TRANS_HALF_TOPIC failed.")  # fmt: skip
