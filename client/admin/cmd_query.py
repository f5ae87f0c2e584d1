"""Finding messages: queryMsgById (QueryMsgByIdSubCommand), queryMsgByKey
(QueryMsgByKeySubCommand), queryMsgByUniqueKey (QueryMsgByUniqueKeySubCommand); and what they
share: a message by id (MQAdminImpl.viewMessage / queryMessage), whether each group consumed it
(DefaultMQAdminExtImpl.messageTrackDetail), and a message's display.

A message's body is shown as text when it is UTF-8 made of printable characters; otherwise
the table says "<binary, N bytes>" and ``--json`` carries it in base64 (``bodyEncoding``
says "text" or "base64"). Apache writes the body to a file under /tmp instead.
"""

from __future__ import annotations

import asyncio
from argparse import Namespace
from typing import Any

from aiorocketmq.client import Message, MQClientError, Producer, api
from aiorocketmq.client.admin import api_group as g
from aiorocketmq.client.admin import msgview as view
from aiorocketmq.client.admin import requests as rq
from aiorocketmq.client.admin.cmd_group import (
    NotOnline,
    call_long,
    consume_stats,
    consumer_connection,
)
from aiorocketmq.client.admin.output import Output, Table
from aiorocketmq.client.admin.registry import command, opt
from aiorocketmq.client.admin.session import AdminError, Session
from aiorocketmq.remoting.errors import MessageDecodeError
from aiorocketmq.remoting.protocol.codes import ResponseCode as R
from aiorocketmq.remoting.protocol.message import MessageExt, Prop, decode_records
from aiorocketmq.remoting.protocol.msgid import parse_offset_msg_id

TRACK_COLUMNS = {
    "#ConsumerGroup": "consumerGroup",
    "#TrackType": "trackType",
    "#ExceptionDesc": "exceptionDesc",
}


def offset_id(msg_id: str) -> tuple[str, int] | None:
    """(store host, commit log offset) of an offsetMsgId; None for anything else (a UNIQ_KEY
    decodes too, but to a port no broker has)."""
    try:
        addr, offset = parse_offset_msg_id(msg_id)
    except MessageDecodeError:
        return None
    port = int(addr.rsplit(":", 1)[1])
    return (addr, offset) if 0 < port < 65536 and offset >= 0 else None


async def view_message(session: Session, msg_id: str) -> MessageExt:
    """VIEW_MESSAGE_BY_ID (33) at the store host the offsetMsgId names."""
    decoded = offset_id(msg_id)
    if decoded is None:
        raise AdminError(
            f"{msg_id} is not an offsetMsgId (query message by id finished, but "
            "no message); give -t <topic> to look it up as a unique key"
        )
    addr, offset = decoded
    resp = await session.ok(addr, api.view_message(offset))
    try:
        return decode_records(resp.body, inflate=True)[0]
    except (MessageDecodeError, IndexError) as exc:
        raise AdminError(f"{addr}: bad message record: {exc}") from None


async def query_messages(
    session: Session,
    topic: str,
    key: str,
    *,
    unique: bool,
    max_num: int = 64,
    begin: int = 0,
    end: int = g.LONG_MAX,
) -> list[MessageExt]:
    """MQAdminImpl.queryMessage: 105, then 12 to every broker of the topic at once; the
    matches by key (KEYS split by spaces, same topic) or by UNIQ_KEY, oldest stored first."""
    route = await session.route(topic)
    req = g.query_message(topic, key, max_num, begin, end, unique=unique)

    async def one(name: str, addr: str) -> list[MessageExt]:
        copy = api.request(req.code, dict(req.ext_fields))
        try:
            resp = await session.client.invoke(addr, copy, session.timeout * 3)
            msgs = decode_records(resp.body, inflate=True) if resp.code == R.SUCCESS else []
        except (MQClientError, MessageDecodeError):  # Apache logs it and goes on
            return []
        for m in msgs:
            m.broker_name = name
        return msgs

    asked = [one(b.broker_name, a) for b in route.broker_datas if (a := rq.select_addr(b))]
    found = [m for batch in await asyncio.gather(*asked) for m in batch]
    if unique:
        found = [m for m in found if view.client_msg_id(m) == key]
    else:
        found = [m for m in found if key in m.keys and m.topic == topic]
    if not found:
        what = "unique key" if unique else "key"
        raise AdminError(
            f"query message by key finished, but no message: no message with "
            f"{what} {key} in topic {topic}"
        )
    return sorted(found, key=lambda m: m.store_timestamp)


async def find_message(session: Session, msg_id: str, topic: str | None) -> MessageExt:
    """DefaultMQAdminExtImpl.viewMessage(topic, msgId): 33 for an offsetMsgId; for anything
    else, or when 33 fails and a topic is given, QUERY_MESSAGE by UNIQ_KEY."""
    if offset_id(msg_id) is not None or topic is None:
        try:
            return await view_message(session, msg_id)
        except AdminError:
            if topic is None:
                raise
    assert topic is not None
    return (await query_messages(session, topic, msg_id, unique=True, max_num=32))[0]


