"""The SDK's transactional batches (ours beyond 4.9.8; client/producer/transaction_batch.py):
``send_halves`` and ``end_transactions`` against a name server and real broker processes,
one that takes them and one with ``enableBatchTransaction=false`` (answering as a 4.9.8
broker does), where both raise TransactionBatchNotSupported and the one-at-a-time calls
still work."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from aiorocketmq.client import (
    LocalTransactionState,
    Message,
    MessageExt,
    MessageQueue,
    MQClientError,
    Producer,
    PullConsumer,
    SendResult,
    SendStatus,
    TransactionBatchNotSupported,
    TransactionProducer,
    end_transactions,
    half_message,
    send_half_batch,
    send_halves,
)
from tests.client.conftest import create_everywhere
from tests.cluster import Cluster, running

COMMIT = LocalTransactionState.COMMIT_MESSAGE
ROLLBACK = LocalTransactionState.ROLLBACK_MESSAGE
GROUP = "pg_sdk_batch"
TOPIC = "SdkTxBatch"
QUIET = {"transactionTimeOut": "600000"}  # no check-back while a test runs


class Unasked:
    """A listener for a producer that only ends: no local transaction, no check-back."""

    def execute_local_transaction(self, msg: Message, arg: object) -> LocalTransactionState:
        raise AssertionError("not used")

    def check_local_transaction(self, msg: object) -> LocalTransactionState:
        return LocalTransactionState.UNKNOW


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    with running(tmp_path) as c:
        c.add_broker("broker-a", sets=QUIET)
        c.add_broker("broker-b", sets={**QUIET, "enableBatchTransaction": "false"})
        yield c


async def messages_in(cluster: Cluster, mq: MessageQueue) -> list[MessageExt]:
    async with PullConsumer("cg_sdk_batch", cluster.namesrv_addr) as consumer:
        return (await consumer.pull_raw(mq, 0, 64)).messages()


async def bodies_in(cluster: Cluster, mq: MessageQueue) -> list[bytes]:
    return [m.body for m in await messages_in(cluster, mq)]


async def test_halves_sent_together_end_together_in_order(cluster: Cluster) -> None:
    """Six halves in one request (made as half_message makes them: tags, properties and
    UNIQ_KEY kept, TRAN_MSG and PGROUP added, a delay level dropped): a SendResult each (its
    own queue offset and offsetMsgId), nothing visible; one end_transactions, out of the
    send order and with a rollback and a half of the wrong group among them: the commits
    appear in the order given, the rollback never, the bad one is False and the others
    True; ending them again is True each and changes nothing."""
    await create_everywhere(cluster, TOPIC)
    namesrv = cluster.namesrv_addr
    async with (
        Producer("pg_sdk_sender", namesrv_addr=namesrv) as producer,
        TransactionProducer(GROUP, Unasked(), namesrv) as tx,
    ):
        queues = await producer.fetch_publish_message_queues(TOPIC)
        assert {q.broker_name for q in queues} == {"broker-a", "broker-b"}
        mq = next(q for q in queues if q.broker_name == "broker-a" and q.queue_id == 2)
        msgs = [Message(TOPIC, f"r{i}".encode(), tags="T", properties={"p": str(i)})
                for i in range(5)]  # fmt: skip
        # one with a delay level: dropped, as half_message drops it
        msgs.append(Message(TOPIC, b"r5", delay_level=3, properties={"p": "5"}))
        sent = await send_halves(producer, msgs, GROUP, mq)
        assert [s.status for s in sent] == [SendStatus.SEND_OK] * 6
        assert [s.queue_offset for s in sent] == list(range(sent[0].queue_offset,
                                                            sent[0].queue_offset + 6))  # fmt: skip
        assert len({s.offset_msg_id for s in sent}) == 6 and all(s.queue == mq for s in sent)
        stranger = (await send_halves(producer, [Message(TOPIC, b"x")], "other", mq))[0]
        assert await bodies_in(cluster, mq) == []
        order = [4, 1, 5, 0, 2]
        ends = [(sent[i], COMMIT) for i in order] + [(sent[3], ROLLBACK), (stranger, COMMIT)]
        assert await end_transactions(tx, ends) == [True] * 6 + [False]
        assert await bodies_in(cluster, mq) == [f"r{i}".encode() for i in order]
        got = await messages_in(cluster, mq)
        assert [m.properties["p"] for m in got] == [str(i) for i in order]
        assert all(m.properties["TRAN_MSG"] == "true" and m.properties["PGROUP"] == GROUP
                   and "DELAY" not in m.properties for m in got)  # fmt: skip
        assert [m.tags for m in got] == [None if m.body == b"r5" else "T" for m in got]
        assert [m.properties["UNIQ_KEY"] for m in got] == [sent[i].msg_id for i in order]
        assert await end_transactions(tx, ends[:6]) == [True] * 6
        assert await bodies_in(cluster, mq) == [f"r{i}".encode() for i in order]


async def test_a_broker_without_them_refuses_and_one_at_a_time_still_works(
    cluster: Cluster,
) -> None:
    """broker-b (enableBatchTransaction=false): send_halves raises
    TransactionBatchNotSupported and stores nothing, end_transactions raises it too; the
    same halves sent and ended one at a time are delivered. Mixed brokers in one
    end_transactions call, or something other than a half, are refused before sending."""
    await create_everywhere(cluster, TOPIC)
    namesrv = cluster.namesrv_addr
    async with (
        Producer("pg_sdk_sender", namesrv_addr=namesrv) as producer,
        TransactionProducer(GROUP, Unasked(), namesrv) as tx,
    ):
        queues = await producer.fetch_publish_message_queues(TOPIC)
        mq_b = next(q for q in queues if q.broker_name == "broker-b" and q.queue_id == 1)
        mq_a = next(q for q in queues if q.broker_name == "broker-a" and q.queue_id == 1)
        msgs = [Message(TOPIC, f"b{i}".encode()) for i in range(3)]
        with pytest.raises(TransactionBatchNotSupported) as refused:
            await send_halves(producer, msgs, GROUP, mq_b)
        assert refused.value.code == 13
        halves = [half_message(m, GROUP) for m in msgs]
        one_by_one: list[SendResult] = [await producer.send(h, queue=mq_b) for h in halves]
        with pytest.raises(TransactionBatchNotSupported) as refused:
            await end_transactions(tx, [(s, COMMIT) for s in one_by_one])
        assert refused.value.code == 3
        assert await bodies_in(cluster, mq_b) == []
        for s in one_by_one:
            assert await tx.end_transaction(s, COMMIT, oneway=False)
        assert await bodies_in(cluster, mq_b) == [b"b0", b"b1", b"b2"]
        on_a = await send_halves(producer, [Message(TOPIC, b"a")], GROUP, mq_a)
        with pytest.raises(MQClientError, match="one broker"):
            await end_transactions(tx, [(on_a[0], COMMIT), (one_by_one[0], COMMIT)])
        with pytest.raises(MQClientError, match="producer group"):
            await send_halves(producer, [Message(TOPIC, b"plain")], "", mq_a)


async def test_a_half_batch_is_one_half_that_commits_every_message_in_order(
    cluster: Cluster,
) -> None:
    """``send_half_batch``: one SendResult for the batch (the half's transaction id, its
    offsets), nothing visible; ``end_transactions`` of two such halves commits every message
    of each, in the order given, each with its own UNIQ_KEY, the shared ``properties``, the
    tags and properties of its message; a rolled back one never shows. broker-b
    (enableBatchTransaction=false) raises TransactionBatchNotSupported and stores nothing;
    shared properties may not set what each message owns."""
    await create_everywhere(cluster, TOPIC)
    namesrv = cluster.namesrv_addr
    async with (
        Producer("pg_sdk_sender", namesrv_addr=namesrv) as producer,
        TransactionProducer(GROUP, Unasked(), namesrv) as tx,
    ):
        queues = await producer.fetch_publish_message_queues(TOPIC)
        mq = next(q for q in queues if q.broker_name == "broker-a" and q.queue_id == 3)
        shared = {"job": "j1"}
        runs = [[Message(TOPIC, f"{k}{i}".encode(), tags="T", properties={"p": str(i)})
                 for i in range(3)] for k in "xyz"]  # fmt: skip
        sent = [await send_half_batch(producer, run, GROUP, mq, properties=shared)
                for run in runs]  # fmt: skip
        assert all(s.status is SendStatus.SEND_OK and s.queue == mq for s in sent)
        assert len({s.offset_msg_id for s in sent}) == 3 and len({s.msg_id for s in sent}) == 3
        assert await bodies_in(cluster, mq) == []
        ends = [(sent[1], COMMIT), (sent[0], COMMIT), (sent[2], ROLLBACK)]
        assert await end_transactions(tx, ends) == [True] * 3
        got = await messages_in(cluster, mq)
        assert [m.body for m in got] == [b"y0", b"y1", b"y2", b"x0", b"x1", b"x2"]
        assert [m.properties["p"] for m in got] == ["0", "1", "2"] * 2
        assert all(m.properties["job"] == "j1" and m.tags == "T"
                   and m.properties["PGROUP"] == GROUP for m in got)  # fmt: skip
        assert len({m.properties["UNIQ_KEY"] for m in got}) == 6
        assert not {m.properties["UNIQ_KEY"] for m in got} & {s.msg_id for s in sent}
        mq_b = next(q for q in queues if q.broker_name == "broker-b")
        with pytest.raises(TransactionBatchNotSupported) as refused:
            await send_half_batch(producer, runs[0], GROUP, mq_b)
        assert refused.value.code == 13
        assert await bodies_in(cluster, mq_b) == []
        with pytest.raises(MQClientError, match="may not set"):
            await send_half_batch(producer, runs[0], GROUP, mq, properties={"TAGS": "A"})
