"""Consumer and producer group commands: updateSubGroup (UpdateSubGroupSubCommand),
deleteSubGroup (DeleteSubscriptionGroupCommand), consumerConnection
(ConsumerConnectionSubCommand), producerConnection (ProducerConnectionSubCommand); and the
group look-ups other commands share (DefaultMQAdminExtImpl.examineConsumeStats,
examineConsumerConnectionInfo)."""

from __future__ import annotations

import random
from argparse import Namespace
from typing import Any

from aiorocketmq.client import MQClientError
from aiorocketmq.client.admin import api_group as g
from aiorocketmq.client.admin import requests as rq
from aiorocketmq.client.admin.output import Output, Table
from aiorocketmq.client.admin.registry import command, opt
from aiorocketmq.client.admin.session import AdminError, Session, refusal
from aiorocketmq.remoting.protocol.codes import ResponseCode as R
from aiorocketmq.remoting.protocol.command import RemotingCommand
from aiorocketmq.remoting.protocol.group import SubscriptionGroupConfig
from aiorocketmq.remoting.protocol.topic import dlq_topic, retry_topic


class NotOnline(AdminError):
    """The group has no consumer online, or no consume stats (CONSUMER_NOT_ONLINE)."""


async def call_long(session: Session, addr: str, req: RemotingCommand) -> RemotingCommand:
    """A request Java's admin gives three times its timeout (208, 307, 309), answered SUCCESS."""
    try:
        resp = await session.client.invoke(addr, req, session.timeout * 3)
    except MQClientError as exc:  # "<addr>: <the remoting failure>"
        raise AdminError(str(exc)) from None
    if resp.code != R.SUCCESS:
        raise refusal(resp, addr)
    return resp


async def group_addrs(session: Session, group: str) -> list[str]:
    """The broker of each group of the ``%RETRY%<group>`` route (105)."""
    route = await session.route(retry_topic(group))
    return [a for b in route.broker_datas if (a := rq.select_addr(b)) is not None]


async def consume_stats(
    session: Session, group: str, topic: str | None = None
) -> tuple[float, list[g.OffsetRow]]:
    """examineConsumeStats: 105 for the retry topic, then 208 to each of its brokers."""
    tps, rows = 0.0, list[g.OffsetRow]()
    for addr in await group_addrs(session, group):
        resp = await call_long(session, addr, rq.consume_stats(group, topic))
        more_tps, more = g.parse_consume_stats(resp.body)
        tps, rows = tps + more_tps, rows + more
    if not rows:
        raise NotOnline(
            f"Not found the consumer group {group} consume stats: the offset table "
            "is empty, maybe the consumer has not consumed any message"
        )
    return tps, sorted(rows, key=lambda r: r.mq)


async def consumer_connection(
    session: Session, group: str, addr: str | None = None
) -> g.ConsumerConnection:
    """examineConsumerConnectionInfo: 203 to ``addr``, else to a random broker of the
    ``%RETRY%<group>`` route (105)."""
    if addr is None:
        addrs = await group_addrs(session, group)
        if not addrs:
            raise NotOnline(f"the consumer group {group} has no broker in its retry topic route")
        addr = random.choice(addrs)
    resp = await session.call(addr, g.consumer_connection(group))
    if resp.code == R.CONSUMER_NOT_ONLINE:
        raise NotOnline(refusal(resp, addr).args[0], refused=True)
    if resp.code != R.SUCCESS:
        raise refusal(resp, addr)
    cc = g.parse_consumer_connection(resp.body)
    if not cc.connections:
        raise NotOnline(f"Not found the consumer group {group} connection")
    return cc


async def _target_addrs(session: Session, args: Namespace) -> list[str]:
    """``-b`` one broker, or ``-c`` every master of the cluster (106)."""
    if args.brokerAddr:
        return [args.brokerAddr.strip()]
    if args.clusterName:
        masters = await session.masters(args.clusterName.strip())
        return [m.master_addr for m in masters if m.master_addr is not None]
    raise AdminError("give -b brokerAddr or -c clusterName")


