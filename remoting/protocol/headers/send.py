"""SEND_MESSAGE (10) / SEND_MESSAGE_V2 (310) / SEND_BATCH_MESSAGE (320) headers (protocol.md 5.1).

One class serves both key sets: code 10 uses the long names, codes 310, 320 and 325 the
one-letter keys (``from_ext(ext, v2=True)``), as Java's SendMessageRequestHeaderV2 does.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from remoting.protocol.headers.base import Header, key


@dataclass(frozen=True, slots=True, kw_only=True)
class SendMessageHeader(Header):
    producer_group: str = field(metadata=key("producerGroup", v2="a"))
    topic: str = field(metadata=key("topic", v2="b"))
    default_topic: str = field(metadata=key("defaultTopic", v2="c"))
    default_topic_queue_nums: int = field(metadata=key("defaultTopicQueueNums", v2="d"))
    queue_id: int = field(metadata=key("queueId", v2="e"))
    sys_flag: int = field(metadata=key("sysFlag", v2="f"))
    born_timestamp: int = field(metadata=key("bornTimestamp", v2="g"))
    flag: int = field(metadata=key("flag", v2="h"))
    properties: str | None = field(default=None, metadata=key("properties", v2="i"))
    reconsume_times: int | None = field(default=None, metadata=key("reconsumeTimes", v2="j"))
    unit_mode: bool = field(default=False, metadata=key("unitMode", v2="k"))
    max_reconsume_times: int | None = field(default=None, metadata=key("maxReconsumeTimes", v2="l"))
    batch: bool = field(default=False, metadata=key("batch", v2="m"))
    broker_name: str | None = field(default=None, metadata=key("brokerName", v2="n"))


@dataclass(frozen=True, slots=True, kw_only=True)
class SendMessageResponseHeader(Header):
    msg_id: str = field(metadata=key("msgId"))
    queue_id: int = field(metadata=key("queueId"))
    queue_offset: int = field(metadata=key("queueOffset"))
    transaction_id: str | None = field(default=None, metadata=key("transactionId"))
    msg_region: str | None = field(default=None, metadata=key("MSG_REGION"))
    trace_on: str | None = field(default=None, metadata=key("TRACE_ON"))
