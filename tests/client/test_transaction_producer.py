"""client.TransactionProducer against real processes: a name server and two brokers with short
check intervals (issue 17; fidelity D2 and section 3.1; protocol.md 5.6 and 12.4)."""

from __future__ import annotations

import asyncio
import re
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from aiorocketmq.client import (
    ConsumeFromWhere,
    ConsumeStatus,
    LocalTransactionState,
    Message,
    MessageExt,
    PushConsumer,
    TransactionProducer,
    TransactionSendResult,
)
from aiorocketmq.client import sync as blocking
from aiorocketmq.client.consumer.types import PushOptions
from tests.client.conftest import create_everywhere
from tests.cluster import Cluster, running
from tests.harness import ServerProcess
from tests.util import wait_until

COMMIT = LocalTransactionState.COMMIT_MESSAGE
ROLLBACK = LocalTransactionState.ROLLBACK_MESSAGE
UNKNOW = LocalTransactionState.UNKNOW
ROOT = Path(__file__).resolve().parents[2]
# a half message is checked 1 s after it was born, the check service runs every 0.5 s
TX_SETS = {"transactionCheckInterval": "500", "transactionTimeOut": "1000"}
FAST: PushOptions = {
    "rebalance_interval": 1000,
    "persist_consumer_offset_interval": 500,
    "heartbeat_broker_interval": 1000,
    "consume_from_where": ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
}


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    with running(tmp_path, ("broker-a", "broker-b"), TX_SETS) as c:
        yield c


class Tx:
    """An async listener: the local transaction answers ``outcome`` (raises if it is an
    exception), a check answers ``check``; both record what they saw."""

    def __init__(self, outcome: object = COMMIT, check: object = COMMIT) -> None:
        self.outcome, self.check = outcome, check
        self.executed: list[tuple[Message, object, int]] = []
        self.checked: list[tuple[MessageExt, int]] = []

    def _answer(self, answer: object) -> LocalTransactionState:
        if isinstance(answer, Exception):
            raise answer
        assert isinstance(answer, LocalTransactionState)
        return answer

    async def execute_local_transaction(self, msg: Message, arg: object) -> LocalTransactionState:
        self.executed.append((msg, arg, threading.get_ident()))
        return self._answer(self.outcome)

    async def check_local_transaction(self, msg: MessageExt) -> LocalTransactionState:
        self.checked.append((msg, threading.get_ident()))
        return self._answer(self.check)


class PlainTx(Tx):
    """The same with plain methods (run in worker threads)."""

    def execute_local_transaction(self, msg: Message, arg: object) -> LocalTransactionState:  # type: ignore[override]
        self.executed.append((msg, arg, threading.get_ident()))
        return self._answer(self.outcome)

    def check_local_transaction(self, msg: MessageExt) -> LocalTransactionState:  # type: ignore[override]
        self.checked.append((msg, threading.get_ident()))
        return self._answer(self.check)


class Collect:
    def __init__(self) -> None:
        self.msgs: list[MessageExt] = []

    def __call__(self, msgs: list[MessageExt], ctx: object) -> ConsumeStatus:
        self.msgs.extend(msgs)
        return ConsumeStatus.CONSUME_SUCCESS

    @property
    def bodies(self) -> list[bytes]:
        return [m.body for m in self.msgs]


def consumer(cluster: Cluster, group: str, topic: str, listener: Collect) -> PushConsumer:
    c = PushConsumer(group, namesrv_addr=cluster.namesrv_addr, **FAST)
    c.subscribe(topic, "*")
    c.register_message_listener(listener)
    return c


def producer(cluster: Cluster, group: str, listener: object, **opts: object) -> TransactionProducer:
    return TransactionProducer(group, listener, namesrv_addr=cluster.namesrv_addr, **opts)  # type: ignore[arg-type]


async def test_commit_is_delivered_once_with_the_transaction_id(cluster: Cluster) -> None:
    """fidelity D2, 3.1: a committed transaction reaches the consumer once, on its real
    topic, with transaction_id = the UNIQ_KEY the send returned; no check-back follows."""
    await create_everywhere(cluster, "TxCommit")
    tx, got = Tx(COMMIT), Collect()
    async with (
        producer(cluster, "pg_tx_commit", tx) as p,
        consumer(cluster, "cg_tx_commit", "TxCommit", got),
    ):
        results = [
            await p.send_message_in_transaction(Message("TxCommit", b"c%d" % i), arg=i)
            for i in range(8)  # round robin over 8 queues: both brokers
        ]
        await wait_until(lambda: len(got.msgs) >= 8, 10)
        await asyncio.sleep(2.0)  # four check rounds: nothing more arrives
    assert all(isinstance(r, TransactionSendResult) for r in results)
    assert {r.local_transaction_state for r in results} == {COMMIT}
    assert {r.queue.broker_name for r in results} == {"broker-a", "broker-b"}
    assert Counter(got.bodies) == {b"c%d" % i: 1 for i in range(8)}
    by_body = {m.body: m for m in got.msgs}
    for i, r in enumerate(results):
        m = by_body[b"c%d" % i]
        assert m.topic == "TxCommit"
        assert m.transaction_id == r.msg_id == r.transaction_id
    assert [(m.transaction_id, arg) for m, arg, _ in tx.executed] == [
        (r.msg_id, i) for i, r in enumerate(results)
    ]
    assert tx.checked == []