# ------------------------------------------------------------------ tracking


async def _consumed(session: Session, msg: MessageExt, group: str) -> bool:
    """DefaultMQAdminExtImpl.consumed: 105 + 208s and 106; the group's offset on the
    message's queue (of the broker whose master stored it) is past the message."""
    _tps, rows = await consume_stats(session, group)
    info = await session.cluster_info()
    for row in rows:
        if row.mq.topic != msg.topic or row.mq.queue_id != msg.queue_id:
            continue
        broker = info.broker_addr_table.get(row.mq.broker_name)
        if broker is not None and broker.master_addr == msg.store_host:
            return row.consumer_offset > msg.queue_offset
    return False


async def _track_group(session: Session, msg: MessageExt, group: str) -> dict[str, Any]:
    track: dict[str, Any] = {"consumerGroup": group, "trackType": "UNKNOWN", "exceptionDesc": None}
    try:
        cc = await consumer_connection(session, group)
        if cc.consume_type == "CONSUME_ACTIVELY":
            track["trackType"] = "PULL"
        elif cc.consume_type == "CONSUME_PASSIVELY":
            track["trackType"] = "NOT_CONSUME_YET"
            if await _consumed(session, msg, group):
                sub = cc.subscriptions.get(msg.topic)
                tags = sub.tags_set if sub is not None else []
                kept = not tags or "*" in tags or msg.tags in tags
                track["trackType"] = "CONSUMED" if kept else "CONSUMED_BUT_FILTERED"
    except NotOnline as exc:
        track.update(trackType="NOT_ONLINE", exceptionDesc=str(exc))
    except (AdminError, ValueError) as exc:
        track["exceptionDesc"] = str(exc)
    return track


async def tracks(session: Session, msg: MessageExt) -> tuple[list[dict[str, Any]], str | None]:
    """messageTrackDetail: the groups that consume the topic (105, then 300 to its first
    broker) and for each whether it consumed the message; or why that could not be told."""
    try:
        route = await session.route(msg.topic)
        addr = next((a for b in route.broker_datas if (a := rq.select_addr(b))), None)
        if addr is None:
            return [], f"the topic {msg.topic} has no broker in its route"
        groups = rq.parse_group_list((await session.ok(addr, rq.consume_by_who(msg.topic))).body)
    except (AdminError, ValueError) as exc:
        return [], str(exc)
    return [await _track_group(session, msg, group) for group in groups], None


async def message_output(session: Session, msgs: list[MessageExt], *, single: bool) -> Output:
    """Each message as printMsg shows it (its fields, then its track); ``--json``: a list of
    message records with ``tracks`` (one record when ``single``)."""
    out = Output()
    records = []
    for msg in msgs:
        found, error = await tracks(session, msg)
        records.append({**view.message_record(msg), "tracks": found, "tracksError": error})
        title = f"Message {view.client_msg_id(msg)}"
        out.tables.append(Table.pairs(view.message_pairs(msg), title=title))
        if found:
            out.tables.append(Table.of(TRACK_COLUMNS, found))
        else:
            out.tables.append(Table(["WARN"], [[error or "No Consumer"]]))
    out.data = records[0] if single else records
    return out


# ------------------------------------------------------------------ commands


async def _direct(session: Session, group: str, client_id: str, msg: MessageExt) -> dict[str, Any]:
    """consumeMessageDirectly: 309 with the offsetMsgId to the message's store host."""
    resp = await call_long(
        session, msg.store_host, g.consume_directly(group, client_id, msg.msg_id)
    )
    return {
        "msgId": view.client_msg_id(msg),
        "offsetMsgId": msg.msg_id,
        **g.parse_direct_result(resp.body),
    }


def _direct_output(results: list[dict[str, Any]]) -> Output:
    tables = [Table.pairs(r.items(), title="ConsumeMessageDirectlyResult") for r in results]
    return Output(data=results, tables=tables)


async def _resend(session: Session, msgs: list[MessageExt]) -> Output:
    """QueryMsgByIdSubCommand.sendMsg: each message sent again as stored (producer group
    ReSendMsgById, the same UNIQ_KEY)."""
    rows = []
    async with Producer(
        "ReSendMsgById",
        ";".join(session.namesrv_addrs),
        instance_name=f"mqadmin-{api.now_ms()}",
        **session.keywords,
    ) as producer:
        for msg in msgs:
            sent = await producer.send(
                Message(msg.topic, msg.body, flag=msg.flag, properties=dict(msg.properties))
            )
            rows.append(
                {
                    "originalMsgId": msg.msg_id,
                    "sendStatus": sent.status.name,
                    "msgId": sent.msg_id,
                    "offsetMsgId": sent.offset_msg_id,
                    "brokerName": sent.queue.broker_name,
                    "queueId": sent.queue.queue_id,
                }
            )
    return Output(data=rows, tables=[Table.of({f"#{k}": k for k in rows[0]}, rows)])


