"""TimerLog: the wheel's append-only log of units, one per timer message indexed (5.x
``timerlog/``, TimerLog.java, with our own unit). Pure storage.

A unit is 40 bytes: ``slot_ms:int64 | prev_pos:int64 | phys:int64 | cq_offset:int64 |
size:int32 | magic:int32`` -- the slot it waits in, the previous unit of the same slot (a
chain read backwards, as 5.x's prevPos; -1 ends it), where its message lies in the CommitLog,
which ``rmq_sys_wheel_timer`` ConsumeQueue unit it indexes (consecutive from unit to unit:
recovery stops at the first break) and its flags in the magic's low bits (ROLL: the message
is put back into the wheel topic, not delivered).

Segments are fixed-size files named by their 20-digit start position, allocated whole when
created (a write through a mapping never meets a hole: no SIGBUS on a full disk), mapped.
A segment whose every unit's slot the wheel has passed is deleted. A million pending timers
cost 40 MB of these files and no memory of their own.
"""

from __future__ import annotations

import mmap
import os
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Final, NamedTuple

UNIT: Final = struct.Struct("<qqqqii")
UNIT_SIZE: Final = UNIT.size  # 40
MAGIC: Final = 0x7B1E0000  # high bits: a unit was written here
MAGIC_MASK: Final = 0x7FFF0000
FLAG_ROLL: Final = 2  # compat: TimerMessageStore.MAGIC_ROLL -- rolled over the window


class Unit(NamedTuple):
    pos: int
    slot_ms: int
    prev_pos: int
    phys: int
    cq_offset: int
    size: int
    flags: int


def fsync_path(path: Path) -> None:
    """fsync a file by name (a shared mapping's dirty pages are written back with it)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class Segment:
    def __init__(self, path: Path, base: int, size: int, *, create: bool) -> None:
        self.path, self.base, self.size = path, base, size
        fd = os.open(path, os.O_RDWR | (os.O_CREAT if create else 0), 0o644)
        try:
            if create:
                os.posix_fallocate(fd, 0, size)  # raises OSError (ENOSPC) rather than SIGBUS
            elif os.fstat(fd).st_size < size:
                os.ftruncate(fd, size)
            self.map = mmap.mmap(fd, size)
        finally:
            os.close(fd)
        self.max_slot = -1  # the latest slot of its units (retention)

    def close(self) -> None:
        self.map.close()


class TimerLog:
    def __init__(self, path: Path, segment_units: int) -> None:
        self.dir = path
        self.segment_size = segment_units * UNIT_SIZE
        self.segments: list[Segment] = []
        self.end = 0  # the position the next unit goes to

    # ------------------------------------------------------------ load / recovery

    def load(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        names = sorted(p for p in self.dir.iterdir() if p.name.isdigit() and len(p.name) == 20)
        self.segments = [Segment(p, int(p.name), self.segment_size, create=False) for p in names]
        self.end = self.segments[0].base if self.segments else 0

    def columns(self) -> Iterator[tuple[int, list[int], list[int], list[int]]]:
        """Per segment: its base, then the slot, cq offset and size|magic<<32 columns of
        every unit (the bytes read as little-endian int64s, five per unit: fast in bulk)."""
        for seg in self.segments:
            words = memoryview(seg.map).cast("q")
            yield seg.base, words[0::5].tolist(), words[3::5].tolist(), words[4::5].tolist()

    def cut(self, end: int) -> None:
        """Keep the units before ``end``: later segments deleted, the rest of its one zeroed."""
        keep = [s for s in self.segments if s.base < end or s.base == self.segments[0].base]
        for seg in self.segments[len(keep) :]:
            seg.close()
            seg.path.unlink(missing_ok=True)
        self.segments = keep
        if keep:
            last = keep[-1]
            at = end - last.base
            last.map[at:] = bytes(last.size - at)
        self.end = end

    # ------------------------------------------------------------ writes and reads

    def append(self, slot_ms: int, prev_pos: int, phys: int, cq_offset: int, size: int,
               flags: int) -> int:  # fmt: skip
        """Write a unit; its position (OSError when a new segment cannot be allocated)."""
        seg = self.segments[-1] if self.segments else None
        if seg is None or self.end >= seg.base + seg.size:
            seg = self._new_segment(self.end)
        pos = self.end
        UNIT.pack_into(seg.map, pos - seg.base, slot_ms, prev_pos, phys, cq_offset, size,
                       MAGIC | flags)  # fmt: skip
        seg.max_slot = max(seg.max_slot, slot_ms)
        self.end = pos + UNIT_SIZE
        return pos

    def _new_segment(self, base: int) -> Segment:
        self.dir.mkdir(parents=True, exist_ok=True)
        seg = Segment(self.dir / f"{base:020d}", base, self.segment_size, create=True)
        self.segments.append(seg)
        return seg

    def unit(self, pos: int) -> Unit | None:
        """The unit at ``pos``, None if none was written there (or its segment is gone)."""
        seg = self._segment(pos)
        if seg is None or pos >= self.end:
            return None
        slot_ms, prev, phys, cq, size, magic = UNIT.unpack_from(seg.map, pos - seg.base)
        if magic & MAGIC_MASK != MAGIC:
            return None
        return Unit(pos, slot_ms, prev, phys, cq, size, magic & ~MAGIC_MASK)

    def _segment(self, pos: int) -> Segment | None:
        for seg in reversed(self.segments):
            if seg.base <= pos:
                return seg if pos < seg.base + seg.size else None
        return None

    @property
    def start(self) -> int:
        return self.segments[0].base if self.segments else self.end

    def delete_before(self, slot_ms: int) -> int:
        """Delete whole segments (never the last) whose units all wait in slots before
        ``slot_ms``; how many."""
        gone = 0
        while len(self.segments) > 1 and self.segments[0].max_slot < slot_ms:
            seg = self.segments.pop(0)
            seg.close()
            seg.path.unlink(missing_ok=True)
            gone += 1
        return gone

    def flush(self) -> None:
        """fsync the segments written lately: through a descriptor, not ``mmap.flush``
        (which holds the GIL through its msync; a thread fsyncing does not)."""
        for seg in self.segments[-2:]:
            fsync_path(seg.path)

    def close(self) -> None:
        for seg in self.segments:
            seg.close()
        self.segments = []