async def test_rollback_is_never_delivered(cluster: Cluster) -> None:
    """fidelity D2, 3.1: a rolled-back transaction is never visible, and never checked."""
    await create_everywhere(cluster, "TxRollback")
    tx, got = Tx(ROLLBACK), Collect()
    async with (
        producer(cluster, "pg_tx_rollback", tx) as p,
        consumer(cluster, "cg_tx_rollback", "TxRollback", got),
    ):
        for i in range(4):
            r = await p.send_message_in_transaction(Message("TxRollback", b"r%d" % i))
            assert r.local_transaction_state is ROLLBACK
        tx.outcome = COMMIT
        await p.send_message_in_transaction(Message("TxRollback", b"sentinel"))
        await wait_until(lambda: b"sentinel" in got.bodies, 10)
        await asyncio.sleep(2.5)  # five check rounds
    assert got.bodies == [b"sentinel"]
    assert tx.checked == []


async def test_an_exception_is_unknow_and_the_check_commits(cluster: Cluster) -> None:
    """fidelity 3.1: an exception in the local transaction leaves it UNKNOW; the broker's
    CHECK_TRANSACTION_STATE carries the half message (real topic, body, transaction id) and
    the listener's COMMIT answer delivers it, once."""
    await create_everywhere(cluster, "TxUnknown")
    tx, got = Tx(RuntimeError("db down"), check=COMMIT), Collect()
    async with (
        producer(cluster, "pg_tx_unknown", tx) as p,
        consumer(cluster, "cg_tx_unknown", "TxUnknown", got),
    ):
        began = time.monotonic()
        r = await p.send_message_in_transaction(Message("TxUnknown", b"u", tags="T"))
        assert r.local_transaction_state is UNKNOW
        await wait_until(lambda: got.msgs != [], 15)
        print(f"checked and delivered after {time.monotonic() - began:.2f} s")
        await asyncio.sleep(1.5)
    assert got.bodies == [b"u"]
    assert got.msgs[0].transaction_id == r.msg_id
    checked, _ = tx.checked[0]
    assert (checked.topic, checked.body, checked.tags) == ("TxUnknown", b"u", "T")
    assert checked.transaction_id == r.msg_id
    assert checked.properties["PGROUP"] == "pg_tx_unknown"
    # at least one check-back, every one about this half: the answer is oneway, and
    # TransactionalMessageCheckService may check the half's copy again before it is stored
    assert all(c.transaction_id == r.msg_id for c, _ in tx.checked), tx.checked


async def test_plain_listener_methods_run_off_the_loop(cluster: Cluster) -> None:
    """fidelity D2 (client side); issue 17 item 3: plain listener methods run in worker threads;
    UNKNOW is checked and the plain check's COMMIT delivers it."""
    await create_everywhere(cluster, "TxPlain")
    tx, got = PlainTx(UNKNOW, check=COMMIT), Collect()
    loop_thread = threading.get_ident()
    async with (
        producer(cluster, "pg_tx_plain", tx) as p,
        consumer(cluster, "cg_tx_plain", "TxPlain", got),
    ):
        r = await p.send_message_in_transaction(Message("TxPlain", b"p"), arg="x")
        assert r.local_transaction_state is UNKNOW
        await wait_until(lambda: got.msgs != [], 15)
    assert got.bodies == [b"p"]
    assert tx.executed[0][2] != loop_thread and tx.checked[0][1] != loop_thread


async def test_a_killed_producer_is_answered_for_by_another_of_its_group(
    cluster: Cluster,
) -> None:
    """fidelity 3.1 (request 39 goes to a live channel of the PGROUP): the producer process is
    killed (SIGKILL) between its half message and END_TRANSACTION; a second producer of the
    group, which never sent anything, is known to every master from its start and answers the
    check: the message is delivered."""
    await create_everywhere(cluster, "TxKilled")
    tx, got = Tx(check=COMMIT), Collect()
    # its own client instance: the consumer's heartbeats must not be what registers the group
    survivor = producer(cluster, "pg_tx_killed", tx, instance_name="survivor")
    await survivor.start()
    worker = ServerProcess(["-m", "tests.client.tx_worker", cluster.namesrv_addr,
                            "pg_tx_killed", "TxKilled"])  # fmt: skip
    try:
        half = await asyncio.to_thread(worker.wait_for, "half", 20)
        worker.proc.send_signal(signal.SIGKILL)
        worker.proc.wait(10)
        async with consumer(cluster, "cg_tx_killed", "TxKilled", got):
            await wait_until(lambda: got.msgs != [], 15)
            # three more check rounds (TX_SETS) with the consumer still there: a check
            # answered again must not deliver the message again
            await asyncio.sleep(1.5)
    finally:
        worker.stop()
        await survivor.shutdown()
    assert got.bodies == [b"from the killed producer"]
    assert got.msgs[0].transaction_id == half["msg_id"]
    # At least one check, each about this half, not exactly one: the check is oneway and
    # TransactionalMessageCheckService checks the half's copy again in its next round (every
    # 0.5 s here) if the survivor's END_TRANSACTION has not been stored by then (a busy
    # machine); the second COMMIT is answered SUCCESS and changes nothing (protocol.md 12.4),
    # which the single delivery above shows.
    checked = [m.transaction_id for m, _ in tx.checked]
    assert checked != [] and set(checked) == {half["msg_id"]}, checked
    assert tx.executed == []


