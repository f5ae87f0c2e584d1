"""queryMsgTraceById (QueryMsgTraceByIdSubCommand of 4.9.8): a message's trace records.

The trace topic's messages keyed by the id (QUERY_MESSAGE, 64 per broker, from 0 to now),
decoded (TraceDataEncoder) and kept where the record is about that id (TraceView): a table of
its Pub records, then one of SubAfter records per consumer group, Apache's columns. The
client host is the trace message's born host, as Apache shows it; ``--json`` lists every
record with all its fields.
"""

from __future__ import annotations

import time
from argparse import Namespace
from typing import Any

from aiorocketmq.client.admin.cmd_query import query_messages
from aiorocketmq.client.admin.output import Output, Table
from aiorocketmq.client.admin.registry import command, opt
from aiorocketmq.client.admin.session import Session
from aiorocketmq.client.trace.encoder import TRACE_TOPIC, TraceType, decode
from aiorocketmq.remoting.protocol.message import MessageExt, now_ms

PUB_COLUMNS = {
    "#Type": "type",
    "#ProducerGroup": "groupName",
    "#ClientHost": "clientHost",
    "#SendTime": "time",
    "#CostTimes": "costTimes",
    "#Status": "status",
}
SUB_COLUMNS = {
    "#Type": "type",
    "#ConsumerGroup": "groupName",
    "#ClientHost": "clientHost",
    "#ConsumerTime": "time",
    "#CostTimes": "costTimes",
    "#Status": "status",
}


def trace_views(msg_id: str, msg: MessageExt) -> list[dict[str, Any]]:
    """TraceView.decodeFromTraceTransData: the records of one trace message about
    ``msg_id``."""
    views = []
    for ctx in decode(msg.body.decode("utf-8", "replace")):
        bean = ctx.beans[0]
        if bean.msg_id != msg_id:
            continue
        views.append({
            "msgType": ctx.type.value,
            "msgId": bean.msg_id,
            "offSetMsgId": bean.offset_msg_id,
            "topic": bean.topic,
            "tags": bean.tags,
            "keys": bean.keys,
            "groupName": ctx.group,
            "storeHost": bean.store_host,
            "clientHost": msg.born_host.rsplit(":", 1)[0],  # getBornHostString: the address
            "timeStamp": ctx.timestamp,
            "costTime": ctx.cost_time,
            "status": "success" if ctx.success else "failed",
        })  # fmt: skip
    return views


def _row(view: dict[str, Any], kind: str) -> dict[str, Any]:
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(view["timeStamp"] / 1000))
    return {**view, "type": kind, "time": when, "costTimes": f"{view['costTime']}ms"}


@command(
    "queryMsgTraceById",
    "query a message trace",
    opt("i", "msgId", "Message Id", required=True),
    opt("t", "traceTopic", "The name value of message trace topic"),
)
async def query_msg_trace_by_id(session: Session, args: Namespace) -> Output:
    """105, then 12 to each broker of the trace topic (the id as the key)."""
    msg_id = args.msgId.strip()
    topic = (args.traceTopic or TRACE_TOPIC).strip()
    found = await query_messages(session, topic, msg_id, unique=False, end=now_ms())
    views = [v for m in found for v in trace_views(msg_id, m)]
    tables = []
    pubs = [_row(v, "Pub") for v in views if v["msgType"] == TraceType.Pub.value]
    if pubs:
        tables.append(Table.of(PUB_COLUMNS, pubs))
    groups: dict[str, list[dict[str, Any]]] = {}
    for v in views:
        if v["msgType"] == TraceType.SubAfter.value:
            groups.setdefault(v["groupName"], []).append(_row(v, "Sub"))
    tables += [Table.of(SUB_COLUMNS, rows) for rows in groups.values()]
    return Output(data=views, tables=tables)
