"""Messages and their byte layouts: the stored/pulled record, properties, batch bodies.

The stored record is RocketMQ's CommitLog layout byte for byte (protocol.md 7.1), the same bytes a
pull response carries and a check-back request's body holds, so real clients decode what we store.
We write V1 magic; IPv6 hosts only when an address is IPv6. We decode V1 and V2, IPv4 and IPv6.
"""

from __future__ import annotations

import mmap
import struct
import time
import zlib
from dataclasses import dataclass
from typing import Final, NamedTuple

from aiorocketmq.remoting.errors import MessageDecodeError
from aiorocketmq.remoting.protocol.msgid import (
    BORNHOST_V6_FLAG,
    STOREHOST_V6_FLAG,
    offset_msg_id,
    pack_host,
    unpack_host,
)

MAGIC_V1: Final = 0xDAA320A7
MAGIC_V2: Final = 0xDAA320AB  # int16 topic length; decoded, never written
BLANK_MAGIC: Final = 0xCBD43194  # end-of-file trailer of a CommitLog segment

QUEUE_OFFSET_POS: Final = 20
PHYSICAL_OFFSET_POS: Final = 28
SYSFLAG_POS: Final = 36
BORNHOST_POS: Final = 48
MAX_TOPIC_BYTES: Final = 127
MAX_PROPERTIES_BYTES: Final = 32767

# what the decoders read: bytes, a view of them, or a mapped segment
Buffer = bytes | bytearray | memoryview | mmap.mmap

NAME_VALUE_SEPARATOR: Final = "\x01"
PROPERTY_SEPARATOR: Final = "\x02"


class SysFlag:
    """MessageSysFlag bits (protocol.md 10.1)."""

    COMPRESSED: Final = 0x1
    MULTI_TAGS: Final = 0x2
    TRANSACTION_MASK: Final = 0xC
    TRANSACTION_NOT_TYPE: Final = 0x0
    TRANSACTION_PREPARED: Final = 0x4
    TRANSACTION_COMMIT: Final = 0x8
    TRANSACTION_ROLLBACK: Final = 0xC
    BORNHOST_V6: Final = BORNHOST_V6_FLAG
    STOREHOST_V6: Final = STOREHOST_V6_FLAG


class Prop:
    """Property names that matter to the cluster (protocol.md 9)."""

    TAGS: Final = "TAGS"
    KEYS: Final = "KEYS"
    UNIQ_KEY: Final = "UNIQ_KEY"
    WAIT: Final = "WAIT"
    DELAY: Final = "DELAY"
    TRAN_MSG: Final = "TRAN_MSG"
    PGROUP: Final = "PGROUP"
    REAL_TOPIC: Final = "REAL_TOPIC"
    REAL_QID: Final = "REAL_QID"
    RETRY_TOPIC: Final = "RETRY_TOPIC"
    RECONSUME_TIME: Final = "RECONSUME_TIME"
    MAX_RECONSUME_TIMES: Final = "MAX_RECONSUME_TIMES"
    ORIGIN_MESSAGE_ID: Final = "ORIGIN_MESSAGE_ID"
    CLUSTER: Final = "CLUSTER"
    MIN_OFFSET: Final = "MIN_OFFSET"
    MAX_OFFSET: Final = "MAX_OFFSET"
    TRANSACTION_CHECK_TIMES: Final = "TRANSACTION_CHECK_TIMES"
    CHECK_IMMUNITY_TIME_IN_SECONDS: Final = "CHECK_IMMUNITY_TIME_IN_SECONDS"
    TRAN_PREPARED_QUEUE_OFFSET: Final = "TRAN_PREPARED_QUEUE_OFFSET"
    MSG_REGION: Final = "MSG_REGION"
    TRACE_ON: Final = "TRACE_ON"
    # request-reply (RIP-16, MessageConst)
    CORRELATION_ID: Final = "CORRELATION_ID"
    REPLY_TO_CLIENT: Final = "REPLY_TO_CLIENT"
    TTL: Final = "TTL"
    ARRIVE_TIME: Final = "ARRIVE_TIME"
    PUSH_REPLY_TIME: Final = "PUSH_REPLY_TIME"
    MSG_TYPE: Final = "MSG_TYPE"


REPLY_MESSAGE_FLAG: Final = "reply"  # MixAll.REPLY_MESSAGE_FLAG: MSG_TYPE of a reply


def now_ms() -> int:
    """The current time in the unit of every timestamp in a record: ms since the epoch."""
    return time.time_ns() // 1_000_000


