"""Sending and reading messages with the SDK: sendMessage (SendMessageCommand, a Producer),
consumeMessage (ConsumeMessageCommand) and queryMsgByOffset (QueryMsgByOffsetSubCommand), both
pulling with a PullConsumer of group TOOLS_CONSUMER (or -g) that commits nothing.

Bodies are shown as queryMsgById shows them: text when printable UTF-8, else "<binary, N
bytes>"; ``--json`` gives text or base64 with ``bodyEncoding``.
"""

from __future__ import annotations

import time
from argparse import Namespace
from typing import Any

from aiorocketmq.client import Message, MessageQueue, Producer, PullConsumer, PullStatus, api
from aiorocketmq.client.admin import api_group as g
from aiorocketmq.client.admin import msgview as view
from aiorocketmq.client.admin.cmd_query import message_output
from aiorocketmq.client.admin.output import Output, Table
from aiorocketmq.client.admin.registry import command, opt
from aiorocketmq.client.admin.session import AdminError, Session
from aiorocketmq.remoting.protocol.message import MessageExt, Prop

MESSAGE_COLUMNS = {
    "#Broker Name": "brokerName",
    "#QID": "queueId",
    "#Offset": "queueOffset",
    "#MsgId": "msgId",
    "#Tags": "tags",
    "#Keys": "keys",
    "#StoreTime": "storeTime",
    "#Body": "bodyCell",
}
PULL_BATCH = 32  # what one pull asks for at most


def _instance() -> str:
    """Apache names each tool's client instance after the time, so it never shares one."""
    return f"mqadmin-{time.time_ns()}"


@command(
    "sendMessage",
    "Send a message",
    opt("t", "topic", "Topic name", required=True),
    opt("p", "body", "UTF-8 string format of the message body", required=True),
    opt("k", "key", "Message keys"),
    opt("c", "tags", "Message tags"),
    opt("b", "broker", "Send message to target broker"),
    opt("i", "qid", "Send message to target queue (with -b)", kind=int),
    opt(
        "m",
        "msgTraceEnable",
        "Message Trace Enable, Default: false (true: a Pub trace record is written)",
    ),
)
async def send_message(session: Session, args: Namespace) -> Output:
    """A Producer (group: the time in ms) sends it: 105, 34, 310, 35; to the queue ``-b -i``."""
    topic = args.topic.strip()
    if args.qid is not None and not args.broker:
        raise AdminError("Broker name must be set if the queue is chosen!")
    msg = Message(
        topic,
        args.body.strip().encode(),
        tags=(args.tags or "").strip() or None,
        keys=(args.key or "").strip() or None,
    )
    queue = None
    if args.broker and args.qid is not None and args.qid > -1:
        queue = MessageQueue(topic, args.broker.strip(), args.qid)
    async with Producer(
        str(api.now_ms()),
        ";".join(session.namesrv_addrs),
        instance_name=_instance(),
        trace=(args.msgTraceEnable or "").strip().lower() == "true",
        **session.keywords,
    ) as producer:
        sent = await producer.send(msg, queue=queue)
    row = {
        "brokerName": sent.queue.broker_name,
        "queueId": sent.queue.queue_id,
        "sendStatus": sent.status.name,
        "msgId": sent.msg_id,
        "offsetMsgId": sent.offset_msg_id,
        "queueOffset": sent.queue_offset,
    }
    columns = {
        "#Broker Name": "brokerName",
        "#QID": "queueId",
        "#Send Result": "sendStatus",
        "#MsgId": "msgId",
    }
    return Output(data=row, tables=[Table.of(columns, [row])])


def _row(msg: MessageExt) -> dict[str, Any]:
    return {
        **view.message_record(msg),
        "brokerName": msg.broker_name,
        "storeTime": g.format_time(msg.store_timestamp, millis=True),
        "bodyCell": view.body_cell(msg),
        "keys": msg.properties.get(Prop.KEYS),
    }


async def _pull_range(
    consumer: PullConsumer, mq: MessageQueue, low: int, high: int
) -> list[MessageExt]:
    """pullMessageByQueue: the messages at offsets [low, high), until the queue has no more."""
    out, offset = [], low
    while offset < high:
        raw = await consumer.pull_raw(mq, offset, min(PULL_BATCH, high - offset))
        if raw.status is not PullStatus.FOUND:
            break
        out += [m for m in raw.messages() if m.queue_offset < high]
        if raw.next_begin_offset <= offset:
            break
        offset = raw.next_begin_offset
    return out


