"""Consume progress and offsets: consumerProgress (ConsumerProgressSubCommand) and
resetOffsetByTime (ResetOffsetByTimeCommand, falling back to ResetOffsetByTimeOldCommand's
way when no consumer of the group is online)."""

from __future__ import annotations

from argparse import Namespace
from typing import Any

from aiorocketmq.client import api
from aiorocketmq.client.admin import api_group as g
from aiorocketmq.client.admin import requests as rq
from aiorocketmq.client.admin.cmd_group import call_long, consume_stats, consumer_connection
from aiorocketmq.client.admin.output import Output, Table
from aiorocketmq.client.admin.registry import command, opt
from aiorocketmq.client.admin.session import AdminError, Session, refusal
from aiorocketmq.remoting.protocol.codes import RequestCode as C
from aiorocketmq.remoting.protocol.codes import ResponseCode as R
from aiorocketmq.remoting.protocol.heartbeat import MessageQueue as MQ
from aiorocketmq.remoting.protocol.topic import RETRY_GROUP_TOPIC_PREFIX, retry_topic

PROGRESS_COLUMNS = {
    "#Topic": "topic",
    "#Broker Name": "brokerName",
    "#QID": "queueId",
    "#Broker Offset": "brokerOffset",
    "#Consumer Offset": "consumerOffset",
    "#Client IP": "clientIp",
    "#Diff": "diff",
    "#LastTime": "lastTime",
}
GROUPS_COLUMNS = {
    "#Group": "group",
    "#Count": "count",
    "#Version": "version",
    "#Type": "consumeType",
    "#Model": "messageModel",
    "#TPS": "consumeTps",
    "#Diff Total": "diffTotal",
}


async def _allocation(session: Session, group: str) -> dict[MQ, str]:
    """getMessageQueueAllocationResult: which client (its IP) holds each queue -- 203, then
    307 through the broker to each client. As Apache's, a failure leaves queues unnamed."""
    found: dict[MQ, str] = {}
    try:
        cc = await consumer_connection(session, group)
        route = await session.route(retry_topic(group))
        addr = next(a for b in route.broker_datas if (a := rq.select_addr(b)) is not None)
        for conn in cc.connections:
            resp = await call_long(session, addr, g.running_info(group, conn.client_id))
            for mq in g.parse_running_queues(resp.body):
                found[mq] = conn.client_id.split("@")[0]
    except (AdminError, ValueError, StopIteration):
        pass
    return found


def _progress_record(r: g.OffsetRow, owners: dict[MQ, str], show_ip: bool) -> dict[str, Any]:
    return {
        "topic": r.mq.topic,
        "brokerName": r.mq.broker_name,
        "queueId": r.mq.queue_id,
        "brokerOffset": r.broker_offset,
        "consumerOffset": r.consumer_offset,
        "clientIp": owners.get(r.mq, "N/A") if show_ip else None,
        "diff": r.diff,
        "lastTimestamp": r.last_timestamp,
        "lastTime": g.format_time(r.last_timestamp) if r.last_timestamp else "N/A",
    }


async def _group_progress(session: Session, group: str, show_ip: bool) -> Output:
    """One group's queues: 105 + 208 per broker; ``-s true`` adds 105, 203 and 307s."""
    tps, rows = await consume_stats(session, group)
    owners = await _allocation(session, group) if show_ip else {}
    records = [_progress_record(r, owners, show_ip) for r in rows]
    total = sum(r.diff for r in rows)
    columns = dict(PROGRESS_COLUMNS)
    if not show_ip:
        columns.pop("#Client IP")
    queues = [
        {k: v for k, v in rec.items() if k != "lastTime" and (show_ip or k != "clientIp")}
        for rec in records
    ]
    data = {"group": group, "queues": queues, "consumeTps": tps, "diffTotal": total}
    lines = ["", f"Consume TPS: {tps:.2f}", f"Diff Total: {total}"]
    return Output(data=data, tables=[Table.of(columns, records)], lines=lines)


async def _one_group_summary(session: Session, group: str) -> dict[str, Any]:
    """A row of the all-groups table: 105 + 208s, 105 + 203 (each may fail, as Apache's)."""
    row: dict[str, Any] = {
        "group": group,
        "count": 0,
        "version": "OFFLINE",
        "consumeType": "",
        "messageModel": "",
        "consumeTps": 0,
        "diffTotal": 0,
    }
    try:
        tps, rows = await consume_stats(session, group)
        row["consumeTps"], row["diffTotal"] = int(tps), sum(r.diff for r in rows)
    except (AdminError, ValueError):
        pass
    try:
        cc = await consumer_connection(session, group)
    except (AdminError, ValueError):
        return row
    push = cc.consume_type == "CONSUME_PASSIVELY"
    row.update(
        count=len(cc.connections),
        version=g.version_name(cc.min_version),
        consumeType="PUSH" if push else "PULL",
        messageModel=cc.message_model if push else "",
    )
    return row


async def _all_groups(session: Session) -> Output:
    """206, then for each ``%RETRY%<group>`` topic the group's summary."""
    topics = api.parse_topic_list(await session.namesrv(api.all_topics()))
    groups = sorted(
        t[len(RETRY_GROUP_TOPIC_PREFIX) :] for t in topics if t.startswith(RETRY_GROUP_TOPIC_PREFIX)
    )
    rows = [await _one_group_summary(session, group) for group in groups]
    return Output(data=rows, tables=[Table.of(GROUPS_COLUMNS, rows)])


