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
from aiorocketmq.remoting.protocol.bigendian import int32_at, int64_at, uint32_at
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


# size, magic, crc, queueId, flag, qoff, poff, sysflag, born, bornhost (IPv4 + port),
# store time, storehost (likewise), reconsumeTimes, prepared offset, body length: a record's
# head when both hosts are IPv4 (decode_layout reads its fields at these places: 0, 4, 8, 12,
# 16, 20, 28, 36, 40, 48, 56, 64, 72, 76, 84; the body at 88)
_HEAD4 = struct.Struct(">iIiiiqqiqQqQiqi")
_V6 = BORNHOST_V6_FLAG | STOREHOST_V6_FLAG
_hosts: dict[int, str] = {}  # IPv4 host + port as one int -> "ip:port" (few per process)


@dataclass(slots=True)
class Layout:
    """Where the fields of records lie in pull bodies laid end to end (``decode_layout``):
    the fixed-size fields as values, one list per field, and the variable ones (body, topic,
    properties text) as ``[start, end)`` byte positions, flat (start, end, start, end, ...),
    in the bodies joined in the order decoded. A bulk reader builds columns from the
    positions in native code (Arrow: offsets into one buffer) instead of a Python object
    per field. ``base`` is where the next body starts in the joined bytes."""

    queue_id: list[int] = field(default_factory=list)
    queue_offset: list[int] = field(default_factory=list)
    born_timestamp: list[int] = field(default_factory=list)
    store_timestamp: list[int] = field(default_factory=list)
    born_host: list[str] = field(default_factory=list)
    store_host: list[str] = field(default_factory=list)
    reconsume_times: list[int] = field(default_factory=list)
    record: list[int] = field(default_factory=list)  # where each record starts (msgId)
    body: list[int] = field(default_factory=list)
    topic: list[int] = field(default_factory=list)
    properties: list[int] = field(default_factory=list)
    compressed: list[int] = field(default_factory=list)  # rows whose body is zlib'd
    base: int = 0
    last_offset: int = -1  # queue offset of the last record decoded

    def __len__(self) -> int:
        return len(self.queue_offset)


def decode_layout(data: bytes, out: Layout, *, stop_at: int | None = None, limit: int = -1) -> int:
    """Append the positions of ``data``'s records (the next body of ``out``'s joined bytes)
    to ``out``; records at queue offset ``stop_at`` or beyond are not read, nor any after
    the first ``limit`` (-1: no limit). Returns how many records were read. Raises
    MessageDecodeError if malformed."""
    base = out.base
    pos, end, n = 0, len(data), 0
    try:
        while pos < end and n != limit:
            # the head read field by field: compiled, a byte read is a C call, where
            # struct's tuple of 15 ints cost 0.4 us a record
            size, magic, qoff = _head(data, pos, end)
            if stop_at is not None and qoff >= stop_at:
                break
            qid, sysflag, born = (
                int32_at(data, pos + 12),
                uint32_at(data, pos + 36),
                int64_at(data, pos + 40),
            )
            if sysflag & _V6:
                at, born_host, store_host, stored, reconsume, blen = _hosts_v6(data, pos)
            else:
                at = pos + _HEAD4.size
                born_host = _host4(data, pos + 48)
                store_host = _host4(data, pos + 64)
                stored, reconsume = int64_at(data, pos + 56), int32_at(data, pos + 72)
                blen = int32_at(data, pos + 84)
                if blen < 0:
                    raise MessageDecodeError(f"bad record at {pos}: body length {blen}")
            out.body.append(base + at)
            at += blen
            out.body.append(base + at)
            if magic == MAGIC_V1:
                tlen = data[at]
                at += 1
            else:
                tlen = (data[at] << 8) | data[at + 1]
                at += 2
            out.topic.append(base + at)
            at += tlen
            out.topic.append(base + at)
            plen = (data[at] << 8) | data[at + 1]
            out.properties.append(base + at + 2)
            out.properties.append(base + at + 2 + plen)
            if at + 2 + plen > pos + size:
                raise MessageDecodeError(f"bad record at {pos}: fields overrun its size {size}")
            if sysflag & SysFlag.COMPRESSED:
                out.compressed.append(len(out.queue_offset))
            out.record.append(base + pos)
            out.queue_id.append(qid)
            out.queue_offset.append(qoff)
            out.born_timestamp.append(born)
            out.store_timestamp.append(stored)
            out.born_host.append(born_host)
            out.store_host.append(store_host)
            out.reconsume_times.append(reconsume)
            out.last_offset = qoff
            pos += size
            n += 1
    except (struct.error, IndexError) as exc:
        raise MessageDecodeError(f"malformed record at {pos}: {exc}") from exc
    out.base = base + end
    return n