def _check_options(args: Namespace) -> tuple[int, int]:
    """ConsumeMessageCommand's checks, in its order; the begin and end times (0: none)."""
    if args.MessageNumber <= 0:
        raise AdminError("Please input a positive messageNumber!")
    if args.queueId is not None and not args.brokerName:
        raise AdminError("Please set the brokerName before queueId!")
    if args.offset is not None and args.queueId is None:
        raise AdminError("Please set queueId before offset!")
    now = api.now_ms()
    begin = g.parse_timestamp(args.beginTimestamp) if args.beginTimestamp else 0
    end = g.parse_timestamp(args.endTimestamp) if args.endTimestamp else 0
    if begin > now:
        raise AdminError("Please set the beginTimestamp before now!")
    if end > now:
        raise AdminError("Please set the endTimestamp before now!")
    if end and begin > end:
        raise AdminError(
            "Please make sure that the beginTimestamp is less than or equal to the endTimestamp"
        )
    return begin, end


async def _bounds(
    consumer: PullConsumer, mq: MessageQueue, begin: int, end: int
) -> tuple[int, int]:
    """The queue's [min, max) offsets (29, 30, 31), narrowed to [begin, end) by time."""
    low = await consumer.offset_for_timestamp(mq, begin) if begin else await consumer.min_offset(mq)
    high = await consumer.offset_for_timestamp(mq, end) if end else await consumer.max_offset(mq)
    return low, high


@command(
    "consumeMessage",
    "Consume message (pulled with group TOOLS_CONSUMER or -g; nothing is committed)",
    opt("t", "topic", "Topic name", required=True),
    opt("b", "brokerName", "Broker name"),
    opt("i", "queueId", "Queue Id", kind=int),
    opt("o", "offset", "Queue offset", kind=int),
    opt("g", "consumerGroup", "Consumer group name"),
    opt("s", "beginTimestamp", "Begin timestamp[currentTimeMillis|yyyy-MM-dd#HH:mm:ss:SSS]"),
    opt(
        "e",
        "endTimestamp",
        "End timestamp[currentTimeMillis|yyyy-MM-dd#HH:mm:ss:SSS]: messages stored before it",
    ),
    opt(
        "c",
        "MessageNumber",
        "Number of message to be consumed (default 128)",
        kind=int,
        default=128,
    ),
)
async def consume_message(session: Session, args: Namespace) -> Output:
    """105, then per queue 31 / 30 (29 with -s / -e) and 11 pulls, at most -c messages."""
    begin, end = _check_options(args)
    topic, left, lines = args.topic.strip(), args.MessageNumber, []
    group = (args.consumerGroup or "").strip() or g.TOOLS_CONSUMER_GROUP
    msgs: list[MessageExt] = []
    async with PullConsumer(
        group,
        ";".join(session.namesrv_addrs),
        instance_name=_instance(),
        **session.keywords,
    ) as consumer:
        if args.queueId is not None:
            queues = [MessageQueue(topic, args.brokerName.strip(), args.queueId)]
        else:
            queues = await consumer.fetch_message_queues(topic)
        for mq in queues:
            if left <= 0:
                break
            low, high = await _bounds(consumer, mq, begin, end)
            if args.offset is not None:
                if args.offset > high:
                    lines.append(f"{mq} no matched msg, offset={args.offset}")
                    continue
                low = max(low, args.offset)
            if high - low > left:
                lines.append(
                    f"The older {left} message of the {mq.queue_id} queue will be provided"
                )
                high = low + left
            got = await _pull_range(consumer, mq, low, high)
            msgs += got
            left -= len(got)
    rows = [_row(m) for m in msgs]
    data = [{k: v for k, v in r.items() if k not in ("storeTime", "bodyCell")} for r in rows]
    return Output(data=data, tables=[Table.of(MESSAGE_COLUMNS, rows)], lines=lines)


@command(
    "queryMsgByOffset",
    "Query Message by offset (--json: one message, its body as queryMsgById's)",
    opt("t", "topic", "topic name", required=True),
    opt("b", "brokerName", "Broker Name", required=True),
    opt("i", "queueId", "Queue Id", required=True, kind=int),
    opt("o", "offset", "Queue Offset", required=True, kind=int),
)
async def query_msg_by_offset(session: Session, args: Namespace) -> Output:
    """One pull (11) of one message at the offset, then printMsg's tracking (as queryMsgById)."""
    mq = MessageQueue(args.topic.strip(), args.brokerName.strip(), args.queueId)
    async with PullConsumer(
        g.TOOLS_CONSUMER_GROUP,
        ";".join(session.namesrv_addrs),
        instance_name=_instance(),
        **session.keywords,
    ) as consumer:
        raw = await consumer.pull_raw(mq, args.offset, 1)
    msgs = raw.messages() if raw.status is PullStatus.FOUND else []
    if not msgs:
        raise AdminError(
            f"no message at offset {args.offset} of {mq.topic} {mq.broker_name} "
            f"queue {mq.queue_id}: {raw.status.name} (the queue holds offsets "
            f"{raw.min_offset} to {raw.max_offset - 1})"
        )
    return await message_output(session, msgs[:1], single=True)