class PropertiesTooLong(ValueError):
    """The properties of a message do not fit the record's int16 length."""


def encode_properties(props: dict[str, str]) -> str:
    """``name\\x01value\\x02`` for every pair, the last one included (protocol.md 7.3)."""
    return "".join(f"{k}{NAME_VALUE_SEPARATOR}{v}{PROPERTY_SEPARATOR}" for k, v in props.items())


def decode_properties(text: str | None) -> dict[str, str]:
    """The inverse of ``encode_properties``; malformed or empty pairs are skipped, as in Java."""
    props: dict[str, str] = {}
    if text:
        for item in text.split(PROPERTY_SEPARATOR):
            pair = item.split(NAME_VALUE_SEPARATOR)
            if len(pair) == 2 and pair[0] and pair[1]:
                props[pair[0]] = pair[1]
    return props


def body_crc(body: bytes) -> int:
    """BODYCRC as RocketMQ computes it: crc32 masked to a non-negative int32."""
    return zlib.crc32(body) & 0x7FFFFFFF


@dataclass(slots=True, init=False)
class MessageExt:
    """A stored message: what the CommitLog holds and what pulls return. Keyword arguments
    only; ``__init__`` is written out (not generated) so that the compiled build compiles it
    too -- a generated one stays interpreted, ~9 k instructions a message."""

    topic: str
    body: bytes
    flag: int
    properties: dict[str, str]
    queue_id: int
    sys_flag: int
    born_timestamp: int
    born_host: str
    store_timestamp: int
    store_host: str
    reconsume_times: int
    prepared_transaction_offset: int
    queue_offset: int
    commit_log_offset: int
    body_crc: int
    store_size: int
    broker_name: str  # set by consumers: the broker group it was pulled from (not stored)

    def __init__(
        self,
        *,
        topic: str,
        body: bytes,
        flag: int = 0,
        properties: dict[str, str] | None = None,
        queue_id: int = 0,
        sys_flag: int = 0,
        born_timestamp: int = 0,
        born_host: str = "127.0.0.1:0",
        store_timestamp: int = 0,
        store_host: str = "127.0.0.1:0",
        reconsume_times: int = 0,
        prepared_transaction_offset: int = 0,
        queue_offset: int = 0,
        commit_log_offset: int = 0,
        body_crc: int = 0,
        store_size: int = 0,
        broker_name: str = "",
    ) -> None:
        self.topic = topic
        self.body = body
        self.flag = flag
        self.properties = {} if properties is None else properties
        self.queue_id = queue_id
        self.sys_flag = sys_flag
        self.born_timestamp = born_timestamp
        self.born_host = born_host
        self.store_timestamp = store_timestamp
        self.store_host = store_host
        self.reconsume_times = reconsume_times
        self.prepared_transaction_offset = prepared_transaction_offset
        self.queue_offset = queue_offset
        self.commit_log_offset = commit_log_offset
        self.body_crc = body_crc
        self.store_size = store_size
        self.broker_name = broker_name

    @property
    def msg_id(self) -> str:
        """The offsetMsgId: store host + commitlog offset, uppercase hex."""
        return offset_msg_id(pack_host(self.store_host), self.commit_log_offset)

    @property
    def tags(self) -> str | None:
        return self.properties.get(Prop.TAGS)

    @property
    def keys(self) -> list[str]:
        return self.properties.get(Prop.KEYS, "").split()

    @property
    def transaction_id(self) -> str | None:
        """The UNIQ_KEY of a transactional message (TRAN_MSG=true), else None: what
        PullAPIWrapper.processPullResult and ClientRemotingProcessor set on a Java MessageExt."""
        if self.properties.get(Prop.TRAN_MSG) != "true":
            return None
        return self.properties.get(Prop.UNIQ_KEY)


# totalSize, magic, bodyCRC, queueId, flag, queueOffset, physicalOffset, sysFlag, bornTimestamp
_HEAD = struct.Struct(">iIiiiqqiq")
_SIZE_MAGIC = struct.Struct(">iI")  # the record's first 8 bytes: written last
_FIXED = struct.Struct(">iiiqqiq")  # bodyCRC .. bornTimestamp: bytes 8-48
# IPv4 born host, storeTimestamp, IPv4 store host, reconsumeTimes, preparedTransactionOffset,
# bodyLength: bytes 48-92 of a record whose hosts are both IPv4 (the usual case)
_MIDDLE_V4 = struct.Struct(">8sq8siqi")
_TAIL = struct.Struct(">iq")  # reconsumeTimes, preparedTransactionOffset
_Q = struct.Struct(">q")
_I = struct.Struct(">i")
_H = struct.Struct(">h")
_B = struct.Struct(">b")


