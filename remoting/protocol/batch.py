"""SEND_BATCH_MESSAGE bodies (protocol.md 7.4): the messages of one batch, each its body,
flag and properties (Java's MessageDecoder.encodeMessages / decodeMessages)."""

from __future__ import annotations

import struct
from collections.abc import Iterable
from typing import NamedTuple

from remoting.errors import MessageDecodeError
from remoting.protocol.message import read_chunk

_I = struct.Struct(">i")
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
    out, pos = [], 0
    try:
        while pos < len(data):
            size, _magic, _crc, flag, _blen = _BATCH_HEAD.unpack_from(data, pos)
            end = pos + size
            if size < _BATCH_HEAD.size + 2 or end > len(data):
                raise MessageDecodeError(f"batch item size {size} at {pos} is invalid")
            body, at = read_chunk(data, pos + _BATCH_HEAD.size - 4, _I, end)
            props, at = read_chunk(data, at, _H, end)
            if at != end:
                raise MessageDecodeError(f"batch item at {pos} has {end - at} stray bytes")
            out.append(BatchItem(body, flag, props.decode()))
            pos = end
    except (struct.error, UnicodeDecodeError) as exc:
        raise MessageDecodeError(f"malformed batch body at {pos}: {exc}") from exc
    return out