@command(
    "consumerProgress",
    "Query consumers's progress, speed",
    opt("g", "groupName", "consumer group name (all groups when absent)"),
    opt("s", "showClientIP", "Show Client IP per Queue [true|false]"),
)
async def consumer_progress(session: Session, args: Namespace) -> Output:
    if args.groupName:
        show_ip = (args.showClientIP or "").strip().lower() == "true"
        return await _group_progress(session, args.groupName.strip(), show_ip)
    return await _all_groups(session)


# ------------------------------------------------------------------ resetOffsetByTime


async def _reset_by_brokers(
    session: Session, topic: str, group: str, ts: int, force: bool, cplus: bool
) -> dict[MQ, int] | None:
    """resetOffsetByTimestamp: 105, then 222 to each broker of the topic (each tells the
    group's consumers, 220); None when a broker says no consumer is online (206)."""
    table: dict[MQ, int] = {}
    route = await session.route(topic)
    for broker in route.broker_datas:
        addr = rq.select_addr(broker)
        if addr is None:
            continue
        resp = await session.call(addr, g.reset_offset(topic, group, ts, force, cplus))
        if resp.code == R.CONSUMER_NOT_ONLINE:
            return None
        if resp.code != R.SUCCESS:
            raise refusal(resp, addr)
        table.update(g.parse_offset_table(resp.body) if resp.body else {})
    return table


async def _rollback(
    session: Session, addr: str, group: str, row: g.OffsetRow, ts: int, force: bool
) -> dict[str, Any]:
    """resetOffsetConsumeOffset: 30 (now) or 29 for the target, 15 when it is kept."""
    code = C.GET_MAX_OFFSET if ts == -1 else C.SEARCH_OFFSET_BY_TIMESTAMP
    req = g.queue_offset(code, row.mq, None if ts == -1 else ts)
    target = api.parse_offset(await session.ok(addr, req), addr)
    rollback = row.consumer_offset
    if force or target <= row.consumer_offset:
        rollback = target
        await session.ok(addr, g.update_offset(group, row.mq, target))
    return {
        "brokerName": row.mq.broker_name,
        "queueId": row.mq.queue_id,
        "brokerOffset": row.broker_offset,
        "consumerOffset": row.consumer_offset,
        "timestampOffset": target,
        "rollbackOffset": rollback,
        "offset": rollback,
    }


async def _reset_old(
    session: Session, topic: str, group: str, ts: int, force: bool
) -> list[dict[str, Any]]:
    """resetOffsetByTimestampOld: per broker, 208 for the group's queues of the topic (or,
    when it has none there, 202 for the topic's), then each queue rolled back."""
    route = await session.route(topic)
    read_nums = {q.broker_name: q.read_queue_nums for q in route.queue_datas}
    out = []
    for broker in route.broker_datas:
        addr = rq.select_addr(broker)
        if addr is None:
            continue
        stats = g.parse_consume_stats(
            (await call_long(session, addr, rq.consume_stats(group))).body
        )
        rows = [r for r in stats[1] if r.mq.topic == topic]
        if not rows:
            bounds = g.parse_topic_stats((await session.ok(addr, rq.topic_stats(topic))).body)
            for qid in range(read_nums.get(broker.broker_name, 0)):
                mq = MQ(topic, broker.broker_name, qid)
                low, high = bounds.get(mq, (0, 0))
                rows.append(g.OffsetRow(mq, high, low, 0))
        out += [await _rollback(session, addr, group, r, ts, force) for r in sorted(rows)]
    return out


@command(
    "resetOffsetByTime",
    "Reset consumer offset by timestamp(without client restart).",
    opt("g", "group", "set the consumer group", required=True),
    opt("t", "topic", "set the topic", required=True),
    opt(
        "s",
        "timestamp",
        "set the timestamp[now|currentTimeMillis|yyyy-MM-dd#HH:mm:ss:SSS]",
        required=True,
    ),
    opt("f", "force", "set the force rollback by timestamp switch[true|false] (default true)"),
    opt("c", "cplus", "reset c++ client offset", flag=True),
)
async def reset_offset_by_time(session: Session, args: Namespace) -> Output:
    group, topic, text = args.group.strip(), args.topic.strip(), args.timestamp.strip()
    ts = g.parse_timestamp(text, allow_now=True)
    force = args.force is None or args.force.strip().lower() == "true"
    table = await _reset_by_brokers(session, topic, group, ts, force, args.cplus)
    head = (
        f"rollback consumer offset by specified group[{group}], topic[{topic}], "
        f"force[{str(force).lower()}], timestamp(string)[{text}], timestamp(long)[{ts}]"
    )
    data: dict[str, Any] = {
        "group": group,
        "topic": topic,
        "force": force,
        "timestamp": ts,
        "fallback": table is None,
    }
    if table is not None:
        rows = [
            {"brokerName": mq.broker_name, "queueId": mq.queue_id, "offset": off}
            for mq, off in sorted(table.items())
        ]
        columns = {"#brokerName": "brokerName", "#queueId": "queueId", "#offset": "offset"}
    else:
        rows = await _reset_old(session, topic, group, ts, force)
        columns = {
            f"#{k}": k
            for k in (
                "brokerName",
                "queueId",
                "brokerOffset",
                "consumerOffset",
                "timestampOffset",
                "rollbackOffset",
            )
        }
    data["queues"] = rows
    return Output(data=data, tables=[Table.of(columns, rows, title=head)])
