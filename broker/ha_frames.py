"""The HA stream's framing (protocol.md 12.8, fidelity.md 3.2; HAConnection / HAClient).

Not remoting frames: a plain TCP stream on listenPort + 1.
- slave -> master: bare int64 big-endian values, each the slave's CommitLog max offset; the
  master uses the last complete one it has;
- master -> slave: ``int64 phyOffset | int32 size | size bytes of CommitLog``, ``size`` 0
  being a heartbeat.

With ``enableControllerMode`` the slave's first frame (after ha_auth's hello, if any) is an
epoch hello, ``0xFF 'H' 'A' 'E' | int64 brokerId``, and it waits for the master's epochs
before it reports: ``int32 bodySize | int64 masterMaxOffset | int32 lastEpoch`` then
``bodySize / 12`` entries ``int32 epoch | int64 startOffset`` -- the body of 5.x's
AutoSwitchHAConnection handshake (its header without the state word). The slave cuts its
log back to the consistent point with those epochs, then reports and copies as above. A
report never starts with 0xFF, so a master tells hellos from reports by the first byte.
Pure codecs, no I/O.
"""

from __future__ import annotations

import struct
from typing import Final

from aiorocketmq.broker.store.epochs import EpochEntry

_REPORT: Final = struct.Struct(">q")
_TRANSFER: Final = struct.Struct(">qi")
TRANSFER_HEADER: Final = _TRANSFER.size
# the most one frame may carry: Java's slave reads into a 4 MiB buffer (its master sends at
# most haTransferBatchSize, 32 KiB)
MAX_TRANSFER: Final = 4 * 1024 * 1024


EPOCH_HELLO: Final = b"\xffHAE"
_EPOCH_HELLO: Final = struct.Struct(">4sq")
EPOCH_HELLO_SIZE: Final = _EPOCH_HELLO.size
_EPOCHS: Final = struct.Struct(">iqi")  # body size, master max offset, last epoch
EPOCHS_HEADER: Final = _EPOCHS.size
_ENTRY: Final = struct.Struct(">iq")  # AutoSwitchHAConnection.EPOCH_ENTRY_SIZE: 12
MAX_EPOCHS: Final = 1000  # AutoSwitchHAConnection's handShakeBuffer holds 1000 entries


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


def encode_epoch_hello(broker_id: int) -> bytes:
    return _EPOCH_HELLO.pack(EPOCH_HELLO, broker_id)


def decode_epoch_hello(frame: bytes) -> int:
    """The slave's brokerId from its 12-byte epoch hello (HAProtocolError if it is none)."""
    magic, broker_id = _EPOCH_HELLO.unpack(frame)
    if magic != EPOCH_HELLO:
        raise HAProtocolError("bad HA epoch hello")
    return int(broker_id)


def encode_epochs(max_offset: int, entries: list[EpochEntry]) -> bytes:
    """The master's answer to an epoch hello (the newest MAX_EPOCHS entries)."""
    kept = entries[-MAX_EPOCHS:]
    last = kept[-1].epoch if kept else -1
    body = b"".join(_ENTRY.pack(e.epoch, e.start_offset) for e in kept)
    return _EPOCHS.pack(len(body), max_offset, last) + body


def decode_epochs_header(head: bytes) -> tuple[int, int]:
    """``(body size, master max offset)`` of the master's epochs; HAProtocolError for a
    size that is no whole number of entries or more than MAX_EPOCHS of them."""
    size, max_offset, _last = _EPOCHS.unpack(head)
    if size < 0 or size % _ENTRY.size or size > MAX_EPOCHS * _ENTRY.size or max_offset < 0:
        raise HAProtocolError(f"bad HA epochs: {size} bytes, max offset {max_offset}")
    return int(size), int(max_offset)


def decode_epochs(body: bytes) -> list[EpochEntry]:
    return [EpochEntry(int(e), int(s)) for e, s in _ENTRY.iter_unpack(body)]
