"""Request-reply with ACL 1.0 on (issue 33 item 2): a signed requester and a signed replier
are served with no permission on ``<cluster>_REPLY_TOPIC`` -- 4.9.8 checks 324/325 for their
signature only, and the requester's reply comes pushed (326) -- while an unsigned replier's
reply is refused with Apache's remark."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from aiorocketmq import (
    ConsumeFromWhere,
    ConsumeStatus,
    Message,
    MessageExt,
    MQClientError,
    Producer,
    PushConsumer,
)
from aiorocketmq.client import api
from aiorocketmq.client.consumer.types import ConsumeConcurrentlyContext
from tests.broker.acl_setup import acl_files
from tests.cluster import Cluster, running

ADMIN_AK, ADMIN_SK = "opsKey0001", "opsSecret-01"
REQ_AK, REQ_SK = "reqKey0001", "reqSecret-01"
REP_AK, REP_SK = "repKey0001", "repSecret-01"
# neither account may touch any topic but RRAcl: not the reply topic either
PLAIN_ACL = f"""\
accounts:
  - accessKey: {ADMIN_AK}
    secretKey: {ADMIN_SK}
    admin: true
  - accessKey: {REQ_AK}
    secretKey: {REQ_SK}
    defaultTopicPerm: DENY
    defaultGroupPerm: PUB|SUB
    topicPerms:
      - RRAcl=PUB
  - accessKey: {REP_AK}
    secretKey: {REP_SK}
    defaultTopicPerm: DENY
    defaultGroupPerm: PUB|SUB
    topicPerms:
      - RRAcl=SUB
"""


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    with running(tmp_path / "c", ("broker-a",), acl_files(tmp_path, PLAIN_ACL)) as c:
        yield c


async def test_signed_requester_and_replier_are_served(cluster: Cluster) -> None:
    ns = cluster.namesrv_addr
    admin = api.Remote.open(access_key=ADMIN_AK, secret_key=ADMIN_SK)
    try:
        broker = cluster.brokers["broker-a"].addr
        assert (await admin.invoke(broker, api.create_topic("RRAcl", 1))).code == 0
    finally:
        await admin.close()
    seen: list[MessageExt] = []
    replier = Producer("pg_acl_replier", namesrv_addr=ns, instance_name="replier",
                       access_key=REP_AK, secret_key=REP_SK)  # fmt: skip

    async def answer(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeStatus:
        for msg in msgs:
            seen.append(msg)
            await replier.send_reply(msg, b"re:" + msg.body)
        return ConsumeStatus.CONSUME_SUCCESS

    consumer = PushConsumer(
        "cg_acl_replier", namesrv_addr=ns, instance_name="replier", access_key=REP_AK,
        secret_key=REP_SK, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        rebalance_interval=1000, heartbeat_broker_interval=1000,
    )  # fmt: skip
    consumer.subscribe("RRAcl", "*")
    consumer.register_message_listener(answer)
    async with (
        replier,
        consumer,
        Producer(
            "pg_acl_requester", namesrv_addr=ns, access_key=REQ_AK, secret_key=REQ_SK
        ) as requester,  # fmt: skip
    ):
        got = await requester.request(Message("RRAcl", b"signed"), 15_000)
        assert got.body == b"re:signed"
    async with Producer("pg_acl_anon", namesrv_addr=ns, instance_name="anon",
                        retry_times_when_send_failed=0) as anon:  # fmt: skip
        with pytest.raises(MQClientError, match="No accessKey is configured"):
            await anon.send_reply(seen[0], b"unsigned")
