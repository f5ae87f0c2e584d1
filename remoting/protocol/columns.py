"""Records to columns: a pull body (CommitLog records back to back, protocol.md 7.1) decoded
straight into one list per field, for bulk readers that build column batches (the Spark
connector) without a MessageExt per message.

``tags`` (a set of tag strings) keeps only records whose TAGS is one of them, as consumers
filter after the broker's hash match; every record still counts in ``scanned``.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass, field

from aiorocketmq.remoting.errors import MessageDecodeError
from aiorocketmq.remoting.protocol.message import (
    MAGIC_V1,
    MAGIC_V2,
    Prop,
    SysFlag,
    decode_properties,
)
from aiorocketmq.remoting.protocol.msgid import (
    BORNHOST_V6_FLAG,
    STOREHOST_V6_FLAG,
    offset_msg_id,
    unpack_host,
)

_HEAD = struct.Struct(">iIiiiqqiq")  # size, magic, crc, queueId, flag, qoff, poff, sysflag, born
_Q = struct.Struct(">q")
_TAIL = struct.Struct(">iq")
_I = struct.Struct(">i")
_H = struct.Struct(">h")


@dataclass(slots=True)
class Columns:
    """Records decoded column by column (``decode_columns``): one list per field, the i-th
    entry of each list one message; what a bulk reader turns into an Arrow batch."""

    topic: list[str] = field(default_factory=list)
    queue_id: list[int] = field(default_factory=list)
    queue_offset: list[int] = field(default_factory=list)
    msg_id: list[str] = field(default_factory=list)
    tags: list[str | None] = field(default_factory=list)
    keys: list[str | None] = field(default_factory=list)
    body: list[bytes] = field(default_factory=list)
    properties: list[list[tuple[str, str]] | None] = field(default_factory=list)
    born_timestamp: list[int] = field(default_factory=list)
    store_timestamp: list[int] = field(default_factory=list)
    born_host: list[str] = field(default_factory=list)
    store_host: list[str] = field(default_factory=list)
    reconsume_times: list[int] = field(default_factory=list)
    scanned: int = 0  # records seen, kept or not
    last_offset: int = -1  # queue offset of the last record seen

    def __len__(self) -> int:
        return len(self.queue_offset)


def decode_columns(
    data: bytes,
    out: Columns | None = None,
    *,
    tags: frozenset[str] | None = None,
    include_properties: bool = True,
    stop_at: int | None = None,
) -> Columns:
    """Append the records of ``data`` to ``out`` (a new Columns by default); records at queue
    offset ``stop_at`` or beyond are not read. Raises MessageDecodeError if malformed."""
    cols = Columns() if out is None else out
    pos, end = 0, len(data)
    try:
        while pos < end:
            size, magic, _crc, qid, _flag, qoff, poff, sysflag, born = _HEAD.unpack_from(data, pos)
            if magic not in (MAGIC_V1, MAGIC_V2) or size < _HEAD.size or pos + size > end:
                raise MessageDecodeError(f"bad record at {pos}: magic {magic:#x}, size {size}")
            if stop_at is not None and qoff >= stop_at:
                break
            nxt = pos + size
            at = pos + _HEAD.size
            blen = 20 if sysflag & BORNHOST_V6_FLAG else 8
            born_host = data[at : at + blen]
            at += blen
            (stored,) = _Q.unpack_from(data, at)
            slen = 20 if sysflag & STOREHOST_V6_FLAG else 8
            store_host = data[at + 8 : at + 8 + slen]
            at += 8 + slen
            reconsume, _prepared = _TAIL.unpack_from(data, at)
            at += _TAIL.size
            (n,) = _I.unpack_from(data, at)
            body = data[at + 4 : at + 4 + n]
            at += 4 + n
            if magic == MAGIC_V1:
                n = data[at]
                at += 1
            else:
                (n,) = _H.unpack_from(data, at)
                at += 2
            topic = data[at : at + n].decode()
            at += n
            (n,) = _H.unpack_from(data, at)
            props = decode_properties(data[at + 2 : at + 2 + n].decode())
            cols.scanned += 1
            cols.last_offset = qoff
            pos = nxt
            tag = props.get(Prop.TAGS)
            if tags is not None and tag not in tags:
                continue
            if sysflag & SysFlag.COMPRESSED:
                body = zlib.decompress(body)
            cols.topic.append(topic)
            cols.queue_id.append(qid)
            cols.queue_offset.append(qoff)
            cols.msg_id.append(props.get(Prop.UNIQ_KEY) or offset_msg_id(store_host, poff))
            cols.tags.append(tag)
            cols.keys.append(props.get(Prop.KEYS))
            cols.body.append(body)
            cols.properties.append(list(props.items()) if include_properties else None)
            cols.born_timestamp.append(born)
            cols.store_timestamp.append(stored)
            cols.born_host.append(unpack_host(born_host))
            cols.store_host.append(unpack_host(store_host))
            cols.reconsume_times.append(reconsume)
    except (struct.error, IndexError, UnicodeDecodeError, zlib.error, ValueError) as exc:
        if isinstance(exc, MessageDecodeError):
            raise
        raise MessageDecodeError(f"malformed record at {pos}: {exc}") from exc
    return cols