def sent_message(topic: str, body: bytes, flag: int, properties: dict[str, str], queue_id: int,
                 sys_flag: int, born_timestamp: int, born_host: str,
                 reconsume_times: int) -> MessageExt:  # fmt: skip
    """A message as a send makes it; positional arguments cost interpreted callers less."""
    return MessageExt(
        topic=topic, body=body, flag=flag, properties=properties, queue_id=queue_id,
        sys_flag=sys_flag, born_timestamp=born_timestamp, born_host=born_host,
        reconsume_times=reconsume_times,
    )  # fmt: skip


_HOSTS: dict[str, bytes] = {}  # packed born/store hosts: a broker meets few peers


def _packed(addr: str) -> bytes:
    raw = _HOSTS.get(addr)
    if raw is None:
        raw = pack_host(addr)
        if len(_HOSTS) >= 4096:  # bounded whatever the peers
            _HOSTS.clear()
        _HOSTS[addr] = raw
    return raw


class RecordPlan(NamedTuple):
    """What a message's record needs besides the message: computed once, before the store
    reserves ``size`` bytes for it (a refusal raises here, with nothing reserved)."""

    size: int
    topic: bytes
    props: bytes
    born: bytes
    store: bytes
    sys_flag: int


def plan_record(m: MessageExt, props: bytes | None = None) -> RecordPlan:
    """The V1 record's size and encoded parts (``props``: the encoded properties, when the
    caller has them already). Raises ``ValueError`` for a topic over 127 bytes, properties
    over 32767 bytes (``PropertiesTooLong``), or a bad host address."""
    topic = m.topic.encode()
    if props is None:
        props = encode_properties(m.properties).encode()
    if len(topic) > MAX_TOPIC_BYTES:
        raise ValueError(f"topic is {len(topic)} bytes, the record allows {MAX_TOPIC_BYTES}")
    if len(props) > MAX_PROPERTIES_BYTES:
        raise PropertiesTooLong(
            f"properties are {len(props)} bytes, at most {MAX_PROPERTIES_BYTES}"
        )
    born, store = _packed(m.born_host), _packed(m.store_host)
    sys_flag = m.sys_flag & ~(BORNHOST_V6_FLAG | STOREHOST_V6_FLAG)
    if len(born) > 8:
        sys_flag |= BORNHOST_V6_FLAG
    if len(store) > 8:
        sys_flag |= STOREHOST_V6_FLAG
    # 48 (head to bornTimestamp) + 8 (store time) + 4 + 8 (tail) + 4 + 1 + 2 (lengths)
    size = 75 + len(born) + len(store) + len(m.body) + len(topic) + len(props)
    return RecordPlan(size, topic, props, born, store, sys_flag)


def write_record(buf: mmap.mmap | bytearray, at: int, m: MessageExt, plan: RecordPlan) -> None:
    """Write ``m``'s record (``plan`` from ``plan_record``) into ``buf`` at ``at``, with
    ``m.commit_log_offset`` as its PHYSICALOFFSET and its 8-byte head (size, magic) last: a
    write cut short leaves a zero head, which recovery reads as the end of the log."""
    body, topic, props = m.body, plan.topic, plan.props
    _FIXED.pack_into(
        buf, at + 8, body_crc(body), m.queue_id, m.flag, m.queue_offset, m.commit_log_offset,
        plan.sys_flag, m.born_timestamp,
    )  # fmt: skip
    born, store = plan.born, plan.store
    if len(born) == 8 and len(store) == 8:
        _MIDDLE_V4.pack_into(
            buf, at + BORNHOST_POS, born, m.store_timestamp, store, m.reconsume_times,
            m.prepared_transaction_offset, len(body),
        )  # fmt: skip
        p = at + BORNHOST_POS + _MIDDLE_V4.size
    else:
        p = at + BORNHOST_POS
        buf[p : p + len(born)] = born
        p += len(born)
        _Q.pack_into(buf, p, m.store_timestamp)
        buf[p + 8 : p + 8 + len(store)] = store
        p += 8 + len(store)
        _TAIL.pack_into(buf, p, m.reconsume_times, m.prepared_transaction_offset)
        _I.pack_into(buf, p + 12, len(body))
        p += 16
    buf[p : p + len(body)] = body
    p += len(body)
    buf[p] = len(topic)
    buf[p + 1 : p + 1 + len(topic)] = topic
    p += 1 + len(topic)
    _H.pack_into(buf, p, len(props))
    buf[p + 2 : p + 2 + len(props)] = props
    _SIZE_MAGIC.pack_into(buf, at, plan.size, MAGIC_V1)


