"""The HA stream's framing (protocol.md 12.8, fidelity.md 3.2; HAConnection / HAClient).

Not remoting frames: a plain TCP stream on listenPort + 1.
- slave -> master: bare int64 big-endian values, each the slave's CommitLog max offset; the
  master uses the last complete one it has;
- master -> slave: ``int64 phyOffset | int32 size | size bytes of CommitLog``, ``size`` 0
  being a heartbeat.
Pure codecs, no I/O.
"""

from __future__ import annotations

import struct
from typing import Final

_REPORT: Final = struct.Struct(">q")
_TRANSFER: Final = struct.Struct(">qi")
TRANSFER_HEADER: Final = _TRANSFER.size
# the most one frame may carry: Java's slave reads into a 4 MiB buffer (its master sends at
# most haTransferBatchSize, 32 KiB)
MAX_TRANSFER: Final = 4 * 1024 * 1024


class HAProtocolError(Exception):
    """The peer broke the HA stream's framing: the connection is closed."""


def encode_report(offset: int) -> bytes:
    return _REPORT.pack(offset)


def take_last_report(buf: bytearray) -> int | None:
    """Remove every complete 8-byte report from ``buf``; the last one (None if none)."""
    whole = len(buf) - len(buf) % _REPORT.size
    if whole == 0:
        return None
    (offset,) = _REPORT.unpack_from(buf, whole - _REPORT.size)
    del buf[:whole]
    return int(offset)


def encode_transfer(phys: int, data: bytes) -> bytes:
    return _TRANSFER.pack(phys, len(data)) + data


class TransferParser:
    """Frames from the master's byte stream, however it is chunked."""

    def __init__(self, max_size: int = MAX_TRANSFER) -> None:
        self._buf = bytearray()
        self._max = max_size

    def feed(self, data: bytes) -> list[tuple[int, bytes]]:
        """``(phyOffset, bytes)`` for each complete frame; raises HAProtocolError for a
        negative or oversize length (nothing after it is trusted)."""
        buf = self._buf
        buf += data
        pos, frames = 0, []
        while len(buf) - pos >= TRANSFER_HEADER:
            phys, size = _TRANSFER.unpack_from(buf, pos)
            if size < 0 or size > self._max or phys < 0:
                raise HAProtocolError(f"bad HA frame: offset {phys}, size {size}")
            end = pos + TRANSFER_HEADER + size
            if len(buf) < end:
                break
            frames.append((phys, bytes(buf[pos + TRANSFER_HEADER : end])))
            pos = end
        del buf[:pos]
        return frames

    @property
    def pending(self) -> int:
        """Bytes of an incomplete frame held (bounded by one frame)."""
        return len(self._buf)