@command(
    "queryMsgById",
    "Query Message by Id (--json: a list of messages; a body that is not printable UTF-8 "
    "comes in base64, bodyEncoding says which)",
    opt("i", "msgId", "Message Id (offsetMsgId; several separated by commas)", required=True),
    opt("g", "consumerGroup", "consumer group name (with -d: consume it there directly)"),
    opt("d", "clientId", "The consumer's client id"),
    opt("s", "sendMessage", "resend message [true|false]"),
    opt("u", "unitName", "unit name (accepted; units are not supported)"),
    opt("t", "topic", "topic name: look an id up as a unique key too (as Apache 5.x)"),
)
async def query_msg_by_id(session: Session, args: Namespace) -> Output:
    """33 per id (QUERY_MESSAGE by UNIQ_KEY with -t when that fails), then the tracking:
    105 + 300, per group 105 + 203, 105 + 208s and 106; -g -d: 309; -s true: a resend."""
    ids = [i.strip() for i in args.msgId.split(",") if i.strip()]
    topic = args.topic.strip() if args.topic else None
    msgs = [await find_message(session, msg_id, topic) for msg_id in ids]
    if args.consumerGroup and args.clientId:
        group, cid = args.consumerGroup.strip(), args.clientId.strip()
        return _direct_output([await _direct(session, group, cid, m) for m in msgs])
    if args.sendMessage is not None:
        if args.sendMessage.strip().lower() != "true":
            return Output(data=[])
        return await _resend(session, msgs)
    return await message_output(session, msgs, single=False)


@command(
    "queryMsgByKey",
    "Query Message by Key",
    opt("t", "topic", "topic name", required=True),
    opt("k", "msgKey", "Message Key", required=True),
    opt(
        "b",
        "beginTimestamp",
        "Begin timestamp(ms or yyyy-MM-dd#HH:mm:ss:SSS), default 0 (as Apache 5.x)",
    ),
    opt("e", "endTimestamp", "End timestamp, default Long.MAX_VALUE (as Apache 5.x)"),
    opt(
        "m",
        "maxNum",
        "The maximum number of messages each broker returns, default 64 (as Apache 5.x)",
        kind=int,
        default=64,
    ),
)
async def query_msg_by_key(session: Session, args: Namespace) -> Output:
    """105, then 12 to each broker of the topic; the messages whose KEYS hold the key."""
    begin = g.parse_timestamp(args.beginTimestamp) if args.beginTimestamp else 0
    end = g.parse_timestamp(args.endTimestamp) if args.endTimestamp else g.LONG_MAX
    msgs = await query_messages(
        session,
        args.topic.strip(),
        args.msgKey.strip(),
        unique=False,
        max_num=args.maxNum,
        begin=begin,
        end=end,
    )
    rows = [
        {
            "msgId": view.client_msg_id(m),
            "offsetMsgId": m.msg_id,
            "topic": m.topic,
            "brokerName": m.broker_name,
            "queueId": m.queue_id,
            "queueOffset": m.queue_offset,
            "storeTimestamp": m.store_timestamp,
            "keys": m.properties.get(Prop.KEYS),
            "tags": m.tags,
        }
        for m in msgs
    ]
    columns = {"#Message ID": "msgId", "#QID": "queueId", "#Offset": "queueOffset"}
    return Output(data=rows, tables=[Table.of(columns, rows)])


@command(
    "queryMsgByUniqueKey",
    "Query Message by Unique key (--json: a list of messages, bodies as queryMsgById)",
    opt("i", "msgId", "Message Id (the producer's UNIQ_KEY, or an offsetMsgId)", required=True),
    opt("g", "consumerGroup", "consumer group name (with -d: consume it there directly)"),
    opt("d", "clientId", "The consumer's client id"),
    opt("t", "topic", "The topic of msg", required=True),
    opt("a", "showAll", "Print all message, the limit is 32", flag=True),
)
async def query_msg_by_unique_key(session: Session, args: Namespace) -> Output:
    """105 + 12 (by UNIQ_KEY) to each broker of the topic; -g -d: 309 to its store host."""
    msg_id, topic = args.msgId.strip(), args.topic.strip()
    if args.consumerGroup and args.clientId:
        msg = await find_message(session, msg_id, topic)
        group, cid = args.consumerGroup.strip(), args.clientId.strip()
        return _direct_output([await _direct(session, group, cid, msg)])
    msgs = await query_messages(session, topic, msg_id, unique=True, max_num=32)
    return await message_output(session, msgs if args.showAll else msgs[:1], single=False)
