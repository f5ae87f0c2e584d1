"""Timer messages (5.x RIP-43) on the wire: property names, the wheel's topic, the recall
handle and the RECALL_MESSAGE (370) headers. No I/O (features.md 4.1)."""

from __future__ import annotations

import base64
import binascii
from dataclasses import field
from typing import Final, NamedTuple

from aiorocketmq.remoting.protocol.headers.base import Header, header, wire
from aiorocketmq.remoting.protocol.topic import TIMER_TOPIC

__all__ = [
    "CLIENT_PROPS",
    "RECALL_HANDLE_FIELD",
    "TIMER_TOPIC",
    "RecallHandle",
    "RecallMessageRequestHeader",
    "RecallMessageResponseHeader",
    "TimerProp",
    "decode_handle",
    "delete_key",
]


class TimerProp:
    """MessageConst's timer properties (R5:common/message/MessageConst.java)."""

    DELIVER_MS: Final = "TIMER_DELIVER_MS"  # client: absolute epoch ms
    DELAY_SEC: Final = "TIMER_DELAY_SEC"  # client: seconds from the send
    DELAY_MS: Final = "TIMER_DELAY_MS"  # client: ms from the send
    OUT_MS: Final = "TIMER_OUT_MS"  # broker: the slot (rounded due time)
    ENQUEUE_MS: Final = "TIMER_ENQUEUE_MS"  # broker, on delivery: when the wheel took it
    DEQUEUE_MS: Final = "TIMER_DEQUEUE_MS"  # broker, on delivery: when the wheel gave it
    ROLL_TIMES: Final = "TIMER_ROLL_TIMES"  # broker: rolled over the window this often
    DEL_UNIQKEY: Final = "TIMER_DEL_UNIQKEY"  # a delete marker: "<realTopic>+<UNIQ_KEY>"
    DELAY_LEVEL: Final = "TIMER_DELAY_LEVEL"


CLIENT_PROPS: Final = (TimerProp.DELAY_SEC, TimerProp.DELAY_MS, TimerProp.DELIVER_MS)
RECALL_HANDLE_FIELD: Final = "recallHandle"  # SendMessageResponseHeader.recallHandle (5.3.2+)


def delete_key(topic: str, uniq_key: str) -> str:
    """compat: TimerMessageStore.buildDeleteKey -- ``topic + "+" + uniqKey``."""
    return f"{topic}+{uniq_key}"


class RecallHandle(NamedTuple):
    """compat: RecallMessageHandle.HandleV1 -- "v1 topic brokerName timestamp msgId", base64
    (URL alphabet); ``timestamp`` is the message's TIMER_OUT_MS."""

    topic: str
    broker_name: str
    timestamp: str
    msg_id: str

    def encode(self) -> str:
        raw = " ".join(("v1", self.topic, self.broker_name, self.timestamp, self.msg_id))
        return base64.urlsafe_b64encode(raw.encode()).decode()


def decode_handle(text: str) -> RecallHandle:
    """The handle a send answered; ValueError for anything else."""
    try:
        raw = base64.urlsafe_b64decode(text.encode() + b"=" * (-len(text) % 4)).decode()
    except (binascii.Error, UnicodeError) as exc:
        raise ValueError("recall handle is invalid") from exc
    parts = raw.split(" ")
    if len(parts) != 5 or parts[0] != "v1" or not all(parts):
        raise ValueError("recall handle is invalid")
    return RecallHandle(parts[1], parts[2], parts[3], parts[4])


@header
class RecallMessageRequestHeader(Header):
    """RecallMessageRequestHeader (extends TopicRequestHeader: ``lo``, ``bname``)."""

    producer_group: str | None = field(default=None, metadata=wire("producerGroup"))
    topic: str = field(metadata=wire("topic"))
    recall_handle: str = field(metadata=wire("recallHandle"))
    bname: str | None = field(default=None, metadata=wire("bname"))


@header
class RecallMessageResponseHeader(Header):
    msg_id: str = field(metadata=wire("msgId"))
