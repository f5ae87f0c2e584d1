"""A stored record's properties text, read where it lies (MessageDecoder.decodeProperties):
the body is stepped over, never copied, and nothing is decoded, so a property filter pays for
the properties' bytes and the few it looks up (``find_property``)."""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Final

from mypy_extensions import i64

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
    if pos + 4 > end:
        return b""  # too short for its IPv6 hosts
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


# ---------------------------------------------------------------- in place, natively
# What a pull's property filter runs on every unit it scans (reader.Reader._pick): the same
# answers as stored_properties and find_property, read byte by byte from a ``bytes`` window of
# the CommitLog (mypyc indexes bytes natively: no Python call, no object per field).


class RecordFilter:
    """A property filter the store asks about stored records (isMatchedByCommitLog)."""

    def accepts(self, buf: bytes, start: i64, end: i64) -> bool:
        """Whether the record whose properties text (as stored) is ``buf[start:end]`` is
        served."""
        raise NotImplementedError


class CallFilter(RecordFilter):
    """A filter given as a function of the properties text."""

    def __init__(self, fn: Callable[[bytes], bool]) -> None:
        self.fn = fn

    def accepts(self, buf: bytes, start: i64, end: i64) -> bool:
        return self.fn(buf[start:end])


def _u16(buf: bytes, pos: i64) -> i64:
    high: i64 = buf[pos]
    low: i64 = buf[pos + 1]
    return high << 8 | low


def _u32(buf: bytes, pos: i64) -> i64:
    return _u16(buf, pos) << 16 | _u16(buf, pos + 2)


def _i32(buf: bytes, pos: i64) -> i64:
    value = _u32(buf, pos)
    return value - (1 << 32) if value & 0x80000000 else value


def props_span(buf: bytes, at: i64, phys: i64, size: i64) -> tuple[i64, i64]:
    """Where ``stored_properties(buf, at, phys, size)`` lies in ``buf``: (start, end), start
    == end for none; (-1, -1) where it is None (not that record)."""
    magic = _u32(buf, at + _MAGIC_POS)
    if _i32(buf, at) != size or (magic != MAGIC_V1 and magic != MAGIC_V2):
        return -1, -1
    if _i32(buf, at + 28) != phys >> 32 or _u32(buf, at + 32) != phys & 0xFFFFFFFF:
        return -1, -1  # PHYSICALOFFSET
    end = at + size
    sys_flag = _i32(buf, at + SYSFLAG_POS)
    if sys_flag & _V6:
        return _v6_span(buf, at, end, sys_flag, magic)
    body_len = _i32(buf, at + _BODY_V4 - 4)
    pos = at + _BODY_V4 + body_len
    if body_len < 0 or pos + 3 > end:
        return at, at
    pos += 1 + buf[pos] if magic == MAGIC_V1 else 2 + _u16(buf, pos)
    if pos + 2 > end:
        return at, at
    length = _u16(buf, pos)
    pos += 2
    if length > MAX_PROPERTIES_BYTES or pos + length > end:
        return at, at
    return pos, pos + length


def _v6_span(buf: bytes, at: i64, end: i64, sys_flag: i64, magic: i64) -> tuple[i64, i64]:
    """record_properties's span (a host is IPv6)."""
    pos = at + BORNHOST_POS + (20 if sys_flag & SysFlag.BORNHOST_V6 else 8) + 8
    pos += (20 if sys_flag & SysFlag.STOREHOST_V6 else 8) + 12
    if pos + 4 > end:
        return at, at
    body_len = _i32(buf, pos)
    pos += 4 + body_len
    if body_len < 0 or pos + 3 > end:
        return at, at
    if magic == MAGIC_V1:
        pos += 1 + buf[pos]
    else:
        topic_len = _u16(buf, pos)
        pos += 2 + (topic_len - 0x10000 if topic_len & 0x8000 else topic_len)
    if pos + 2 > end:
        return at, at
    length = _u16(buf, pos)
    pos += 2
    if length == 0 or length & 0x8000 or pos + length > end:
        return at, at
    return pos, pos + length


def find_value(buf: bytes, start: i64, end: i64, name: bytes) -> bytes | None:
    """``find_property(buf[start:end], b"\\x02" + name + b"\\x01")``, read in place: the items
    are walked from the last, so the last one of the name with a value is the first found."""
    n: i64 = len(name)
    if n == 0:
        return None  # string2messageProperties leaves an item without a name out
    stop = end  # the end of the item being looked at
    i = end - 1
    while i >= start:
        c: i64 = buf[i]
        if c == 2:
            if _named(buf, i + 1, stop, name, n):
                return buf[i + n + 2 : stop]
            stop = i
        i -= 1
    if _named(buf, start, stop, name, n):  # the first item: no separator before it
        return buf[start + n + 1 : stop]
    return None


class Slot:
    """One property ``find_values`` looks up: its name, and where its value lies (``start``
    -1: none)."""

    __slots__ = ("n", "name", "start", "stop")

    def __init__(self, name: bytes) -> None:
        self.name = name
        self.n: i64 = len(name)
        self.start: i64 = -1
        self.stop: i64 = -1


def first_bytes(slots: list[Slot]) -> bytes:
    """``find_values``'s table: 1 at the first byte of a slot's name."""
    table = bytearray(256)
    for slot in slots:
        if slot.n:
            table[slot.name[0]] = 1
    return bytes(table)


def find_values(buf: bytes, start: i64, end: i64, slots: list[Slot], firsts: bytes) -> None:
    """``find_value`` of every slot's name (distinct names) at once, in one walk over the
    items (from the last, until every name is found): each slot's ``start`` and ``stop``
    are set. ``firsts`` is ``first_bytes(slots)``: an item whose first byte no name starts
    with is passed at a glance."""
    left: i64 = 0
    for slot in slots:
        slot.start = -1
        left += 1 if slot.n else 0
    stop = end
    i = end - 1
    while i >= start and left:
        c: i64 = buf[i]
        if c == 2:
            if i + 1 < stop and firsts[buf[i + 1]]:
                left -= _claim(buf, i + 1, stop, slots)
            stop = i
        i -= 1
    if left and start < stop and firsts[buf[start]]:
        _claim(buf, start, stop, slots)  # the first item: no separator before it


def _claim(buf: bytes, at: i64, stop: i64, slots: list[Slot]) -> i64:
    """The item ``buf[at:stop]`` is the value of the slot it names, if that one has none
    yet: 1 if it was taken."""
    for slot in slots:
        n = slot.n
        if slot.start < 0 and n and _named(buf, at, stop, slot.name, n):
            slot.start, slot.stop = at + n + 1, stop
            return 1
    return 0


def _named(buf: bytes, at: i64, stop: i64, name: bytes, n: i64) -> bool:
    """Whether the item ``buf[at:stop]`` is ``name``'s, with a value."""
    if stop - at <= n + 1 or buf[at + n] != 1:
        return False
    j: i64 = 0
    while j < n:
        if buf[at + j] != name[j]:
            return False
        j += 1
    return True