@dataclass(slots=True)
class Starts:
    """Where records start in pull bodies laid end to end (``decode_starts``), in the bodies
    joined in the order decoded: all a bulk reader needs when every record has the usual
    shape (``plain``: MAGIC_V1, IPv4 hosts, an uncompressed body), whose fields then lie at
    fixed places from its start or after its body (read in native code: Arrow). ``base``
    is where the next body starts in the joined bytes."""

    record: list[int] = field(default_factory=list)
    base: int = 0
    last_offset: int = -1  # queue offset of the last record decoded
    plain: bool = True  # False: some record has another shape (read it with decode_layout)

    def __len__(self) -> int:
        return len(self.record)


def decode_starts(data: bytes, out: Starts, *, stop_at: int | None = None) -> int:
    """Append where ``data``'s records start (``data`` is the next body of ``out``'s joined
    bytes) to ``out``; records at queue offset ``stop_at`` or beyond are not read. Returns
    how many records were read. A plain record's fields are checked as ``decode_layout``
    checks them; another shape clears ``out.plain`` (``decode_layout`` then reads and checks
    it). Raises MessageDecodeError if malformed."""
    base = out.base
    pos, end, n = 0, len(data), 0
    try:
        while pos < end:
            size, magic, qoff = _head(data, pos, end)
            if stop_at is not None and qoff >= stop_at:
                break
            if magic != MAGIC_V1 or uint32_at(data, pos + 36) & (_V6 | SysFlag.COMPRESSED):
                out.plain = False
            else:
                blen = int32_at(data, pos + 84)
                if blen < 0:
                    raise MessageDecodeError(f"bad record at {pos}: body length {blen}")
                at = pos + _HEAD4.size + blen
                at += 1 + data[at]  # the topic
                plen = (data[at] << 8) | data[at + 1]
                if at + 2 + plen > pos + size:
                    raise MessageDecodeError(f"bad record at {pos}: fields overrun its size {size}")
            out.record.append(base + pos)
            out.last_offset = qoff
            pos += size
            n += 1
    except IndexError as exc:
        raise MessageDecodeError(f"malformed record at {pos}: {exc}") from exc
    out.base = base + end
    return n


def _head(data: bytes, pos: int, end: int) -> tuple[int, int, int]:
    """The size, magic and queue offset of the record at ``pos`` (``data`` ends at ``end``);
    MessageDecodeError if its magic is unknown or its size does not fit."""
    size, magic = int32_at(data, pos), uint32_at(data, pos + 4)
    if magic not in (MAGIC_V1, MAGIC_V2) or size < _HEAD4.size or pos + size > end:
        raise MessageDecodeError(f"bad record at {pos}: magic {magic:#x}, size {size}")
    return size, magic, int64_at(data, pos + 20)


def _host4(data: bytes, at: int) -> str:
    """The IPv4 host and port at ``at`` as "ip:port", known ones from ``_hosts`` (keyed by
    address << 16 | port: 48 bits, a small int compiled)."""
    port = uint32_at(data, at + 4)
    if port > 0xFFFF:  # no such port: not kept
        return unpack_host(data[at : at + 8])
    key = (uint32_at(data, at) << 16) | port
    host = _hosts.get(key)
    if host is None:
        host = unpack_host(data[at : at + 8])
        if len(_hosts) < 4096:
            _hosts[key] = host
    return host


def _hosts_v6(data: bytes, pos: int) -> tuple[int, str, str, int, int, int]:
    """A record with an IPv6 host: (body start, born host, store host, store time,
    reconsumeTimes, body length)."""
    sysflag = _I.unpack_from(data, pos + 36)[0]
    at = pos + _HEAD.size
    blen = 20 if sysflag & BORNHOST_V6_FLAG else 8
    born_host = unpack_host(data[at : at + blen])
    at += blen
    (stored,) = _Q.unpack_from(data, at)
    slen = 20 if sysflag & STOREHOST_V6_FLAG else 8
    store_host = unpack_host(data[at + 8 : at + 8 + slen])
    at += 8 + slen
    reconsume, _prepared = _TAIL.unpack_from(data, at)
    at += _TAIL.size
    (n,) = _I.unpack_from(data, at)
    return at + 4, born_host, store_host, stored, reconsume, n


def offset_msg_id_at(data: bytes, record: int) -> str:
    """The offsetMsgId of the record starting at ``record`` in ``data`` (store host + its
    CommitLog offset), for rows without a UNIQ_KEY."""
    (_size, _magic, _crc, _qid, _flag, _qoff, poff, sysflag, _born) = _HEAD.unpack_from(
        data, record
    )
    at = record + _HEAD.size + (20 if sysflag & BORNHOST_V6_FLAG else 8) + 8
    return offset_msg_id(data[at : at + (20 if sysflag & STOREHOST_V6_FLAG else 8)], poff)
