"""Raw pulls for bulk readers: one PULL_MESSAGE answered with the broker's record bytes as
they came (the CommitLog layout, records back to back), so a reader that builds columns
(the Spark connector) never makes one Python object per message unless it asks to.

The broker filters by tag *hash code* only (two tags may share a hash): a raw reader that
needs exact tag filtering keeps the records ``keep_tags`` keeps, or decodes with
``RawPull.messages(expression=...)``, which filters as the consumers do. An SQL92 selector
is evaluated by the broker exactly: nothing is left to filter.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass

from aiorocketmq.client.consumer.selector import MessageSelector, selector_of
from aiorocketmq.client.core import api
from aiorocketmq.client.core.api import PullStatus
from aiorocketmq.client.core.message import MessageQueue
from aiorocketmq.remoting.protocol.columns import (
    Columns,
    Layout,
    Starts,
    decode_columns,
    decode_layout,
    decode_starts,
    offset_msg_id_at,
)
from aiorocketmq.remoting.protocol.message import (
    BORNHOST_POS,
    MAGIC_V2,
    SYSFLAG_POS,
    MessageExt,
    Prop,
    decode_records,
    record_size,
)
from aiorocketmq.remoting.protocol.msgid import BORNHOST_V6_FLAG, STOREHOST_V6_FLAG

__all__ = [
    "Columns",
    "Layout",
    "PullStatus",
    "RawPull",
    "Starts",
    "decode_columns",
    "decode_layout",
    "decode_records",
    "decode_starts",
    "keep_tags",
    "offset_msg_id_at",
    "record_tags",
    "records",
]

_I = struct.Struct(">i")
_H = struct.Struct(">h")
_TAGS = Prop.TAGS.encode() + b"\x01"


@dataclass(frozen=True, slots=True)
class RawPull:
    """What one pull found: ``status`` (FOUND, NO_NEW_MSG, NO_MATCHED_MSG, OFFSET_ILLEGAL),
    where to pull next, the queue's bounds, and ``body``: the records, empty unless FOUND."""

    queue: MessageQueue
    status: PullStatus
    next_begin_offset: int
    min_offset: int
    max_offset: int
    body: bytes
    suggest_which_broker_id: int = 0

    def messages(
        self, *, expression: str | MessageSelector = "*", inflate: bool = True
    ) -> list[MessageExt]:
        """Decoded (zlib bodies inflated), ``broker_name`` set, exactly the tags of
        ``expression`` kept (PullAPIWrapper.processPullResult)."""
        if not self.body:
            return []
        msgs = decode_records(self.body, inflate=inflate)
        tags = _tag_set(expression)
        if tags is not None:
            msgs = [m for m in msgs if m.properties.get(Prop.TAGS) in tags]
        for m in msgs:
            m.broker_name = self.queue.broker_name
        return msgs


def records(body: bytes) -> Iterator[tuple[int, int]]:
    """``(start, size)`` of each record of a pull body, without decoding any."""
    pos, end = 0, len(body)
    while pos < end:
        size = record_size(body, pos)
        if size <= 0 or pos + size > end:
            raise ValueError(f"record size {size} at {pos} runs past the body")
        yield pos, size
        pos += size


def record_tags(body: bytes, pos: int) -> str | None:
    """The TAGS property of the record at ``pos``, reading its properties only."""
    sys_flag = _I.unpack_from(body, pos + SYSFLAG_POS)[0]
    at = pos + BORNHOST_POS + (20 if sys_flag & BORNHOST_V6_FLAG else 8)
    at += 8 + (20 if sys_flag & STOREHOST_V6_FLAG else 8)  # store timestamp, store host
    at += 4 + 8  # reconsume times, prepared transaction offset
    at += 4 + _I.unpack_from(body, at)[0]  # body
    magic = _I.unpack_from(body, pos + 4)[0] & 0xFFFFFFFF
    if magic == MAGIC_V2:
        at += 2 + _H.unpack_from(body, at)[0]
    else:
        at += 1 + body[at]
    n = _H.unpack_from(body, at)[0]
    props = body[at + 2 : at + 2 + n]
    i = props.find(_TAGS)
    while i > 0 and props[i - 1] != 0x02:  # a value that merely ends in "TAGS"
        i = props.find(_TAGS, i + 1)
    if i < 0:
        return None
    start = i + len(_TAGS)
    stop = props.find(b"\x02", start)
    return props[start : stop if stop >= 0 else len(props)].decode()


def keep_tags(body: bytes, expression: str | MessageSelector) -> bytes:
    """The records of ``body`` whose tag is in ``expression`` ("TagA || TagB"; "*" keeps
    all), byte for byte, in order: the exact filter the broker's hash match leaves to us."""
    tags = _tag_set(expression)
    if tags is None:
        return body
    view = memoryview(body)
    kept = [view[p : p + n] for p, n in records(body) if record_tags(body, p) in tags]
    return b"".join(kept)


def _tag_set(expression: str | MessageSelector) -> frozenset[str] | None:
    """The tags to keep (PullAPIWrapper re-filters a tag subscription only); None: all."""
    sub = selector_of(expression).subscription("")
    return frozenset(sub.tags_set) if sub.tags_set else None


def raw_from_reply(mq: MessageQueue, reply: api.PullReply) -> RawPull:
    body = reply.body if reply.status is PullStatus.FOUND else b""
    return RawPull(mq, reply.status, reply.next_begin_offset, reply.min_offset,
                   reply.max_offset, body, reply.suggest_which_broker_id)  # fmt: skip
