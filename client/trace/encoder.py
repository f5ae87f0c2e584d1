"""Trace records in Apache RocketMQ 4.9.8's text format (TraceDataEncoder, TraceContext,
TraceBean, TraceType): what a traced client writes to the trace topic and what
``mqadmin queryMsgTraceById`` reads back.

A record is its fields joined by ``\\x01`` (CONTENT_SPLITOR) and ended by ``\\x02``
(FIELD_SPLITOR); a trace message's body is records one after the other, its KEYS the traced
messages' ids and their own keys (so QUERY_MESSAGE by key finds it).

- ``Pub``: type, timestamp, regionId, group, topic, msgId, tags, keys, storeHost,
  bodyLength, costTime, msgType, offsetMsgId, success;
- ``SubBefore``: type, timestamp, regionId, group, requestId, msgId, retryTimes, keys;
- ``SubAfter``: type, requestId, msgId, costTime, success, keys, contextCode, timestamp,
  group;
- ``EndTransaction``: type, timestamp, regionId, group, topic, msgId, tags, keys, storeHost,
  msgType, transactionId, transactionState, fromTransactionCheck.

Java writes a missing value (a message without tags or keys) as ``null``, and so do we.
Pure: no I/O.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Final

from aiorocketmq.remoting.protocol.msgid import UniqKeyGenerator

CONTENT_SPLITOR: Final = "\x01"  # between the fields of a record
FIELD_SPLITOR: Final = "\x02"  # after each record
TRACE_TOPIC: Final = "RMQ_SYS_TRACE_TOPIC"  # TopicValidator.RMQ_SYS_TRACE_TOPIC
DEFAULT_REGION: Final = "DefaultRegion"  # MixAll.DEFAULT_TRACE_REGION_ID
KEY_SEPARATOR: Final = " "  # MessageConst.KEY_SEPARATOR

_request_ids = UniqKeyGenerator()


class TraceType(enum.Enum):
    """TraceType: what a record says happened."""

    Pub = "Pub"
    SubBefore = "SubBefore"
    SubAfter = "SubAfter"
    EndTransaction = "EndTransaction"


class MessageType(enum.IntEnum):
    """MessageType; a record carries the ordinal."""

    Normal_Msg = 0
    Trans_Msg_Half = 1
    Trans_msg_Commit = 2
    Delay_Msg = 3


class ConsumeReturnType(enum.IntEnum):
    """ConsumeReturnType; a SubAfter record's contextCode is the ordinal."""

    SUCCESS = 0
    TIME_OUT = 1
    EXCEPTION = 2
    RETURNNULL = 3
    FAILED = 4


@dataclass(slots=True)
class TraceBean:
    """One traced message (TraceBean)."""

    topic: str | None = ""
    msg_id: str | None = ""
    offset_msg_id: str | None = ""
    tags: str | None = ""
    keys: str | None = ""
    store_host: str | None = ""
    client_host: str | None = ""
    store_time: int = 0
    retry_times: int = 0
    body_length: int = 0
    msg_type: MessageType | None = None
    transaction_id: str | None = None
    transaction_state: str | None = None  # LocalTransactionState's name
    from_transaction_check: bool = False


@dataclass(slots=True)
class TraceContext:
    """One record's context (TraceContext): a Pub or EndTransaction has one bean, a
    SubBefore / SubAfter one bean per message of the consumed batch (one record each)."""

    type: TraceType
    timestamp: int = 0  # ms
    region_id: str | None = ""
    group: str | None = ""
    cost_time: int = 0  # ms
    success: bool = True
    request_id: str = field(default_factory=_request_ids.next)
    context_code: int = 0
    beans: list[TraceBean] = field(default_factory=list)