def encode_record(m: MessageExt) -> bytes:
    """The V1 stored record of ``m`` (sizes, CRC and host flags computed here).

    Raises ``ValueError`` for a topic over 127 bytes, properties over 32767 bytes, or a bad
    host address.
    """
    plan = plan_record(m)
    buf = bytearray(plan.size)
    write_record(buf, 0, m, plan)
    return bytes(buf)


def record_size(data: Buffer, pos: int = 0) -> int:
    """TOTALSIZE of the record at ``pos``."""
    return int(_I.unpack_from(data, pos)[0])


def decode_record(data: Buffer, pos: int = 0, *, inflate: bool = False) -> MessageExt:
    """Decode the record at ``pos``; with ``inflate`` a compressed body is decompressed.

    Raises ``MessageDecodeError`` for anything malformed.
    """
    try:
        return _decode(data, pos, inflate)
    except (struct.error, UnicodeDecodeError, ValueError, zlib.error) as exc:
        raise MessageDecodeError(f"malformed message record at {pos}: {exc}") from exc


def _decode(data: Buffer, pos: int, inflate: bool) -> MessageExt:
    size, magic, crc, queue_id, flag, qoff, poff, sys_flag, born_ts = _HEAD.unpack_from(data, pos)
    if magic not in (MAGIC_V1, MAGIC_V2):
        raise MessageDecodeError(f"bad magic code {magic:#010x} at {pos}")
    end = pos + size
    if size < _HEAD.size or end > len(data):
        raise MessageDecodeError(f"record size {size} at {pos} runs past the buffer")
    at = pos + _HEAD.size
    if not sys_flag & (BORNHOST_V6_FLAG | STOREHOST_V6_FLAG):  # IPv4 hosts: one unpack
        born, store_ts, stored, reconsume, prepared, n = _MIDDLE_V4.unpack_from(data, at)
        born_host, store_host = unpack_host(born), unpack_host(stored)
        at += _MIDDLE_V4.size
        if n < 0 or at + n > end:
            raise MessageDecodeError(f"field of {n} bytes at {at - 4} runs past its record")
        body = bytes(data[at : at + n])
        at += n
    else:
        hlen = 20 if sys_flag & BORNHOST_V6_FLAG else 8
        born_host = unpack_host(data[at : at + hlen])
        at += hlen
        (store_ts,) = _Q.unpack_from(data, at)
        slen = 20 if sys_flag & STOREHOST_V6_FLAG else 8
        store_host = unpack_host(data[at + 8 : at + 8 + slen])
        at += 8 + slen
        reconsume, prepared = _TAIL.unpack_from(data, at)
        body, at = read_chunk(data, at + _TAIL.size, _I, end)
    if magic == MAGIC_V1:
        topic, at = read_chunk(data, at, _B, end)
    else:
        topic, at = read_chunk(data, at, _H, end)
    props, at = read_chunk(data, at, _H, end)
    if at != end:
        raise MessageDecodeError(f"record at {pos} has {end - at} stray bytes")
    if inflate and sys_flag & SysFlag.COMPRESSED:
        body = zlib.decompress(body)
    return MessageExt(
        topic=topic.decode(), body=body, flag=flag, properties=decode_properties(props.decode()),
        queue_id=queue_id, sys_flag=sys_flag, born_timestamp=born_ts, born_host=born_host,
        store_timestamp=store_ts, store_host=store_host, reconsume_times=reconsume,
        prepared_transaction_offset=prepared, queue_offset=qoff, commit_log_offset=poff,
        body_crc=crc, store_size=size,
    )  # fmt: skip


def read_chunk(data: Buffer, at: int, length: struct.Struct, end: int) -> tuple[bytes, int]:
    (n,) = length.unpack_from(data, at)
    start = at + length.size
    if n < 0 or start + n > end:
        raise MessageDecodeError(f"field of {n} bytes at {at} runs past its record")
    return bytes(data[start : start + n]), start + n


def decode_records(data: bytes, *, inflate: bool = False) -> list[MessageExt]:
    """Every record of a pull or query body, in order."""
    out, pos = [], 0
    while pos < len(data):
        msg = decode_record(data, pos, inflate=inflate)
        out.append(msg)
        pos += msg.store_size
    return out
