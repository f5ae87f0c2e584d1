"""A stored record's properties text, read where it lies (MessageDecoder.decodeProperties):
the body is stepped over, never copied, and nothing is decoded, so a property filter pays for
the properties' bytes and the few it looks up (``find_property``)."""

from __future__ import annotations

import struct
from typing import Final

from aiorocketmq.remoting.protocol.message import (
    BORNHOST_POS,
    MAGIC_V1,
    MAGIC_V2,
    MAX_PROPERTIES_BYTES,
    SYSFLAG_POS,
    Buffer,
    SysFlag,
)

_I: Final = struct.Struct(">i")
_H: Final = struct.Struct(">h")
_U: Final = struct.Struct(">I")
_MAGIC_POS: Final = 4
# one read for what a record's properties need when both hosts are IPv4 (almost always):
# TOTALSIZE, MAGICCODE, PHYSICALOFFSET (28), SYSFLAG (36), BODYLENGTH (84)
_HEAD_V4: Final = struct.Struct(">iI20xqi44xi")
_BODY_V4: Final = 88  # where the body starts with IPv4 hosts
_V6: Final = SysFlag.BORNHOST_V6 | SysFlag.STOREHOST_V6


def stored_properties(buf: Buffer, at: int, phys: int, size: int) -> bytes | None:
    """The properties text of the record at ``at`` in ``buf``, checked to be the
    ``size``-byte record stored at CommitLog offset ``phys`` (size, magic, offset, as
    CommitLog.Gather checks a record it serves); None if it is not. ``buf`` must hold at
    least ``size`` >= 91 bytes at ``at``."""
    stored, magic, offset, sys_flag, body_len = _HEAD_V4.unpack_from(buf, at)
    if stored != size or offset != phys or (magic != MAGIC_V1 and magic != MAGIC_V2):
        return None
    if sys_flag & _V6:
        return record_properties(buf, at, size)
    end = at + size
    pos = at + _BODY_V4 + body_len
    if body_len < 0 or pos + 3 > end:
        return b""
    if magic == MAGIC_V1:
        pos += 1 + int(buf[pos])
    else:
        pos += 2 + (int(buf[pos]) << 8 | int(buf[pos + 1]))
    if pos + 2 > end:
        return b""
    length = int(buf[pos]) << 8 | int(buf[pos + 1])
    pos += 2
    if length > MAX_PROPERTIES_BYTES or pos + length > end:
        return b""  # (a negative int16 in Java: no properties)
    return bytes(buf[pos : pos + length])


def record_properties(buf: Buffer, at: int, size: int) -> bytes:
    """The properties of the ``size``-byte record at ``at`` in ``buf`` (a mapping of the
    CommitLog), as stored: UTF-8 ``name\x01value\x02`` items; empty when they do not lie
    inside the record (a damaged record matches nothing that needs a property)."""
    end = at + size
    (sys_flag,) = _I.unpack_from(buf, at + SYSFLAG_POS)
    pos = at + BORNHOST_POS
    pos += 20 if sys_flag & SysFlag.BORNHOST_V6 else 8
    pos += 8  # STORETIMESTAMP
    pos += 20 if sys_flag & SysFlag.STOREHOST_V6 else 8
    pos += 12  # RECONSUMETIMES, PREPAREDTRANSACTIONOFFSET
    (body_len,) = _I.unpack_from(buf, pos)
    pos += 4 + body_len
    if body_len < 0 or pos + 3 > end:
        return b""
    if _U.unpack_from(buf, at + _MAGIC_POS)[0] == MAGIC_V1:
        pos += 1 + int(buf[pos])
    else:
        pos += 2 + int(_H.unpack_from(buf, pos)[0])
    if pos + 2 > end:
        return b""
    (props_len,) = _H.unpack_from(buf, pos)
    pos += 2
    if props_len <= 0 or pos + props_len > end:
        return b""
    return bytes(buf[pos : pos + props_len])


def find_property(raw: bytes, key: bytes) -> bytes | None:
    """The value of one property in the properties text ``raw``, ``key`` being
    ``b"\\x02" + name + b"\\x01"``: the value Java's string2messageProperties map holds
    (of several items of the name, the last one with a value); None without one."""
    end = len(raw)
    while True:
        at = raw.rfind(key, 0, end)
        if at < 0:
            if not raw.startswith(key[1:]):
                return None
            at = -1  # the first item: no separator before it
        start = at + len(key)
        stop = raw.find(b"\x02", start)
        value = raw[start:stop] if stop >= 0 else raw[start:]
        if value or at < 0:
            return value or None
        end = at  # an item without a value is left out: an earlier one stands
