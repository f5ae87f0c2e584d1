"""The SDK against brokers with ACL 1.0 on (issue 32 item 4; the broker's side: remoting/acl):
clients with an account's keys are served on every path -- sends, a transaction settled by a
check-back, push consumption with a send-back, lite pulls with committed offsets -- and
clients without keys, or with a wrong secret, get the broker's refusal, which never quotes
the secret."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from aiorocketmq import (
    ConsumeFromWhere,
    ConsumeStatus,
    LocalTransactionState,
    Message,
    MessageExt,
    MQBrokerError,
    MQClientError,
    Producer,
    PullConsumer,
    PushConsumer,
    TransactionProducer,
)
from aiorocketmq.client import api
from aiorocketmq.client.consumer.types import PushOptions
from tests.broker.acl_setup import acl_files
from tests.cluster import Cluster, running
from tests.util import wait_until

APP_AK, APP_SK = "appKey0001", "appSecret-01"
ADMIN_AK, ADMIN_SK = "opsKey0001", "opsSecret-01"
PLAIN_ACL = f"""\
accounts:
  - accessKey: {ADMIN_AK}
    secretKey: {ADMIN_SK}
    admin: true
  - accessKey: {APP_AK}
    secretKey: {APP_SK}
    admin: false
    defaultTopicPerm: PUB|SUB
    defaultGroupPerm: PUB|SUB
"""
TX_SETS = {"transactionCheckInterval": "500", "transactionTimeOut": "1000"}
APP: PushOptions = {
    "access_key": APP_AK,
    "secret_key": APP_SK,
    "rebalance_interval": 1000,
    "persist_consumer_offset_interval": 500,
    "heartbeat_broker_interval": 1000,
    "consume_from_where": ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
}


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    sets = {**acl_files(tmp_path, PLAIN_ACL), **TX_SETS}
    with running(tmp_path / "c", ("broker-a", "broker-b"), sets) as c:
        yield c


async def create_topic(cluster: Cluster, topic: str) -> None:
    admin = api.Remote.open(access_key=ADMIN_AK, secret_key=ADMIN_SK)
    try:
        for broker in cluster.brokers.values():
            resp = await admin.invoke(broker.addr, api.create_topic(topic, 2))
            assert resp.code == 0, resp.remark
    finally:
        await admin.close()


class Later:
    async def execute_local_transaction(self, msg: Message, arg: object) -> LocalTransactionState:
        raise RuntimeError("settled by the check-back")

    async def check_local_transaction(self, msg: MessageExt) -> LocalTransactionState:
        return LocalTransactionState.COMMIT_MESSAGE


@pytest.mark.slow
async def test_an_account_is_served_on_every_path(cluster: Cluster) -> None:
    await create_topic(cluster, "AclPaths")
    ns = cluster.namesrv_addr
    got: list[bytes] = []
    retried = set()

    def listener(msgs: list[MessageExt], ctx: object) -> ConsumeStatus:
        body = msgs[0].body
        if body == b"again" and body not in retried:
            retried.add(body)
            return ConsumeStatus.RECONSUME_LATER
        got.append(body)
        return ConsumeStatus.CONSUME_SUCCESS

    push = PushConsumer("cg_acl_paths", namesrv_addr=ns, **APP)
    push.subscribe("AclPaths", "*")
    push.register_message_listener(listener)
    async with push:
        async with Producer("pg_acl_paths", namesrv_addr=ns, access_key=APP_AK,
                            secret_key=APP_SK) as p:  # fmt: skip
            await p.send(Message("AclPaths", b"one"))
            await p.send(Message("AclPaths", b"again"))
            await p.send_batch([Message("AclPaths", b"b1"), Message("AclPaths", b"b2")])
        async with TransactionProducer("pg_acl_tx", Later(), namesrv_addr=ns,
                                       access_key=APP_AK, secret_key=APP_SK) as tx:  # fmt: skip
            await tx.send_message_in_transaction(Message("AclPaths", b"tx"))
            want = {b"one", b"again", b"b1", b"b2", b"tx"}
            await wait_until(lambda: want <= set(got), 60)
    assert retried == {b"again"}

    pull = PullConsumer("cg_acl_pull", namesrv_addr=ns, access_key=APP_AK, secret_key=APP_SK,
                        auto_commit=False,
                        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)  # fmt: skip
    pull.subscribe("AclPaths", "*")
    async with pull:
        polled: list[bytes] = []
        while not {b"one", b"tx"} <= set(polled):
            polled += [m.body for m in await pull.poll(timeout=1.0)]
        await pull.commit()
        mq = next(iter(pull.assignment()))
        assert await pull.committed(mq) >= 0


async def test_no_keys_or_a_wrong_secret_is_refused(cluster: Cluster) -> None:
    """Apache's remarks (SYSTEM_ERROR, AclException); the wrong secret appears nowhere."""
    await create_topic(cluster, "AclRefused")
    ns = cluster.namesrv_addr
    async with Producer("pg_acl_anon", namesrv_addr=ns, retry_times_when_send_failed=0) as p:
        with pytest.raises(MQClientError, match="No accessKey is configured") as anon:
            await p.send(Message("AclRefused", b"x"))
    cause = anon.value.__cause__
    assert isinstance(cause, MQBrokerError) and cause.code == 1  # SYSTEM_ERROR, as 4.9.8
    wrong = "not-the-secret-9"
    async with Producer("pg_acl_wrong", namesrv_addr=ns, retry_times_when_send_failed=0,
                        access_key=APP_AK, secret_key=wrong) as p:  # fmt: skip
        with pytest.raises(MQClientError) as bad:
            await p.send(Message("AclRefused", b"y"))
    assert f"Check signature failed for accessKey={APP_AK}" in str(bad.value)
    assert wrong not in str(bad.value) and APP_SK not in str(bad.value)
    admin = api.Remote.open(access_key=APP_AK, secret_key=APP_SK)  # not an admin account
    try:
        broker = next(iter(cluster.brokers.values()))
        resp = await admin.invoke(broker.addr, api.create_topic("AclNotAdmin", 1))
        assert resp.code == 1, resp.remark
        assert f"Need admin permission for request code=17, but accessKey={APP_AK} is not" in (
            resp.remark or ""
        )
    finally:
        await admin.close()