def _flag(text: str | None, default: bool) -> bool:
    return default if text is None else text.strip().lower() == "true"  # Boolean.parseBoolean


def _group_config(args: Namespace) -> SubscriptionGroupConfig:
    """The command's config: broadcast and from-min off unless given (as Apache's)."""
    c = SubscriptionGroupConfig(
        group_name=args.groupName.strip(),
        consume_broadcast_enable=False,
        consume_from_min_enable=False,
    )
    c.consume_enable = _flag(args.consumeEnable, c.consume_enable)
    c.consume_from_min_enable = _flag(args.consumeFromMinEnable, False)
    c.consume_broadcast_enable = _flag(args.consumeBroadcastEnable, False)
    c.notify_consumer_ids_changed_enable = _flag(args.notifyConsumerIdsChanged, True)
    for attr, value in (
        ("retry_queue_nums", args.retryQueueNums),
        ("retry_max_times", args.retryMaxTimes),
        ("broker_id", args.brokerId),
        ("which_broker_when_consume_slowly", args.whichBrokerWhenConsumeSlowly),
    ):
        if value is not None:
            setattr(c, attr, value)
    return c


@command(
    "updateSubGroup",
    "Update or create subscription group",
    opt("b", "brokerAddr", "create subscription group to which broker"),
    opt("c", "clusterName", "create subscription group to which cluster"),
    opt("g", "groupName", "consumer group name", required=True),
    opt("s", "consumeEnable", "consume enable [true|false]"),
    opt("m", "consumeFromMinEnable", "from min offset [true|false]"),
    opt("d", "consumeBroadcastEnable", "broadcast [true|false]"),
    opt("q", "retryQueueNums", "retry queue nums", kind=int),
    opt("r", "retryMaxTimes", "retry max times", kind=int),
    opt("i", "brokerId", "consumer from which broker id", kind=int),
    opt("w", "whichBrokerWhenConsumeSlowly", "which broker id when consume slowly", kind=int),
    opt("a", "notifyConsumerIdsChanged", "notify consumerId changed [true|false]"),
)
async def update_sub_group(session: Session, args: Namespace) -> Output:
    """200 to ``-b``, or 106 then 200 to each master of ``-c`` (a failing master is reported
    and the others still get it, as Apache's)."""
    config = _group_config(args)
    lines, done, errors = [], [], []
    for addr in await _target_addrs(session, args):
        try:
            await session.ok(addr, g.create_group(config))
        except AdminError as exc:
            errors.append(str(exc))
            continue
        done.append(addr)
        lines.append(f"create subscription group to {addr} success.")
    data = {"config": config.to_json(), "brokers": done, "errors": errors}
    table = Table.pairs(sorted(config.to_json().items()), title="SubscriptionGroupConfig")
    return Output(data=data, tables=[table], lines=lines + errors, failed=bool(errors))


@command(
    "deleteSubGroup",
    "Delete subscription group from broker.",
    opt("b", "brokerAddr", "delete subscription group from which broker"),
    opt("c", "clusterName", "delete subscription group from which cluster"),
    opt("g", "groupName", "subscription group name", required=True),
    opt("r", "removeOffset", "remove offset [true|false]"),
)
async def delete_sub_group(session: Session, args: Namespace) -> Output:
    """207 to ``-b``; or 106, 207 to each master of ``-c``, then the group's retry and DLQ
    topics deleted from the cluster (215 per master, 216 per name server)."""
    group, remove = args.groupName.strip(), _flag(args.removeOffset, False)
    lines = []
    for addr in await _target_addrs(session, args):
        await session.ok(addr, g.delete_group(group, remove))
        where = f" in cluster [{args.clusterName.strip()}]" if not args.brokerAddr else ""
        lines.append(f"delete subscription group [{group}] from broker [{addr}]{where} success.")
    errors: list[str] = []
    if not args.brokerAddr:
        cluster = args.clusterName.strip()
        for topic in (retry_topic(group), dlq_topic(group)):
            try:
                lines += await _delete_topic(session, cluster, topic)
            except AdminError as exc:  # Apache prints it and carries on
                errors.append(str(exc))
    data = {"group": group, "removeOffset": remove, "messages": lines, "errors": errors}
    return Output(data=data, lines=lines + errors)


