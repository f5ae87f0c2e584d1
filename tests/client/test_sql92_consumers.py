"""The SDK's SQL92 subscriptions against real processes (issue 33): ``MessageSelector.by_sql``
on the push and lite pull consumers and ``pull_raw`` gets exactly what the brokers match (no
re-filtering); a start the brokers refuse (CHECK_CLIENT_CONFIG, as Java's
checkClientInBroker) fails with their code and a clear message."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from aiorocketmq import (
    ExpressionType,
    Message,
    MessageSelector,
    MQBrokerError,
    Producer,
    PullConsumer,
    PushConsumer,
)
from aiorocketmq.client import api
from aiorocketmq.client.consumer.types import (
    ConsumeConcurrentlyContext,
    ConsumeFromWhere,
    ConsumeStatus,
    PushOptions,
)
from aiorocketmq.remoting.protocol.message import MessageExt
from tests.broker.acl_setup import acl_files
from tests.broker.sql92_wire import EXPECTED, MATRIX
from tests.client.conftest import create_everywhere
from tests.client.test_acl_clients import ADMIN_AK, ADMIN_SK, APP_AK, APP_SK, PLAIN_ACL
from tests.cluster import Cluster, running
from tests.util import wait_until

FIRST = ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
PUSH: PushOptions = {"rebalance_interval": 1000, "poll_name_server_interval": 1000,
                     "heartbeat_broker_interval": 1000, "consume_from_where": FIRST}  # fmt: skip


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    with running(tmp_path, ("broker-a", "broker-b"), {"enablePropertyFilter": "true"}) as c:
        yield c


async def send_matrix(cluster: Cluster, topic: str, rounds: int = 2) -> None:
    """The matrix ``rounds`` times (bodies ``m0#0``...), spread over both brokers' queues."""
    async with Producer("pg_sql", namesrv_addr=cluster.namesrv_addr) as p:
        for r in range(rounds):
            for body, props in MATRIX.items():
                extra = {k: v for k, v in props.items() if k != "TAGS"}
                await p.send(Message(topic, f"{body}#{r}".encode(), tags=props.get("TAGS"),
                                     properties=extra))  # fmt: skip


def expected(expression: str, rounds: int = 2) -> set[str]:
    return {f"{body}#{r}" for body in EXPECTED[expression] for r in range(rounds)}


def names(msgs: list[MessageExt]) -> list[str]:
    return sorted(m.body.decode() for m in msgs)


async def test_push_consumer_by_sql_gets_exactly_the_matching_messages(cluster: Cluster) -> None:
    """A PushConsumer subscribed with MessageSelector.by_sql: the broker's matches, each once,
    and nothing else (the heartbeat registers the filter, pulls carry no expression)."""
    await create_everywhere(cluster, "SqlPush", 4)
    await send_matrix(cluster, "SqlPush")
    got: list[MessageExt] = []

    async def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeStatus:
        got.extend(msgs)
        return ConsumeStatus.CONSUME_SUCCESS

    expression = "a > 5 OR b = 'x'"
    c = PushConsumer("cg_sql_push", namesrv_addr=cluster.namesrv_addr, **PUSH)
    c.subscribe("SqlPush", MessageSelector.by_sql(expression))
    c.register_message_listener(listener)
    async with c:
        sub = c.rebalance.subscriptions["SqlPush"]
        assert (sub.expression_type, sub.sub_string, sub.tags_set) == ("SQL92", expression, [])
        want = expected(expression)
        await wait_until(lambda: len(got) >= len(want), 20)
        await asyncio.sleep(0.5)  # time for anything extra to show
    assert names(got) == sorted(want)


async def test_lite_pull_and_raw_pulls_by_sql(cluster: Cluster) -> None:
    """PullConsumer.subscribe(topic, MessageSelector.by_sql(...)) polls exactly the matches;
    pull_raw with a selector gets the broker's exact answer for one queue."""
    await create_everywhere(cluster, "SqlLite", 2)
    await send_matrix(cluster, "SqlLite")
    expression = "a BETWEEN 5 AND 10"
    want = expected(expression)
    c = PullConsumer("cg_sql_lite", namesrv_addr=cluster.namesrv_addr, consume_from_where=FIRST)
    c.subscribe("SqlLite", MessageSelector.by_sql(expression))
    async with c:
        got: list[MessageExt] = []
        for _ in range(200):
            got += await c.poll(0.2)
            if len(got) >= len(want):
                break
        got += await c.poll(0.5)
        assert names(got) == sorted(want)
        raw: list[MessageExt] = []
        for mq in await c.fetch_message_queues("SqlLite"):
            pulled = await c.pull_raw(mq, 0, 32, expression=MessageSelector.by_sql("a IS NULL"))
            raw += pulled.messages(expression=MessageSelector.by_sql("a IS NULL"))
        assert names(raw) == sorted(expected("a IS NULL"))


async def test_a_bad_expression_stops_the_start(cluster: Cluster) -> None:
    """CHECK_CLIENT_CONFIG before the first heartbeat: an expression the broker cannot parse
    stops start() with SUBSCRIPTION_PARSE_FAILED and the parser's message; nothing runs."""
    await create_everywhere(cluster, "SqlBad", 1)
    for make in (PushConsumer, PullConsumer):
        c = make("cg_sql_bad", namesrv_addr=cluster.namesrv_addr)
        c.subscribe("SqlBad", MessageSelector.by_sql("a >> 5"))
        if isinstance(c, PushConsumer):
            c.register_message_listener(lambda msgs, ctx: ConsumeStatus.CONSUME_SUCCESS)
        with pytest.raises(MQBrokerError) as refused:
            await c.start()
        assert refused.value.code == 23
        assert "SqlBad" in str(refused.value) and "a >> 5" in str(refused.value)
        await c.shutdown()


async def test_property_filter_off_stops_the_start(tmp_path: Path) -> None:
    """Brokers without enablePropertyFilter refuse an SQL92 consumer at start (code 1), with
    the broker key to set in the message; a tag consumer of the same group starts."""
    with running(tmp_path, ("broker-a",)) as cluster:
        await create_everywhere(cluster, "SqlOff", 1)
        c = PullConsumer("cg_sql_off", namesrv_addr=cluster.namesrv_addr)
        c.subscribe("SqlOff", MessageSelector.by_sql("a > 5"))
        with pytest.raises(MQBrokerError) as refused:
            await c.start()
        assert refused.value.code == 1
        assert "enablePropertyFilter=true" in str(refused.value)
        tags = PullConsumer("cg_sql_off", namesrv_addr=cluster.namesrv_addr)
        tags.subscribe("SqlOff", MessageSelector.by_tag("A || B"))
        async with tags:
            assert tags.rebalance.subscriptions["SqlOff"].tags_set == ["A", "B"]


def test_message_selector() -> None:
    """MessageSelector.by_sql refuses an empty expression (FilterAPI.build); a string given
    to subscribe() is a tag expression."""
    with pytest.raises(ValueError, match="SQL92"):
        MessageSelector.by_sql("  ")
    assert MessageSelector.by_tag(None) == MessageSelector(ExpressionType.TAG, "*")
    sub = MessageSelector.by_sql(" a > 1 ").subscription("T", 5)
    assert (sub.expression_type, sub.sub_string, sub.sub_version) == ("SQL92", "a > 1", 5)


async def test_a_signed_sql92_consumer_under_acl(tmp_path: Path) -> None:
    """ACL 1.0 on: CHECK_CLIENT_CONFIG needs a valid signature only, as 4.9.8
    (PlainAccessValidator reads no resource of it): a non-admin account's SQL92 consumer
    starts and gets its matches; without keys the start is refused."""
    sets = {**acl_files(tmp_path, PLAIN_ACL), "enablePropertyFilter": "true"}
    with running(tmp_path / "c", ("broker-a",), sets) as cluster:
        admin = api.Remote.open(access_key=ADMIN_AK, secret_key=ADMIN_SK)
        try:
            broker = cluster.brokers["broker-a"]
            assert (await admin.invoke(broker.addr, api.create_topic("SqlAcl", 1))).code == 0
        finally:
            await admin.close()
        ns = cluster.namesrv_addr
        async with Producer(
            "pg_sql_acl", namesrv_addr=ns, access_key=APP_AK, secret_key=APP_SK
        ) as p:
            for i in range(4):
                await p.send(Message("SqlAcl", b"n%d" % i, properties={"n": str(i)}))
        c = PullConsumer("cg_sql_acl", namesrv_addr=ns, consume_from_where=FIRST,
                         access_key=APP_AK, secret_key=APP_SK)  # fmt: skip
        c.subscribe("SqlAcl", MessageSelector.by_sql("n >= 2"))
        async with c:
            got: list[MessageExt] = []
            for _ in range(100):
                got += await c.poll(0.2)
                if len(got) >= 2:
                    break
            got += await c.poll(0.3)
        assert names(got) == ["n2", "n3"]
        unsigned = PullConsumer("cg_sql_acl2", namesrv_addr=cluster.namesrv_addr)
        unsigned.subscribe("SqlAcl", MessageSelector.by_sql("n >= 2"))
        with pytest.raises(MQBrokerError):
            await unsigned.start()
        await unsigned.shutdown()