def _s(value: object) -> str:
    """StringBuilder.append: null as "null", booleans in lower case."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _ordinal(msg_type: MessageType | None) -> str:
    # compat: Java's getMsgType().ordinal() throws on a null type and the record is lost;
    # ours writes Normal_Msg
    return str(int(msg_type if msg_type is not None else MessageType.Normal_Msg))


def encode(ctx: TraceContext) -> tuple[str, set[str]]:
    """TraceDataEncoder.encoderFromContextBean: (the records' text, the keys the trace
    message carries: each bean's msgId and its own keys)."""
    fields: list[list[object]] = []
    t = ctx.type
    if t is TraceType.Pub:
        b = ctx.beans[0]
        fields.append([t.value, ctx.timestamp, ctx.region_id, ctx.group, b.topic, b.msg_id,
                       b.tags, b.keys, b.store_host, b.body_length, ctx.cost_time,
                       _ordinal(b.msg_type), b.offset_msg_id, ctx.success])  # fmt: skip
    elif t is TraceType.SubBefore:
        fields.extend([t.value, ctx.timestamp, ctx.region_id, ctx.group, ctx.request_id,
                       b.msg_id, b.retry_times, b.keys] for b in ctx.beans)  # fmt: skip
    elif t is TraceType.SubAfter:
        fields.extend([t.value, ctx.request_id, b.msg_id, ctx.cost_time, ctx.success,
                       b.keys, ctx.context_code, ctx.timestamp, ctx.group]
                      for b in ctx.beans)  # fmt: skip
    else:
        b = ctx.beans[0]
        fields.append([t.value, ctx.timestamp, ctx.region_id, ctx.group, b.topic, b.msg_id,
                       b.tags, b.keys, b.store_host, _ordinal(b.msg_type), b.transaction_id,
                       b.transaction_state, b.from_transaction_check])  # fmt: skip
    text = "".join(CONTENT_SPLITOR.join(map(_s, f)) + FIELD_SPLITOR for f in fields)
    keys: set[str] = set()
    for b in ctx.beans:
        keys.add(_s(b.msg_id))
        if b.keys:
            keys.update(b.keys.split(KEY_SEPARATOR))
    return text, keys


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        return 0


def _bool(text: str) -> bool:
    return text.lower() == "true"  # Boolean.parseBoolean


def decode(data: str) -> list[TraceContext]:
    """TraceDataEncoder.decoderFromTraceDataString: every record of a trace message's body
    (a SubAfter of 7 fields, a Pub of 13 or 15, as older clients wrote them, are read too).
    Fields are split as Java's String.split does (trailing empty ones dropped); a record of
    an unknown type is skipped, and one too short for its type read with empty fields
    (Java throws)."""
    found: list[TraceContext] = []
    for record in data.split(FIELD_SPLITOR):
        line = record.split(CONTENT_SPLITOR)
        while line and not line[-1]:
            line.pop()
        wanted = _MIN_FIELDS.get(line[0]) if line else None
        if wanted is None:
            continue
        line += [""] * (wanted - len(line))
        found.append(_decode_one(line))
    return found


_MIN_FIELDS: Final = {"Pub": 13, "SubBefore": 8, "SubAfter": 6, "EndTransaction": 13}


def _decode_one(line: list[str]) -> TraceContext:
    kind = line[0]
    if kind == "Pub":
        bean = TraceBean(topic=line[4], msg_id=line[5], tags=line[6], keys=line[7],
                         store_host=line[8], body_length=_int(line[9]),
                         msg_type=_msg_type(line[11]))  # fmt: skip
        ctx = TraceContext(TraceType.Pub, _int(line[1]), line[2], line[3],
                           cost_time=_int(line[10]), beans=[bean])  # fmt: skip
        if len(line) == 13:
            ctx.success = _bool(line[12])
        else:
            bean.offset_msg_id, ctx.success = line[12], _bool(line[13])
            if len(line) >= 15:
                bean.client_host = line[14]
        return ctx
    if kind == "SubBefore":
        bean = TraceBean(msg_id=line[5], retry_times=_int(line[6]), keys=line[7])
        return TraceContext(TraceType.SubBefore, _int(line[1]), line[2], line[3],
                            request_id=line[4], beans=[bean])  # fmt: skip
    if kind == "SubAfter":
        bean = TraceBean(msg_id=line[2], keys=line[5])
        ctx = TraceContext(TraceType.SubAfter, request_id=line[1], cost_time=_int(line[3]),
                           success=_bool(line[4]), beans=[bean])  # fmt: skip
        if len(line) >= 7:
            ctx.context_code = _int(line[6])
        if len(line) >= 9:
            ctx.timestamp, ctx.group = _int(line[7]), line[8]
        return ctx
    bean = TraceBean(topic=line[4], msg_id=line[5], tags=line[6], keys=line[7],
                     store_host=line[8], msg_type=_msg_type(line[9]),
                     transaction_id=line[10], transaction_state=line[11],
                     from_transaction_check=_bool(line[12]))  # fmt: skip
    return TraceContext(TraceType.EndTransaction, _int(line[1]), line[2], line[3], beans=[bean])


def _msg_type(text: str) -> MessageType | None:
    try:
        return MessageType(int(text))
    except ValueError:
        return None
