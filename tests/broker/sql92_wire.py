"""SQL92 test conveniences: a property matrix of messages, the expressions over it with the
bodies 4.9.8 serves for each (ComparisonExpression's conversions: a property's text becomes
the constant's type, a failed conversion or a missing property matches nothing), and the
requests an SQL92 consumer sends."""

from __future__ import annotations

from aiorocketmq.client.core import api
from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.protocol.codes import RequestCode
from aiorocketmq.remoting.protocol.command import RemotingCommand
from aiorocketmq.remoting.protocol.heartbeat import ConsumerData, SubscriptionData
from aiorocketmq.remoting.protocol.message import decode_records
from aiorocketmq.remoting.protocol.route import dumps
from tests.broker.wire import send_v2

# body -> user properties (every value travels as text)
MATRIX: dict[str, dict[str, str]] = {
    "m0": {"a": "10", "b": "abc", "c": "3.5"},
    "m1": {"a": "5", "b": "x"},
    "m2": {"a": "abc"},  # no number: a numeric comparison of it fails
    "m3": {"b": "x"},  # no a
    "m4": {"a": "-3", "b": "it's"},
    "m5": {"a": "7", "b": "x", "TAGS": "T1"},
    "m6": {"a": "100", "flag": "true"},
}

# expression -> the bodies it matches
EXPECTED: dict[str, set[str]] = {
    "a > 5": {"m0", "m5", "m6"},
    "a BETWEEN 5 AND 10": {"m0", "m1", "m5"},
    "a NOT BETWEEN 5 AND 10": {"m4", "m6"},
    "b IN ('abc', 'x')": {"m0", "m1", "m3", "m5"},
    "b NOT IN ('abc', 'x')": {"m4"},
    "a IS NULL": {"m3"},
    "a IS NOT NULL": {"m0", "m1", "m2", "m4", "m5", "m6"},
    "NOT (a > 5)": {"m1", "m4"},
    "b = 'it''s'": {"m4"},
    "TAGS = 'T1' AND a = 7": {"m5"},
    "c > 3.0": {"m0"},
    "flag = TRUE": {"m6"},
    "a >= -3 AND a < 6": {"m1", "m4"},
    "a > 5 OR b = 'x'": {"m0", "m1", "m3", "m5", "m6"},
    "a > 1000": set(),
}


async def send_matrix(
    cli: RemotingClient, addr: str, topic: str, queue_id: int = 0, suffix: str = ""
) -> None:
    """The matrix to one queue, each body followed by ``suffix``."""
    for body, props in MATRIX.items():
        cmd = send_v2(topic, f"{body}{suffix}".encode(), queue_id=queue_id, props=props)
        resp = await cli.invoke(addr, cmd)
        assert resp.code == 0, resp.remark


def sql_pull(
    group: str,
    topic: str,
    queue_id: int,
    offset: int,
    expression: str | None,
    *,
    sys_flag: int = api.FLAG_SUBSCRIPTION,
    sub_version: int = 0,
    suspend_ms: int = 3000,
    max_msgs: int = 32,
) -> RemotingCommand:
    """PULL_MESSAGE as ali-ons sends it for an SQL92 subscription (the expression in the
    header, expressionType SQL92), or, without FLAG_SUBSCRIPTION, as a Java push consumer."""
    return api.pull_message(
        group, topic, queue_id, offset, max_nums=max_msgs, sys_flag=sys_flag,
        suspend_ms=suspend_ms, subscription=expression, sub_version=sub_version,
        expression_type="SQL92",
    )  # fmt: skip


def sql_heartbeat(
    client_id: str, group: str, topic: str, expression: str, version: int
) -> RemotingCommand:
    """HEART_BEAT of a push consumer subscribing ``topic`` with an SQL92 expression."""
    sub = SubscriptionData.build(topic, expression, "SQL92", version)
    return api.heartbeat(client_id, consumers=[ConsumerData(group_name=group, subscriptions=[sub])])


def check_client_config(
    group: str, topic: str, expression: str, kind: str = "SQL92"
) -> RemotingCommand:
    """CHECK_CLIENT_CONFIG as MQClientInstance.checkClientInBroker sends it (the body written
    out here, as Java's CheckClientRequestBody)."""
    sub = SubscriptionData.build(topic, expression, kind)
    body = {"clientId": "127.0.0.1@sql", "group": group, "subscriptionData": sub.to_json()}
    return RemotingCommand.request(RequestCode.CHECK_CLIENT_CONFIG, {}, dumps(body))


def bodies(resp: RemotingCommand) -> set[str]:
    return {m.body.decode() for m in decode_records(resp.body)} if resp.code == 0 else set()