async def test_checks_beyond_the_hold_queue_are_dropped_then_asked_again(
    cluster: Cluster,
) -> None:
    """fidelity 3.1, TransactionMQProducer.checkRequestHoldMax: with one check worker busy and a
    queue of 1, further checks are dropped (counted); the broker asks again in a later round and
    all are delivered."""
    await create_everywhere(cluster, "TxHold", 1)
    gate = asyncio.Event()

    class Slow(Tx):
        async def check_local_transaction(self, msg: MessageExt) -> LocalTransactionState:
            self.checked.append((msg, threading.get_ident()))
            await gate.wait()
            return COMMIT

    tx, got = Slow(UNKNOW), Collect()
    async with (
        producer(cluster, "pg_tx_hold", tx, check_request_hold_max=1) as p,
        consumer(cluster, "cg_tx_hold", "TxHold", got),
    ):
        for i in range(5):
            await p.send_message_in_transaction(Message("TxHold", b"h%d" % i))
        await wait_until(lambda: p.dropped_checks > 0, 10)
        gate.set()
        await wait_until(lambda: len(set(got.bodies)) == 5, 15)
    assert sorted(set(got.bodies)) == [b"h%d" % i for i in range(5)]


def test_sync_facade(cluster: Cluster) -> None:
    """fidelity D2 (client side), client.sync.TransactionProducer: a plain local transaction
    runs in the calling thread (as Java's does); an async listener works too; UNKNOW is settled
    by the check."""
    asyncio.run(create_everywhere(cluster, "TxSync"))
    plain, coro, got = PlainTx(COMMIT, check=COMMIT), Tx(UNKNOW, check=COMMIT), Collect()
    c = blocking.PushConsumer("cg_tx_sync", namesrv_addr=cluster.namesrv_addr, **FAST)
    c.subscribe("TxSync", "*")
    c.register_message_listener(got)
    addr = cluster.namesrv_addr
    with c:
        with blocking.TransactionProducer("pg_tx_sync", plain, namesrv_addr=addr) as p:
            first = p.send_message_in_transaction(Message("TxSync", b"plain"), arg=1)
            assert p.send(Message("TxSync", b"ordinary")).status.name == "SEND_OK"
        with blocking.TransactionProducer("pg_tx_sync_async", coro, namesrv_addr=addr) as p:
            second = p.send_message_in_transaction(Message("TxSync", b"async"))
            deadline = time.monotonic() + 15
            while len(got.msgs) < 3 and time.monotonic() < deadline:
                time.sleep(0.05)
    assert first.local_transaction_state is COMMIT and second.local_transaction_state is UNKNOW
    assert plain.executed[0][2] == threading.get_ident()
    assert sorted(got.bodies) == [b"async", b"ordinary", b"plain"]
    tx_ids = {m.body: m.transaction_id for m in got.msgs}
    assert tx_ids == {b"plain": first.msg_id, b"async": second.msg_id, b"ordinary": None}


async def test_readme_transaction_examples_run_as_written(two_brokers: Cluster) -> None:
    """fidelity D2; issue 17 "Done when": the README's async and sync transaction examples run
    as written (only the name-server address is this test cluster's, not make run's :9876), and
    what they commit is delivered."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Python transactions", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert len(blocks) == 2
    for code in blocks:
        assert '"127.0.0.1:9876"' in code
        code = code.replace('"127.0.0.1:9876"', repr(two_brokers.namesrv_addr))
        done = await asyncio.to_thread(
            subprocess.run, [sys.executable, "-c", code], cwd=ROOT, capture_output=True,
            text=True, timeout=60,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert "COMMIT_MESSAGE" in done.stdout, done.stdout
    got = Collect()
    async with consumer(two_brokers, "cg_tx_readme", "ExampleTopic", got):
        await wait_until(lambda: len(got.msgs) >= 2, 10)
    assert sorted(got.bodies) == [b"order 42 paid", b"order 43 paid"]
