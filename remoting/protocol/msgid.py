"""Message ids (offsetMsgId and UNIQ_KEY), host packing, and tags codes (protocol.md 7.5, 8.1)."""

from __future__ import annotations

import functools
import itertools
import operator
import os
import socket
import struct
import time
from datetime import UTC, datetime
from typing import Final

from aiorocketmq.remoting.errors import MessageDecodeError

BORNHOST_V6_FLAG: Final = 0x10
STOREHOST_V6_FLAG: Final = 0x20

_PORT = struct.Struct(">i")


@functools.lru_cache(maxsize=4096)
def pack_host(addr: str) -> bytes:
    """``"ip:port"`` (or ``"[v6]:port"``) -> 4- or 16-byte address + int32 port."""
    host, _, port = addr.rpartition(":")
    host = host.strip("[]")
    try:
        raw = socket.inet_pton(socket.AF_INET6 if ":" in host else socket.AF_INET, host)
        return raw + _PORT.pack(int(port))
    except (OSError, ValueError, struct.error) as exc:
        raise ValueError(f"not an ip:port address: {addr!r}") from exc


def unpack_host(raw: bytes | bytearray | memoryview) -> str:
    """The inverse of ``pack_host`` (8 or 20 bytes); the few hosts a process meets are
    remembered (every record of a pull has the same store host)."""
    return _unpack_host(bytes(raw))


@functools.lru_cache(maxsize=4096)
def _unpack_host(raw: bytes) -> str:
    ip = raw[:-4]
    (port,) = _PORT.unpack(raw[-4:])
    if len(ip) == 4:
        return f"{socket.inet_ntop(socket.AF_INET, ip)}:{port}"
    return f"[{socket.inet_ntop(socket.AF_INET6, ip)}]:{port}"


def offset_msg_id(store_host: bytes, phys_offset: int) -> str:
    """Uppercase hex of packed store host + int64 commitlog offset (32 hex chars for IPv4)."""
    return (store_host + phys_offset.to_bytes(8, "big", signed=True)).hex().upper()


def parse_offset_msg_id(msg_id: str) -> tuple[str, int]:
    """``(store "ip:port", commitlog offset)`` from an offsetMsgId; raises MessageDecodeError."""
    try:
        raw = bytes.fromhex(msg_id)
    except ValueError as exc:
        raise MessageDecodeError(f"message id is not hex: {msg_id!r}") from exc
    if len(raw) not in (16, 28):
        raise MessageDecodeError(f"message id has {len(raw)} bytes, expected 16 or 28")
    return unpack_host(raw[:-8]), int.from_bytes(raw[-8:], "big", signed=True)


# String.hashCode = sum(unit_i * 31**(n-1-i)) mod 2**32, with the powers for each length
# cached, so the arithmetic runs in C (map + sum)
_MAX_CACHED: Final = 512


@functools.lru_cache(maxsize=_MAX_CACHED)
def _powers(n: int) -> tuple[int, ...]:
    return tuple(pow(31, k, 1 << 32) for k in range(n - 1, -1, -1))


# An ASCII unit c is 31 * (c // 31) + c % 31 with both parts below 31, so the hash is the sum
# of two base-31 numerals: the remainders, and the quotients shifted one place left --
# parsed by int() in C, much faster than a multiply per unit
_DIGITS31: Final = b"0123456789abcdefghijklmnopqrstu"
_REMAINDERS: Final = bytes(_DIGITS31[c % 31] for c in range(128)) + b"?" * 128
_QUOTIENTS: Final = bytes(_DIGITS31[c // 31] for c in range(128)) + b"?" * 128


def java_hash(text: str) -> int:
    """Java's ``String.hashCode``: ``h = 31*h + unit`` over UTF-16 code units, as int32."""
    units: bytes | tuple[int, ...]
    h: int
    if text.isascii():  # the common case: one byte per UTF-16 unit
        units = text.encode()
        if 0 < len(units) <= _MAX_CACHED:
            h = int(units.translate(_REMAINDERS), 31) + int(units.translate(_QUOTIENTS) + b"0", 31)
            h &= 0xFFFFFFFF
            return h - 0x100000000 if h & 0x80000000 else h
    else:  # Java strings may hold lone surrogates
        data = text.encode("utf-16-be", "surrogatepass")
        units = struct.unpack(f">{len(data) // 2}H", data)
    n = len(units)
    if n <= _MAX_CACHED:
        h = sum(map(operator.mul, units, _powers(n))) & 0xFFFFFFFF
    else:
        h = 0
        for unit in units:
            h = (31 * h + unit) & 0xFFFFFFFF
    return h - 0x100000000 if h & 0x80000000 else h


@functools.lru_cache(maxsize=4096)
def tags_code(tags: str | None) -> int:
    """ConsumeQueue tags code: the hash of the TAGS property, 0 without tags (cached: a topic
    has few distinct tags)."""
    return java_hash(tags) if tags else 0


class UniqKeyGenerator:
    """Client message ids (UNIQ_KEY) in Java's MessageClientIDSetter layout.

    ip(4) + pid(int16) + a per-generator hash(int32) + ms since the start of the month (int32)
    + counter (int16), uppercase hex: 32 characters.
    """

    __slots__ = ("_counter", "_month_start_ms", "_next_month_ms", "_prefix")

    def __init__(self, ip: str = "127.0.0.1") -> None:
        ip_raw = socket.inet_aton(ip) if ip.count(".") == 3 else b"\x7f\x00\x00\x01"
        self._prefix = (
            (
                ip_raw
                + (os.getpid() & 0xFFFF).to_bytes(2, "big")
                + (id(self) & 0xFFFFFFFF).to_bytes(4, "big")
            )
            .hex()
            .upper()
        )
        self._counter = itertools.count()
        self._month_start_ms = self._next_month_ms = 0

    def _roll_month(self, now_ms: int) -> None:
        now = datetime.fromtimestamp(now_ms / 1000, UTC)
        start = now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
        nxt = start.replace(month=start.month % 12 + 1, year=start.year + start.month // 12)
        self._month_start_ms = int(start.timestamp() * 1000)
        self._next_month_ms = int(nxt.timestamp() * 1000)

    def next(self) -> str:
        now_ms = time.time_ns() // 1_000_000
        if now_ms >= self._next_month_ms:
            self._roll_month(now_ms)
        elapsed = (now_ms - self._month_start_ms) & 0xFFFFFFFF
        count = next(self._counter) & 0xFFFF
        return f"{self._prefix}{elapsed:08X}{count:04X}"
