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

import mmap
import os
import struct
from pathlib import Path
from typing import Final, NamedTuple

from aiorocketmq.broker.store.timerlog import fsync_path

SLOT: Final = struct.Struct("<qqqii")
SLOT_SIZE: Final = SLOT.size  # 32


class Slot(NamedTuple):
    slot_ms: int
    first_pos: int
    last_pos: int
    num: int


class TimerWheel:
    def __init__(self, path: Path, slots: int, precision_ms: int) -> None:
        self.path, self.slots, self.precision = path, slots, precision_ms
        size = slots * SLOT_SIZE
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            if os.fstat(fd).st_size != size:
                os.ftruncate(fd, 0)
                os.posix_fallocate(fd, 0, size)
            self.map = mmap.mmap(fd, size)
        finally:
            os.close(fd)

    def _at(self, slot_ms: int) -> int:
        return slot_ms // self.precision % self.slots * SLOT_SIZE

    def get(self, slot_ms: int) -> Slot | None:
        stored, first, last, count, _pad = SLOT.unpack_from(self.map, self._at(slot_ms))
        return Slot(stored, first, last, count) if stored == slot_ms and count > 0 else None

    def put(self, slot_ms: int, first_pos: int, last_pos: int, num: int) -> None:
        SLOT.pack_into(self.map, self._at(slot_ms), slot_ms, first_pos, last_pos, num, 0)

    def reset(self) -> None:
        self.map[:] = bytes(len(self.map))

    def flush(self) -> None:
        fsync_path(self.path)

    def close(self) -> None:
        self.map.close()
