"""SEND_BATCH_MESSAGE bodies (protocol.md 7.4): the messages of one batch, each its body,
flag and properties (Java's MessageDecoder.encodeMessages / decodeMessages)."""

from __future__ import annotations

import struct
from collections.abc import Iterable
from typing import NamedTuple

from aiorocketmq.remoting.errors import MessageDecodeError
from aiorocketmq.remoting.protocol.message import MessageExt, Prop, decode_properties

_H = struct.Struct(">h")


class BatchItem(NamedTuple):
    """One message of a SEND_BATCH_MESSAGE body."""

    body: bytes
    flag: int = 0
    properties: str = ""


_BATCH_HEAD = struct.Struct(">iiiii")  # totalSize, magic(0), bodyCRC(0), flag, bodyLen


def encode_batch(items: Iterable[BatchItem]) -> bytes:
    """The batch body of protocol.md 7.4 (Java's MessageDecoder.encodeMessages)."""
    parts: list[bytes] = []
    for item in items:
        props = item.properties.encode()
        size = _BATCH_HEAD.size + len(item.body) + 2 + len(props)
        parts += (_BATCH_HEAD.pack(size, 0, 0, item.flag, len(item.body)), item.body)
        parts += (_H.pack(len(props)), props)
    return b"".join(parts)


def decode_batch(data: bytes) -> list[BatchItem]:
    """The inverse of ``encode_batch``; raises ``MessageDecodeError`` on malformed input."""
    out: list[BatchItem] = []
    pos, total = 0, len(data)
    try:
        while pos < total:
            size, _magic, _crc, flag, blen = _BATCH_HEAD.unpack_from(data, pos)
            end = pos + size
            if size < _BATCH_HEAD.size + 2 or end > total:
                raise MessageDecodeError(f"batch item size {size} at {pos} is invalid")
            at = pos + _BATCH_HEAD.size
            if blen < 0 or at + blen > end:
                raise MessageDecodeError(f"field of {blen} bytes at {at - 4} runs past its record")
            body = data[at : at + blen]
            at += blen
            (plen,) = _H.unpack_from(data, at)
            stop = at + 2 + plen
            if plen < 0 or stop > end:
                raise MessageDecodeError(f"field of {plen} bytes at {at} runs past its record")
            if stop != end:
                raise MessageDecodeError(f"batch item at {pos} has {end - stop} stray bytes")
            out.append(BatchItem(body, flag, data[at + 2 : end].decode()))
            pos = end
    except (struct.error, UnicodeDecodeError) as exc:
        raise MessageDecodeError(f"malformed batch body at {pos}: {exc}") from exc
    return out


class DelayInBatch(ValueError):
    """A batch item asks for a delay level: batches may not carry delayed messages."""


def build_batch(
    items: list[BatchItem],
    topic: str,
    common: dict[str, str],
    queue_id: int,
    sys_flag: int,
    born_timestamp: int,
    born_host: str,
) -> list[MessageExt]:
    """The messages a broker stores for a decoded batch: each item's properties with the
    request's ``common`` ones over them (SendMessageProcessor.sendBatchMessage). Raises
    DelayInBatch for an item with a delay level above 0, ValueError for one that is no
    number."""
    msgs: list[MessageExt] = []
    for item in items:
        props = decode_properties(item.properties)
        props.update(common)
        if int(props.get(Prop.DELAY, "0") or 0) > 0:
            raise DelayInBatch(f"batch item {len(msgs)} has a delay level")
        msgs.append(MessageExt(topic=topic, body=item.body, flag=item.flag, properties=props,
                               queue_id=queue_id, sys_flag=sys_flag,
                               born_timestamp=born_timestamp, born_host=born_host))  # fmt: skip
    return msgs
