"""TimerWheel: the slots of the timer wheel in one mapped file (5.x ``timerwheel``,
TimerWheel.java, with our own slot). Pure storage.

A slot is 32 bytes: ``slot_ms:int64 | first_pos:int64 | last_pos:int64 | num:int32 |
pad:int32`` -- the time it stands for (a slot whose time is another one is empty: the file is
a ring of ``slots`` slots, slot index ``slot_ms / precision % slots``), the first and last
TimerLog units of its chain and how many. There are twice as many slots as the roll window
holds (as 5.x's ``slotsTotal * 2``), so every pending slot has its own. The wheel is derived
from the TimerLog (``TimerStore.recover`` writes it again at each start); its file keeps a
million pending timers out of memory.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import struct
from pathlib import Path
from typing import Final, NamedTuple

import structlog

from aiorocketmq.broker.store.timerlog import fsync_path

log = structlog.get_logger(__name__)

SLOT: Final = struct.Struct("<qqqii")
SLOT_SIZE: Final = SLOT.size  # 32


class Slot(NamedTuple):
    slot_ms: int
    first_pos: int
    last_pos: int
    num: int


class TimerWheel:
    """The slots, in a file made at the first timer (a broker that never sees one keeps no
    11 MB wheel on its disk; the file is fully allocated when made, so no write to the map
    can meet a full disk). Without room for it the wheel lives in memory: it is derived,
    written again from the TimerLog at each start, and a later start makes the file."""

    def __init__(self, path: Path, slots: int, precision_ms: int) -> None:
        self.path, self.slots, self.precision = path, slots, precision_ms
        self.size = slots * SLOT_SIZE
        self.map: mmap.mmap | None = None
        if path.exists():
            self.map = self._open()

    def _open(self) -> mmap.mmap:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            return self._in_memory(exc)
        try:
            if os.fstat(fd).st_size != self.size:
                os.ftruncate(fd, 0)
                os.posix_fallocate(fd, 0, self.size)
            return mmap.mmap(fd, self.size)
        except OSError as exc:
            with contextlib.suppress(OSError):
                self.path.unlink()
            return self._in_memory(exc)
        finally:
            os.close(fd)

    def _in_memory(self, exc: OSError) -> mmap.mmap:
        log.warning("timer_wheel_in_memory", path=str(self.path), error=str(exc))
        return mmap.mmap(-1, self.size)

    def _made(self) -> mmap.mmap:
        if self.map is None:
            self.map = self._open()
        return self.map

    def _at(self, slot_ms: int) -> int:
        return slot_ms // self.precision % self.slots * SLOT_SIZE

    def get(self, slot_ms: int) -> Slot | None:
        if self.map is None:
            return None
        stored, first, last, count, _pad = SLOT.unpack_from(self.map, self._at(slot_ms))
        return Slot(stored, first, last, count) if stored == slot_ms and count > 0 else None

    def put(self, slot_ms: int, first_pos: int, last_pos: int, num: int) -> None:
        SLOT.pack_into(self._made(), self._at(slot_ms), slot_ms, first_pos, last_pos, num, 0)

    def reset(self) -> None:
        if self.map is not None:
            self.map[:] = bytes(len(self.map))

    def flush(self) -> None:
        if self.map is not None and self.path.exists():
            fsync_path(self.path)

    def close(self) -> None:
        if self.map is not None:
            self.map.close()
