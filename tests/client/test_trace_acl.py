"""Message trace with ACL 1.0 on (issue 33 item 3; r#3895): the trace producer signs with its
client's account, and a request that only publishes to RMQ_SYS_TRACE_TOPIC passes whatever
the account's topic permissions say (PlainPermissionManager.validate), so an account allowed
only its own topic still has its sends and its consumption traced.

mqadmin reads the records as an admin account, signed (no white address): its QUERY_MESSAGE
is signed over _UNIQUE_KEY_QUERY as every Java client signs it, which our broker takes
(4.9.8's refuses it: r#5310; see broker/test_acl.py)."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from aiorocketmq import ConsumeFromWhere, ConsumeStatus, Message, MessageExt, Producer, PushConsumer
from aiorocketmq.client import api
from aiorocketmq.client.core.security import SecuritySettings
from tests.broker.acl_setup import acl_files
from tests.cluster import Cluster, running
from tests.util import wait_until

ROOT = Path(__file__).resolve().parent.parent.parent
APP_AK, APP_SK = "tracedApp01", "tracedSecret1"
ADMIN_AK, ADMIN_SK = "traceOps001", "traceOpsSecret"
TOPIC = "TracedOnly"
PLAIN_ACL = f"""\
accounts:
  - accessKey: {ADMIN_AK}
    secretKey: {ADMIN_SK}
    admin: true
  - accessKey: {APP_AK}
    secretKey: {APP_SK}
    admin: false
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms:
      - {TOPIC}=PUB|SUB
"""


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    sets = {**acl_files(tmp_path, PLAIN_ACL), "traceTopicEnable": "true"}
    with running(tmp_path / "c", ("broker-a",), sets) as c:
        yield c


async def test_a_signed_traced_client_writes_its_records(cluster: Cluster) -> None:
    admin = api.Remote.open(access_key=ADMIN_AK, secret_key=ADMIN_SK)
    try:
        resp = await admin.invoke(cluster.brokers["broker-a"].addr, api.create_topic(TOPIC, 2))
        assert resp.code == 0, resp.remark
    finally:
        await admin.close()
    keys: SecuritySettings = {"access_key": APP_AK, "secret_key": APP_SK}
    got: list[MessageExt] = []

    async def listener(msgs: list[MessageExt], ctx: object) -> ConsumeStatus:
        got.extend(msgs)
        return ConsumeStatus.CONSUME_SUCCESS

    ns = cluster.namesrv_addr
    consumer = PushConsumer("traced_acl_cg", namesrv_addr=ns, trace=True, rebalance_interval=1000,
                            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
                            **keys)  # fmt: skip
    consumer.subscribe(TOPIC)
    consumer.register_message_listener(listener)
    async with Producer("traced_acl_pg", namesrv_addr=ns, trace=True, **keys) as producer:
        sent = await producer.send(Message(TOPIC, b"signed and traced"))
        async with consumer:
            await wait_until(lambda: len(got) == 1, timeout=30)
            found = await query_until(cluster, sent.msg_id, {"Pub", "SubAfter"})
        dispatchers = [producer.trace_dispatcher, consumer.trace_dispatcher]
    assert [(d.failed, d.dropped) for d in dispatchers if d is not None] == [(0, 0), (0, 0)]
    assert {v["groupName"] for v in found} == {"traced_acl_pg", "traced_acl_cg"}


async def query_until(cluster: Cluster, msg_id: str, types: set[str]) -> list[dict[str, str]]:
    """``mqadmin queryMsgTraceById --json`` as a process, signed by the admin account, until
    the records of ``types`` are there (30 s at most)."""
    env = {**os.environ, "ROCKETMQ_ACCESS_KEY": ADMIN_AK, "ROCKETMQ_SECRET_KEY": ADMIN_SK}
    async with asyncio.timeout(30):
        while True:
            proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "aiorocketmq.client.admin", "queryMsgTraceById",
                "-n", cluster.namesrv_addr, "-i", msg_id, "--json", cwd=ROOT, env=env,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            )  # fmt: skip
            out, err = await proc.communicate()
            if proc.returncode == 0:
                views: list[dict[str, str]] = json.loads(out)
                if types <= {v["msgType"] for v in views}:
                    return views
            else:
                assert b"no message" in err, err
            await asyncio.sleep(0.2)
