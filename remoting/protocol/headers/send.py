"""SEND_MESSAGE (10) / SEND_MESSAGE_V2 (310) / SEND_BATCH_MESSAGE (320) headers (protocol.md 5.1).

One class serves both key sets: code 10 uses the long names, codes 310, 320 and 325 the
one-letter keys (``from_ext(ext, v2=True)``), as Java's SendMessageRequestHeaderV2 does.
"""

from __future__ import annotations

from dataclasses import field

from aiorocketmq.remoting.protocol.headers.base import Header, Int32, header, wire


@header
class SendMessageHeader(Header):
    """SEND_MESSAGE (10) and SEND_MESSAGE_V2 (310, its one-letter keys)."""

    producer_group: str = field(metadata=wire("producerGroup", v2="a"))
    topic: str = field(metadata=wire("topic", v2="b"))
    default_topic: str = field(metadata=wire("defaultTopic", v2="c"))
    default_topic_queue_nums: Int32 = field(metadata=wire("defaultTopicQueueNums", v2="d"))
    queue_id: Int32 = field(metadata=wire("queueId", v2="e"))
    sys_flag: Int32 = field(metadata=wire("sysFlag", v2="f"))
    born_timestamp: int = field(metadata=wire("bornTimestamp", v2="g"))
    flag: Int32 = field(metadata=wire("flag", v2="h"))
    properties: str | None = field(default=None, metadata=wire("properties", v2="i"))
    reconsume_times: Int32 | None = field(default=None, metadata=wire("reconsumeTimes", v2="j"))
    unit_mode: bool = field(default=False, metadata=wire("unitMode", v2="k"))
    max_reconsume_times: Int32 | None = field(
        default=None, metadata=wire("maxReconsumeTimes", v2="l")
    )
    batch: bool = field(default=False, metadata=wire("batch", v2="m"))
    broker_name: str | None = field(default=None, metadata=wire("brokerName", v2="n"))


@header
class SendMessageResponseHeader(Header):
    """A send's answer: msgId, queue, offset, transaction id."""

    msg_id: str = field(metadata=wire("msgId"))
    queue_id: Int32 = field(metadata=wire("queueId"))
    queue_offset: int = field(metadata=wire("queueOffset"))
    transaction_id: str | None = field(default=None, metadata=wire("transactionId"))
    msg_region: str | None = field(default=None, metadata=wire("MSG_REGION"))
    trace_on: str | None = field(default=None, metadata=wire("TRACE_ON"))


@header
class ReplyMessageRequestHeader(Header):
    """PUSH_REPLY_MESSAGE_TO_CLIENT (326): a reply, pushed by the broker to its requester
    (ReplyMessageRequestHeader, the send header's fields plus the hosts and store time)."""

    producer_group: str = field(metadata=wire("producerGroup"))
    topic: str = field(metadata=wire("topic"))
    default_topic: str = field(metadata=wire("defaultTopic"))
    default_topic_queue_nums: Int32 = field(metadata=wire("defaultTopicQueueNums"))
    queue_id: Int32 = field(metadata=wire("queueId"))
    sys_flag: Int32 = field(metadata=wire("sysFlag"))
    born_timestamp: int = field(metadata=wire("bornTimestamp"))
    flag: Int32 = field(metadata=wire("flag"))
    born_host: str = field(metadata=wire("bornHost"))  # "ip:port"
    store_host: str = field(metadata=wire("storeHost"))
    store_timestamp: int = field(metadata=wire("storeTimestamp"))
    properties: str | None = field(default=None, metadata=wire("properties"))
    reconsume_times: Int32 | None = field(default=None, metadata=wire("reconsumeTimes"))
    unit_mode: bool = field(default=False, metadata=wire("unitMode"))
