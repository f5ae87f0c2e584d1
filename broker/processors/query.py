"""QueryProcessor: queue bounds, offsets by time, messages by id and by key.

GET_MAX_OFFSET (30), GET_MIN_OFFSET (31), GET_EARLIEST_MSG_STORETIME (32),
SEARCH_OFFSET_BY_TIMESTAMP (29), VIEW_MESSAGE_BY_ID (33), QUERY_MESSAGE (12),
GET_TOPIC_STATS_INFO (202). All read the store only, so all are plain functions.
"""

from __future__ import annotations

from aiorocketmq.broker.context import BrokerContext
from aiorocketmq.remoting.channel import Channel
from aiorocketmq.remoting.protocol import fastjson
from aiorocketmq.remoting.protocol.codes import ResponseCode
from aiorocketmq.remoting.protocol.command import RemotingCommand, response_to
from aiorocketmq.remoting.protocol.headers.admin import (
    OffsetResponseHeader,
    QueryMessageRequestHeader,
    QueryMessageResponseHeader,
    QueueRequestHeader,
    SearchOffsetRequestHeader,
    TimestampResponseHeader,
    TopicRequestHeader,
    ViewMessageRequestHeader,
)
from aiorocketmq.remoting.protocol.message import decode_record

UNIQUE_KEY_QUERY = "_UNIQUE_KEY_QUERY"
DEFAULT_QUERY_MAX_NUM = 32  # MessageStoreConfig.defaultQueryMaxNum
MAX_MSGS_NUM_BATCH = 64  # MessageStoreConfig.maxMsgsNumBatch: DefaultMessageStore caps maxNum
HEADER_ROOM = 64 * 1024  # of a frame, left for the response's header


def _offset(req: RemotingCommand, offset: int) -> RemotingCommand:
    ext = OffsetResponseHeader(offset=offset).to_ext()
    return response_to(req, ResponseCode.SUCCESS, ext_fields=ext)


class QueryProcessor:
    def __init__(self, ctx: BrokerContext) -> None:
        self.ctx = ctx

    def max_offset(self, req: RemotingCommand, ch: Channel) -> RemotingCommand:
        hdr = QueueRequestHeader.from_ext(req.ext_fields)
        return _offset(req, self.ctx.store.max_offset(hdr.topic, hdr.queue_id))

    def min_offset(self, req: RemotingCommand, ch: Channel) -> RemotingCommand:
        hdr = QueueRequestHeader.from_ext(req.ext_fields)
        return _offset(req, self.ctx.store.min_offset(hdr.topic, hdr.queue_id))

    def earliest_store_time(self, req: RemotingCommand, ch: Channel) -> RemotingCommand:
        hdr = QueueRequestHeader.from_ext(req.ext_fields)
        ts = self.ctx.store.earliest_store_time(hdr.topic, hdr.queue_id)
        ext = TimestampResponseHeader(timestamp=ts).to_ext()
        return response_to(req, ResponseCode.SUCCESS, ext_fields=ext)

    def search_offset(self, req: RemotingCommand, ch: Channel) -> RemotingCommand:
        """5.x semantics: LOWER (default) is the first offset stored at or after the time."""
        # compat: 4.9.8 (ConsumeQueue.getOffsetInQueueByTime) answers the offset stored nearest
        # the time, which may be one stored before it, and max-1 when all are older; we keep
        # the 5.x rule protocol.md chose -- never a message from before the time, never a replay
        # of the newest one -- for CONSUME_FROM_TIMESTAMP, offsetForTimestamp and resets alike
        hdr = SearchOffsetRequestHeader.from_ext(req.ext_fields)
        upper = (hdr.boundary_type or "LOWER").upper() == "UPPER"
        offset = self.ctx.store.offset_by_time(hdr.topic, hdr.queue_id, hdr.timestamp, upper=upper)
        return _offset(req, offset)

    def view_message(self, req: RemotingCommand, ch: Channel) -> RemotingCommand:
        offset = ViewMessageRequestHeader.from_ext(req.ext_fields).offset
        record = self.ctx.store.read(offset)
        if record is None:
            return response_to(
                req, ResponseCode.SYSTEM_ERROR, f"can not find message by the offset, {offset}"
            )
        return response_to(req, ResponseCode.SUCCESS, body=record)

    def query_message(self, req: RemotingCommand, ch: Channel) -> RemotingCommand:
        hdr = QueryMessageRequestHeader.from_ext(req.ext_fields)
        max_num = min(hdr.max_num, MAX_MSGS_NUM_BATCH)
        if req.ext_fields.get(UNIQUE_KEY_QUERY) == "true":
            max_num = DEFAULT_QUERY_MAX_NUM
        found = self.ctx.store.query(
            hdr.topic, hdr.key, max_num, hdr.begin_timestamp, hdr.end_timestamp
        )
        records = _fitting(found, self.ctx.server_config.frame_max_length - HEADER_ROOM)
        if not records:
            return response_to(
                req,
                ResponseCode.QUERY_NOT_FOUND,
                "can not find message, maybe time range not correct",
            )
        ext = QueryMessageResponseHeader(
            index_last_update_timestamp=_store_time(records[-1]),
            index_last_update_phyoffset=self.ctx.store.max_phys_offset,
        ).to_ext()
        return response_to(req, ResponseCode.SUCCESS, ext_fields=ext, body=b"".join(records))

    def topic_stats(self, req: RemotingCommand, ch: Channel) -> RemotingCommand:
        """TopicStatsTable, keyed by MessageQueue objects as Java tools read it."""
        topic = TopicRequestHeader.from_ext(req.ext_fields).topic
        config = self.ctx.topics.get(topic)
        if config is None:
            return response_to(req, ResponseCode.TOPIC_NOT_EXIST, f"topic[{topic}] not exist")
        store, name = self.ctx.store, self.ctx.config.broker_name
        rows = []
        for qid in range(config.write_queue_nums):
            high = store.max_offset(topic, qid)
            last = store.store_time(topic, qid, high - 1) if high > 0 else 0
            mq = {"brokerName": name, "queueId": qid, "topic": topic}
            rows.append(
                (
                    mq,
                    {
                        "lastUpdateTimestamp": max(last, 0),
                        "maxOffset": high,
                        "minOffset": store.min_offset(topic, qid),
                    },
                )
            )
        body = '{"offsetTable":' + fastjson.dumps_object_keyed(rows) + "}"
        return response_to(req, ResponseCode.SUCCESS, body=body.encode())


def _fitting(records: list[bytes], budget: int) -> list[bytes]:
    """The newest records whose sum fits one frame: a key with more matches than a frame
    holds is still answered (with the newest), never with a frame no client can read."""
    out, total = [], 0
    for record in records:
        total += len(record)
        if total > budget:
            break
        out.append(record)
    return out


def _store_time(record: bytes) -> int:
    return decode_record(record).store_timestamp