async def _delete_topic(session: Session, cluster: str, topic: str) -> list[str]:
    """DeleteTopicSubCommand.deleteTopic: 215 to each master, 216 to each name server."""
    for master in await session.masters(cluster):
        if master.master_addr is not None:
            await session.ok(master.master_addr, rq.delete_topic_in_broker(topic))
    lines = [f"delete topic [{topic}] from cluster [{cluster}] success."]
    for addr, resp in (
        await session.each_namesrv(rq.delete_topic_in_namesrv(topic, cluster))
    ).items():
        if isinstance(resp, str):
            raise AdminError(resp)
        if resp.code != R.SUCCESS:
            raise refusal(resp, addr)
    return [*lines, f"delete topic [{topic}] from NameServer success."]


CONNECTION_COLUMNS = {
    "#ClientId": "clientId",
    "#ClientAddr": "clientAddr",
    "#Language": "language",
    "#Version": "version",
}


@command(
    "consumerConnection",
    "Query consumer's socket connection, client version and subscription",
    opt("g", "consumerGroup", "consumer group name", required=True),
    opt("b", "brokerAddr", "broker address"),
)
async def consumer_connection_cmd(session: Session, args: Namespace) -> Output:
    """203 to ``-b``, else 105 for ``%RETRY%<group>`` and 203 to one of its brokers."""
    group = args.consumerGroup.strip()
    cc = await consumer_connection(session, group, (args.brokerAddr or "").strip() or None)
    conns = [c.to_json() for c in cc.connections]
    subs = [
        {"topic": s.topic, "subExpression": s.sub_string, "expressionType": s.expression_type}
        for _t, s in sorted(cc.subscriptions.items())
    ]
    data: dict[str, Any] = {
        "group": group,
        "connections": conns,
        "subscriptions": subs,
        "consumeType": cc.consume_type,
        "messageModel": cc.message_model,
        "consumeFromWhere": cc.consume_from_where,
    }
    tables = [
        Table.of(CONNECTION_COLUMNS, conns),
        Table.of(
            {"#Topic": "topic", "#SubExpression": "subExpression"},
            subs,
            title="Below is subscription:",
        ),
    ]
    lines = [
        f"ConsumeType: {cc.consume_type}",
        f"MessageModel: {cc.message_model}",
        f"ConsumeFromWhere: {cc.consume_from_where}",
    ]
    return Output(data=data, tables=tables, lines=lines)


@command(
    "producerConnection",
    "Query producer's socket connection and client version",
    opt("g", "producerGroup", "producer group name", required=True),
    opt("t", "topic", "topic name", required=True),
)
async def producer_connection_cmd(session: Session, args: Namespace) -> Output:
    """105 for the topic, then 204 to one of its brokers (examineProducerConnectionInfo)."""
    group, topic = args.producerGroup.strip(), args.topic.strip()
    route = await session.route(topic)
    addrs = [a for b in route.broker_datas if (a := rq.select_addr(b)) is not None]
    if not addrs:
        raise AdminError(f"the topic {topic} has no broker in its route")
    addr = random.choice(addrs)
    conns = g.parse_producer_connection((await session.ok(addr, g.producer_connection(group))).body)
    if not conns:
        raise AdminError(f"Not found the producer group {group} connection")
    rows = [{"#": f"{i:04d}", **c.to_json()} for i, c in enumerate(conns, 1)]
    data = {
        "group": group,
        "topic": topic,
        "broker": addr,
        "connections": [c.to_json() for c in conns],
    }
    return Output(data=data, tables=[Table.of({"#": "#", **CONNECTION_COLUMNS}, rows)])
