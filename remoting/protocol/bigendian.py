"""Big-endian integers read byte by byte from ``bytes``: compiled (mypyc), a read is a few
native byte loads, where ``struct.unpack_from`` makes a tuple and an int object per call.
For loops over many records or units at once (pull bodies, ConsumeQueue units)."""

from __future__ import annotations


def uint32_at(data: bytes, at: int) -> int:
    return (data[at] << 24) | (data[at + 1] << 16) | (data[at + 2] << 8) | data[at + 3]


def int32_at(data: bytes, at: int) -> int:
    value = uint32_at(data, at)
    return value - 0x1_0000_0000 if value & 0x8000_0000 else value


def int64_at(data: bytes, at: int) -> int:
    high = int32_at(data, at)  # the sign is the high word's
    return high * 0x1_0000_0000 + uint32_at(data, at + 4)
